// Scheduler decision throughput: cost of one Schedule decision (Decide, and
// Place = Decide + State update) over queue counts, references per
// transaction and History sizes, single-threaded and with 1/2/4 threads
// sharing the tables (hot: all threads use the same few references; disjoint:
// each thread its own). Reports the median per-decision time over batches,
// and ratios against the 0.5 us target and against the Original baseline
// (a random queue, measured in the same run).
//
// Reference distributions (--dists; each labelled in the output):
//   uniform  every reference uniformly from the population (the worst case
//            for caches: every table access is a likely cache miss);
//   zipf     references drawn with Zipf skew (theta --zipf_theta, default
//            0.9, YCSB's generator) over the population, ranks scattered
//            over the table;
//   tpcc     TPC-C-like: one warehouse (of 10) and one district (of 100)
//            reference, the rest items drawn by NURand(8191, 1, 100000).
// References are drawn before each timed batch, so drawing is not timed.
//
//   bazel run -c opt //bench/sched:sched_bench -- --history_refs=100000
//   bazel run -c opt //bench/sched:sched_bench -- --history_refs=10000000 --state_max=1048576
#include <algorithm>
#include <atomic>
#include <cmath>
#include <memory>
#include <cstdio>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "common/hash.h"
#include "history/history.h"
#include "policies/policy.h"
#include "scheduler/schedule.h"
#include "state/state.h"

ABSL_FLAG(int64_t, history_refs, 100000, "distinct references in the History");
ABSL_FLAG(int64_t, state_max, 1 << 20, "State bound (max entries)");
ABSL_FLAG(std::string, queues, "1,2,4,8,16,32,64", "queue counts");
ABSL_FLAG(std::string, refs, "1,2,5,10,20", "references per transaction");
ABSL_FLAG(std::string, policies, "count-max-canonical-single,fraction-sum-canonical-single",
          "policies for the grid");
ABSL_FLAG(int, batches, 200, "batches per measurement");
ABSL_FLAG(int, batch, 500, "decisions per batch");
ABSL_FLAG(int64_t, weight_cache_ns, 0, "Schedule's per-thread History cache (0 = off)");
ABSL_FLAG(bool, threads, true, "run the 1/2/4-thread contention table");
ABSL_FLAG(std::string, dists, "uniform,zipf,tpcc", "reference distributions: uniform, zipf, tpcc");
ABSL_FLAG(double, zipf_theta, 0.9, "Zipf skew for --dists=zipf");
ABSL_FLAG(bool, baseline, true, "also measure the Original baseline (orig_ns)");
ABSL_FLAG(bool, decide, true, "also measure Decide alone (decide_ns)");

namespace corral {
namespace {

int64_t RssKb() {
  std::ifstream f("/proc/self/status");
  std::string line;
  while (std::getline(f, line)) {
    if (line.rfind("VmRSS:", 0) == 0) return std::stoll(line.substr(6));
  }
  return -1;
}

std::vector<int> Ints(const std::string& s) {
  std::vector<int> v;
  for (absl::string_view p : absl::StrSplit(s, ',')) v.push_back(std::stoi(std::string(p)));
  return v;
}

RefId PopRef(int64_t i) { return RefId(Mix64(static_cast<uint64_t>(i) + 12345)); }

// Draws reference indices (into the population [0, n)) for transactions of k
// references under one distribution.
class RefDraw {
 public:
  enum Kind { kUniform, kZipf, kTpcc };
  static Kind Parse(absl::string_view d) {
    if (d == "zipf") return kZipf;
    if (d == "tpcc") return kTpcc;
    if (d != "uniform") std::fprintf(stderr, "unknown dist '%s', using uniform\n", std::string(d).c_str());
    return kUniform;
  }
  static const char* Name(Kind k) { return k == kZipf ? "zipf" : k == kTpcc ? "tpcc" : "uniform"; }

  RefDraw(Kind kind, int64_t n, double theta, uint64_t seed) : kind_(kind), n_(n), x_(Mix64(seed)) {
    if (kind_ == kZipf) {
      // Gray et al. / YCSB ZipfianGenerator constants.
      theta_ = theta;
      for (int64_t i = 1; i <= n; ++i) zetan_ += 1.0 / std::pow(static_cast<double>(i), theta);
      const double zeta2 = 1.0 + 1.0 / std::pow(2.0, theta);
      alpha_ = 1.0 / (1.0 - theta);
      eta_ = (1.0 - std::pow(2.0 / static_cast<double>(n), 1.0 - theta)) / (1.0 - zeta2 / zetan_);
    }
  }
  Kind kind() const { return kind_; }
  int64_t n() const { return n_; }

