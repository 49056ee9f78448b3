#include "bench/runner/experiment.h"

#include <sys/stat.h>

#include <algorithm>
#include <chrono>
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

std::string Table3Markdown(const std::string& title, const std::vector<CellResult>& cells,
                           const std::vector<PairedRatio>& ratios) {
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
        if (cr.tps.n == 0 && cr.contaminated_runs > 0) {
          out += " no clean run | |";
          continue;
        }
        absl::StrAppend(&out, absl::StrFormat(" %.0f ± %.0f%s | %.3f ± %.3f |", cr.tps.mean, cr.tps.half_width,
                                              cr.contaminated_runs > 0
                                                  ? absl::StrFormat(" (n=%d, %d left out)", cr.tps.n,
                                                                    cr.contaminated_runs)
                                                  : std::string(),
                                              cr.abort_rate.mean, cr.abort_rate.half_width));
      }
      out += "\n";
    }
    // Verdicts: paired per-round ratios with their 95% intervals.
    for (const auto& q : policies) {
      for (const auto& p : protocols) {
        auto it = at.find({q, p});
        if (it == at.end()) continue;
        std::string lines;
        for (const PairedRatio& pr : ratios) {
          if (static_cast<size_t>(pr.cell) >= cells.size() || &cells[pr.cell] != it->second) continue;
          const std::string vs = absl::StrCat("vs ", pr.baseline);
          absl::StrAppend(&lines, "- ", VerdictLine("tps", pr.tps, vs), "\n- ",
                          VerdictLine("abort rate", pr.abort_rate, vs), "\n");
        }
        if (!lines.empty()) absl::StrAppend(&out, "\n", p, ", ", q, ":\n", lines);
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

namespace {

// The history key of a learned cell ("" for a baseline): cells that differ
// only in the policy's scheduling half share a Phase I History.
// With phase1_per_round, each round learns its own History.
std::string HistoryKey(const BenchConfig& c, bool phase1_per_round, int round) {
  auto pol = ParsePolicy(c.policy);
  if (!pol.ok() || pol->kind != PolicyKind::kLearned) return "";
  std::string key = absl::StrCat(GroupKey(c), "|", RefNamingName(pol->extraction.naming), "|",
                                 RefGroupingName(pol->extraction.grouping));
  if (phase1_per_round) absl::StrAppend(&key, "|round ", round);
  return key;
}

// Whether a cell's policy is a baseline (any kind but learned; cells are
// validated, so the name parses).
bool IsBaseline(const std::string& policy) {
  absl::StatusOr<Policy> p = ParsePolicy(policy);
  return p.ok() && p->kind != PolicyKind::kLearned;
}

// Clean runs of `cell` by round (-1 = none: not run or contaminated).
std::vector<const RunMetrics*> CleanByRound(const std::vector<RunRecord>& runs, int cell, int rounds) {
  std::vector<const RunMetrics*> out(static_cast<size_t>(rounds), nullptr);
  for (const RunRecord& r : runs) {
    if (r.cell == cell && !r.metrics.contaminated && r.round >= 1 && r.round <= rounds) out[r.round - 1] = &r.metrics;
  }
  return out;
}

void ComputeRatios(const std::vector<RunRecord>& runs, int rounds, std::vector<PairedRatio>* ratios) {
  for (PairedRatio& pr : *ratios) {
    auto a = CleanByRound(runs, pr.cell, rounds);
    auto b = CleanByRound(runs, pr.baseline_cell, rounds);
    std::vector<double> tn, td, an, ad;
    for (int r = 0; r < rounds; ++r) {
      if (a[r] == nullptr || b[r] == nullptr) continue;
      tn.push_back(a[r]->tps);
      td.push_back(b[r]->tps);
      an.push_back(SmoothedAbortRate(a[r]->conflict_aborts, a[r]->commits));
      ad.push_back(SmoothedAbortRate(b[r]->conflict_aborts, b[r]->commits));
    }
    pr.tps = PairedLogRatioCi(tn, td);
    pr.abort_rate = PairedLogRatioCi(an, ad);
  }
}

double NowSeconds() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

}  // namespace

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
  const int min_reps = spec.min_reps > 0 ? spec.min_reps : std::max(1, spec.base.repeat);
  const int max_reps = std::max(min_reps, spec.max_reps > 0 ? spec.max_reps : spec.base.repeat);
  const int n = static_cast<int>(cells.size());
  sum.cells.resize(cells.size());
  for (int i = 0; i < n; ++i) sum.cells[i].config = cells[i];

  // Headline pairs: each learned cell against the baselines of the same
  // configuration.
  for (int i = 0; i < n; ++i) {
    if (IsBaseline(cells[i].policy)) continue;
    for (const Policy& base : BaselinePolicies()) {
      for (int j = 0; j < n; ++j) {
        absl::StatusOr<Policy> pj = ParsePolicy(cells[j].policy);
        if (pj.ok() && *pj == base && GroupKey(cells[j]) == GroupKey(cells[i])) {
          PairedRatio pr;
          pr.cell = i;
          pr.baseline_cell = j;
          pr.baseline = PolicyName(base);
          sum.ratios.push_back(pr);
        }
      }
    }
  }

  std::map<std::string, LearnedHistory> learned;
  auto run_one = [&](int idx, int round) -> absl::StatusOr<BenchResult> {
    BenchConfig c = cells[idx];
    c.repeat = 1;
    const std::string hkey = HistoryKey(c, spec.phase1_per_round, round);
    const LearnedHistory* have = nullptr;
    LearnedHistory fresh;
    if (!hkey.empty() && learned.count(hkey)) have = &learned[hkey];
    auto r = runner->Run(c, have, hkey.empty() || have ? nullptr : &fresh, round - 1);
    if (!r.ok()) return absl::Status(r.status().code(), absl::StrCat("cell ", idx + 1, ": ", r.status().message()));
    if (!hkey.empty() && !have && c.mode == RunMode::kPhased) learned[hkey] = std::move(fresh);
    return r;
  };

  std::string runs_csv = CsvHeader();
  std::string timeline = "cell,workload,protocol,policy,queues,run,t_s,tps,abort_rate,phase,history_entries,history_bytes,"
             "state_entries,state_bytes,chosen,hot_queues,switches\n";
  const double t_start = NowSeconds();
  double last_round_s = 0;
  for (int round = 1; round <= max_reps; ++round) {
    if (round > min_reps && spec.ci_target > 0) {
      bool all = !sum.ratios.empty();
      for (const PairedRatio& pr : sum.ratios) all &= WithinTarget(pr.tps, spec.ci_target);
      if (all) {
        sum.stop_reason = absl::StrFormat("every tps ratio's 95%% interval within +-%.0f%%", 100 * spec.ci_target);
        break;
      }
    }
    const double elapsed = NowSeconds() - t_start;
    if (round > 2 && spec.time_cap_s > 0 && elapsed + last_round_s > spec.time_cap_s) {
      sum.stop_reason = absl::StrFormat("time cap %.0f s (another round would end at %.0f s)", spec.time_cap_s,
                                        elapsed + last_round_s);
      break;
    }
    const double t_round = NowSeconds();
    const std::vector<int> order = RoundOrder(n, round, spec.base.seed);
    for (int k = 0; k < n; ++k) {
      const int idx = order[k];
      const BenchConfig& c = cells[idx];
      for (int attempt = 0; attempt <= spec.max_reruns; ++attempt) {
        auto r = run_one(idx, round);
        if (!r.ok()) return r.status();
        CellResult& cr = sum.cells[idx];
        cr.checks_ok &= r->all_checks_ok;
        RunRecord rec;
        rec.cell = idx;
        rec.round = round;
        rec.attempt = attempt;
        rec.ran_phase1 = r->has_phase1;
        rec.metrics = std::move(r->runs[0]);
        RunMetrics& m = rec.metrics;
        m.round = round;
        m.contaminated = Contaminated(m.interference, spec.max_interference);
        std::fprintf(stderr, "== round %d, cell %d/%d (%d/%d this round): %s %s %s queues=%d%s%s -> %.0f tps, abort rate %.4f, "
                     "interference %.0f%%%s\n",
                     round, idx + 1, n, k + 1, n, c.workload.c_str(), c.protocol.c_str(), c.policy.c_str(), c.queues,
                     c.sweep_label.empty() ? "" : " ", c.sweep_label.c_str(), m.tps, m.abort_rate,
                     100 * m.interference.share,
                     m.contaminated ? (attempt < spec.max_reruns ? " CONTAMINATED, re-run" : " CONTAMINATED, left out")
                                    : "");
        BenchResult& one = *r;  // its metrics moved into rec above: keep them as this run's row
        one.runs.assign(1, m);
        runs_csv += CsvRows(one);
        std::string tl = TimelineCsv(one);
        size_t nl = tl.find('\n');
        for (size_t pos = nl + 1; pos < tl.size();) {
          size_t e = tl.find('\n', pos);
          absl::StrAppend(&timeline, idx + 1, ",", c.workload, ",", c.protocol, ",", c.policy, ",", c.queues, ",",
                          round, tl.substr(tl.find(',', pos), e - tl.find(',', pos)), "\n");
          pos = e + 1;
        }
        const bool contaminated = m.contaminated;
        if (contaminated) {
          ++cr.contaminated_runs;
          ++sum.contaminated_runs;
        }
        sum.runs.push_back(std::move(rec));
        if (!contaminated) break;
        // Past the time cap: no re-runs (the run stays left out).
        if (spec.time_cap_s > 0 && NowSeconds() - t_start > spec.time_cap_s) break;
      }
    }
    sum.rounds = round;
    last_round_s = NowSeconds() - t_round;
    ComputeRatios(sum.runs, sum.rounds, &sum.ratios);
    for (const PairedRatio& pr : sum.ratios) {
      std::fprintf(stderr, "   round %d: %s %s %s\n", round, cells[pr.cell].protocol.c_str(), cells[pr.cell].policy.c_str(),
                   VerdictLine("tps", pr.tps, "vs " + pr.baseline).c_str());
    }
  }
  if (sum.stop_reason.empty()) sum.stop_reason = absl::StrCat("max_reps (", max_reps, ") rounds");

  // Means over the clean runs.
  for (int i = 0; i < n; ++i) {
    CellResult& cr = sum.cells[i];
    std::vector<double> tps, ar, p50, p99, cost, qpt;
    for (const RunMetrics* m : CleanByRound(sum.runs, i, sum.rounds)) {
      if (m == nullptr) continue;
      tps.push_back(m->tps);
      ar.push_back(m->abort_rate);
      p50.push_back(m->p50_us);
      p99.push_back(m->p99_us);
      cost.push_back(m->sched_cost_ns);
      qpt.push_back(m->queues_per_txn);
    }
    cr.tps = ComputeMeanCi(tps);
    cr.abort_rate = ComputeMeanCi(ar);
    cr.p50_us = ComputeMeanCi(p50);
    cr.p99_us = ComputeMeanCi(p99);
    cr.sched_cost_ns = ComputeMeanCi(cost);
    cr.queues_per_txn = ComputeMeanCi(qpt);
  }

  // Throttled search: bisect the arrival rate for mean response <= target.
  if (spec.throttle_target_ms > 0) {
    for (int i = 0; i < n; ++i) {
      const BenchConfig& c = cells[i];
      CellResult& cr = sum.cells[i];
      if (c.arrival_rate > 0) continue;
      const std::string hkey = HistoryKey(c, spec.phase1_per_round, sum.rounds);
      const LearnedHistory* h = hkey.empty() || !learned.count(hkey) ? nullptr : &learned[hkey];
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
        std::fprintf(stderr, "   throttle %s %s: %.0f/s: mean %.0f us, %.0f tps -> %s\n", c.protocol.c_str(),
                     c.policy.c_str(), rate, m.mean_us, m.tps, ok ? "meets" : "misses");
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
  }

  std::string cells_csv =
      "workload,protocol,policy,queues,clients,warehouses,theta,arrival_rate,mode,n,tps,tps_ci95,abort_rate,"
      "abort_rate_ci95,p50_us,p99_us,sched_cost_ns,checks_ok,throttle_rate,throttle_tps,throttle_abort_rate,"
      "throttle_mean_us,sweep,contaminated_runs,queues_per_txn\n";
  for (const CellResult& cr : sum.cells) {
    const BenchConfig& c = cr.config;
    absl::StrAppend(&cells_csv, c.workload, ",", c.protocol, ",", c.policy, ",", c.queues, ",", EffectiveClients(c),
                    ",", c.warehouses, ",", c.theta, ",", c.arrival_rate, ",",
                    c.mode == RunMode::kOnline ? "online" : "phased", ",", cr.tps.n, ",",
                    absl::StrFormat("%.1f,%.1f,%.5f,%.5f,%.1f,%.1f,%.0f", cr.tps.mean, cr.tps.half_width,
                                    cr.abort_rate.mean, cr.abort_rate.half_width, cr.p50_us.mean, cr.p99_us.mean,
                                    cr.sched_cost_ns.mean),
                    ",", cr.checks_ok ? 1 : 0, ",",
                    absl::StrFormat("%.1f,%.1f,%.5f,%.1f", cr.best_rate, cr.best_tps, cr.best_abort_rate,
                                    cr.best_mean_us),
                    ",", c.sweep_label, ",", cr.contaminated_runs, absl::StrFormat(",%.3f", cr.queues_per_txn.mean),
                    "\n");
  }
  std::string ratios_csv =
      "workload,protocol,policy,baseline,queues,sweep,rounds,tps_ratio,tps_lo,tps_hi,abort_ratio,abort_lo,abort_hi\n";
  for (const PairedRatio& pr : sum.ratios) {
    const BenchConfig& c = cells[pr.cell];
    absl::StrAppend(&ratios_csv, c.workload, ",", c.protocol, ",", c.policy, ",", pr.baseline, ",", c.queues, ",",
                    c.sweep_label, ",", pr.tps.n, ",",
                    absl::StrFormat("%.4f,%.4f,%.4f,%.5f,%.5f,%.5f", pr.tps.estimate, pr.tps.lo, pr.tps.hi,
                                    pr.abort_rate.estimate, pr.abort_rate.lo, pr.abort_rate.hi),
                    "\n");
  }
  std::vector<double> shares;
  for (const RunRecord& r : sum.runs) {
    if (r.metrics.interference.valid) shares.push_back(r.metrics.interference.share);
  }
  std::sort(shares.begin(), shares.end());
  const std::string machine =
      shares.empty() ? std::string()
                     : absl::StrFormat("Other processes and steal took a median %.0f%% (max %.0f%%) of the machine's CPU "
                                       "during the measured windows. ",
                                       100 * shares[shares.size() / 2], 100 * shares.back());
  int no_clean = 0;
  for (const CellResult& cr : sum.cells) no_clean += cr.tps.n == 0;
  const std::string busy =
      no_clean == 0 ? std::string()
                    : absl::StrFormat("**%d of %d cells have no clean run**: other processes kept taking more than "
                                      "%.0f%% of the machine. Run again on a quieter machine, or pass "
                                      "--max_interference=0 (or a higher share) to keep disturbed runs; the "
                                      "interleaved rounds still spread a disturbance over every policy.\n\n",
                                      no_clean, n, 100 * spec.max_interference);
  sum.table_md = absl::StrCat(
      "## ", spec.name, "\n\n", busy, machine,
      absl::StrFormat("%d round(s), every cell once per round in a shuffled order; stopped: %s. ", sum.rounds,
                      sum.stop_reason),
      spec.max_interference > 0
          ? absl::StrFormat("%d run(s) lost more than %.0f%% of the machine's CPU to other processes and were "
                            "re-run and left out. ",
                            sum.contaminated_runs, 100 * spec.max_interference)
          : std::string(),
      "Table: Phase II means over the clean runs, ± 95% confidence half-width (Student t). "
      "Verdicts: ratios paired per round (learned and baseline in the same round), geometric mean with a 95% "
      "Student-t interval over the per-round log-ratios; abort rates smoothed by half a transaction.\n\n",
      Table3Markdown(spec.name, sum.cells, sum.ratios));
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
             {"runs.csv", runs_csv}, {"cells.csv", cells_csv}, {"ratios.csv", ratios_csv},
             {"timeline.csv", timeline}, {"table.md", sum.table_md}, {"effects.md", sum.effects_md},
             {"throttled.md", sum.throttled_md}}) {
      if (f.second.empty()) continue;
      absl::Status st = WriteFile(out_dir + "/" + f.first, f.second);
      if (!st.ok()) return st;
    }
  }
  return sum;
}

}  // namespace bench
}  // namespace corral
