// Load time and generation rate of each workload at its default (paper)
// parameters, on the embedded engine (OCC), with a single-thread run rate
// for orientation. Not a unit test: a figure for the README.
//
//   bazel run -c opt //bench/workloads:workload_bench [-- seconds]
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>

#include "bench/workloads/factory.h"
#include "common/clock.h"
#include "engine/engine.h"

int main(int argc, char** argv) {
  using namespace corral;             // NOLINT
  using namespace corral::workloads;  // NOLINT
  const double seconds = argc > 1 ? std::atof(argv[1]) : 1.0;
  for (const std::string& name : WorkloadNames()) {
    auto w = MakeWorkload(name).value();
    auto db = engine::Database::Create({}).value();
    int64_t t0 = MonoNanos();
    absl::Status st = w->Load(db.get());
    const double load_s = (MonoNanos() - t0) / 1e9;
    if (!st.ok()) {
      std::fprintf(stderr, "%s: load failed: %s\n", name.c_str(), st.ToString().c_str());
      return 1;
    }
    Rng rng(1);
    t0 = MonoNanos();
    int64_t n = 0;
    while (MonoNanos() - t0 < static_cast<int64_t>(seconds * 0.5e9)) {
      for (int i = 0; i < 1000; ++i) w->Next(rng);
      n += 1000;
    }
    const double gen_rate = n / ((MonoNanos() - t0) / 1e9);
    auto ex = db->NewExecutor(0, {}).value();
    t0 = MonoNanos();
    int64_t commits = 0, attempts = 0;
    while (MonoNanos() - t0 < static_cast<int64_t>(seconds * 1e9)) {
      auto t = w->Next(rng);
      ++attempts;
      if (ex->Execute(*t).outcome == scheduler::Outcome::kCommitted) ++commits;
    }
    const double run_s = (MonoNanos() - t0) / 1e9;
    t0 = MonoNanos();
    st = w->Check(*db);
    const double check_s = (MonoNanos() - t0) / 1e9;
    std::printf(
        "%-10s load %.2f s | Next() %.0fk txn/s | 1 thread run %.0fk commits/s (%lld of %lld) | "
        "Check %s in %.2f s\n",
        name.c_str(), load_s, gen_rate / 1e3, commits / run_s / 1e3,
        static_cast<long long>(commits), static_cast<long long>(attempts),
        st.ok() ? "ok" : st.ToString().c_str(), check_s);
  }
  return 0;
}
