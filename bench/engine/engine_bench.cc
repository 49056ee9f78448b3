// Microbenchmarks of the embedded engine's concurrency-control protocols.
//
// 1. Single-thread cost of a 10-operation read-modify-write transaction
//    under each protocol, with the ratio to the "none" (no CC) baseline
//    measured in the same run.
// 2. Throughput and abort rate for 1..N workers on a hot-key workload
//    (10 read-modify-writes per transaction, each on one of `hot` keys with
//    probability `hot_fraction`, else uniform over `rows`). Plain threads call
//    an EngineExecutor directly and retry conflicts at once on the same
//    worker (wait-die timestamps kept).
//
//   bazel build -c opt //bench/engine:engine_bench
//   bazel-bin/bench/engine/engine_bench --seconds=1 --max_workers=8
#include <algorithm>
#include <array>
#include <atomic>
#include <ctime>
#include <chrono>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "engine/engine.h"

ABSL_FLAG(double, seconds, 1.0, "duration of each measurement");
ABSL_FLAG(int, rows, 100000, "rows in the table");
ABSL_FLAG(int, ops, 10, "read-modify-write operations per transaction");
ABSL_FLAG(int, max_workers, 8, "largest worker count of the contention sweep");
ABSL_FLAG(int, hot, 16, "hot keys in the contention sweep");
ABSL_FLAG(double, hot_fraction, 0.2, "probability that an operation picks a hot key");
ABSL_FLAG(bool, skip_single, false, "skip the single-thread cost table");
ABSL_FLAG(int64_t, backoff_ns, 0,
          "executor backoff before returning a conflict (doubles per attempt); 0 = retry at once");

