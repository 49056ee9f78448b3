// Measures, in one run on one corpus of TPC-C statements (all five
// transactions' statement kinds, random literals): pg_query_parse per
// statement (the baseline) against Corral's cached reference extraction
// (RefExtractor::Extract on a warm cache, RefIds only), plus the uncached
// path. Reports median / p99 / mean per statement (each call timed with a
// steady_clock pair, whose own cost is printed too) and the ratios, and a
// bulk pass per side without per-call timers.
//
// Then, on generated TPC-C transactions (8 warehouses), in thread CPU ns per
// transaction: the text path (AppendSql, the parameter copy and one Extract
// per statement) and the bench runner's path (AppendBound + SqlRefs: template
// slots filled from typed parameters, what `corral bench` reports as
// "extraction"), with a checksum of every RefId against the uncached path
// (libpg_query, values from the tree) and the runner path checked equal to
// the text path.
//
//   bazel run -c opt //bench/extract:extract_bench -- --statements=20000 --txns=20000
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_cat.h"
#include "pg_query.h"
#include "policies/ref_extractor.h"
#include "policies/schema.h"
#include "policies/sql_lexer.h"
#include "absl/hash/hash.h"
#include "bench/runner/sql_refs.h"
#include "bench/workloads/tpcc.h"
#include "bench/workloads/workload.h"
#include <time.h>

ABSL_FLAG(int, statements, 20000, "corpus size");
ABSL_FLAG(int, rounds, 5, "timed passes over the corpus (per-statement samples pooled)");
ABSL_FLAG(std::string, schema, "schemas/tpcc.sql", "TPC-C DDL");
ABSL_FLAG(std::string, policy, "canonical-single", "naming-grouping for Corral's extraction");
ABSL_FLAG(bool, txn_check, true, "check the transactions' RefIds against the uncached path first");
ABSL_FLAG(int, txns, 20000, "generated TPC-C transactions for the runner-path measurement (0: skip)");

