// `corral bench`: one benchmark run on the embedded engine (Phase I random
// scheduling fills the History, then Phase II runs on a fresh database with
// the History frozen, --repeat times; or --mode=online), printing a progress
// line per second to stderr and the report at the end.
//
//   corral bench --workload=tpcc --warehouses=8 --queues=8 --protocol=occ
//       --policy=count-max-canonical-single --duration=5 --phase1=2 --repeat=3
//       --json=out.json --csv=out.csv       (one command line)
//   corral bench --workload=smallbank --arrival_rate=20000 --policy=original   # open loop
//   corral bench --workload=ycsb --mode=online --skew_phases="10:0 10:0.99" --timeline_csv=t.csv
//
// Exit code: 0 on success, 1 when the run failed or a consistency check
// failed, 2 on bad flags.
#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "adapters/pg_executor.h"
#include "bench/pgbackend/pg_backend.h"
#include "bench/runner/config.h"
#include "bench/runner/runner.h"
#include "bench/runner/workload_select.h"

ABSL_FLAG(std::string, workload, "tpcc", "tpcc | tpcc-np | smallbank | tatp | ycsb");
ABSL_FLAG(std::string, protocol, "occ",
          "occ | 2pl-nowait | 2pl-waitdie | 2pl-dldetect | timestamp | mvcc | maat | calvin | planned | qstore | "
          "orthrus");
ABSL_FLAG(std::string, sets, "declared",
          "protocol=calvin|planned|qstore|orthrus: the read/write sets: declared (the workload's own, with "
          "reconnaissance where they depend on reads) | sql (derived from the transaction's SQL "
          "references; a miss is refused and re-planned)");
ABSL_FLAG(std::string, calvin_batch, "time:100",
          "protocol=calvin: the sequencer seals a batch US microseconds after its first transaction "
          "(time:US) or once N wait, at the latest after US (count:N[:US], US default 1000)");
ABSL_FLAG(std::string, qstore_batch, "time:100",
          "protocol=qstore: its sequencer's batches, as --calvin_batch (time:US | count:N[:US])");
ABSL_FLAG(int, qstore_queues, 1024,
          "protocol=qstore: execution queues (each declared lock granule is placed on one, by "
          "--qstore_placement)");
ABSL_FLAG(std::string, qstore_placement, "hash",
          "protocol=qstore: how a lock granule is placed on an execution queue: hash | range (each "
          "table's loaded key space cut into --qstore_queues contiguous ranges) | learned (granules "
          "that conflict clustered onto one queue, learned from Corral's History over the first "
          "--qstore_learn_txns transactions; hash meanwhile and for granules never seen hot)");
ABSL_FLAG(int64_t, qstore_learn_txns, 2000,
          "protocol=qstore, --qstore_placement=learned: the learning window in transactions");
ABSL_FLAG(std::string, qstore_execution, "conservative",
          "protocol=qstore: conservative (a transaction runs once it heads every queue it is on) | "
          "speculative (each access waits only for its own queue's head, a queue is given up with its "
          "writes installed uncommitted once the program moved past it, aborts cascade)");
ABSL_FLAG(std::string, route_on, "all",
          "what routing sees of a transaction before it runs: all (every statement, a stored "
          "procedure) | first (its first statement with references, as a proxy sees it) | templates "
          "(the first statement and the later references the proxy's statement templates predict); "
          "the History learns from every reference touched");
ABSL_FLAG(int, qstore_planners, 1,
          "protocol=qstore: planner threads; each plans a slice of a batch (its priority group)");
ABSL_FLAG(std::string, orthrus_cc_threads, "1",
          "protocol=orthrus: concurrency-control threads (1..16), each owning a hash partition of the "
          "lock table; --queues workers are the execution threads");
ABSL_FLAG(std::string, policy, "count-max-canonical-single",
          "one of the sixteen <count|fraction>-<sum|max>-<literal|canonical>-<single|all>, original, hard-partition, "
          "or auto (online choice by committed throughput)");
ABSL_FLAG(double, history_half_life_s, -1,
          "History/State aging half-life in seconds (0 = off; -1 = default: 1 s in online mode, off in phased)");
ABSL_FLAG(int, split_max_k, -1,
          "hot-spot splitting: at most this many queues per hot reference (1 = off; -1 = default: 4 online, "
          "off phased)");
ABSL_FLAG(bool, rebalance, true,
          "with hot-spot splitting: move a lead reference off a queue that runs two busy ones onto an underused "
          "queue");
