#include "bench/runner/spec.h"

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "bench/runner/read_file.h"
#include "policies/policy.h"

namespace corral {
namespace bench {
namespace {

absl::Status LineError(int line, absl::string_view msg) {
  return absl::InvalidArgumentError(absl::StrCat("spec line ", line, ": ", msg));
}

}  // namespace

absl::StatusOr<ExperimentSpec> ParseSpec(absl::string_view text) {
  ExperimentSpec spec;
  std::vector<std::pair<std::string, std::vector<std::string>>> lists;
  std::vector<std::pair<std::string, int>> key_lines;  // key -> its line
  std::vector<std::string> seen;
  int line_no = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_no;
    absl::string_view line = raw;
    size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    if (eq == absl::string_view::npos) return LineError(line_no, absl::StrCat("expected key = value, got '", line, "'"));
    std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(line.substr(0, eq)));
    absl::string_view value = absl::StripAsciiWhitespace(line.substr(eq + 1));
    if (key.empty()) return LineError(line_no, "missing key before '='");
    if (value.empty()) return LineError(line_no, absl::StrCat("missing value for ", key));
    if (key == "threads") key = "queues";
    for (const auto& s : seen) {
      if (s == key) return LineError(line_no, absl::StrCat("duplicate key ", key));
    }
    seen.push_back(key);
    key_lines.emplace_back(key, line_no);
    if (key == "name") {
      spec.name = std::string(value);
      continue;
    }
    if (key == "throttle_target_ms") {
      if (!absl::SimpleAtod(value, &spec.throttle_target_ms) || spec.throttle_target_ms <= 0) {
        return LineError(line_no, absl::StrCat("bad value '", value, "' for throttle_target_ms (want a number > 0)"));
      }
      continue;
    }
    if (key == "throttle_steps") {
      if (!absl::SimpleAtoi(value, &spec.throttle_steps) || spec.throttle_steps < 1) {
        return LineError(line_no, absl::StrCat("bad value '", value, "' for throttle_steps (want an integer >= 1)"));
      }
      continue;
    }
    if (key == "min_reps" || key == "max_reps" || key == "max_reruns") {
      int v = 0;
      const int lowest = key == "max_reruns" ? 0 : 1;
      if (!absl::SimpleAtoi(value, &v) || v < lowest) {
        return LineError(line_no, absl::StrCat("bad value '", value, "' for ", key, " (want an integer >= ", lowest, ")"));
      }
      (key == "min_reps" ? spec.min_reps : key == "max_reps" ? spec.max_reps : spec.max_reruns) = v;
      continue;
    }
    if (key == "ci_target" || key == "time_cap_s" || key == "max_interference") {
      double v = 0;
      if (!absl::SimpleAtod(value, &v) || v < 0 || (key == "max_interference" && v > 1)) {
        return LineError(line_no, absl::StrCat("bad value '", value, "' for ", key,
                                               key == "max_interference" ? " (want a share in 0..1)" : " (want a number >= 0)"));
      }
      (key == "ci_target" ? spec.ci_target : key == "time_cap_s" ? spec.time_cap_s : spec.max_interference) = v;
      continue;
    }
    if (key == "phase1_per_round") {
      BenchConfig scratch;
      // Same on|off words as the bench settings.
      absl::Status st = ApplySetting(&scratch, "stealing", value);
      if (!st.ok()) return LineError(line_no, absl::StrCat("bad value '", value, "' for phase1_per_round (want on|off)"));
      spec.phase1_per_round = scratch.stealing;
      continue;
    }
    std::vector<std::string> values;
    if (key == "skew_phases" || key == "conninfo") {
      values.push_back(std::string(value));
    } else {
      for (absl::string_view v : absl::StrSplit(value, ',')) {
        v = absl::StripAsciiWhitespace(v);
        if (v.empty()) return LineError(line_no, absl::StrCat("empty list element for ", key));
        if (key == "policy" && absl::AsciiStrToLower(v) == "factorial") {
          for (const Policy& p : AllLearnedPolicies()) values.push_back(PolicyName(p));
          continue;
        }
        values.push_back(std::string(v));
      }
    }
    BenchConfig scratch;
    for (const auto& v : values) {
      absl::Status st = ApplySetting(&scratch, key, v);
      if (!st.ok()) return LineError(line_no, st.message());
    }
    if (values.size() == 1 && key != "policy") {
      ApplySetting(&spec.base, key, values[0]).IgnoreError();
    } else {
      lists.emplace_back(key, std::move(values));
    }
  }
  if (spec.min_reps > 0 && spec.max_reps > 0 && spec.max_reps < spec.min_reps) {
    return absl::InvalidArgumentError(absl::StrCat("spec: max_reps (", spec.max_reps, ") < min_reps (",
                                                   spec.min_reps, ")"));
  }
  // Policy innermost.
  for (auto& l : lists) {
    if (l.first != "policy") spec.sweeps.push_back(l);
  }
  for (auto& l : lists) {
    if (l.first == "policy") spec.sweeps.push_back(l);
  }
  // Whole-configuration checks (names of protocols, ranges): an error is
  // reported at the line of the key it names.
  for (const BenchConfig& c : ExpandCells(spec)) {
    absl::Status st = Validate(c);
    if (st.ok()) continue;
    int line = key_lines.empty() ? 0 : key_lines.back().second;
    std::string msg(st.message());
    for (const auto& kl : key_lines) {
      if (msg.find(kl.first) != std::string::npos) {
        line = kl.second;
        break;
      }
    }
    return LineError(line, msg);
  }
  return spec;
}

absl::StatusOr<ExperimentSpec> ReadSpecFile(const std::string& path) {
  std::string text;
  if (!ReadWholeFile(path, &text)) return absl::NotFoundError(absl::StrCat("cannot read spec file ", path));
  auto spec = ParseSpec(text);
  if (!spec.ok()) return absl::InvalidArgumentError(absl::StrCat(path, ": ", spec.status().message()));
  return spec;
}

std::vector<BenchConfig> ExpandCells(const ExperimentSpec& spec) {
  std::vector<BenchConfig> cells = {spec.base};
  for (const auto& dim : spec.sweeps) {
    std::vector<BenchConfig> next;
    for (const BenchConfig& c : cells) {
      for (const auto& v : dim.second) {
        BenchConfig d = c;
        ApplySetting(&d, dim.first, v).IgnoreError();  // validated while parsing
        if (dim.first != "policy" && dim.first != "protocol" && dim.second.size() > 1) {
          absl::StrAppend(&d.sweep_label, d.sweep_label.empty() ? "" : " ", dim.first, "=",
                          absl::StripAsciiWhitespace(v));
        }
        next.push_back(d);
      }
    }
    cells.swap(next);
  }
  return cells;
}

}  // namespace bench
}  // namespace corral