namespace {

using Clock = std::chrono::steady_clock;

const char* const kTemplates[] = {
    "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = #n AND c_d_id = #n AND c_id = #n",
    "SELECT w_tax FROM warehouse WHERE w_id = #n",
    "SELECT d_next_o_id, d_tax FROM district WHERE d_w_id = #n AND d_id = #n FOR UPDATE",
    "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = #n AND d_id = #n",
    "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_ol_cnt, o_all_local) "
    "VALUES (#n, #n, #n, #n, #s, #n, #n)",
    "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES (#n, #n, #n)",
    "SELECT i_price, i_name, i_data FROM item WHERE i_id = #n",
    "SELECT s_quantity, s_data, s_dist_01 FROM stock WHERE s_i_id = #n AND s_w_id = #n FOR UPDATE",
    "UPDATE stock SET s_quantity = #n WHERE s_i_id = #n AND s_w_id = #n",
    "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, ol_quantity, "
    "ol_amount, ol_dist_info) VALUES (#n, #n, #n, #n, #n, #n, #n, #d, #s)",
    "UPDATE warehouse SET w_ytd = w_ytd + #d WHERE w_id = #n",
    "SELECT w_street_1, w_street_2, w_city, w_state, w_zip, w_name FROM warehouse WHERE w_id = #n",
    "UPDATE district SET d_ytd = d_ytd + #d WHERE d_w_id = #n AND d_id = #n",
    "SELECT count(c_id) FROM customer WHERE c_w_id = #n AND c_d_id = #n AND c_last = #s",
    "SELECT c_first, c_middle, c_id, c_balance FROM customer WHERE c_w_id = #n AND c_d_id = #n "
    "AND c_last = #s ORDER BY c_first",
    "SELECT c_first, c_credit, c_balance FROM customer WHERE c_w_id = #n AND c_d_id = #n AND c_id = #n FOR UPDATE",
    "UPDATE customer SET c_balance = #d, c_ytd_payment = #d, c_payment_cnt = #n "
    "WHERE c_w_id = #n AND c_d_id = #n AND c_id = #n",
    "INSERT INTO history (h_c_d_id, h_c_w_id, h_c_id, h_d_id, h_w_id, h_date, h_amount, h_data) "
    "VALUES (#n, #n, #n, #n, #n, #s, #d, #s)",
    "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = #n AND o_d_id = #n AND o_c_id = #n "
    "ORDER BY o_id DESC LIMIT 1",
    "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount FROM order_line WHERE ol_w_id = #n "
    "AND ol_d_id = #n AND ol_o_id = #n",
    "SELECT no_o_id FROM new_order WHERE no_d_id = #n AND no_w_id = #n ORDER BY no_o_id ASC LIMIT 1 FOR UPDATE",
    "DELETE FROM new_order WHERE no_o_id = #n AND no_d_id = #n AND no_w_id = #n",
    "SELECT o_c_id FROM orders WHERE o_id = #n AND o_d_id = #n AND o_w_id = #n",
    "UPDATE orders SET o_carrier_id = #n WHERE o_id = #n AND o_d_id = #n AND o_w_id = #n",
    "UPDATE order_line SET ol_delivery_d = #s WHERE ol_o_id = #n AND ol_d_id = #n AND ol_w_id = #n",
    "SELECT SUM(ol_amount) FROM order_line WHERE ol_o_id = #n AND ol_d_id = #n AND ol_w_id = #n",
    "UPDATE customer SET c_balance = c_balance + #d, c_delivery_cnt = c_delivery_cnt + 1 "
    "WHERE c_id = #n AND c_d_id = #n AND c_w_id = #n",
    "SELECT d_next_o_id FROM district WHERE d_w_id = #n AND d_id = #n",
    "SELECT COUNT(DISTINCT (s_i_id)) FROM order_line, stock WHERE ol_w_id = #n AND ol_d_id = #n "
    "AND ol_o_id < #n AND ol_o_id >= #n AND s_w_id = #n AND s_i_id = ol_i_id AND s_quantity < #n",
};

std::string Instantiate(const std::string& t, std::mt19937_64& rng) {
  static const char* const kSyl[] = {"BAR", "OUGHT", "ABLE", "PRI", "PRES", "ESE", "ANTI", "CALLY", "ATION", "EING"};
  std::string out;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] != '#' || i + 1 >= t.size()) {
      out += t[i];
      continue;
    }
    char k = t[++i];
    if (k == 'n') {
      out += std::to_string(1 + rng() % 3000);
    } else if (k == 'd') {
      out += absl::StrCat(rng() % 5000, ".", rng() % 100);
    } else {
      out += absl::StrCat("'", kSyl[rng() % 10], kSyl[rng() % 10], kSyl[rng() % 10], "'");
    }
  }
  return out;
}

struct Summary {
  double median_ns, p99_ns, mean_ns;
};

Summary Summarize(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  double sum = 0;
  for (double x : v) sum += x;
  return {v[v.size() / 2], v[std::min(v.size() - 1, v.size() * 99 / 100)], sum / v.size()};
}

void Print(const char* name, const Summary& s) {
  std::printf("%-34s median %8.0f ns   p99 %8.0f ns   mean %8.0f ns\n", name, s.median_ns, s.p99_ns, s.mean_ns);
}

int64_t ThreadCpuNs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000 + ts.tv_nsec;
}

