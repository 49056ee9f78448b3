// Test helpers for the workload tests: a bounded concurrent run on the
// engine (one EngineExecutor per thread, conflicts retried), locating the
// DDL files, and extracting a transaction's references from its SQL form.
// Failures are reported through gtest.
//
//   RunStats s = RunConcurrently(w, db.get(), {.threads = 3, .seconds = 0.3});
//   EXPECT_EQ(s.failed, 0);
//   std::string ddl = ReadRepoFile("schemas/tpcc.sql").value();
//
// Thread-safety: each function is thread-compatible (call from the test thread).
#ifndef CORRAL_BENCH_WORKLOADS_WORKLOAD_TESTING_H_
#define CORRAL_BENCH_WORKLOADS_WORKLOAD_TESTING_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/workloads/workload.h"
#include "engine/engine.h"
#include "gtest/gtest.h"
#include "policies/ref_extractor.h"
#include "policies/schema.h"

namespace corral {
namespace workloads {

struct RunOptions {
  int threads = 3;
  double seconds = 0.3;
  uint64_t max_txns_per_thread = 20000;
  uint64_t seed = 7;
  // Non-null: installed on every generated transaction (WorkloadTxn::set_access_deriver).
  const AccessDeriver* access_deriver = nullptr;
};

struct RunStats {
  std::vector<uint64_t> commits_by_type;
  uint64_t commits = 0, user_aborts = 0, conflicts = 0, failed = 0, gave_up = 0;
  std::string first_failure;
};

// A fresh engine database under `protocol` (dies on a bad name).
// "orthrus/N" is orthrus with N CC threads, "qstore/P" qstore with
// placement P (engine/engine_testing.h, OptionsFor).
std::unique_ptr<engine::Database> NewDb(const std::string& protocol);
// The protocols the correctness suites run: ProtocolNames(), orthrus
// with 3 CC threads ("orthrus/3"; ProtocolNames' "orthrus" has 1), and
// qstore under range and learned placement ("qstore/range",
// "qstore/learned"; ProtocolNames' "qstore" places by hash) and under
// speculative execution ("qstore/speculative").
std::vector<std::string> TestProtocols();
// Test-name suffix for a protocol parameter ("2pl-nowait" -> "2pl_nowait").
std::string ProtocolParamName(const ::testing::TestParamInfo<std::string>& info);

// Generates and runs transactions on `threads` threads until the time or
// count bound (past the time bound, until every transaction type it
// generated has committed once, at most 60 s more); a conflict is retried
// (backoff in the executor) up to 10,000 times, then counted in gave_up.
RunStats RunConcurrently(const Workload& w, engine::Database* db, const RunOptions& opt);
// A clean run: no failure, no transaction that gave up, and a commit of
// every transaction type of `w` (gtest failures otherwise).
void ExpectCleanRunOfEveryType(const Workload& w, const RunStats& s);

// The contents of a file given relative to the repository root (found
// through this package's runfiles, which link back into the source tree).
absl::StatusOr<std::string> ReadRepoFile(const std::string& relative);
// A policies Schema from a DDL file relative to the repository root.
absl::StatusOr<std::shared_ptr<const Schema>> LoadPolicySchema(const std::string& relative);

// The references of `stmts` under `policy`: from the template + parameters
// form (literal_form false) or from the literal text form (true).
absl::Status ExtractRefs(RefExtractor& ex, const std::vector<SqlStatement>& stmts,
                         ExtractionPolicy policy, bool literal_form, RefVec* ids,
                         std::vector<std::string>* texts);
// For `txns` transactions generated from `seed`: under every naming and
// grouping, the template + parameters form and the literal text form yield
// the same non-empty references (gtest failures otherwise).
void ExpectFormsAgree(const Workload& w, RefExtractor& ex, uint64_t seed, int txns);

}  // namespace workloads
}  // namespace corral

#endif  // CORRAL_BENCH_WORKLOADS_WORKLOAD_TESTING_H_
