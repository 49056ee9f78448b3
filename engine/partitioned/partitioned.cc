// Engine front of the partitioned engine: scheme names/parsing, Window
// formatting, EngineImpl::Submit/TakeWindow and PartitionedEngine::Create.
// Thread-safety: Submit and TakeWindow may be called from any thread; they
// only touch inboxes, atomics and mutex-guarded stats.
#include "engine/partitioned/partitioned.h"

#include <pthread.h>
#include <sys/prctl.h>
#include <time.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <deque>
#include <map>
#include <thread>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "engine/partitioned/inbox.h"
#include "engine/partitioned/sync.h"
#include "engine/partitioned/partitioned_internal.h"

namespace corral {
namespace partitioned {

const char* SchemeName(Scheme s) {
  switch (s) {
    case Scheme::kBlocking: return "blocking";
    case Scheme::kSpeculation: return "speculation";
    case Scheme::kLocking: return "locking";
  }
  return "?";
}

absl::StatusOr<Scheme> ParseScheme(const std::string& name) {
  if (name == "blocking") return Scheme::kBlocking;
  if (name == "speculation") return Scheme::kSpeculation;
  if (name == "locking") return Scheme::kLocking;
  return absl::InvalidArgumentError(absl::StrCat("unknown scheme: ", name));
}

model::ModelScheme ToModelScheme(Scheme s) {
  switch (s) {
    case Scheme::kBlocking: return model::ModelScheme::kBlocking;
    case Scheme::kSpeculation: return model::ModelScheme::kSpeculation;
    case Scheme::kLocking: return model::ModelScheme::kLocking;
  }
  return model::ModelScheme::kBlocking;
}

std::string Window::ToString() const {
  char buf[256];
  std::snprintf(buf, sizeof(buf),
                "%.2fs tput=%.0f committed=%lld (sp=%lld mp=%lld) aborted=%lld "
                "reexec=%lld sysabort=%lld | ",
                seconds, throughput(), (long long)committed,
                (long long)sp_committed, (long long)mp_committed,
                (long long)aborted, (long long)reexecuted,
                (long long)system_aborts);
  return buf + params.ToString();
}

namespace internal {

// ---------------------------------------------------------------- Engine

absl::Status EngineImpl::Submit(TxnRequest req) {
  const int P = opts_.partitions;
  const int64_t nkeys = P * opts_.keys_per_partition;
  if (req.rounds.empty()) return absl::InvalidArgumentError("no rounds");
  auto t = std::make_shared<TxnCtl>();
  t->nrounds = static_cast<int>(req.rounds.size());
  t->frags.assign(t->nrounds, std::vector<std::vector<Op>>(P));
  t->parts.resize(t->nrounds);
  t->first_round.assign(P, -1);
  t->last_round.assign(P, -1);
  for (int r = 0; r < t->nrounds; ++r) {
    if (req.rounds[r].empty()) return absl::InvalidArgumentError("empty round");
    for (const Op& op : req.rounds[r]) {
      if (op.key < 0 || op.key >= nkeys) {
        return absl::OutOfRangeError(absl::StrCat("key ", op.key));
      }
      const int p = static_cast<int>(op.key % P);
      if (t->frags[r][p].empty()) t->parts[r].push_back(p);
      t->frags[r][p].push_back(op);
      if (t->first_round[p] < 0) t->first_round[p] = r;
      t->last_round[p] = r;
    }
  }
  t->home = opts_.queue_choice ? opts_.queue_choice(req)
                               : static_cast<int>(req.rounds[0][0].key % P);
  if (t->home < 0 || t->home >= P) {
    return absl::OutOfRangeError(absl::StrCat("queue ", t->home));
  }
  int touched = 0;
  for (int p = 0; p < P; ++p) touched += t->first_round[p] >= 0;
  t->mp = touched > 1 || t->first_round[t->home] < 0;
  if (!t->mp && t->nrounds > 1) {
    // A single-partition transaction runs as one fragment.
    std::vector<Op> all;
    for (auto& r : req.rounds) all.insert(all.end(), r.begin(), r.end());
    t->frags.assign(1, std::vector<std::vector<Op>>(P));
    t->frags[0][t->home] = std::move(all);
    t->parts.assign(1, {t->home});
    t->nrounds = 1;
    t->first_round[t->home] = t->last_round[t->home] = 0;
  }
  t->abort_partition = static_cast<int>(req.rounds[0][0].key % P);
  t->submit_ns = MonoNanos();
  t->req = std::move(req);
  {
    MuLock l(&mu_);
    ++outstanding_;
  }
  if (t->mp) {
    CMsg m;
    m.kind = CMsg::kNew;
    m.txn = std::move(t);
    coord_->inbox().PushNow(std::move(m));
  } else {
    t->id = kSpIdBase + sp_ids_.fetch_add(1, std::memory_order_relaxed);
    PMsg m;
    m.kind = PMsg::kSp;
    m.txn = t;
    parts_[t->home]->inbox().PushNow(std::move(m));
  }
  return absl::OkStatus();
}

Window EngineImpl::TakeWindow() {
  MuLock l(&window_mu_);
  PStats ps;
  int64_t cpu = 0;
  for (size_t i = 0; i < parts_.size(); ++i) {
    ps.Add(parts_[i]->TakeStats());
    const int64_t c = parts_[i]->ThreadCpu();
    cpu += c - part_cpu_[i];
    part_cpu_[i] = c;
  }
  // Busy times are wall times; on a shared machine a busy thread also waits
  // for a core. Scale them to CPU time with the partitions' measured ratio.
  const int64_t busy_wall = ps.busy_ns;
  const double k = ps.busy_ns > 0 && cpu > 0
                       ? std::min(1.0, static_cast<double>(cpu) / ps.busy_ns)
                       : 1.0;
  auto scale = [k](int64_t& v) { v = static_cast<int64_t>(v * k); };
  scale(ps.sp_plain_ns);
  scale(ps.sp_spec_ns);
  scale(ps.sp_lock_ns);
  scale(ps.mp1_cpu_ns);
  scale(ps.mpr_cpu_ns);
  scale(ps.mp_overhead_ns);
  CStats cs = coord_->TakeStats();
  Window w;
  const int64_t now = MonoNanos();
  w.seconds = (now - window_start_) / 1e9;
  window_start_ = now;
  w.committed = committed_.exchange(0);
  w.aborted = aborted_.exchange(0);
  w.mp_committed = mp_committed_.exchange(0);
  const int64_t mp_aborted = mp_aborted_.exchange(0);
  const int64_t mr = mr_committed_.exchange(0);
  w.sp_committed = w.committed - w.mp_committed;
  w.reexecuted = ps.reexec;
  w.system_aborts = cs.system_aborts;
  model::ModelParams& m = last_;
  m.partitions = opts_.partitions;
  m.mp_width = opts_.partitions;
  m.tmp_net_us = 2 * opts_.network_stall_ns / 1e3;
  auto avg = [](int64_t ns, int64_t n) { return ns / 1e3 / n; };
  if (ps.sp_plain_n >= 20) {
    m.tsp_us = avg(ps.sp_plain_ns, ps.sp_plain_n);
    have_tsp_ = true;
  }
  if (ps.sp_spec_n >= 20) {
    m.tsp_spec_us = avg(ps.sp_spec_ns, ps.sp_spec_n);
    have_tsps_ = true;
  } else if (!have_tsps_ && have_tsp_) {
    m.tsp_spec_us = m.tsp_us * 1.1;  // prior until speculation ran
  }
  if (ps.sp_lock_n >= 20) m.tsp_lock_us = avg(ps.sp_lock_ns, ps.sp_lock_n);
  if (ps.sp_lock_n >= 20 && m.tsp_spec_us > 0) {
    m.lock_overhead =
        std::max(0.0, avg(ps.sp_lock_ns, ps.sp_lock_n) / m.tsp_spec_us - 1);
    have_l_ = true;
  }
  const double mp_over =
      ps.mp1_n + ps.mpr_n > 0 ? avg(ps.mp_overhead_ns, ps.mp1_n + ps.mpr_n) : 0;
  if (ps.mp1_n >= 5) {
    m.tmp_us = avg(ps.mp1_wall_ns, ps.mp1_n);
    m.tmp_cpu_us = avg(ps.mp1_cpu_ns, ps.mp1_n) + mp_over;
    have_mp_ = true;
  }
  if (ps.gap_n >= 5) m.round_gap_us = avg(ps.gap_ns, ps.gap_n);
  if (ps.mpr_n >= 5) {
    const double extra = std::max<double>(1, ps.mpr_rounds - ps.mpr_n);
    const double cpu = ps.mpr_cpu_ns / 1e3 + mp_over * ps.mpr_n;
    const double base = have_mp_ ? m.tmp_cpu_us * ps.mpr_n : cpu;
    m.round_cpu_us = std::max(0.0, (cpu - base) / extra);
    m.rounds = static_cast<int>((ps.mpr_rounds + ps.mpr_n / 2) / ps.mpr_n);
    if (!have_mp_ && ps.mpr_n > 0) {
      // Only multi-round MP txns ran: derive single-round times.
      const double r1 = std::max(1, m.rounds) - 1;
      m.tmp_us = avg(ps.mpr_wall_ns, ps.mpr_n) - r1 * (m.round_gap_us + m.round_cpu_us);
      m.tmp_cpu_us = avg(ps.mpr_cpu_ns, ps.mpr_n) + mp_over - r1 * m.round_cpu_us;
    }
  }
  const int64_t all = w.committed + w.aborted;
  const int64_t mp_all = w.mp_committed + mp_aborted;
  if (all > 0) {
    m.f = static_cast<double>(mp_all) / all;
    m.abort_rate = static_cast<double>(w.aborted - cs.system_aborts * 0) / all;
  }
  if (w.mp_committed > 0) {
    m.multi_round_share = static_cast<double>(mr) / w.mp_committed;
  }
  if (cs.decided > 0) m.coordinator_us = avg(cs.busy_ns, cs.decided);
  // The partitions' CPU beyond their busy wall time was spent waiting in and
  // waking from the inbox; with MP transactions running, it is charged to
  // them (at f = 0 the SP busy times already carry the measured share).
  if (mp_all >= 5 && cpu > busy_wall) {
    m.mp_wait_cpu_us = avg(cpu - busy_wall, mp_all);
  } else if (mp_all >= 5) {
    m.mp_wait_cpu_us = 0;
  }
  w.params = m;
  return w;
}

}  // namespace internal

absl::StatusOr<std::unique_ptr<PartitionedEngine>> PartitionedEngine::Create(
    PartitionedOptions o) {
  if (o.partitions < 1 || o.partitions > 64) {
    return absl::InvalidArgumentError("partitions must be in [1, 64]");
  }
  if (o.keys_per_partition < 1) {
    return absl::InvalidArgumentError("keys_per_partition must be >= 1");
  }
  if (o.network_stall_ns < 0 || o.lock_timeout_ns <= 0) {
    return absl::InvalidArgumentError("bad stall or lock timeout");
  }
  return std::unique_ptr<PartitionedEngine>(
      new internal::EngineImpl(std::move(o)));
}

}  // namespace partitioned
}  // namespace corral