ABSL_FLAG(int, queues, 4, "run queues = worker threads");
ABSL_FLAG(int, clients, 0, "closed loop: transactions kept outstanding (0 = 2 x queues)");
ABSL_FLAG(double, arrival_rate, 0, "> 0: open loop (throttled) at this many transactions/s, Poisson arrivals");
ABSL_FLAG(int, warehouses, -1, "TPC-C warehouses (-1 = workload default)");
ABSL_FLAG(double, scale, -1, "SmallBank/TATP/YCSB size factor (-1 = default; reserved, see README)");
ABSL_FLAG(double, theta, -1, "Zipf theta over the partition domain (-1 = workload default)");
ABSL_FLAG(std::string, tpcc_mix, "", "TPC-C mix: standard | np | payment | neworder (empty = the workload's own)");
ABSL_FLAG(std::string, tpcc_rows, "",
          "TPC-C rows: all (NewOrder/Payment insert rows, the default) | dbx1000 (DBx1000's TPC-C: no "
          "row inserts, 100,000 items, 3,000 customers per district; for comparisons with DBx1000)");
ABSL_FLAG(double, update_rate, -1,
          "YCSB: fraction of update transactions (5 reads/5 updates; the rest read-only), Deneva's update rate; "
          "-1 = per-operation mix");
ABSL_FLAG(double, hot_fraction, -1, "SmallBank/TATP: fraction of accesses to the hot range (-1 = default)");
ABSL_FLAG(int64_t, hot_size, -1,
          "SmallBank/TATP: hot range size (-1 = default); YCSB: Orthrus's microbenchmark, all "
          "read-modify-writes, two of each transaction's keys from this many hot keys");
ABSL_FLAG(std::string, skew_phases, "", "online runs: skew over time, 'dur_s:theta[:hot_fraction[:hot_size]] ...'");
ABSL_FLAG(double, duration, 5, "measured seconds per run");
ABSL_FLAG(double, warmup, 0.5, "unmeasured seconds before each run");
ABSL_FLAG(double, phase1, 2, "seconds of Phase I (random scheduling, History learning)");
ABSL_FLAG(int, repeat, 1, "Phase II repetitions, averaged");
ABSL_FLAG(std::string, mode, "phased", "phased (Phase I then frozen Phase II) | online (keeps learning)");
ABSL_FLAG(uint64_t, seed, 1, "random seed");
ABSL_FLAG(bool, stealing, true, "idle workers steal from other queues");
ABSL_FLAG(bool, ref_multiplicity, true,
          "learned policies: weigh a reference by how many of the transaction's statements name it "
          "(false = the paper's weights)");
ABSL_FLAG(double, txn_delay_us, 0,
          "embedded engine: wall time a transaction holds its locks / read set before commit "
          "(models interactive round trips; 0 = none)");
ABSL_FLAG(std::string, insert_refs, "foreign-keys",
          "which INSERT and UPDATE SET columns yield references: foreign-keys (columns in a foreign-key class) | all");
ABSL_FLAG(int, show_learned, 0, "print the N learned references with the most Phase I aborts");
ABSL_FLAG(double, retry_wait_us, -1,
          "engine: max wait for the conflicting record before a conflict abort is reported "
          "(-1 = engine default 1000 us; 0 = the paper's immediate retry)");
ABSL_FLAG(int, max_attempts, 0, "attempts per transaction before giving up (0 = until commit)");
ABSL_FLAG(double, progress, 1, "seconds between progress lines on stderr (0 = none)");
ABSL_FLAG(std::string, json, "", "write the result as JSON to this file");
ABSL_FLAG(std::string, csv, "", "write one CSV row per Phase II run to this file");
ABSL_FLAG(std::string, timeline_csv, "", "write the per-0.5s timeline (tps, abort rate, memory) to this file");
ABSL_FLAG(std::string, backend, "engine", "engine (embedded) | postgres (needs --conninfo; bench/pgbackend)");
ABSL_FLAG(std::string, conninfo, "", "libpq conninfo for --backend=postgres");
ABSL_FLAG(bool, pg_seqscan, false,
          "--backend=postgres: allow sequential scans (default: SET enable_seqscan = off in every session, "
          "so SERIALIZABLE reads of small tables take tuple, not relation-level, SIRead locks)");
ABSL_FLAG(std::string, isolation, "serializable",
          "--backend=postgres: serializable | repeatable-read | read-committed");

