// What the machine did to a run: how much of its CPU other processes and the
// hypervisor took while the run was measured. Read from /proc through an
// injectable seam (MachineProbe) so tests can script the readings.
//
// Definitions (over a window between two readings a, b of the whole machine):
//   total   = all CPU time of all CPUs (user nice system idle iowait irq
//             softirq steal; /proc/stat "cpu" line)
//   busy    = total - idle - iowait (steal included: the CPU was not ours)
//   self    = this process's user + system time (/proc/self/stat utime, stime)
//   other   = busy - steal - self: other processes' CPU
//   interference share = (other + steal) / total: the share of the machine's
//             CPU capacity in the window that went to something else than
//             this process. 0 on a quiet machine; about 0.5 on a 2-core box
//             where one compiler process ran throughout.
//   load average: /proc/loadavg's 1-minute figure at the end of the window.
//
//   std::unique_ptr<MachineProbe> probe = MakeProcMachineProbe();
//   MachineReading a = probe->Read().value();
//   ... the measured window ...
//   Interference i = ComputeInterference(a, probe->Read().value());
//   if (i.share > 0.3) { /* contaminated: re-run */ }
//
// Thread-safety: ComputeInterference is pure; a MachineProbe is
// thread-compatible (the real one is stateless and may be shared).
#ifndef CORRAL_BENCH_RUNNER_INTERFERENCE_H_
#define CORRAL_BENCH_RUNNER_INTERFERENCE_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace corral {
namespace bench {

// One reading of the machine's and this process's CPU counters (clock ticks).
struct MachineReading {
  uint64_t user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
  uint64_t self_ticks = 0;  // this process: utime + stime
  double loadavg1 = 0;
};

struct Interference {
  bool valid = false;        // both readings present and the window non-empty
  double share = 0;          // (other + steal) / total
  double steal_share = 0;    // steal / total
  double other_share = 0;    // other processes' CPU / total
  double self_share = 0;     // this process's CPU / total
  double loadavg1 = 0;       // at the end of the window
};

// The seam: where the readings come from.
class MachineProbe {
 public:
  virtual ~MachineProbe() = default;
  virtual absl::StatusOr<MachineReading> Read() = 0;
};

// Reads /proc/stat, /proc/self/stat and /proc/loadavg.
std::unique_ptr<MachineProbe> MakeProcMachineProbe();

// Parsers of the three files' texts (exposed for tests and for fakes that
// replay recorded /proc text). InvalidArgument on text they cannot read.
absl::Status ParseProcStat(absl::string_view text, MachineReading* r);
absl::Status ParseProcSelfStat(absl::string_view text, MachineReading* r);
absl::Status ParseLoadAvg(absl::string_view text, MachineReading* r);

// The window from `a` to `b`. Counter deltas that go backwards count as 0.
Interference ComputeInterference(const MachineReading& a, const MachineReading& b);

// The contaminated-run rule: the window was read and lost more than
// `max_share` of the machine (max_share 0 = rule off).
bool Contaminated(const Interference& i, double max_share);

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_INTERFERENCE_H_
