// How often a transaction's read/write set derived from its SQL
// (bench/workloads/sql_sets.h, what `sets=sql` locks) is complete and exact,
// per workload and transaction type, against the workload's own declared
// set (DeclareOwnAccesses, what `sets=declared` locks before any
// reconnaissance). Each of N transactions per workload is generated, both
// sets are derived, then it runs alone (occ, one executor, so the database
// evolves as in a run) through a RecordingTx that logs what it accessed.
// Sets are compared per lock granule and mode (SetDiff): complete = every
// access covered; exact = also nothing extra.
//
//   bazel run -c opt //bench/engine:sql_sets_bench -- --txns=20000 \
//       --out=bench/results/sqlsets/table.md
//
// Prints a Markdown table (and writes it to --out). Run from the repository
// root (the schema files are read from schemas/ and bench/workloads/).
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "bench/runner/read_file.h"
#include "bench/workloads/factory.h"
#include "bench/workloads/sql_sets.h"
#include "engine/engine.h"
#include "policies/schema.h"

ABSL_FLAG(int, txns, 20000, "transactions per workload");
ABSL_FLAG(std::string, workloads, "tpcc,smallbank,tatp,ycsb", "comma-separated workloads");
ABSL_FLAG(uint64_t, seed, 1, "generator seed");
ABSL_FLAG(std::string, out, "", "also write the Markdown table here");