// The runner's `generate` path (bench/runner/runner.cc) on generated TPC-C
// transactions: best of `rounds` passes, thread CPU per transaction.
int TpccTxnPath(const std::string& ddl, corral::ExtractionPolicy policy, int n, int rounds) {
  using namespace corral;  // NOLINT
  SchemaBuilder sb;
  sb.SetInsertRefs(InsertRefs::kForeignKeys);  // the bench runner's default (--insert_refs)
  if (!sb.AddDdl(ddl).ok()) return 1;
  auto schema = sb.Build();
  if (!schema.ok()) return 1;
  workloads::TpccParams tp;
  tp.warehouses = 8;
  workloads::TpccWorkload w(tp);
  workloads::Rng rng(12345);
  std::vector<std::unique_ptr<workloads::WorkloadTxn>> txns;
  for (int i = 0; i < n; ++i) txns.push_back(w.Next(rng));
  RefExtractor ex(*schema);
  std::vector<workloads::SqlStatement> sql;
  std::vector<ParamValue> params;
  RefVec refs;
  // Correctness first: every RefId against the uncached path; the checksum
  // identifies the references across builds.
  uint64_t sum = 0, cold_sum = 0, stmts = 0, nrefs = 0;
  for (const auto& t : txns) {
    sql.clear();
    t->AppendSql(&sql);
    RefVec hot, cold;
    for (const auto& s : sql) {
      params.clear();
      for (const auto& p : s.params) params.push_back(ParamValue{p.value(), p.is_null});
      if (!ex.Extract(s.tmpl, policy, ParamSpan(params), &hot).ok()) return 1;
      if (absl::GetFlag(FLAGS_txn_check) && !ex.ExtractUncached(s.tmpl, policy, ParamSpan(params), &cold).ok()) {
        return 1;
      }
    }
    stmts += sql.size();
    nrefs += hot.size();
    for (size_t i = 0; i < hot.size(); ++i) sum = sum * 1000003 + hot[i].value();
    for (size_t i = 0; i < cold.size(); ++i) cold_sum = cold_sum * 1000003 + cold[i].value();
  }
  std::printf("\nTPC-C transactions (8 warehouses, runner path): %d txns, %.1f statements and %.1f refs per txn\n", n,
              static_cast<double>(stmts) / n, static_cast<double>(nrefs) / n);
  std::printf("RefId checksum: cached %016llx, uncached %016llx: %s\n", static_cast<unsigned long long>(sum),
              static_cast<unsigned long long>(cold_sum), sum == cold_sum ? "equal" : "DIFFERENT");
  if (absl::GetFlag(FLAGS_txn_check) && sum != cold_sum) return 1;
  // The runner's path (bench/runner/sql_refs.h): each template's reference
  // slots compiled once, found by address, filled from the bound (typed)
  // parameters, with statement counts. Its references must equal the text
  // path's.
  auto shared_ex = std::make_shared<RefExtractor>(*schema);
  bench::SqlRefs sql_refs(shared_ex);
  bench::SqlRefs::Local local;
  workloads::BoundSql bound;
  RefMult mult;
  // The text path: AppendSql + parameter copy + Extract per statement.
  auto text_path = [&](const workloads::WorkloadTxn& t, RefVec* out) {
    sql.clear();
    t.AppendSql(&sql);
    for (const auto& s : sql) {
      params.clear();
      for (const auto& p : s.params) params.push_back(ParamValue{p.value(), p.is_null});
      if (!ex.Extract(s.tmpl, policy, ParamSpan(params), out).ok()) return false;
    }
    return true;
  };
  for (const auto& t : txns) {
    RefVec a, b;
    if (!text_path(*t, &a)) return 1;
    mult.clear();
    bound.clear();
    t->AppendBound(&bound);
    if (sql_refs.Extract(bound, policy, &local, &b, &mult) != 0 || a != b || mult.size() != b.size()) {
      std::printf("template path differs from the text path\n");
      return 1;
    }
  }
  double best_gen = 1e300, best_all = 1e300, best_bind = 1e300, best_prep = 1e300, best_nocount = 1e300;
  for (int r = 0; r < rounds; ++r) {
    // AppendSql alone.
    int64_t c0 = ThreadCpuNs();
    for (const auto& t : txns) {
      sql.clear();
      t->AppendSql(&sql);
    }
    int64_t c1 = ThreadCpuNs();
    // AppendSql + parameter copy + Extract (text work per statement).
    for (const auto& t : txns) {
      refs.clear();
      if (!text_path(*t, &refs)) return 1;
    }
    int64_t c2 = ThreadCpuNs();
    // AppendBound alone.
    for (const auto& t : txns) {
      bound.clear();
      t->AppendBound(&bound);
    }
    int64_t c3 = ThreadCpuNs();
    // The runner's path: AppendBound + SqlRefs (template slots, counts).
    for (const auto& t : txns) {
      refs.clear();
      mult.clear();
      bound.clear();
      t->AppendBound(&bound);
      if (sql_refs.Extract(bound, policy, &local, &refs, &mult) != 0) return 1;
    }
    int64_t c4 = ThreadCpuNs();
    // The runner's default path (no ref_multiplicity): no statement counts.
    for (const auto& t : txns) {
      refs.clear();
      bound.clear();
      t->AppendBound(&bound);
      if (sql_refs.Extract(bound, policy, &local, &refs, nullptr) != 0) return 1;
    }
    int64_t c5 = ThreadCpuNs();
    best_nocount = std::min(best_nocount, static_cast<double>(c5 - c4) / n);
    best_gen = std::min(best_gen, static_cast<double>(c1 - c0) / n);
    best_all = std::min(best_all, static_cast<double>(c2 - c1) / n);
    best_bind = std::min(best_bind, static_cast<double>(c3 - c2) / n);
    best_prep = std::min(best_prep, static_cast<double>(c4 - c3) / n);
  }
  std::printf("thread CPU per txn (best of %d): AppendSql %.0f ns; AppendSql+Extract %.0f ns (Extract %.0f ns)\n",
              rounds, best_gen, best_all, best_all - best_gen);
  std::printf("runner path (template slots + statement counts): AppendBound %.0f ns; AppendBound+SqlRefs %.0f ns "
              "(SqlRefs %.0f ns)\n",
              best_bind, best_prep, best_prep - best_bind);
  std::printf("runner path without counts (the default): AppendBound+SqlRefs %.0f ns (SqlRefs %.0f ns)\n",
              best_nocount, best_nocount - best_bind);
  std::printf("target: AppendSql+Extract <= 5000 ns per TPC-C txn: %s; runner path: %s\n",
              best_all <= 5000 ? "met" : "MISSED", best_prep <= 5000 ? "met" : "MISSED");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::ifstream in(absl::GetFlag(FLAGS_schema));
  std::stringstream ss;
  ss << in.rdbuf();
  corral::SchemaBuilder b;
  absl::Status st = b.AddDdl(ss.str());
  if (!st.ok() || ss.str().empty()) {
    std::fprintf(stderr, "schema %s: %s\n", absl::GetFlag(FLAGS_schema).c_str(), std::string(st.message()).c_str());
    return 1;
  }
  auto schema = b.Build();
  if (!schema.ok()) return 1;
  corral::ExtractionPolicy policy;
  std::string pol = absl::GetFlag(FLAGS_policy);
  policy.naming = pol.rfind("literal", 0) == 0 ? corral::RefNaming::kLiteral : corral::RefNaming::kCanonical;
  policy.grouping = pol.find("-all") != std::string::npos ? corral::RefGrouping::kAll : corral::RefGrouping::kSingle;

  std::mt19937_64 rng(42);
  const int n = absl::GetFlag(FLAGS_statements);
  const int num_t = sizeof(kTemplates) / sizeof(kTemplates[0]);
  std::vector<std::string> corpus;
  for (int i = 0; i < n; ++i) corpus.push_back(Instantiate(kTemplates[rng() % num_t], rng));
  size_t bytes = 0;
  for (const auto& s : corpus) bytes += s.size();
  std::printf("corpus: %d TPC-C statements (%d shapes), mean %.0f bytes; policy %s\n", n, num_t,
              static_cast<double>(bytes) / n, pol.c_str());

  // Timer overhead (subtracted from nothing; reported so small figures can be judged).
  std::vector<double> overhead;
  for (int i = 0; i < 100000; ++i) {
    auto t0 = Clock::now();
    auto t1 = Clock::now();
    overhead.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  Print("timer overhead (now() pair)", Summarize(overhead));

  corral::RefExtractor ex(*schema);
  corral::RefVec ids;
  size_t total_refs = 0;
  for (const auto& s : corpus) {  // warm the cache: one miss per shape
    ids.clear();
    if (!ex.Extract(s, policy, &ids).ok()) {
      std::fprintf(stderr, "extract failed: %s\n", s.c_str());
      return 1;
    }
    total_refs += ids.size();
  }

  std::vector<double> pg, hit, cold;
  const int rounds = absl::GetFlag(FLAGS_rounds);
  for (int r = 0; r < rounds; ++r) {
    // One pass each per round, alternating, samples pooled over the rounds.
    for (const auto& s : corpus) {
      auto t0 = Clock::now();
      PgQueryParseResult res = pg_query_parse(s.c_str());
      pg_query_free_parse_result(res);
      auto t1 = Clock::now();
      pg.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
    for (const auto& s : corpus) {
      ids.clear();
      auto t0 = Clock::now();
      absl::Status e = ex.Extract(s, policy, &ids);
      auto t1 = Clock::now();
      if (!e.ok()) return 1;
      hit.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    }
  }
  for (size_t i = 0; i < corpus.size() && i < 5000; ++i) {
    ids.clear();
    auto t0 = Clock::now();
    absl::Status e = ex.ExtractUncached(corpus[i], policy, {}, &ids);
    auto t1 = Clock::now();
    if (!e.ok()) return 1;
    cold.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
  }
  // Breakdown of the hit path's parts.
  std::vector<double> lex_ns, hash_ns;
  corral::LexResult lx;
  for (const auto& s : corpus) {
    auto t0 = Clock::now();
    corral::LexSql(s, &lx);
    auto t1 = Clock::now();
    volatile uint64_t h = absl::Hash<absl::string_view>{}(absl::string_view(lx.key));
    (void)h;
    auto t2 = Clock::now();
    lex_ns.push_back(std::chrono::duration<double, std::nano>(t1 - t0).count());
    hash_ns.push_back(std::chrono::duration<double, std::nano>(t2 - t1).count());
  }
  Print("  of which: LexSql", Summarize(lex_ns));
  Print("  of which: absl::Hash(shape key)", Summarize(hash_ns));
  // Bulk passes without per-call timers (no timer overhead): mean per statement.
  double bulk_pg = 1e300, bulk_hit = 1e300;
  for (int r = 0; r < rounds; ++r) {
    auto t0 = Clock::now();
    for (const auto& s : corpus) {
      PgQueryParseResult res = pg_query_parse(s.c_str());
      pg_query_free_parse_result(res);
    }
    auto t1 = Clock::now();
    for (const auto& s : corpus) {
      ids.clear();
      if (!ex.Extract(s, policy, &ids).ok()) return 1;
    }
    auto t2 = Clock::now();
    bulk_pg = std::min(bulk_pg, std::chrono::duration<double, std::nano>(t1 - t0).count() / n);
    bulk_hit = std::min(bulk_hit, std::chrono::duration<double, std::nano>(t2 - t1).count() / n);
  }
  Summary spg = Summarize(pg), shit = Summarize(hit), scold = Summarize(cold);
  Print("pg_query_parse (+free)", spg);
  Print("corral Extract, cache hit", shit);
  Print("corral ExtractUncached (parse+plan)", scold);
  corral::RefExtractor::Stats stats = ex.stats();
  std::printf("refs per statement: %.2f; cache: %llu misses (libpg_query runs), %zu shapes\n",
              static_cast<double>(total_refs) / n, static_cast<unsigned long long>(stats.misses), stats.entries);
  std::printf("speedup of cache hit over pg_query_parse: median %.1fx, p99 %.1fx, mean %.1fx\n",
              spg.median_ns / shit.median_ns, spg.p99_ns / shit.p99_ns, spg.mean_ns / shit.mean_ns);
  std::printf("bulk pass (best of %d, no per-call timers): pg_query_parse %.0f ns, cache hit %.0f ns per statement: %.1fx\n",
              rounds, bulk_pg, bulk_hit, bulk_pg / bulk_hit);
  std::printf("targets: hit median <= 500 ns: %s; >= 15x faster (median): %s\n",
              shit.median_ns <= 500 ? "met" : "MISSED", spg.median_ns / shit.median_ns >= 15 ? "met" : "MISSED");
  if (absl::GetFlag(FLAGS_txns) > 0) return TpccTxnPath(ss.str(), policy, absl::GetFlag(FLAGS_txns), rounds);
  return 0;
}