  // Index of the j-th reference of a transaction.
  int64_t Next(int j) {
    switch (kind_) {
      case kUniform:
        return static_cast<int64_t>(Rand() % static_cast<uint64_t>(n_));
      case kZipf: {
        const double u = Unit();
        const double uz = u * zetan_;
        int64_t rank;
        if (uz < 1.0) {
          rank = 0;
        } else if (uz < 1.0 + std::pow(0.5, theta_)) {
          rank = 1;
        } else {
          rank = static_cast<int64_t>(static_cast<double>(n_) * std::pow(eta_ * u - eta_ + 1.0, alpha_));
        }
        rank = std::min(rank, n_ - 1);
        // Scatter ranks over the population so hot references are not adjacent.
        return static_cast<int64_t>(Mix64(static_cast<uint64_t>(rank) ^ 0x5bd1e995ULL) %
                                    static_cast<uint64_t>(n_));
      }
      case kTpcc: {
        if (j == 0) {
          w_ = static_cast<int64_t>(Rand() % 10);
          return w_ % n_;
        }
        if (j == 1) return (10 + w_ * 10 + static_cast<int64_t>(Rand() % 10)) % n_;
        // NURand(8191, 1, 100000) = (((rand(0,8191) | rand(1,100000)) + C) % 100000) + 1
        const int64_t a = static_cast<int64_t>(Rand() % 8192);
        const int64_t b = 1 + static_cast<int64_t>(Rand() % 100000);
        const int64_t item = (((a | b) + 7911) % 100000) + 1;
        return (110 + item) % n_;
      }
    }
    return 0;
  }

 private:
  uint64_t Rand() { return x_ = Mix64(x_); }
  double Unit() { return static_cast<double>(Rand() >> 11) * (1.0 / 9007199254740992.0); }

