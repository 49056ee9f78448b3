// TPC-C on the embedded engine without the scheduler: `threads` plain threads
// each generate transactions and run them on their own EngineExecutor,
// retrying a conflict at once (same timestamp) until it commits; a user
// abort (NewOrder's 1 % rollback) is not retried. Reports committed txn/s,
// the abort rate (aborted attempts / attempts) per protocol, and checks the
// TPC-C consistency conditions afterwards. For comparison with DBx1000
// (NewOrder + Payment, 2 threads, 2 warehouses). --home=thread gives worker t
// the fixed home warehouse t % warehouses + 1, as DBx1000 does
// (FIRST_PART_LOCAL); the default draws the home warehouse per transaction.
// bench/dbx1000/run.sh runs both beside DBx1000.
//
//   bazel build -c opt //bench/engine:tpcc_engine_bench
//   bazel-bin/bench/engine/tpcc_engine_bench --warehouses=2 --threads=2 --seconds=3
#include <atomic>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "bench/workloads/tpcc.h"
#include "engine/engine.h"

ABSL_FLAG(int, warehouses, 2, "TPC-C warehouses");
ABSL_FLAG(int, threads, 2, "worker threads");
ABSL_FLAG(double, seconds, 3, "measured seconds per protocol");
ABSL_FLAG(std::string, mix, "tpcc-np", "tpcc-np (NewOrder + Payment 50/50) | tpcc (standard mix)");
ABSL_FLAG(std::string, home, "random",
          "random (home warehouse drawn per transaction) | thread (worker t: t % warehouses + 1; "
          "tpcc-np only)");
ABSL_FLAG(std::string, protocols, "occ,2pl-nowait,2pl-waitdie,2pl-dldetect", "comma-separated");
ABSL_FLAG(std::string, rows, "all",
          "all (NewOrder and Payment insert their rows, as the TPC-C specification says) | "
          "dbx1000 (DBx1000's TPC-C: no row inserts, no c_data rewrite, 100,000 items and 3,000 "
          "customers per district; only consistency condition 1 is checked)");

namespace corral {
namespace {

using Clock = std::chrono::steady_clock;

int Main() {
  const int threads = absl::GetFlag(FLAGS_threads);
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const std::string mix = absl::GetFlag(FLAGS_mix);
  const std::string home = absl::GetFlag(FLAGS_home);
  if (mix != "tpcc-np" && mix != "tpcc") {
    std::fprintf(stderr, "--mix=%s: expected tpcc-np or tpcc\n", mix.c_str());
    return 2;
  }
  if (home != "random" && !(home == "thread" && mix == "tpcc-np")) {
    std::fprintf(stderr, "--home=%s: expected random, or thread with --mix=tpcc-np\n",
                 home.c_str());
    return 2;
  }
  const std::string rows = absl::GetFlag(FLAGS_rows);
  if (rows != "all" && rows != "dbx1000") {
    std::fprintf(stderr, "--rows=%s: expected all or dbx1000\n", rows.c_str());
    return 2;
  }
  const bool home_per_thread = home == "thread";
  std::printf("TPC-C %s, %d warehouses, %d threads, home %s, rows %s, %.1f s, cores %u\n\n",
              mix.c_str(), absl::GetFlag(FLAGS_warehouses), threads, home.c_str(), rows.c_str(),
              seconds,
              std::thread::hardware_concurrency());
  std::printf(
      "| protocol | txn/s | abort rate | user aborts | CPU us/txn | consistency |\n"
      "|---|---|---|---|---|---|\n");
  std::vector<std::string> protocols =
      absl::StrSplit(absl::GetFlag(FLAGS_protocols), ',', absl::SkipEmpty());
  for (const std::string& protocol : protocols) {
    workloads::TpccParams params;
    params.warehouses = absl::GetFlag(FLAGS_warehouses);
    // The constructor's name is only a label: the mix comes from params.
    if (mix == "tpcc-np") params.mix = {50, 50, 0, 0, 0};
    if (rows == "dbx1000") {
      params.insert_rows = false;
      params.items = 100000;
      params.customers_per_district = 3000;
    }
    workloads::TpccWorkload w(params, mix);
    auto db = engine::Database::Create({protocol});
    if (!db.ok()) {
      std::fprintf(stderr, "%s\n", db.status().ToString().c_str());
      return 1;
    }
    absl::Status st = w.Load(db->get());
    if (!st.ok()) {
      std::fprintf(stderr, "load: %s\n", st.ToString().c_str());
      return 1;
    }
    std::atomic<bool> stop{false};
    std::atomic<int> ready{0};
    std::vector<uint64_t> commits(threads), aborts(threads), user(threads);
    std::vector<double> cpu(threads);
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t) {
      ts.emplace_back([&, t] {
        auto ex = (*db)->NewExecutor(t, {}).value();
        workloads::Rng rng(1000 + t);
        ready.fetch_add(1);
        while (ready.load() < threads) std::this_thread::yield();
        timespec c0, c1;
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c0);
        while (!stop.load(std::memory_order_relaxed)) {
          std::unique_ptr<workloads::WorkloadTxn> txn;
          if (home_per_thread) {
            const int hw = t % params.warehouses + 1;
            if (rng.Double() < 0.5) {
              txn = w.MakeNewOrder(rng, hw);
            } else {
              txn = w.MakePayment(rng, hw);
            }
          } else {
            txn = w.Next(rng);
          }
          for (;;) {
            ++txn->attempts;
            scheduler::ExecResult r = ex->Execute(*txn);
            if (r.outcome == scheduler::Outcome::kConflictAbort) {
              ++aborts[t];
              if (stop.load(std::memory_order_relaxed)) break;
              continue;
            }
            if (r.outcome == scheduler::Outcome::kCommitted) ++commits[t];
            if (r.outcome == scheduler::Outcome::kUserAbort) ++user[t];
            if (r.outcome == scheduler::Outcome::kFailed) {
              std::fprintf(stderr, "failed: %s\n", r.status.ToString().c_str());
            }
            break;
          }
        }
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &c1);
        cpu[t] = (c1.tv_sec - c0.tv_sec) + (c1.tv_nsec - c0.tv_nsec) * 1e-9;
      });
    }
    while (ready.load() < threads) std::this_thread::yield();
    auto t0 = Clock::now();
    std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
    stop.store(true);
    for (auto& th : ts) th.join();
    double el = std::chrono::duration<double>(Clock::now() - t0).count();
    uint64_t c = 0, a = 0, u = 0;
    double cpu_total = 0;
    for (int t = 0; t < threads; ++t) {
      cpu_total += cpu[t];
      c += commits[t];
      a += aborts[t];
      u += user[t];
    }
    absl::Status check = w.Check(**db);
    std::printf("| %s | %.0f | %.3f | %llu | %.2f | %s |\n", protocol.c_str(), c / el,
                a + c == 0 ? 0.0 : double(a) / (a + c), static_cast<unsigned long long>(u),
                c == 0 ? 0.0 : cpu_total * 1e6 / c,
                check.ok() ? "ok" : check.ToString().c_str());
    std::fflush(stdout);
  }
  return 0;
}

}  // namespace
}  // namespace corral

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return corral::Main();
}
