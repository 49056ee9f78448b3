// The paper's microbenchmark on the partitioned engine (two partitions, 12
// keys per transaction, closed-loop clients each writing their own keys),
// with conflict, abort and multi-round variants, and two experiments:
//
//   partitioned_bench --mode=sweep --variant=base --f_grid=0,0.1,...,1
//       every scheme at every f: measured throughput, the parameters measured
//       in the same run, and the model's prediction from them
//       -> <out_dir>/sweep_<variant>.csv
//   partitioned_bench --mode=selector --f_grid=... --abort_grid=... --mr_grid=...
//       per cell: the selector phase (model + selector switching at
//       quiescent points), then interleaved slices of the three fixed
//       schemes; loss of the chosen scheme vs the best -> selector.csv
//
// Throughputs of one run are compared with each other only.
#include <sys/resource.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "common/clock.h"
#include "engine/partitioned/partitioned.h"
#include "policies/model/model.h"

ABSL_FLAG(std::string, mode, "sweep", "sweep | selector");
ABSL_FLAG(std::string, variant, "base", "base | conflict | abort | multiround");
ABSL_FLAG(std::string, schemes, "blocking,speculation,locking", "schemes");
ABSL_FLAG(std::string, f_grid, "0,0.05,0.1,0.2,0.3,0.5,0.75,1", "MP fractions");
ABSL_FLAG(std::string, abort_grid, "0,0.05,0.1", "selector: abort rates");
ABSL_FLAG(std::string, mr_grid, "0,0.5,1", "selector: multi-round shares");
ABSL_FLAG(double, abort_rate, 0.1, "abort variant: user-abort probability");
ABSL_FLAG(double, conflict, 0.5, "conflict variant: hot-key probability");
ABSL_FLAG(double, multi_round, 1.0, "multiround variant: share of MP txns");
ABSL_FLAG(int, clients, 40, "closed-loop clients");
ABSL_FLAG(int, duration_ms, 700, "measured time per run");
ABSL_FLAG(int, warmup_ms, 150, "warm-up per run");
ABSL_FLAG(int, window_ms, 100, "selector: window length");
ABSL_FLAG(int, stall_us, 20, "network stall per message (one way)");
ABSL_FLAG(std::string, stall_mode, "sleep", "sleep | spin");
ABSL_FLAG(double, cores, -1,
          "model: CPU budget shared by partitions + coordinator; -1: the CPU "
          "share the process actually got during the run (getrusage / wall); "
          "0: no cap (the paper's separate machines)");
ABSL_FLAG(std::string, out_dir, "bench/partitioned/out", "CSV output folder");

namespace corral {
namespace partitioned {
namespace {

constexpr int kKeys = 12;

struct Workload {
  double f = 0, abort = 0, conflict = 0, mr = 0;
};

// Closed-loop clients; client c owns keys [c*12, c*12+12) on every
// partition (no conflicts unless `conflict` picks the partition's hot key).
class Driver {
 public:
  Driver(PartitionedEngine* eng, int clients, Workload w)
      : eng_(eng), w_(w) {
    for (int i = 0; i < clients; ++i) {
      auto c = std::make_unique<Client>();
      c->id = i;
      c->rng.seed(77 + i);
      cl_.push_back(std::move(c));
    }
  }
  void Start() {
    for (auto& c : cl_) Next(c.get());
  }
  void Stop() { stop_.store(true); }
  void set_workload(Workload w) { w_ = w; }  // only between runs

 private:
  struct Client {
    int id;
    std::mt19937_64 rng;
  };
  int64_t Key(int client, int i, int partition) {
    // Key k lives on partition k % 2; local slot 1 + client * 12 + i (slot 0
    // of each partition is its hot key).
    return (1 + int64_t{client} * kKeys + i) * 2 + partition;
  }
  void Next(Client* c) {
    if (stop_.load(std::memory_order_relaxed)) return;
    std::uniform_real_distribution<double> u(0, 1);
    const bool mp = u(c->rng) < w_.f;
    const int home = static_cast<int>(c->rng() & 1);
    std::vector<int64_t> keys;
    for (int i = 0; i < kKeys; ++i) {
      const int part = mp ? (i < kKeys / 2 ? home : 1 - home) : home;
      keys.push_back(Key(c->id, i, part));
    }
    if (w_.conflict > 0 && u(c->rng) < w_.conflict) keys[0] = home;  // hot
    TxnRequest t;
    t.user_abort = u(c->rng) < w_.abort;
    std::vector<Op> reads, adds;
    for (int64_t k : keys) {
      reads.push_back(Op::Read(k));
      adds.push_back(Op::Add(k, 1));
    }
    if (mp && u(c->rng) < w_.mr) {
      t.rounds = {reads, adds};  // reads, results back, then the writes
    } else {
      t.rounds = {adds};
    }
    t.done = [this, c](const TxnResult&) { Next(c); };
    if (!eng_->Submit(std::move(t)).ok()) std::abort();
  }