namespace corral {
namespace {

using workloads::SetDiff;

struct Side {
  uint64_t complete = 0, exact = 0, over = 0, missed = 0, self_complete = 0;
  std::map<std::string, uint64_t> missed_tables;
  void Add(const SetDiff& d) {
    complete += d.complete();
    exact += d.exact();
    over += d.over;
    missed += d.missed;
    for (const engine::Table* t : d.missed_tables) ++missed_tables[t->name()];
  }
};

struct TypeRow {
  uint64_t n = 0, user_aborts = 0, actual = 0;
  Side sql, declared;
};

std::string Pct(uint64_t a, uint64_t n) { return n == 0 ? "-" : absl::StrFormat("%.1f%%", 100.0 * a / n); }
std::string Avg(uint64_t a, uint64_t n) { return n == 0 ? "-" : absl::StrFormat("%.2f", static_cast<double>(a) / n); }
std::string Tables(const std::map<std::string, uint64_t>& m) {
  std::vector<std::string> parts;
  for (const auto& kv : m) parts.push_back(absl::StrCat(kv.first, " ", kv.second));
  return parts.empty() ? "-" : absl::StrJoin(parts, ", ");
}

absl::StatusOr<std::string> Measure(const std::string& name, int txns, uint64_t seed) {
  auto w = workloads::MakeWorkload(name);
  if (!w.ok()) return w.status();
  engine::DatabaseOptions o;
  o.protocol = "occ";
  auto db = engine::Database::Create(o);
  if (!db.ok()) return db.status();
  absl::Status st = (*w)->Load(db->get());
  if (!st.ok()) return st;
  std::string ddl;
  if (!bench::ReadWholeFile((*w)->schema_file(), &ddl)) {
    return absl::NotFoundError(absl::StrCat((*w)->schema_file(), " not found: run from the repository root"));
  }
  SchemaBuilder b;  // InsertRefs::kAll
  st = b.AddDdl(ddl);
  if (!st.ok()) return st;
  auto schema = b.Build();
  if (!schema.ok()) return schema.status();
  auto sets = workloads::SqlSets::Create((*w)->name(), **db, *schema);
  if (!sets.ok()) return sets.status();
  auto ex = (*db)->NewExecutor(0, {});
  if (!ex.ok()) return ex.status();

  const std::vector<std::string>& types = (*w)->TxnTypeNames();
  std::vector<TypeRow> rows(types.size());
  workloads::Rng rng(seed);
  std::vector<engine::AccessSet::Entry> log;
  for (int i = 0; i < txns; ++i) {
    std::unique_ptr<workloads::WorkloadTxn> t = (*w)->Next(rng);
    engine::AccessSet sql, own;
    (*sets)->Derive(*t, sql);
    const bool self_complete = t->DeclareOwnAccesses(own);
    engine::FunctionTxn run([&](engine::Tx& tx) {
      log.clear();
      workloads::RecordingTx rec(&tx, &log);
      return t->Run(rec);
    });
    scheduler::ExecResult r;
    do {
      r = (*ex)->Execute(run);
    } while (r.outcome == scheduler::Outcome::kConflictAbort);
    if (r.outcome == scheduler::Outcome::kFailed) return r.status;
    TypeRow& row = rows[t->type.value()];
    ++row.n;
    row.user_aborts += r.outcome == scheduler::Outcome::kUserAbort;
    const SetDiff ds = workloads::CompareAccessSets(sql.entries(), log);
    const SetDiff dd = workloads::CompareAccessSets(own.entries(), log);
    row.actual += ds.actual;
    row.sql.Add(ds);
    row.declared.Add(dd);
    row.declared.self_complete += self_complete;
  }
  st = (*w)->Check(**db);
  if (!st.ok()) return st;

  std::string md = absl::StrCat(
      "| ", name,
      " type | n | user aborts | granules accessed (avg) | SQL complete | SQL exact | SQL over (avg) | "
      "SQL missed (avg) | SQL misses by table | declared says complete | declared complete | "
      "declared exact | declared over (avg) | declared missed (avg) |\n"
      "|---|---:|---:|---:|---:|---:|---:|---:|---|---:|---:|---:|---:|---:|\n");
  TypeRow all;
  for (size_t k = 0; k < types.size(); ++k) {
    const TypeRow& r = rows[k];
    if (r.n == 0) continue;
    absl::StrAppend(&md, "| ", types[k], " | ", r.n, " | ", r.user_aborts, " | ", Avg(r.actual, r.n), " | ",
                    Pct(r.sql.complete, r.n), " | ", Pct(r.sql.exact, r.n), " | ", Avg(r.sql.over, r.n), " | ",
                    Avg(r.sql.missed, r.n), " | ", Tables(r.sql.missed_tables), " | ",
                    Pct(r.declared.self_complete, r.n), " | ", Pct(r.declared.complete, r.n), " | ",
                    Pct(r.declared.exact, r.n), " | ", Avg(r.declared.over, r.n), " | ",
                    Avg(r.declared.missed, r.n), " |\n");
    all.n += r.n;
    all.user_aborts += r.user_aborts;
    all.actual += r.actual;
    for (auto [dst, src] : {std::make_pair(&all.sql, &r.sql), std::make_pair(&all.declared, &r.declared)}) {
      dst->complete += src->complete;
      dst->exact += src->exact;
      dst->over += src->over;
      dst->missed += src->missed;
      dst->self_complete += src->self_complete;
    }
  }
  absl::StrAppend(&md, "| **all** | ", all.n, " | ", all.user_aborts, " | ", Avg(all.actual, all.n), " | ",
                  Pct(all.sql.complete, all.n), " | ", Pct(all.sql.exact, all.n), " | ", Avg(all.sql.over, all.n),
                  " | ", Avg(all.sql.missed, all.n), " | | ", Pct(all.declared.self_complete, all.n), " | ",
                  Pct(all.declared.complete, all.n), " | ", Pct(all.declared.exact, all.n), " | ",
                  Avg(all.declared.over, all.n), " | ", Avg(all.declared.missed, all.n), " |\n");
  return md;
}

}  // namespace
}  // namespace corral

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (const char* d = std::getenv("BUILD_WORKSPACE_DIRECTORY")) {
    if (chdir(d) != 0) std::perror("chdir");
  }
  std::string md;
  const std::vector<std::string> names = absl::StrSplit(absl::GetFlag(FLAGS_workloads), ',', absl::SkipEmpty());
  for (const std::string& name : names) {
    auto t = corral::Measure(name, absl::GetFlag(FLAGS_txns), absl::GetFlag(FLAGS_seed));
    if (!t.ok()) {
      std::fprintf(stderr, "sql_sets_bench: %s: %s\n", name.c_str(), t.status().ToString().c_str());
      return 1;
    }
    absl::StrAppend(&md, *t, "\n");
    std::fputs(t->c_str(), stdout);
    std::fputs("\n", stdout);
    std::fflush(stdout);
  }
  const std::string out = absl::GetFlag(FLAGS_out);
  if (!out.empty()) {
    FILE* f = std::fopen(out.c_str(), "w");
    if (f == nullptr || std::fputs(md.c_str(), f) < 0 || std::fclose(f) != 0) {
      std::fprintf(stderr, "sql_sets_bench: cannot write %s\n", out.c_str());
      return 1;
    }
  }
  return 0;
}
