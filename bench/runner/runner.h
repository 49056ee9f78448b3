// The experiment runner: one `corral bench` run = (optional) Phase I that
// fills the History under random scheduling, then Phase II runs on a fresh
// database with the History frozen and a fresh State, repeated and averaged
// (DESIGN.md "Experiments", paper section 6); or one online run that keeps
// learning while the workload's skew changes over time.
//
// Generation. Closed loop (arrival_rate = 0): K = clients transactions are
// outstanding; the scheduler's completion hook, on the worker that finished
// one, generates the next with that worker's Rng, extracts its references
// (RefExtractor over the transaction's SQL template + parameters, under the
// policy's extraction half) and submits it. No client threads. Open loop: one
// generator thread with Poisson arrivals at arrival_rate.
// Scheduling cost per transaction = extraction + Submit (decision, State
// update, enqueue), measured around the calls.
//
// Seams: a Backend opens one database instance per run (fresh for every
// Phase II repetition) and gives one Executor per queue; EngineBackend is the
// embedded engine; a PostgreSQL backend implements the same interface
// (PrepareTxn turns the WorkloadTxn into the executor's own Txn). The
// workload comes from an injected WorkloadFactory.
//
//   Runner runner(MakeEngineBackend(), my_workload_factory, schema);
//   BenchConfig c; c.workload = "tpcc"; c.policy = "count-max-canonical-single";
//   absl::StatusOr<BenchResult> r = runner.Run(c);
//   PrintReport(*r, stdout);
//
// Thread-safety: a Runner runs one configuration at a time (Run is not
// reentrant); it starts and joins its own threads inside Run.
#ifndef CORRAL_BENCH_RUNNER_RUNNER_H_
#define CORRAL_BENCH_RUNNER_RUNNER_H_

#include <array>
#include <cstdint>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "bench/runner/config.h"
#include "bench/runner/interference.h"
#include "bench/runner/stats.h"
#include "bench/workloads/workload.h"
#include "history/history.h"
#include "policies/ref_extractor.h"
#include "policies/schema.h"
#include "scheduler/txn.h"

namespace corral {
namespace bench {

// One database instance (a run's fresh database and its executors).
// Thread-safety: Executors() entries are each driven by one worker thread;
// the other methods are called by the controlling thread while quiescent.
class BackendInstance {
 public:
  virtual ~BackendInstance() = default;
  // One per queue, owned by the instance.
  virtual std::vector<scheduler::Executor*> Executors() = 0;
  // The transaction the executors run (the engine runs the WorkloadTxn itself).
  virtual std::unique_ptr<scheduler::Txn> PrepareTxn(std::unique_ptr<workloads::WorkloadTxn> t) {
    return t;
  }
  // The workload's consistency check after the run.
  virtual absl::Status Check(const workloads::Workload& w) = 0;
  // Executor-side counts (commits, conflict aborts), for accounting checks;
  // false when the backend does not keep them.
  virtual bool ExecutorCounts(uint64_t* commits, uint64_t* conflict_aborts) {
    (void)commits; (void)conflict_aborts;
    return false;
  }
  // Planned protocols (calvin, planned, qstore): their planning counts and phase
  // times, one line; empty for others.
  virtual std::string PlanReport() { return ""; }
  // qstore: the mean number of execution queues a transaction's plan
  // spanned (queue heads it had to reach), whole run; 0 for others.
  virtual double QueuesPerTxn() { return 0; }
};

// Opens fresh database instances. Thread-compatible.
class Backend {
 public:
  virtual ~Backend() = default;
  virtual std::string name() const = 0;
  // A fresh, loaded database for `w` with `queues` executors.
  virtual absl::StatusOr<std::unique_ptr<BackendInstance>> Open(const BenchConfig& c,
                                                                workloads::Workload& w) = 0;
};

// The embedded engine (engine::Database with c.protocol, one EngineExecutor per queue).
std::unique_ptr<Backend> MakeEngineBackend();

// Builds the workload a configuration names, with its knobs applied.
using WorkloadFactory =
    std::function<absl::StatusOr<std::unique_ptr<workloads::Workload>>(const BenchConfig&)>;

// One timeline sample.
struct Sample {
  double t_s = 0;          // since the run's start (warmup included)
  double tps = 0;          // commits/s over the sample period
  double abort_rate = 0;   // over the sample period
  int phase = -1;          // workload skew phase
  int64_t history_entries = 0, history_bytes = 0;
  int64_t state_entries = 0, state_bytes = 0;
  std::string chosen;      // the policy routing now (auto: its current arm)
  int hot_queues = 1;      // queues given to the hottest split reference
  int64_t switches = 0;    // auto's policy switches so far
};

struct TypeResult {
  std::string name;
  uint64_t commits = 0, conflict_aborts = 0, user_aborts = 0, failures = 0;
};

// The measured window of one run.
struct RunMetrics {
  // State rows (per-queue counts) at the end of the run of the learned
  // references BenchResult::top_learned names (show_learned), same order;
  // empty for a reference without a row.
  std::vector<std::vector<uint64_t>> learned_rows;
  double seconds = 0;
  uint64_t commits = 0;
  uint64_t conflict_aborts = 0;
  uint64_t user_aborts = 0;
  uint64_t failures = 0;
  uint64_t gave_up = 0;
  uint64_t steals = 0;
  // Commits per worker (= run queue) in the measured window: how evenly the
  // policy spread the load.
  std::vector<uint64_t> worker_commits;
  std::array<uint64_t, static_cast<size_t>(scheduler::AbortCause::kCount)> aborts_by_cause{};
  double tps = 0;
  double abort_rate = 0;
  double p50_us = 0, p95_us = 0, p99_us = 0, mean_us = 0;  // response time, committed txns
  double sched_cost_ns = 0;      // per transaction: extraction + decision/enqueue
  double extract_ns = 0;         // of which extraction
  // The same in thread CPU time (wall time above also counts waiting for a
  // core and for locks whose holder was preempted: the box is shared). The
  // clock's own cost is taken out: reading a thread's CPU time is a system
  // call (~0.6 us here) and an interval between two reads counts about one
  // of them, so `probe_cpu_ns` (the median empty interval, measured on the
  // same thread before the run) is subtracted from each timed interval.
  double sched_cpu_ns = 0, extract_cpu_ns = 0;
  double probe_cpu_ns = 0;
  // RefExtractor plan cache this run: misses = shapes compiled (libpg_query),
  // hits = statements extracted - misses.
  uint64_t extract_cache_hits = 0, extract_cache_misses = 0;
  // route_on = first / templates: references routing saw, of all those the
  // extracted transactions touched, and transactions with a template
  // prediction (summed over the run).
  uint64_t route_seen_refs = 0, route_all_refs = 0, route_predicted_txns = 0;
  std::vector<TypeResult> per_type;
  absl::Status check;            // workload consistency after the run
  std::vector<Sample> timeline;
  // --policy=auto: every switch, "t_s from -> to (reason)".
  std::vector<std::string> switch_log;
  int64_t history_entries = 0, history_bytes = 0, state_entries = 0, state_bytes = 0;
  // Whole-run totals (warmup and drain included) vs. the executors' own counts.
  uint64_t total_commits = 0, total_conflict_aborts = 0;
  bool have_executor_counts = false;
  uint64_t executor_commits = 0, executor_conflict_aborts = 0;
  std::string plan_report;       // BackendInstance::PlanReport (whole run)
  double queues_per_txn = 0;     // BackendInstance::QueuesPerTxn (whole run; qstore)
  uint64_t hook_commits = 0;     // commits seen by the completion hook (whole run)
  // Sum of all History counters (aborts + commits) when the run started (after
  // loading a learned History) and when it ended: equal when frozen.
  uint64_t history_counts_start = 0, history_counts_end = 0;
  // What the machine did to the measured window (interference.h); invalid
  // when the probe could not read /proc.
  Interference interference;
  // Set by the experiment driver: the round this run belongs to (0 = not
  // part of an interleaved experiment) and whether it lost more than the
  // spec's max_interference share of the machine (excluded from the means,
  // re-run).
  int round = 0;
  bool contaminated = false;
};

struct BenchResult {
  BenchConfig config;
  bool has_phase1 = false;
  RunMetrics phase1;
  int64_t learned_refs = 0;      // History entries carried into Phase II
  // The config's show_learned references with the most aborts (text,
  // aborts, commits), most first.
  std::vector<history::History::TopEntry> top_learned;
  std::vector<RunMetrics> runs;  // Phase II repetitions (online: one)
  MeanCi tps, abort_rate, p50_us, p99_us, sched_cost_ns;
  bool all_checks_ok = true;
};

// A learned History, carried from Phase I into Phase II (and shared between
// policies with the same extraction half by the experiment driver).
struct LearnedHistory {
  std::vector<history::History::TopEntry> entries;
};

class Runner {
 public:
  // `schema` (for canonical naming) is built by the caller from the
  // workload's schema_file(); see LoadSchemaFor.
  // `probe` reads what the machine did to each measured window (null = the
  // real /proc; tests pass a fake).
  Runner(std::unique_ptr<Backend> backend, WorkloadFactory factory,
         std::shared_ptr<MachineProbe> probe = nullptr);

