#include "bench/runner/interference.h"

#include <algorithm>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/runner/read_file.h"

namespace corral {
namespace bench {
namespace {

absl::StatusOr<std::string> Slurp(const char* path) {
  std::string text;
  if (!ReadWholeFile(path, &text)) return absl::UnavailableError(absl::StrCat("cannot read ", path));
  return text;
}

class ProcMachineProbe : public MachineProbe {
 public:
  absl::StatusOr<MachineReading> Read() override {
    MachineReading r;
    auto stat = Slurp("/proc/stat");
    if (!stat.ok()) return stat.status();
    absl::Status st = ParseProcStat(*stat, &r);
    if (!st.ok()) return st;
    auto self = Slurp("/proc/self/stat");
    if (!self.ok()) return self.status();
    st = ParseProcSelfStat(*self, &r);
    if (!st.ok()) return st;
    auto load = Slurp("/proc/loadavg");
    if (load.ok()) ParseLoadAvg(*load, &r).IgnoreError();  // optional
    return r;
  }
};

uint64_t Delta(uint64_t a, uint64_t b) { return b > a ? b - a : 0; }

}  // namespace

std::unique_ptr<MachineProbe> MakeProcMachineProbe() { return std::make_unique<ProcMachineProbe>(); }

absl::Status ParseProcStat(absl::string_view text, MachineReading* r) {
  // First line: "cpu  user nice system idle iowait irq softirq steal guest guest_nice".
  absl::string_view line = text.substr(0, text.find('\n'));
  std::vector<absl::string_view> f = absl::StrSplit(line, ' ', absl::SkipEmpty());
  if (f.size() < 5 || f[0] != "cpu") {
    return absl::InvalidArgumentError(absl::StrCat("/proc/stat: first line is not the cpu total: '", line, "'"));
  }
  uint64_t* out[] = {&r->user, &r->nice, &r->system, &r->idle, &r->iowait, &r->irq, &r->softirq, &r->steal};
  for (size_t i = 0; i < 8; ++i) {
    *out[i] = 0;
    if (i + 1 < f.size() && !absl::SimpleAtoi(f[i + 1], out[i])) {
      return absl::InvalidArgumentError(absl::StrCat("/proc/stat: bad counter '", f[i + 1], "'"));
    }
  }
  return absl::OkStatus();
}

absl::Status ParseProcSelfStat(absl::string_view text, MachineReading* r) {
  // "pid (comm) state ppid ..." with utime, stime the 14th and 15th fields;
  // comm may hold spaces and parentheses, so count from the last ')'.
  size_t close = text.rfind(')');
  if (close == absl::string_view::npos) return absl::InvalidArgumentError("/proc/self/stat: no ')'");
  std::vector<absl::string_view> f = absl::StrSplit(text.substr(close + 1), ' ', absl::SkipEmpty());
  // f[0] = state (field 3), so field n is f[n - 3].
  uint64_t utime = 0, stime = 0;
  if (f.size() < 13 || !absl::SimpleAtoi(f[11], &utime) || !absl::SimpleAtoi(f[12], &stime)) {
    return absl::InvalidArgumentError("/proc/self/stat: cannot read utime/stime");
  }
  r->self_ticks = utime + stime;
  return absl::OkStatus();
}

absl::Status ParseLoadAvg(absl::string_view text, MachineReading* r) {
  std::vector<absl::string_view> f = absl::StrSplit(text, ' ', absl::SkipEmpty());
  if (f.empty() || !absl::SimpleAtod(f[0], &r->loadavg1)) {
    return absl::InvalidArgumentError("/proc/loadavg: cannot read the 1-minute load");
  }
  return absl::OkStatus();
}

Interference ComputeInterference(const MachineReading& a, const MachineReading& b) {
  Interference i;
  i.loadavg1 = b.loadavg1;
  const uint64_t idle = Delta(a.idle, b.idle) + Delta(a.iowait, b.iowait);
  const uint64_t steal = Delta(a.steal, b.steal);
  const uint64_t busy = Delta(a.user, b.user) + Delta(a.nice, b.nice) + Delta(a.system, b.system) +
                        Delta(a.irq, b.irq) + Delta(a.softirq, b.softirq) + steal;
  const uint64_t total = busy + idle;
  if (total == 0) return i;
  const uint64_t self = std::min(Delta(a.self_ticks, b.self_ticks), busy - steal);
  const uint64_t other = busy - steal - self;
  const double t = static_cast<double>(total);
  i.valid = true;
  i.steal_share = steal / t;
  i.other_share = other / t;
  i.self_share = self / t;
  i.share = (other + steal) / t;
  return i;
}

bool Contaminated(const Interference& i, double max_share) {
  return max_share > 0 && i.valid && i.share > max_share;
}

}  // namespace bench
}  // namespace corral