namespace corral {
namespace engine {
namespace {

using Clock = std::chrono::steady_clock;

struct Setup {
  std::unique_ptr<Database> db;
  Table* table = nullptr;
  int col = 0;
};

Setup Make(const std::string& protocol, int rows) {
  Setup s;
  s.db = Database::Create({protocol}).value();
  Schema schema;
  s.col = schema.AddInt64("counter");
  for (int i = 0; i < 9; ++i) schema.AddInt64("pad" + std::to_string(i));  // 80-byte rows
  TableOptions o;
  o.expected_rows = rows;
  s.table = s.db->CreateTable("t", schema, o).value();
  for (int k = 0; k < rows; ++k) {
    s.db->Load(s.table, k, [&](const Row& r) { r.SetInt(s.col, 0); }).IgnoreError();
  }
  return s;
}

struct RunResult {
  uint64_t commits = 0;
  uint64_t aborts = 0;
  double seconds = 0;      // wall clock
  double cpu_seconds = 0;  // sum of the workers' thread CPU time
  std::array<uint64_t, static_cast<size_t>(scheduler::AbortCause::kCount)> causes{};
};

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return ts.tv_sec + ts.tv_nsec * 1e-9;
}

// Runs transactions on `workers` threads for `seconds`.
RunResult Drive(Setup& s, int workers, double seconds, int ops, int rows, int hot,
                double hot_fraction, int64_t backoff_ns = 0) {
  std::atomic<bool> stop{false};
  std::vector<RunResult> per(workers);
  std::vector<std::thread> threads;
  std::atomic<int> ready{0};
  for (int w = 0; w < workers; ++w) {
    threads.emplace_back([&, w] {
      ExecutorOptions eo;
      eo.backoff_ns = backoff_ns;
      auto ex = s.db->NewExecutor(w, eo).value();
      std::mt19937_64 rng(12345 + w);
      std::uniform_real_distribution<double> coin(0, 1);
      std::vector<uint64_t> keys(ops);
      ready.fetch_add(1);
      while (ready.load() < workers) std::this_thread::yield();
      RunResult& r = per[w];
      double cpu0 = ThreadCpuSeconds();
      while (!stop.load(std::memory_order_relaxed)) {
        for (int i = 0; i < ops; ++i) {
          bool is_hot = hot > 0 && coin(rng) < hot_fraction;
          keys[i] = is_hot ? rng() % hot : rng() % rows;
        }
        uint64_t ts = 0;
        for (int attempt = 1;; ++attempt) {
          scheduler::ExecResult res = ex->Run(
              [&](Tx& tx) -> absl::Status {
                for (int i = 0; i < ops; ++i) {
                  Row row;
                  ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(s.table, keys[i], &row));
                  row.AddInt(s.col, 1);
                }
                return absl::OkStatus();
              },
              &ts, attempt);
          if (res.outcome == scheduler::Outcome::kCommitted) {
            ++r.commits;
            break;
          }
          ++r.aborts;
          if (stop.load(std::memory_order_relaxed)) break;
        }
      }
      r.cpu_seconds = ThreadCpuSeconds() - cpu0;
      r.causes = ex->stats().conflicts;
    });
  }
  while (ready.load() < workers) std::this_thread::yield();
  auto t0 = Clock::now();
  std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
  stop.store(true);
  for (auto& t : threads) t.join();
  RunResult total;
  total.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  for (const auto& r : per) {
    total.commits += r.commits;
    total.aborts += r.aborts;
    total.cpu_seconds += r.cpu_seconds;
    for (size_t c = 0; c < r.causes.size(); ++c) total.causes[c] += r.causes[c];
  }
  return total;
}

int Main() {
  const double seconds = absl::GetFlag(FLAGS_seconds);
  const int rows = absl::GetFlag(FLAGS_rows);
  const int ops = absl::GetFlag(FLAGS_ops);
  const int max_workers = absl::GetFlag(FLAGS_max_workers);
  const int hot = absl::GetFlag(FLAGS_hot);
  const double hot_fraction = absl::GetFlag(FLAGS_hot_fraction);
  const int64_t backoff_ns = absl::GetFlag(FLAGS_backoff_ns);
  std::printf("cores: %u\n\n", std::thread::hardware_concurrency());

  if (!absl::GetFlag(FLAGS_skip_single)) {
    std::printf("## single thread, %d read-modify-writes per txn, %d rows, uniform keys\n\n", ops,
                rows);
    // Protocols take turns for `rounds` rounds; each keeps its best round.
    // Cost is the worker thread's CPU time per commit, so other load on the
    // machine does not count (wall-clock ns/txn is printed too).
    std::printf("| protocol | CPU ns/txn | ratio vs none | wall ns/txn |\n|---|---|---|---|\n");
    std::vector<std::string> protocols = {"none"};
    for (const auto& p : ProtocolNames()) protocols.push_back(p);
    std::vector<Setup> setups;
    for (const auto& p : protocols) {
      setups.push_back(Make(p, rows));
      Drive(setups.back(), 1, 0.1, ops, rows, 0, 0);  // warm up
    }
    const int rounds = 5;
    std::vector<double> best_cpu(protocols.size(), 1e30), best_wall(protocols.size(), 1e30);
    for (int round = 0; round < rounds; ++round) {
      for (size_t i = 0; i < protocols.size(); ++i) {
        RunResult r = Drive(setups[i], 1, seconds / rounds, ops, rows, 0, 0);
        best_cpu[i] = std::min(best_cpu[i], r.cpu_seconds * 1e9 / r.commits);
        best_wall[i] = std::min(best_wall[i], r.seconds * 1e9 / r.commits);
      }
    }
    for (size_t i = 0; i < protocols.size(); ++i) {
      std::printf("| %s | %.0f | %.2f | %.0f |\n", protocols[i].c_str(), best_cpu[i],
                  best_cpu[i] / best_cpu[0], best_wall[i]);
    }
    setups.clear();
    std::fflush(stdout);
  }

  std::printf(
      "\n## contention sweep: %d RMW/txn, %d hot keys picked with p=%.2f, %d rows, backoff %lld ns\n\n",
      ops, hot, hot_fraction, rows, static_cast<long long>(backoff_ns));
  std::printf(
      "| protocol | workers | commits/s | abort rate | CPU us/commit | aborts by cause |\n"
      "|---|---|---|---|---|---|\n");
  for (const auto& p : ProtocolNames()) {
    Setup s = Make(p, rows);
    for (int w = 1; w <= max_workers; ++w) {
      RunResult r = Drive(s, w, seconds, ops, rows, hot, hot_fraction, backoff_ns);
      double tput = r.commits / r.seconds;
      double ar = r.commits + r.aborts == 0 ? 0 : double(r.aborts) / (r.commits + r.aborts);
      std::string causes;
      for (size_t c = 0; c < r.causes.size(); ++c) {
        if (r.causes[c] == 0) continue;
        if (!causes.empty()) causes += ", ";
        causes += scheduler::AbortCauseName(static_cast<scheduler::AbortCause>(c));
        causes += "=" + std::to_string(r.causes[c]);
      }
      std::printf("| %s | %d | %.0f | %.3f | %.2f | %s |\n", p.c_str(), w, tput, ar,
                  r.cpu_seconds * 1e6 / r.commits, causes.c_str());
      std::fflush(stdout);
    }
  }
  return 0;
}

}  // namespace
}  // namespace engine
}  // namespace corral

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  return corral::engine::Main();
}