  Kind kind_;
  int64_t n_;
  uint64_t x_;
  double theta_ = 0, zetan_ = 0, alpha_ = 0, eta_ = 0;
  int64_t w_ = 0;
};

struct Tables {
  history::History history;
  std::unique_ptr<state::State> state;
  int64_t n;
  Tables(int64_t n_refs, int queues)
      : history([&] {
          history::History::Options o;
          o.max_entries = 0;
          o.initial_capacity = n_refs;
          o.keep_texts = false;
          return o;
        }()),
        n(n_refs) {
    state::State::Options so;
    so.num_queues = queues;
    so.max_entries = absl::GetFlag(FLAGS_state_max);
    state = state::State::Create(so, Clock::Real()).value();
    std::vector<uint64_t> row(queues);
    const int64_t in_state = std::min<int64_t>(n_refs, so.max_entries * 8 / 10);
    for (int64_t i = 0; i < n_refs; ++i) {
      const uint64_t h = Mix64(i);
      history.Add(PopRef(i), h % 50, (h >> 8) % 100);
      if (i < in_state) {
        for (int q = 0; q < queues; ++q) row[q] = (h >> (q % 48)) % 7;
        state->Set(PopRef(i), row);
      }
    }
  }
};

// Median ns per decision over batches. `place` = Decide + State record.
double Measure(scheduler::Schedule& s, int64_t population, int k, bool place, uint64_t seed,
               bool hot, std::atomic<int64_t>* total_decisions = nullptr, double* p10 = nullptr,
               RefDraw::Kind dist = RefDraw::kUniform) {
  const int batches = absl::GetFlag(FLAGS_batches), batch = absl::GetFlag(FLAGS_batch);
  std::vector<double> per;
  per.reserve(batches);
  // Zipf's set-up is O(population): one generator per thread and distribution.
  static thread_local std::vector<std::unique_ptr<RefDraw>> draws;
  RefDraw* draw = nullptr;
  for (auto& d : draws) {
    if (d->kind() == dist && d->n() == population) draw = d.get();
  }
  if (draw == nullptr) {
    draws.push_back(std::make_unique<RefDraw>(dist, population, absl::GetFlag(FLAGS_zipf_theta), seed));
    draw = draws.back().get();
  }
  std::vector<RefId> pending(static_cast<size_t>(batch) * k);
  scheduler::Txn t;
  int64_t sink = 0;
  for (int b = 0; b < batches; ++b) {
    for (int i = 0; i < batch; ++i) {
      for (int j = 0; j < k; ++j) pending[i * k + j] = hot ? PopRef(j) : PopRef(draw->Next(j));
    }
    const int64_t t0 = MonoNanos();
    for (int i = 0; i < batch; ++i) {
      t.refs.assign(pending.begin() + i * k, pending.begin() + (i + 1) * k);
      sink += place ? s.Place(t).value() : s.Decide(t.refs, i).value();
    }
    per.push_back(static_cast<double>(MonoNanos() - t0) / batch);
  }
  if (sink == -1) std::printf("!");
  if (total_decisions) total_decisions->fetch_add(int64_t{batches} * batch);
  std::sort(per.begin(), per.end());
  if (p10 != nullptr) *p10 = per[per.size() / 10];
  return per[per.size() / 2];
}

void Run() {
  const int64_t n = absl::GetFlag(FLAGS_history_refs);
  const std::vector<int> queues = Ints(absl::GetFlag(FLAGS_queues));
  const std::vector<int> ks = Ints(absl::GetFlag(FLAGS_refs));
  scheduler::ScheduleOptions cache;
  cache.weight_cache_ns = absl::GetFlag(FLAGS_weight_cache_ns);
  std::vector<Policy> policies;
  for (absl::string_view p : absl::StrSplit(absl::GetFlag(FLAGS_policies), ',')) {
    policies.push_back(ParsePolicy(p).value());
  }
  std::printf("# history_refs=%lld state_max=%lld weight_cache_ns=%lld cores=%u\n",
              static_cast<long long>(n), static_cast<long long>(absl::GetFlag(FLAGS_state_max)),
              static_cast<long long>(absl::GetFlag(FLAGS_weight_cache_ns)),
              std::thread::hardware_concurrency());
  std::vector<RefDraw::Kind> dists;
  for (absl::string_view d : absl::StrSplit(absl::GetFlag(FLAGS_dists), ',')) {
    dists.push_back(RefDraw::Parse(d));
  }
  std::printf("%-30s %-8s %6s %4s %10s %10s %10s %10s %11s %10s\n", "policy", "dist", "queues",
              "refs", "decide_ns", "place_ns", "place_p10", "orig_ns", "place/0.5us", "place/orig");
  for (int q : queues) {
    const int64_t rss0 = RssKb();
    const int64_t b0 = MonoNanos();
    Tables tab(n, q);
    const double build_s = (MonoNanos() - b0) / 1e9;
    std::printf("# queues=%d: tables built in %.1f s, RSS +%lld MiB (History ~%lld MiB, State ~%lld MiB, %lld entries)\n",
                q, build_s, static_cast<long long>((RssKb() - rss0) / 1024),
                static_cast<long long>(tab.history.ApproxBytes() >> 20),
                static_cast<long long>(tab.state->ApproxBytes() >> 20),
                static_cast<long long>(tab.state->size()));
    scheduler::Schedule orig(&tab.history, tab.state.get(), ParsePolicy("original").value(), 1);
    for (int k : ks) {
      const double o = absl::GetFlag(FLAGS_baseline) ? Measure(orig, n, k, true, 7, false) : 0;
      for (RefDraw::Kind dist : dists) {
        for (const Policy& p : policies) {
          scheduler::Schedule s(&tab.history, tab.state.get(), p, 1, cache);
          const double d =
              absl::GetFlag(FLAGS_decide) ? Measure(s, n, k, false, 11, false, nullptr, nullptr, dist) : 0;
          double p10 = 0;
          const double pl = Measure(s, n, k, true, 13, false, nullptr, &p10, dist);
          std::printf("%-30s %-8s %6d %4d %10.0f %10.0f %10.0f %10.0f %11.2f %10.1f\n",
                      PolicyName(p).c_str(), RefDraw::Name(dist), q, k, d, pl, p10, o, pl / 500.0,
                      o > 0 ? pl / o : 0.0);
        }
      }
    }
    std::fflush(stdout);
  }

  if (!absl::GetFlag(FLAGS_threads)) return;
  std::printf("\n# threads sharing one History+State: 8 queues, 5 refs, count-max-canonical-single, Place\n");
  std::printf("%-9s %7s %14s %16s\n", "refs", "threads", "median_ns", "total_Mdec/s");
  Tables tab(n, 8);
  scheduler::Schedule s(&tab.history, tab.state.get(),
                        ParsePolicy("count-max-canonical-single").value(), 1, cache);
  for (bool hot : {false, true}) {
    for (int threads : {1, 2, 4}) {
      std::vector<double> med(threads);
      std::atomic<int64_t> total{0};
      std::vector<std::thread> ts;
      const int64_t t0 = MonoNanos();
      for (int i = 0; i < threads; ++i) {
        ts.emplace_back([&, i] { med[i] = Measure(s, n, 5, true, 100 + i, hot, &total); });
      }
      for (auto& t : ts) t.join();
      const double secs = (MonoNanos() - t0) / 1e9;
      std::sort(med.begin(), med.end());
      std::printf("%-9s %7d %14.0f %16.2f\n", hot ? "hot" : "spread", threads, med[threads / 2],
                  total.load() / secs / 1e6);
    }
  }
}

}  // namespace
}  // namespace corral

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  corral::Run();
  return 0;
}
