#include "bench/runner/experiment.h"

#include <sys/stat.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "policies/policy.h"

namespace corral {
namespace bench {
namespace {

absl::Status WriteFile(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) return absl::UnavailableError(absl::StrCat("cannot write ", path));
  out << text;
  return out ? absl::OkStatus() : absl::UnavailableError(absl::StrCat("write failed: ", path));
}

absl::Status MakeDirs(const std::string& dir) {
  std::string acc;
  for (size_t i = 0; i <= dir.size(); ++i) {
    if (i == dir.size() || dir[i] == '/') {
      if (!acc.empty() && ::mkdir(acc.c_str(), 0755) != 0 && errno != EEXIST) {
        return absl::UnavailableError(absl::StrCat("cannot create directory ", acc));
      }
    }
    if (i < dir.size()) acc += dir[i];
  }
  return absl::OkStatus();
}

// Everything but the policy: cells with the same key share a database setup.
std::string GroupKey(const BenchConfig& c) {
  return absl::StrCat(c.backend, "|", c.workload, "|", c.protocol, "|", c.queues, "|", EffectiveClients(c), "|",
                      c.arrival_rate, "|", c.warehouses, "|", c.scale, "|", c.theta, "|", c.hot_fraction, "|",
                      c.hot_size, "|", c.seed, "|", c.phase1_s, "|", c.stealing ? 1 : 0, "|",
                      c.retry_wait_us, "|", c.sweep_label);
}


}  // namespace

std::string Table3Markdown(const std::string& title, const std::vector<CellResult>& cells) {
  // Group by (workload, queues, other settings except protocol/policy); columns = protocols.
  std::string out;
  std::vector<std::string> groups;
  std::map<std::string, std::vector<const CellResult*>> by_group;
  for (const auto& cr : cells) {
    const BenchConfig& c = cr.config;
    std::string g = absl::StrCat(c.workload, ", ", c.queues, " queues, ", EffectiveClients(c), " clients",
                                 c.warehouses > 0 ? absl::StrCat(", ", c.warehouses, " warehouses") : "",
                                 c.theta >= 0 ? absl::StrCat(", theta ", c.theta) : "",
                                 c.arrival_rate > 0 ? absl::StrCat(", open loop ", c.arrival_rate, "/s") : "",
                                 c.sweep_label.empty() ? "" : absl::StrCat(", ", c.sweep_label));
    if (!by_group.count(g)) groups.push_back(g);
    by_group[g].push_back(&cr);
  }
  for (const auto& g : groups) {
    std::vector<std::string> protocols, policies;
    std::map<std::pair<std::string, std::string>, const CellResult*> at;
    for (const CellResult* cr : by_group[g]) {
      const auto& p = cr->config.protocol;
      const auto& q = cr->config.policy;
      if (std::find(protocols.begin(), protocols.end(), p) == protocols.end()) protocols.push_back(p);
      if (std::find(policies.begin(), policies.end(), q) == policies.end()) policies.push_back(q);
      at[{q, p}] = cr;
    }
    absl::StrAppend(&out, "### ", title, ": ", g, "\n\n| policy |");
    for (const auto& p : protocols) absl::StrAppend(&out, " ", p, " tps | ", p, " abort rate |");
    out += "\n|---|";
    for (size_t i = 0; i < protocols.size(); ++i) out += "---:|---:|";
    out += "\n";
    for (const auto& q : policies) {
      absl::StrAppend(&out, "| ", q, " |");
      for (const auto& p : protocols) {
        auto it = at.find({q, p});
        if (it == at.end()) {
          out += " | |";
          continue;
        }
        const CellResult& cr = *it->second;
        absl::StrAppend(&out, absl::StrFormat(" %.0f ± %.0f | %.3f ± %.3f |", cr.tps.mean, cr.tps.half_width,
                                              cr.abort_rate.mean, cr.abort_rate.half_width));
      }
      out += "\n";
    }
    // Ratios against the baselines, per protocol.
    for (const auto& p : protocols) {
      auto orig = at.find({"original", p});
      auto hp = at.find({"hard-partition", p});
      for (const auto& q : policies) {
        if (q == "original" || q == "hard-partition") continue;
        auto it = at.find({q, p});
        if (it == at.end()) continue;
        if (orig == at.end() && hp == at.end()) continue;
        absl::StrAppend(&out, "\n", p, " ", q, ":");
        if (orig != at.end() && orig->second->tps.mean > 0) {
          absl::StrAppend(&out, absl::StrFormat(" tps x%.2f vs original, abort rate x%.2f of original;",
                                                it->second->tps.mean / orig->second->tps.mean,
                                                orig->second->abort_rate.mean > 0
                                                    ? it->second->abort_rate.mean / orig->second->abort_rate.mean
                                                    : 0.0));
        }
        if (hp != at.end() && hp->second->tps.mean > 0) {
          absl::StrAppend(&out, absl::StrFormat(" tps x%.2f vs hard-partition", it->second->tps.mean / hp->second->tps.mean));
        }
        if (policies.size() > 6) break;  // factorial tables: the first learned policy only
      }
    }
    bool all_ok = true;
    for (const CellResult* cr : by_group[g]) all_ok &= cr->checks_ok;
    absl::StrAppend(&out, "\n\nconsistency checks: ", all_ok ? "all passed" : "SOME FAILED", "\n\n");
  }
  return out;
}

std::string EffectsMarkdown(const std::vector<CellResult>& cells) {
  std::map<std::string, std::map<std::string, const CellResult*>> groups;
  std::vector<std::string> order;
  for (const auto& cr : cells) {
    const BenchConfig& c = cr.config;
    std::string g = absl::StrCat(c.workload, ", ", c.protocol, ", ", c.queues, " queues");
    if (!groups.count(g)) order.push_back(g);
    groups[g][c.policy] = &cr;
  }
  const std::vector<std::string> factors = {"Naming(L-/C+)", "Grouping(S-/A+)", "Weight(Cnt-/Frac+)",
                                            "Aggr(Sum-/Max+)"};
  std::string out;
  for (const auto& g : order) {
    std::vector<double> tps(16), ar(16);
    bool complete = true;
    for (int cell = 0; cell < 16; ++cell) {
      Policy p;
      p.kind = PolicyKind::kLearned;
      p.extraction.naming = (cell & 1) ? RefNaming::kCanonical : RefNaming::kLiteral;
      p.extraction.grouping = (cell & 2) ? RefGrouping::kAll : RefGrouping::kSingle;
      p.weighting = (cell & 4) ? Weighting::kFraction : Weighting::kCount;
      p.aggregation = (cell & 8) ? Aggregation::kMax : Aggregation::kSum;
      auto it = groups[g].find(PolicyName(p));
      if (it == groups[g].end()) {
        complete = false;
        break;
      }
      tps[cell] = it->second->tps.mean;
      ar[cell] = it->second->abort_rate.mean;
    }
    if (!complete) continue;
    auto ft = Factorial2k(factors, tps);
    auto fa = Factorial2k(factors, ar);
    if (!ft.ok() || !fa.ok()) continue;
    absl::StrAppend(&out, "### 2^4 effects: ", g, "\n\n",
                    "Sign-table method (Jain ch. 17) on the mean response per cell. q0 = ",
                    absl::StrFormat("%.1f tps, %.4f abort rate", ft->q0, fa->q0), ".\n\n",
                    "| effect | q (tps) | variation explained (tps) | q (abort rate) | variation explained (abort rate) |\n",
                    "|---|---:|---:|---:|---:|\n");
    for (size_t i = 0; i < ft->effects.size(); ++i) {
      absl::StrAppend(&out, absl::StrFormat("| %s | %.1f | %.1f%% | %.4f | %.1f%% |\n", ft->effects[i].name,
                                            ft->effects[i].q, 100 * ft->effects[i].share, fa->effects[i].q,
                                            100 * fa->effects[i].share));
    }
    out += "\n";
  }
  return out;
}

absl::StatusOr<ExperimentSummary> RunExperiment(const ExperimentSpec& spec, Runner* runner,
                                                const std::string& out_dir) {
  ExperimentSummary sum;
  std::vector<BenchConfig> cells = ExpandCells(spec);
  for (const auto& c : cells) {
    absl::Status st = Validate(c);
    if (!st.ok()) return st;
  }
  if (!out_dir.empty()) {
    absl::Status st = MakeDirs(out_dir);
    if (!st.ok()) return st;
  }
  std::string runs_csv = CsvHeader();
  std::string timeline = "cell,workload,protocol,policy,queues,run,t_s,tps,abort_rate,phase,history_entries,history_bytes,"
             "state_entries,state_bytes\n";
  std::string cells_csv =
      "workload,protocol,policy,queues,clients,warehouses,theta,arrival_rate,mode,n,tps,tps_ci95,abort_rate,"
      "abort_rate_ci95,p50_us,p99_us,sched_cost_ns,checks_ok,throttle_rate,throttle_tps,throttle_abort_rate,"
      "throttle_mean_us,sweep\n";
  std::map<std::string, LearnedHistory> learned;
  int idx = 0;
  for (const auto& c : cells) {
    ++idx;
    std::fprintf(stderr, "== cell %d/%zu: %s %s %s queues=%d%s%s\n", idx, cells.size(), c.workload.c_str(),
                 c.protocol.c_str(), c.policy.c_str(), c.queues, c.sweep_label.empty() ? "" : " ",
                 c.sweep_label.c_str());
    auto pol = ParsePolicy(c.policy);
    std::string hkey;
    if (pol.ok() && pol->kind == PolicyKind::kLearned) {
      hkey = absl::StrCat(GroupKey(c), "|", RefNamingName(pol->extraction.naming), "|",
                          RefGroupingName(pol->extraction.grouping));
    }
    const LearnedHistory* have = nullptr;
    LearnedHistory fresh;
    if (!hkey.empty() && learned.count(hkey)) have = &learned[hkey];
    auto r = runner->Run(c, have, hkey.empty() || have ? nullptr : &fresh);
    if (!r.ok()) return absl::Status(r.status().code(), absl::StrCat("cell ", idx, ": ", r.status().message()));
    if (!hkey.empty() && !have && c.mode == RunMode::kPhased) learned[hkey] = std::move(fresh);
    CellResult cr;
    cr.config = c;
    cr.tps = r->tps;
    cr.abort_rate = r->abort_rate;
    cr.p50_us = r->p50_us;
    cr.p99_us = r->p99_us;
    cr.sched_cost_ns = r->sched_cost_ns;
    cr.checks_ok = r->all_checks_ok;
    std::fprintf(stderr, "   -> %.0f tps (+-%.0f), abort rate %.4f, checks %s\n", cr.tps.mean, cr.tps.half_width,
                 cr.abort_rate.mean, cr.checks_ok ? "ok" : "FAILED");
    runs_csv += CsvRows(*r);
    std::string tl = TimelineCsv(*r);
    size_t nl = tl.find('\n');
    for (size_t pos = nl + 1; pos < tl.size();) {
      size_t e = tl.find('\n', pos);
      absl::StrAppend(&timeline, idx, ",", c.workload, ",", c.protocol, ",", c.policy, ",", c.queues, ",",
                      tl.substr(pos, e - pos), "\n");
      pos = e + 1;
    }
    // Throttled search: bisect the arrival rate for mean response <= target.
    if (spec.throttle_target_ms > 0 && c.arrival_rate <= 0) {
      const LearnedHistory* h = hkey.empty() ? nullptr : &learned[hkey];
      double lo = 0, hi = 1.3 * cr.tps.mean;
      for (int step = 0; step < spec.throttle_steps && hi > 0; ++step) {
        double rate = lo == 0 && step == 0 ? hi * 0.5 : (lo + hi) / 2;
        BenchConfig t = c;
        t.arrival_rate = rate;
        t.repeat = 1;
        t.progress_s = 0;
        auto tr = runner->Run(t, h, nullptr);
        if (!tr.ok()) return tr.status();
        const RunMetrics& m = tr->runs[0];
        // Met only if the offered load was delivered (a generator that
        // cannot keep up would otherwise "meet" any target).
        const double delivered = m.seconds > 0 ? (m.commits + m.user_aborts) / m.seconds : 0;
        bool ok = m.mean_us <= spec.throttle_target_ms * 1e3 && m.commits > 0 && delivered >= 0.9 * rate;
        std::fprintf(stderr, "   throttle %.0f/s: mean %.0f us, %.0f tps -> %s\n", rate, m.mean_us, m.tps,
                     ok ? "meets" : "misses");
        if (ok) {
          lo = rate;
          cr.throttled = true;
          cr.best_rate = rate;
          cr.best_tps = m.tps;
          cr.best_abort_rate = m.abort_rate;
          cr.best_mean_us = m.mean_us;
        } else {
          hi = rate;
        }
      }
    }
    absl::StrAppend(&cells_csv, c.workload, ",", c.protocol, ",", c.policy, ",", c.queues, ",", EffectiveClients(c),
                    ",", c.warehouses, ",", c.theta, ",", c.arrival_rate, ",",
                    c.mode == RunMode::kOnline ? "online" : "phased", ",", cr.tps.n, ",",
                    absl::StrFormat("%.1f,%.1f,%.5f,%.5f,%.1f,%.1f,%.0f", cr.tps.mean, cr.tps.half_width,
                                    cr.abort_rate.mean, cr.abort_rate.half_width, cr.p50_us.mean, cr.p99_us.mean,
                                    cr.sched_cost_ns.mean),
                    ",", cr.checks_ok ? 1 : 0, ",",
                    absl::StrFormat("%.1f,%.1f,%.5f,%.1f", cr.best_rate, cr.best_tps, cr.best_abort_rate,
                                    cr.best_mean_us),
                    ",", c.sweep_label, "\n");
    sum.cells.push_back(cr);
  }
  sum.table_md = absl::StrCat("## ", spec.name, "\n\n",
                              "Phase II means over repeat runs, ± 95% confidence half-width (Student t).\n\n",
                              Table3Markdown(spec.name, sum.cells));
  sum.effects_md = EffectsMarkdown(sum.cells);
  if (spec.throttle_target_ms > 0) {
    sum.throttled_md = absl::StrCat("## ", spec.name, ": throttled, mean response time <= ", spec.throttle_target_ms,
                                    " ms\n\n| workload | protocol | policy | queues | arrival rate (/s) | tps | abort rate | mean response (us) |\n|---|---|---|---:|---:|---:|---:|---:|\n");
    for (const auto& cr : sum.cells) {
      absl::StrAppend(&sum.throttled_md, "| ", cr.config.workload, " | ", cr.config.protocol, " | ",
                      cr.config.policy, " | ", cr.config.queues, " | ",
                      cr.throttled ? absl::StrFormat("%.0f | %.0f | %.4f | %.0f", cr.best_rate, cr.best_tps,
                                                     cr.best_abort_rate, cr.best_mean_us)
                                   : std::string("none met | | |"),
                      " |\n");
    }
  }
  if (!out_dir.empty()) {
    for (const auto& f : std::vector<std::pair<std::string, std::string>>{
             {"runs.csv", runs_csv}, {"cells.csv", cells_csv}, {"timeline.csv", timeline},
             {"table.md", sum.table_md}, {"effects.md", sum.effects_md}, {"throttled.md", sum.throttled_md}}) {
      if (f.second.empty()) continue;
      absl::Status st = WriteFile(out_dir + "/" + f.first, f.second);
      if (!st.ok()) return st;
    }
  }
  return sum;
}

}  // namespace bench
}  // namespace corral