namespace corral {
namespace cli {
namespace {

bool WriteText(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

// Declared in cli/commands.h.
int RunBench(const std::vector<char*>& args) {
  if (args.size() > 1) {
    std::fprintf(stderr, "corral bench: unexpected argument '%s'\n", args[1]);
    return 2;
  }
  bench::BenchConfig c;
  c.workload = absl::GetFlag(FLAGS_workload);
  c.protocol = absl::GetFlag(FLAGS_protocol);
  c.queues = absl::GetFlag(FLAGS_queues);
  c.clients = absl::GetFlag(FLAGS_clients);
  c.arrival_rate = absl::GetFlag(FLAGS_arrival_rate);
  c.warehouses = absl::GetFlag(FLAGS_warehouses);
  c.scale = absl::GetFlag(FLAGS_scale);
  c.theta = absl::GetFlag(FLAGS_theta);
  c.update_rate = absl::GetFlag(FLAGS_update_rate);
  c.hot_fraction = absl::GetFlag(FLAGS_hot_fraction);
  c.hot_size = absl::GetFlag(FLAGS_hot_size);
  c.duration_s = absl::GetFlag(FLAGS_duration);
  c.warmup_s = absl::GetFlag(FLAGS_warmup);
  c.phase1_s = absl::GetFlag(FLAGS_phase1);
  c.repeat = absl::GetFlag(FLAGS_repeat);
  c.seed = absl::GetFlag(FLAGS_seed);
  c.stealing = absl::GetFlag(FLAGS_stealing);
  c.retry_wait_us = absl::GetFlag(FLAGS_retry_wait_us);
  c.max_attempts = absl::GetFlag(FLAGS_max_attempts);
  c.progress_s = absl::GetFlag(FLAGS_progress);
  c.show_learned = absl::GetFlag(FLAGS_show_learned);
  c.ref_multiplicity = absl::GetFlag(FLAGS_ref_multiplicity);
  c.pg_seqscan = absl::GetFlag(FLAGS_pg_seqscan);
  c.txn_delay_us = absl::GetFlag(FLAGS_txn_delay_us);
  c.history_half_life_s = absl::GetFlag(FLAGS_history_half_life_s);
  c.split_max_k = absl::GetFlag(FLAGS_split_max_k);
  c.rebalance = absl::GetFlag(FLAGS_rebalance);
  c.backend = absl::GetFlag(FLAGS_backend);
  c.conninfo = absl::GetFlag(FLAGS_conninfo);
  for (const auto& kv : std::vector<std::pair<const char*, std::string>>{
           {"policy", absl::GetFlag(FLAGS_policy)},
           {"mode", absl::GetFlag(FLAGS_mode)},
           {"calvin_batch", absl::GetFlag(FLAGS_calvin_batch)},
           {"sets", absl::GetFlag(FLAGS_sets)},
           {"qstore_batch", absl::GetFlag(FLAGS_qstore_batch)},
           {"qstore_queues", absl::StrCat(absl::GetFlag(FLAGS_qstore_queues))},
           {"qstore_planners", absl::StrCat(absl::GetFlag(FLAGS_qstore_planners))},
           {"qstore_placement", absl::GetFlag(FLAGS_qstore_placement)},
           {"qstore_learn_txns", absl::StrCat(absl::GetFlag(FLAGS_qstore_learn_txns))},
           {"qstore_execution", absl::GetFlag(FLAGS_qstore_execution)},
           {"route_on", absl::GetFlag(FLAGS_route_on)},
           {"orthrus_cc_threads", absl::GetFlag(FLAGS_orthrus_cc_threads)},
           {"skew_phases", absl::GetFlag(FLAGS_skew_phases)},
           {"insert_refs", absl::GetFlag(FLAGS_insert_refs)},
           {"tpcc_mix", absl::GetFlag(FLAGS_tpcc_mix)},
           {"tpcc_rows", absl::GetFlag(FLAGS_tpcc_rows)}}) {
    if ((std::string(kv.first) == "tpcc_mix" || std::string(kv.first) == "tpcc_rows") &&
        kv.second.empty()) {
      continue;
    }
    absl::Status st = bench::ApplySetting(&c, kv.first, kv.second);
    if (!st.ok()) {
      std::fprintf(stderr, "corral bench: --%s: %s\n", kv.first, std::string(st.message()).c_str());
      return 2;
    }
  }
  absl::Status st = bench::Validate(c);
  if (!st.ok()) {
    std::fprintf(stderr, "corral bench: %s\n", std::string(st.message()).c_str());
    return 2;
  }
  bench::PgBackendOptions pg;
  pg.conninfo = c.conninfo;
  auto iso = adapters::ParsePgIsolation(absl::GetFlag(FLAGS_isolation));
  if (!iso.ok()) {
    std::fprintf(stderr, "corral bench: --isolation: %s\n", std::string(iso.status().message()).c_str());
    return 2;
  }
  pg.isolation = *iso;
  bench::Runner runner(bench::MakeBackendSelector(pg), bench::MakeWorkloadFactory());
  auto r = runner.Run(c);
  if (!r.ok()) {
    std::fprintf(stderr, "corral bench: %s\n", std::string(r.status().message()).c_str());
    return 1;
  }
  bench::PrintReport(*r, stdout);
  bool ok = true;
  if (!absl::GetFlag(FLAGS_json).empty()) ok &= WriteText(absl::GetFlag(FLAGS_json), bench::ToJson(*r));
  if (!absl::GetFlag(FLAGS_csv).empty()) {
    ok &= WriteText(absl::GetFlag(FLAGS_csv), bench::CsvHeader() + bench::CsvRows(*r));
  }
  if (!absl::GetFlag(FLAGS_timeline_csv).empty()) {
    ok &= WriteText(absl::GetFlag(FLAGS_timeline_csv), bench::TimelineCsv(*r));
  }
  if (!ok) {
    std::fprintf(stderr, "corral bench: could not write an output file\n");
    return 1;
  }
  return r->all_checks_ok ? 0 : 1;
}

}  // namespace cli
}  // namespace corral
