#include "bench/workloads/workload_testing.h"

#include <algorithm>
#include <atomic>
#include <climits>
#include <cstdlib>
#include <fstream>
#include <sstream>
#include <thread>

#include "absl/strings/str_cat.h"
#include "engine/engine_testing.h"

namespace corral {
namespace workloads {

std::unique_ptr<engine::Database> NewDb(const std::string& protocol) {
  return engine::Database::Create(engine::engine_testing::OptionsFor(protocol)).value();
}

std::vector<std::string> TestProtocols() { return engine::engine_testing::ProtocolVariants("3"); }

std::string ProtocolParamName(const ::testing::TestParamInfo<std::string>& info) {
  std::string n = info.param;
  std::replace(n.begin(), n.end(), '-', '_');
  std::replace(n.begin(), n.end(), '/', '_');
  return n;
}

void ExpectCleanRunOfEveryType(const Workload& w, const RunStats& s) {
  EXPECT_EQ(s.failed, 0u) << s.first_failure;
  EXPECT_EQ(s.gave_up, 0u);
  ASSERT_EQ(s.commits_by_type.size(), w.TxnTypeNames().size());
  for (size_t k = 0; k < s.commits_by_type.size(); ++k) {
    EXPECT_GT(s.commits_by_type[k], 0u) << w.TxnTypeNames()[k];
  }
}

void ExpectFormsAgree(const Workload& w, RefExtractor& ex, uint64_t seed, int txns) {
  Rng rng(seed);
  std::vector<SqlStatement> sql;
  for (int i = 0; i < txns; ++i) {
    auto g = w.Next(rng);
    sql.clear();
    g->AppendSql(&sql);
    for (RefNaming n : {RefNaming::kLiteral, RefNaming::kCanonical}) {
      for (RefGrouping gr : {RefGrouping::kSingle, RefGrouping::kAll}) {
        RefVec a, b;
        ASSERT_TRUE(ExtractRefs(ex, sql, {n, gr}, false, &a, nullptr).ok());
        ASSERT_TRUE(ExtractRefs(ex, sql, {n, gr}, true, &b, nullptr).ok());
        ASSERT_FALSE(a.empty());
        EXPECT_EQ(a, b) << sql[0].Literal();
      }
    }
  }
}

RunStats RunConcurrently(const Workload& w, engine::Database* db, const RunOptions& opt) {
  // Each thread fills its own slot; the main thread merges after join (no
  // lock, so TSan sees the ordering through join alone).
  std::vector<RunStats> per_thread(opt.threads);
  std::vector<std::thread> threads;
  const int64_t deadline = MonoNanos() + static_cast<int64_t>(opt.seconds * 1e9);
  // Past the deadline the run goes on until every transaction type it has
  // generated has committed once (a loaded machine may give the threads
  // little of the time bound), up to a hard stop of 60 s more.
  const size_t types = w.TxnTypeNames().size();
  std::vector<std::atomic<bool>> generated(types), committed(types);
  std::atomic<int64_t> uncommitted_types{0};  // generated, not yet committed
  const int64_t hard_stop = deadline + int64_t{60} * 1000000000;
  auto keep_going = [&](int64_t now) {
    return now < deadline || (uncommitted_types.load(std::memory_order_relaxed) > 0 && now < hard_stop);
  };
  for (int i = 0; i < opt.threads; ++i) {
    threads.emplace_back([&, i] {
      RunStats& s = per_thread[i];
      s.commits_by_type.assign(w.TxnTypeNames().size(), 0);
      engine::ExecutorOptions eo;
      eo.backoff_ns = 2000;
      eo.max_backoff_ns = 200000;
      auto ex = db->NewExecutor(i, eo);
      if (!ex.ok()) {
        s.failed++;
        s.first_failure = std::string(ex.status().message());
        return;
      }
      Rng rng(opt.seed * 1000003 + i);
      for (uint64_t n = 0; n < opt.max_txns_per_thread && keep_going(MonoNanos()); ++n) {
        std::unique_ptr<WorkloadTxn> t = w.Next(rng);
        if (opt.access_deriver != nullptr) t->set_access_deriver(opt.access_deriver);
        if (!generated[t->type.value()].exchange(true)) uncommitted_types.fetch_add(1);
        bool done = false;
        for (int attempt = 0; attempt < 10000 && !done; ++attempt) {
          scheduler::ExecResult r = (*ex)->Execute(*t);
          switch (r.outcome) {
            case scheduler::Outcome::kCommitted:
              s.commits++;
              s.commits_by_type[t->type.value()]++;
              if (!committed[t->type.value()].exchange(true)) uncommitted_types.fetch_sub(1);
              done = true;
              break;
            case scheduler::Outcome::kConflictAbort:
              s.conflicts++;
              break;
            case scheduler::Outcome::kUserAbort:
              s.user_aborts++;
              done = true;
              break;
            case scheduler::Outcome::kFailed:
              if (s.failed++ == 0) s.first_failure = r.status.ToString();
              done = true;
              break;
          }
        }
        if (!done) s.gave_up++;
      }
    });
  }
  for (auto& t : threads) t.join();
  RunStats total;
  total.commits_by_type.assign(w.TxnTypeNames().size(), 0);
  for (const RunStats& s : per_thread) {
    total.commits += s.commits;
    total.user_aborts += s.user_aborts;
    total.conflicts += s.conflicts;
    total.gave_up += s.gave_up;
    if (s.failed > 0 && total.failed == 0) total.first_failure = s.first_failure;
    total.failed += s.failed;
    for (size_t k = 0; k < s.commits_by_type.size(); ++k) {
      total.commits_by_type[k] += s.commits_by_type[k];
    }
  }
  return total;
}

absl::StatusOr<std::string> ReadRepoFile(const std::string& relative) {
  std::vector<std::string> candidates;
  // This package's data file links back to the source tree: its real path
  // gives the repository root.
  const char* srcdir = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (srcdir != nullptr) {
    const std::string base = absl::StrCat(srcdir, "/", ws != nullptr ? ws : "__main__", "/");
    candidates.push_back(base + relative);
    char buf[PATH_MAX];
    if (realpath((base + "bench/workloads/ycsb.sql").c_str(), buf) != nullptr) {
      std::string p(buf);
      const std::string suffix = "bench/workloads/ycsb.sql";
      if (p.size() > suffix.size()) candidates.push_back(p.substr(0, p.size() - suffix.size()) + relative);
    }
  }
  candidates.push_back(relative);
  for (const std::string& c : candidates) {
    std::ifstream in(c);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
  }
  return absl::NotFoundError(absl::StrCat("cannot find ", relative));
}

absl::StatusOr<std::shared_ptr<const Schema>> LoadPolicySchema(const std::string& relative) {
  absl::StatusOr<std::string> ddl = ReadRepoFile(relative);
  if (!ddl.ok()) return ddl.status();
  SchemaBuilder b;
  absl::Status st = b.AddDdl(*ddl);
  if (!st.ok()) return st;
  return b.Build();
}

absl::Status ExtractRefs(RefExtractor& ex, const std::vector<SqlStatement>& stmts,
                         ExtractionPolicy policy, bool literal_form, RefVec* ids,
                         std::vector<std::string>* texts) {
  for (const SqlStatement& s : stmts) {
    absl::Status st;
    if (literal_form) {
      st = ex.Extract(s.Literal(), policy, ids, texts);
    } else {
      std::vector<ParamValue> params;
      for (const SqlParam& p : s.params) params.push_back(ParamValue{p.value(), p.is_null});
      st = ex.Extract(s.tmpl, policy, params, ids, texts);
    }
    if (!st.ok()) return absl::Status(st.code(), absl::StrCat(st.message(), " in: ", s.tmpl));
  }
  return absl::OkStatus();
}

}  // namespace workloads
}  // namespace corral