  PartitionedEngine* eng_;
  Workload w_;
  std::vector<std::unique_ptr<Client>> cl_;
  std::atomic<bool> stop_{false};
};

std::vector<double> Grid(const std::string& s) {
  std::vector<double> out;
  for (absl::string_view p : absl::StrSplit(s, ',', absl::SkipEmpty())) {
    double v;
    if (absl::SimpleAtod(p, &v)) out.push_back(v);
  }
  return out;
}

PartitionedOptions Options(Scheme s) {
  PartitionedOptions o;
  o.partitions = 2;
  o.keys_per_partition = 1 + int64_t{absl::GetFlag(FLAGS_clients)} * kKeys;
  o.scheme = s;
  o.network_stall_ns = int64_t{absl::GetFlag(FLAGS_stall_us)} * 1000;
  o.stall_mode = absl::GetFlag(FLAGS_stall_mode) == "spin" ? StallMode::kSpin
                                                           : StallMode::kSleep;
  o.lock_timeout_ns = 5000000;
  return o;
}

double CpuSeconds() {
  rusage ru;
  getrusage(RUSAGE_SELF, &ru);
  return ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
         ru.ru_stime.tv_usec / 1e6;
}

void Sleep(int ms) { std::this_thread::sleep_for(std::chrono::milliseconds(ms)); }

// CPU share of the last measured window (set by the runs below).
double g_cores = 0;

model::ModelParams ForModel(model::ModelParams p) {
  p.cores = absl::GetFlag(FLAGS_cores) < 0 ? g_cores : absl::GetFlag(FLAGS_cores);
  p.locking_lock_free_idle = true;
  return p;
}

// One fixed-scheme run: returns the measured window (throughput, params).
Window RunFixed(Scheme s, Workload w, const model::ModelParams* calib) {
  auto eng = PartitionedEngine::Create(Options(s)).value();
  Driver d(eng.get(), absl::GetFlag(FLAGS_clients), w);
  d.Start();
  Sleep(absl::GetFlag(FLAGS_warmup_ms));
  eng->TakeWindow();
  const double c0 = CpuSeconds();
  Sleep(absl::GetFlag(FLAGS_duration_ms));
  Window win = eng->TakeWindow();
  g_cores = (CpuSeconds() - c0) / win.seconds;
  d.Stop();
  eng->Drain();
  // Parameters a scheme cannot observe come from the calibration run.
  if (calib != nullptr) {
    if (s != Scheme::kSpeculation) win.params.tsp_spec_us = calib->tsp_spec_us;
    if (s != Scheme::kLocking) win.params.lock_overhead = calib->lock_overhead;
    if (s == Scheme::kLocking) {
      // Locking measures (1 + l) tspS itself (tsp_lock_us, its SP txns
      // under locks); tspS and l only matter where none ran under locks.
      win.params.lock_overhead = calib->lock_overhead;
      win.params.tsp_spec_us = calib->tsp_spec_us;
    }
  }
  return win;
}

// Short runs that measure tspS (speculation) and l (locking) at f = 0.5.
model::ModelParams Calibrate(Workload w) {
  w.f = 0.5;
  Window spec = RunFixed(Scheme::kSpeculation, w, nullptr);
  auto eng = PartitionedEngine::Create(Options(Scheme::kLocking)).value();
  Driver d(eng.get(), absl::GetFlag(FLAGS_clients), w);
  d.Start();
  Sleep(absl::GetFlag(FLAGS_warmup_ms));
  eng->TakeWindow();
  Sleep(absl::GetFlag(FLAGS_duration_ms));
  Window lock = eng->TakeWindow();
  d.Stop();
  eng->Drain();
  model::ModelParams p = spec.params;
  if (lock.params.tsp_lock_us > 0 && p.tsp_spec_us > 0) {
    p.lock_overhead = std::max(0.0, lock.params.tsp_lock_us / p.tsp_spec_us - 1);
  }
  std::fprintf(stderr, "calibration: tspS=%.1f us l=%.3f\n", p.tsp_spec_us,
               p.lock_overhead);
  return p;
}

int Sweep() {
  const std::string variant = absl::GetFlag(FLAGS_variant);
  Workload base;
  if (variant == "abort") base.abort = absl::GetFlag(FLAGS_abort_rate);
  if (variant == "conflict") base.conflict = absl::GetFlag(FLAGS_conflict);
  if (variant == "multiround") base.mr = absl::GetFlag(FLAGS_multi_round);
  const model::ModelParams calib = Calibrate(base);
  const std::string path =
      absl::GetFlag(FLAGS_out_dir) + "/sweep_" + variant + ".csv";
  std::ofstream out(path);
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 1;
  }
  out << "variant,scheme,f,measured_tps,model_tps,err,tsp,tspS,tmp,tmpC,"
         "stall,l,abort,mr,gap,rcpu,coord,reexec,sysabort,cores,tlock\n";
  const std::vector<std::string> names = absl::StrSplit(
      absl::GetFlag(FLAGS_schemes), ',', absl::SkipEmpty());
  for (const std::string& sn : names) {
    const Scheme s = ParseScheme(sn).value();
    for (double f : Grid(absl::GetFlag(FLAGS_f_grid))) {
      Workload w = base;
      w.f = f;
      Window win = RunFixed(s, w, &calib);
      model::ModelParams p = ForModel(win.params);
      // The model counts every transaction; measured is committed ones.
      const double pred =
          model::Throughput(ToModelScheme(s), p) * (1 - p.abort_rate);
      const double meas = win.throughput();
      const double err = meas > 0 ? pred / meas - 1 : 0;
      char line[512];
      std::snprintf(line, sizeof(line),
                    "%s,%s,%.3f,%.0f,%.0f,%.4f,%.2f,%.2f,%.2f,%.2f,%.2f,%.4f,"
                    "%.4f,%.3f,%.2f,%.2f,%.2f,%lld,%lld,%.2f,%.2f",
                    variant.c_str(), sn.c_str(), f, meas, pred, err, p.tsp_us,
                    p.tsp_spec_us, p.tmp_us, p.tmp_cpu_us, p.StallUs(),
                    p.lock_overhead, p.abort_rate, p.multi_round_share,
                    p.round_gap_us, p.round_cpu_us, p.coordinator_us,
                    (long long)win.reexecuted, (long long)win.system_aborts, p.cores,
                    p.tsp_lock_us);
      out << line << "\n";
      std::printf("%s\n", line);
      std::fflush(stdout);
    }
  }
  std::printf("wrote %s\n", path.c_str());
  return 0;
}

Scheme FromModel(model::ModelScheme m) {
  switch (m) {
    case model::ModelScheme::kBlocking: return Scheme::kBlocking;
    case model::ModelScheme::kLocking: return Scheme::kLocking;
    default: return Scheme::kSpeculation;
  }
}

// Throughput of `s` on a running engine: switch (quiescent), settle, measure.
double Slice(PartitionedEngine* eng, Scheme s, int ms) {
  if (eng->scheme() != s && !eng->SwitchScheme(s).ok()) std::abort();
  Sleep(30);
  eng->TakeWindow();
  Sleep(ms);
  return eng->TakeWindow().throughput();
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

// Per cell, on one engine and one client population: (1) the selector
// phase: start on blocking, every window measure the parameters, evaluate
// the model and let the selector switch (hysteresis: > 5% for 2 windows);
// (2) the comparison: `reps` rounds of slices of every fixed scheme and of
// the selector's final choice, interleaved so that the machine's load
// (shared 2-core box) hits them alike; medians per scheme. Loss = 1 -
// selector / best fixed.
int Selector() {
  const std::string path = absl::GetFlag(FLAGS_out_dir) + "/selector.csv";
  std::ofstream out(path);
  if (!out) {
    std::fprintf(stderr, "cannot write %s\n", path.c_str());
    return 1;
  }
  out << "f,abort,mr,blocking,speculation,locking,best,best_tps,adaptive_tps,"
         "loss,final_scheme,switches,selection_phase_tps,last_decision\n";
  std::vector<double> losses;
  const int slice = absl::GetFlag(FLAGS_duration_ms) / 3;
  const int reps = 3;
  for (double mr : Grid(absl::GetFlag(FLAGS_mr_grid))) {
    for (double a : Grid(absl::GetFlag(FLAGS_abort_grid))) {
      for (double f : Grid(absl::GetFlag(FLAGS_f_grid))) {
        Workload w;
        w.f = f;
        w.abort = a;
        w.mr = mr;
        auto eng = PartitionedEngine::Create(Options(Scheme::kBlocking)).value();
        Driver d(eng.get(), absl::GetFlag(FLAGS_clients), w);
        model::SchemeSelector sel(model::SelectorOptions{});
        d.Start();
        Sleep(absl::GetFlag(FLAGS_warmup_ms));
        eng->TakeWindow();
        int switches = 0;
        std::string last;
        std::vector<double> phase;
        for (int i = 0; i < 12; ++i) {
          const double c0 = CpuSeconds();
          Sleep(absl::GetFlag(FLAGS_window_ms));
          Window win = eng->TakeWindow();
          g_cores = (CpuSeconds() - c0) / win.seconds;
          phase.push_back(win.throughput());
          model::SelectorDecision dec =
              sel.Observe(ForModel(win.params), ToModelScheme(eng->scheme()),
                          win.throughput());
          last = dec.ToString();
          if (dec.switch_now) {
            if (!eng->SwitchScheme(FromModel(dec.chosen)).ok()) return 1;
            ++switches;
            eng->TakeWindow();
          }
        }
        const Scheme chosen = eng->scheme();
        std::vector<double> tp[3];
        for (int r = 0; r < reps; ++r) {
          for (int s = 0; s < 3; ++s) {
            tp[s].push_back(Slice(eng.get(), static_cast<Scheme>(s), slice));
          }
        }
        d.Stop();
        eng->Drain();
        double fixed[3];
        for (int s = 0; s < 3; ++s) fixed[s] = Median(tp[s]);
        const int best = static_cast<int>(
            std::max_element(fixed, fixed + 3) - fixed);
        const double adaptive = fixed[static_cast<int>(chosen)];
        const double loss = std::max(0.0, 1 - adaptive / fixed[best]);
        losses.push_back(loss);
        for (char& ch : last) {
          if (ch == ',') ch = ';';
        }
        char line[1200];
        std::snprintf(line, sizeof(line),
                      "%.3f,%.3f,%.3f,%.0f,%.0f,%.0f,%s,%.0f,%.0f,%.4f,%s,%d,"
                      "%.0f,%s",
                      f, a, mr, fixed[0], fixed[1], fixed[2],
                      SchemeName(static_cast<Scheme>(best)), fixed[best],
                      adaptive, loss, SchemeName(chosen), switches,
                      Median(phase), last.c_str());
        out << line << "\n";
        std::printf("%s\n", line);
        std::fflush(stdout);
      }
    }
  }
  std::sort(losses.begin(), losses.end());
  if (!losses.empty()) {
    std::printf("selector loss vs best fixed: median %.1f%% worst %.1f%% over "
                "%zu cells\n",
                100 * losses[losses.size() / 2], 100 * losses.back(),
                losses.size());
  }
  std::printf("wrote %s\n", path.c_str());
  return 0;
}

}  // namespace
}  // namespace partitioned
}  // namespace corral

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  std::string cmd = "mkdir -p '" + absl::GetFlag(FLAGS_out_dir) + "'";
  if (std::system(cmd.c_str()) != 0) return 1;
  const std::string mode = absl::GetFlag(FLAGS_mode);
  if (mode == "sweep") return corral::partitioned::Sweep();
  if (mode == "selector") return corral::partitioned::Selector();
  std::fprintf(stderr, "unknown --mode %s\n", mode.c_str());
  return 2;
}