  // Phase I (if the policy is learned and mode is phased; skipped when
  // `learned` is given), then `repeat` Phase II runs; or one online run.
  // `first_rep`: the index of the first Phase II repetition, which picks its
  // seed (c.seed + 1000 * (rep + 1)) and Phase I's: the interleaving
  // experiment driver runs one repetition per call and passes the round.
  absl::StatusOr<BenchResult> Run(const BenchConfig& c, const LearnedHistory* learned = nullptr,
                                  LearnedHistory* learned_out = nullptr, int first_rep = 0);

 private:
  struct RunSpec;
  absl::StatusOr<RunMetrics> RunOnce(const BenchConfig& c, const RunSpec& spec);
  absl::StatusOr<std::shared_ptr<RefExtractor>> ExtractorFor(const workloads::Workload& w,
                                                             InsertRefs insert_refs);
  // Fills the texts of `entries` from a sample of generated transactions.
  void NameReferences(const BenchConfig& c, const ExtractionPolicy& policy,
                      std::vector<history::History::TopEntry>* entries);

  std::unique_ptr<Backend> backend_;
  WorkloadFactory factory_;
  std::shared_ptr<MachineProbe> probe_;
  std::map<std::string, std::shared_ptr<RefExtractor>> extractors_;  // by schema file
};

// Reads and builds the schema of a DDL file; searched relative to the
// working directory, $BUILD_WORKSPACE_DIRECTORY and $TEST_SRCDIR/corral.
absl::StatusOr<std::shared_ptr<const Schema>> LoadSchemaFile(const std::string& path,
                                                             InsertRefs insert_refs = InsertRefs::kAll);

// Human-readable report (the end of `corral bench`).
void PrintReport(const BenchResult& r, std::FILE* out);
// Machine-readable forms. CSV: one row per Phase II run (CsvHeader first).
std::string CsvHeader();
std::string CsvRows(const BenchResult& r);
std::string ToJson(const BenchResult& r);
// Timeline CSV (t_s, tps, abort_rate, phase, history/state entries and
// bytes, the policy chosen, the hottest reference's queues, auto switches).
std::string TimelineCsv(const BenchResult& r);

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_RUNNER_H_
