// BenchConfig: everything one `corral bench` run needs, and the key = value
// vocabulary shared by the CLI flags and experiment spec files.
//
//   BenchConfig c;
//   CHECK_OK(ApplySetting(&c, "protocol", "2pl-waitdie"));
//   CHECK_OK(ApplySetting(&c, "skew_phases", "10:0, 10:0.99"));  // duration_s:zipf_theta
//   CHECK_OK(ApplySetting(&c, "tpcc_mix", "payment"));              // Payment only
//   std::string err = ApplySetting(&c, "queues", "many").message();  // names the key
//
// Thread-safety: plain value types and pure functions.
#ifndef CORRAL_BENCH_RUNNER_CONFIG_H_
#define CORRAL_BENCH_RUNNER_CONFIG_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "bench/workloads/workload.h"
#include "policies/schema.h"

namespace corral {
namespace bench {

enum class RunMode { kPhased, kOnline };

struct BenchConfig {
  std::string backend = "engine";  // "engine" (embedded); "postgres" plugs in through Backend
  std::string conninfo;            // for backend=postgres
  std::string workload = "tpcc";   // tpcc, tpcc-np, smallbank, tatp, ycsb
  std::string protocol = "occ";    // occ, 2pl-nowait, 2pl-waitdie, 2pl-dldetect, timestamp, mvcc, maat, calvin, planned, qstore, orthrus
  // protocol=calvin: how the sequencer closes a batch ("calvin_batch"):
  // "time:US" (US microseconds after its first transaction) or
  // "count:N[:US]" (once N transactions wait, at the latest after US,
  // default 1000).
  int calvin_batch_txns = 0;
  double calvin_batch_us = 100;
  // protocol=calvin|planned|qstore|orthrus: where a transaction's read/write set comes
  // from ("sets"): "declared" (the workload's own DeclareOwnAccesses, with
  // reconnaissance where it depends on reads) or "sql" (derived from its
  // SQL references, bench/workloads/sql_sets.h; a miss is re-planned).
  std::string sets = "declared";
  // protocol=qstore: its sequencer's batches ("qstore_batch", same form as
  // calvin_batch), execution queues ("qstore_queues") and planner threads
  // ("qstore_planners", one priority group each).
  int qstore_batch_txns = 0;
  double qstore_batch_us = 100;
  int qstore_queues = 1024;
  int qstore_planners = 1;
  // protocol=qstore: how a lock granule is placed on a queue
  // ("qstore_placement": hash | range | learned, engine/qstore_placement.h)
  // and learned placement's learning window in transactions
  // ("qstore_learn_txns", placed by hash meanwhile).
  std::string qstore_placement = "hash";
  int64_t qstore_learn_txns = 2000;
  // protocol=qstore: "conservative" (a transaction runs once it heads all
  // its queues) or "speculative" (per-fragment queue heads, uncommitted
  // reads, cascading aborts: engine/qstore_spec.cc) ("qstore_execution").
  std::string qstore_execution = "conservative";
  // What routing sees of a transaction before it runs ("route_on"): "all"
  // (its every statement, as a stored procedure's), "first" (its first
  // statement with references, as a proxy sees it at BEGIN) or "templates"
  // (the first statement plus the later references the proxy's statement
  // templates predict from it, adapters/proxy/templates.h). The History
  // learns from every reference the transaction touched in each case.
  std::string route_on = "all";
  // protocol=orthrus: concurrency-control threads ("orthrus_cc_threads",
  // 1..16), each owning one hash partition of the lock table; `queues`
  // workers are the execution threads.
  int orthrus_cc_threads = 1;
  // 16 learned, original, hard-partition, or "auto" (scheduler/scheduler.h:
  // a bandit over DefaultAutoArms by committed throughput, online).
  std::string policy = "count-max-canonical-single";
  int queues = 4;                  // run queues = workers
  int clients = 0;                 // closed loop: transactions outstanding (0 = 2 * queues)
  double arrival_rate = 0;         // > 0: open loop at this many txn/s (Poisson arrivals)
  // Workload knobs (negative = the workload's default).
  int warehouses = -1;             // TPC-C
  double scale = -1;               // SmallBank accounts / TATP subscribers / YCSB rows, x default
  double theta = -1;               // Zipf theta over the partition domain
  // TPC-C transaction mix: "" = the workload's own (tpcc: standard, tpcc-np:
  // NewOrder/Payment 50/50); "standard", "np", "payment" (Payment only),
  // "neworder" (NewOrder only) - Deneva's Figure 10 runs the last two.
  std::string tpcc_mix;
  // TPC-C rows: "" or "all" = NewOrder and Payment insert their rows (the
  // specification); "dbx1000" = DBx1000's TPC-C work (no row inserts, no
  // c_data rewrite, 100,000 items and 3,000 customers per district), for
  // like-for-like speed comparisons with DBx1000 (TpccParams::insert_rows).
  std::string tpcc_rows;
  // YCSB: Deneva's update rate (Section 4.3), the fraction of transactions
  // that are update transactions (half their operations read-modify-writes,
  // the rest read-only); negative = YCSB's per-operation mix (90% reads).
  double update_rate = -1;
  double hot_fraction = -1;        // SmallBank/TATP hot spot
  // SmallBank/TATP hot spot; YCSB: Orthrus's microbenchmark (all
  // read-modify-writes, 2 of each transaction's keys from this many hot keys).
  int64_t hot_size = -1;
  std::vector<workloads::SkewPhase> skew_phases;  // online runs: skew over time
  // Timing.
  double duration_s = 5;           // measured seconds per Phase II run (online: whole run)
  double warmup_s = 0.5;           // not measured, before each run
  double phase1_s = 2;             // Phase I (random scheduling, History learning)
  int repeat = 1;                  // Phase II repetitions, averaged
  RunMode mode = RunMode::kPhased;
  uint64_t seed = 1;
  bool stealing = true;
  // Embedded engine: how long an executor waits (at most) for the record that
  // caused a conflict to be released before reporting the abort (engine
  // ExecutorOptions::obstacle_wait_ns). -1 = the engine default (1 ms);
  // 0 = the paper's immediate retry.
  double retry_wait_us = -1;
  // Embedded engine: wall time a transaction holds its locks / read set
  // before commit (engine ExecutorOptions::txn_delay_ns); 0 = none.
  double txn_delay_us = 0;
  int max_attempts = 0;            // 0 = retry conflict aborts until commit
  double progress_s = 1;           // progress line period (0 = silent)
  double sample_s = 0.5;           // timeline sample period
  int show_learned = 0;             // report the N references with most Phase I aborts
  // Learned policies: weigh a reference by the number of the transaction's
  // statements that name it (scheduler/schedule.h, "Multiplicity").
  bool ref_multiplicity = true;
  // backend = postgres: allow sequential scans in the executors' sessions.
  // Off (default): every session runs SET enable_seqscan = off, so the
  // planner reads the small tables (TPC-C warehouse, district) by index. A
  // sequential scan takes a relation-level SIRead lock under SERIALIZABLE
  // (PostgreSQL docs, 13.2.3), which makes every write to that table by any
  // other transaction an rw-conflict: two warehouses' transactions on two
  // connections then fail each other with 40001 although they share no row.
  bool pg_seqscan = false;
  // History (and State) aging half-life in seconds (history/aging.h); 0 = off;
  // negative = the default: 1 s in online mode (a hot spot that moved stops
  // steering within about a second; a 5 s phase keeps ~3 half-lives of its
  // own evidence), off in phased mode (Phase II's History is frozen anyway).
  double history_half_life_s = -1;
  // Hot-spot splitting (scheduler/hot_spots.h): at most this many queues per
  // hot reference; 1 = off (serialize, as the paper); negative = the
  // default: 4 in online mode, off in phased mode. Learned policies only.
  int split_max_k = -1;
  // With splitting on: also move a lead reference off a queue that runs two
  // busy ones onto an underused queue (scheduler/hot_spots.h RebalanceRule).
  bool rebalance = true;
  // Set by ExpandCells: the cell's values of the experiment's sweep
  // dimensions other than policy and protocol ("txn_delay_us=300"), so cells
  // that differ only there get tables, CSV rows and Phase I Histories of
  // their own. Empty for a single run.
  std::string sweep_label;
  // Which INSERT and UPDATE SET columns yield references (policies/schema.h
  // InsertRefs):
  // "foreign-keys" (default here: the references the paper hand-labelled)
  // or "all" (DESIGN.md's extraction rule).
  InsertRefs insert_refs = InsertRefs::kForeignKeys;
};

// Sets one field from its key (the names above; "threads" = "queues",
// "phase_1" = "phase1"). InvalidArgument naming the key on an unknown key or a
// bad value.
absl::Status ApplySetting(BenchConfig* c, absl::string_view key, absl::string_view value);
// Checks ranges and names (policy, protocol, mode). InvalidArgument otherwise.
absl::Status Validate(const BenchConfig& c);
// The keys ApplySetting accepts.
const std::vector<std::string>& SettingKeys();
// Effective number of closed-loop clients.
int EffectiveClients(const BenchConfig& c);
// The policy is "auto".
bool IsAutoPolicy(const BenchConfig& c);
// history_half_life_s and split_max_k with their defaults resolved.
double EffectiveHalfLifeS(const BenchConfig& c);
int EffectiveSplitMaxK(const BenchConfig& c);

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_CONFIG_H_
