// Partition executor: the partition thread's loop (Run), message handling,
// fragment / single-partition execution, speculation and 2PC decisions.
// Thread-safety: everything here runs on the partition's own thread; only
// the inbox and the stats (stats_mu_) are shared with other threads.
#include "engine/partitioned/partitioned_internal.h"

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

namespace corral {
namespace partitioned {
namespace internal {

// ------------------------------------------------------------- Partition

Partition::Partition(EngineImpl* eng, int idx, const PartitionedOptions& o)
    : eng_(eng), idx_(idx), P_(o.partitions), record_(o.record_history),
      lock_timeout_ns_(o.lock_timeout_ns), inbox_(o.stall_mode),
      scheme_(o.scheme), val_(o.keys_per_partition, 0),
      ver_(o.keys_per_partition, 0) {}

void Partition::Run() {
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);  // 1 us wake-up precision
  {
    MuLock l(&stats_mu_);
    has_cid_ = pthread_getcpuclockid(pthread_self(), &cid_) == 0;
  }
  std::vector<PMsg> msgs;
  while (true) {
    msgs.clear();
    const bool work = !pending_.empty() && CanStart();
    int64_t wake = 0;
    if (!blocked_.empty()) wake = CheckTimeouts();
    int64_t busy_start = MonoNanos();
    inbox_.Pop(&msgs, !work, wake);
    if (msgs.empty() && !work && inbox_.stopped()) break;
    if (!work) busy_start = MonoNanos();  // waiting is idle time
    accounted_ = 0;
    iter_cat_ = 0;
    iter_entry_ = nullptr;
    for (PMsg& m : msgs) Handle(std::move(m));
    if (!pending_.empty() && CanStart()) {
      Pend p = std::move(pending_.front());
      pending_.pop_front();
      RunPending(std::move(p));
    }
    const int64_t busy = MonoNanos() - busy_start;
    local_.busy_ns += busy;
    const int64_t overhead = std::max<int64_t>(0, busy - accounted_);
    switch (iter_cat_) {
      case 1: local_.sp_plain_ns += overhead; break;
      case 2:
        if (iter_entry_ != nullptr) iter_entry_->exec_ns += overhead;
        break;
      case 3: local_.sp_lock_ns += overhead; break;
      case 4: local_.mp_overhead_ns += overhead; break;
      default: local_.sp_plain_ns += overhead; break;  // queueing only
    }
    MuLock l(&stats_mu_);
    stats_.Add(local_);
    local_ = PStats();
  }
}

bool Partition::CanStart() const {
  switch (scheme_) {
    case Scheme::kBlocking: return unc_.empty();
    case Scheme::kSpeculation: return unc_.empty() || unc_.back()->finished;
    case Scheme::kLocking: return true;
  }
  return false;
}

Partition::Entry* Partition::Find(uint64_t id, size_t* index) {
  for (size_t i = 0; i < unc_.size(); ++i) {
    if (unc_[i]->txn->id == id) {
      *index = i;
      return unc_[i].get();
    }
  }
  return nullptr;
}

void Partition::Handle(PMsg m) {
  switch (m.kind) {
    case PMsg::kSp:
      pending_.push_back(Pend{std::move(m.txn), 0, MonoNanos(), {}});
      return;
    case PMsg::kFrag: {
      const bool first = m.round == m.txn->first_round[idx_];
      Pend p{std::move(m.txn), m.round, MonoNanos(), {}};
      if (first) {
        pending_.push_back(std::move(p));
      } else {
        ExecFragment(std::move(p));  // continues an active transaction
      }
      return;
    }
    case PMsg::kDecision:
      if (iter_cat_ == 0) iter_cat_ = 4;
      Decide(m.txn, m.commit);
      eng_->DecisionApplied();
      return;
    case PMsg::kScheme:
      if (!unc_.empty() || !blocked_.empty() || !locks_.empty()) eng_->Error("scheme switch while active");
      scheme_ = m.scheme;
      return;
  }
}

void Partition::RunPending(Pend p) {
  if (p.txn->mp) {
    ExecFragment(std::move(p));
  } else {
    ExecSp(std::move(p));
  }
}

void Partition::Execute(Entry* e, const std::vector<Op>& ops, bool undo) {
  for (const Op& op : ops) {
    const int64_t local = op.key / P_;
    if (op.kind == Op::kRead) {
      e->reads.emplace_back(op.key, val_[local]);
      if (record_) e->hist.push_back({e->txn->id, op.key, ver_[local], false});
    } else {
      if (undo) e->undo.push_back({local, val_[local], ver_[local]});
      if (record_) e->hist.push_back({e->txn->id, op.key, ver_[local], false});
      val_[local] += op.delta;
      if (op.wrap != 0 && val_[local] < op.floor) val_[local] += op.wrap;
      ++ver_[local];
      if (record_) e->hist.push_back({e->txn->id, op.key, ver_[local], true});
    }
  }
}

void Partition::UndoEntry(Entry* e) {
  for (auto it = e->undo.rbegin(); it != e->undo.rend(); ++it) {
    val_[it->local] = it->val;
    ver_[it->local] = it->ver;
  }
  e->undo.clear();
  e->hist.clear();
  e->reads.clear();
}

void Partition::CommitSp(Entry* e) {
  const int64_t t0 = MonoNanos();
  TxnResult r;
  r.committed = !e->sp_aborted;
  r.user_aborted = e->sp_aborted;
  if (r.committed) {
    r.reads = std::move(e->reads);
    if (record_) eng_->Record(&e->hist);
    ++local_.sp_committed;
  } else {
    ++local_.sp_aborted;
  }
  eng_->Finish(e->txn.get(), std::move(r));
  if (e->exec_ns > 0) {
    // A speculative SP txn: its execution plus its (held) completion.
    const int64_t cb = MonoNanos() - t0;
    accounted_ += cb;
    ++local_.sp_spec_n;
    local_.sp_spec_ns += e->exec_ns + cb;
  }
}

void Partition::ExecSp(Pend p) {
  const int64_t t0 = MonoNanos();
  Entry e;
  e.txn = p.txn;
  const std::vector<Op>& ops = p.txn->frags[0][idx_];
  const bool abort = p.txn->req.user_abort;
  if (unc_.empty()) {
    // Nothing active: no locks, undo only if the transaction may abort.
    Execute(&e, ops, abort);
    if (abort) {
      UndoEntry(&e);
      e.sp_aborted = true;
    }
    CommitSp(&e);
    const int64_t dt = MonoNanos() - t0;
    ++local_.sp_plain_n;
    local_.sp_plain_ns += dt;
    accounted_ += dt;
    iter_cat_ = 1;
    return;
  }
  if (scheme_ == Scheme::kSpeculation) {
    auto ent = std::make_unique<Entry>(std::move(e));
    Execute(ent.get(), ops, true);
    if (abort) {
      UndoEntry(ent.get());
      ent->sp_aborted = true;
    }
    ent->finished = true;
    ent->exec_ns = std::max<int64_t>(1, MonoNanos() - t0);
    accounted_ += ent->exec_ns;
    iter_cat_ = 2;
    iter_entry_ = ent.get();
    unc_.push_back(std::move(ent));
    return;
  }
  if (scheme_ == Scheme::kLocking) {
    std::vector<uint64_t> holders;
    if (!Grantable(p.txn->id, ops, &holders)) {
      p.waits_on = std::move(holders);
      blocked_.push_back(std::move(p));
      return;
    }
    Acquire(p.txn->id, ops);
    Execute(&e, ops, true);
    if (abort) {
      UndoEntry(&e);
      e.sp_aborted = true;
    }
    Release(p.txn->id, ops);
    CommitSp(&e);
    const int64_t dt = MonoNanos() - t0;
    ++local_.sp_lock_n;
    local_.sp_lock_ns += dt;
    accounted_ += dt;
    iter_cat_ = 3;
    return;
  }
  eng_->Error("SP start while blocked");  // blocking never starts an SP txn while one is active
  pending_.push_front(std::move(p));
}

void Partition::ExecFragment(Pend p) {
  const int64_t t0 = MonoNanos();
  const TxnPtr& txn = p.txn;
  const std::vector<Op>& ops = txn->frags[p.round][idx_];
  size_t index = 0;
  Entry* e = Find(txn->id, &index);
  const bool first = e == nullptr;
  if (!first && p.round == txn->first_round[idx_]) {
    eng_->Error("first fragment twice");  // re-delivered first fragment
    return;
  }
  if (first && p.round != txn->first_round[idx_]) {
    eng_->Error("continuation without txn");  // a continuation without its transaction
    return;
  }
  if (scheme_ == Scheme::kLocking) {
    std::vector<uint64_t> holders;
    if (!Grantable(txn->id, ops, &holders)) {
      if (WouldDeadlock(txn->id, holders)) {
        ++local_.reexec;  // counted as wasted work
        Respond(txn, p.round, e, false, true);
        return;
      }
      p.waits_on = std::move(holders);
      blocked_.push_back(std::move(p));
      return;
    }
    Acquire(txn->id, ops);
  }
  if (first) {
    auto ent = std::make_unique<Entry>();
    ent->txn = txn;
    ent->mp = true;
    ent->start_ns = t0;
    e = ent.get();
    unc_.push_back(std::move(ent));
  } else {
    ++local_.gap_n;
    local_.gap_ns += t0 - e->last_end_ns;
  }
  const size_t nreads = e->reads.size();
  Execute(e, ops, true);
  e->rounds_done.push_back(p.round);
  if (p.round == txn->last_round[idx_]) e->finished = true;
  const bool yes = !(txn->req.user_abort && idx_ == txn->abort_partition &&
                     p.round == txn->first_round[idx_]);
  std::vector<std::pair<int64_t, int64_t>> reads(e->reads.begin() + nreads,
                                                 e->reads.end());
  CMsg m;
  m.kind = CMsg::kResp;
  m.txn = txn;
  m.part = idx_;
  m.round = p.round;
  m.yes = yes;
  m.epoch = epoch_;
  m.reads = std::move(reads);
  eng_->coord()->inbox().PushDelayed(std::move(m), eng_->Deliver());
  e->last_end_ns = MonoNanos();
  e->cpu_ns += e->last_end_ns - t0;
  accounted_ += e->last_end_ns - t0;
  iter_cat_ = 4;
}

void Partition::Respond(const TxnPtr& txn, int round, Entry* e, bool yes,
                        bool sys) {
  CMsg m;
  m.kind = CMsg::kResp;
  m.txn = txn;
  m.part = idx_;
  m.round = round;
  m.yes = yes;
  m.system_abort = sys;
  m.epoch = epoch_;
  eng_->coord()->inbox().PushDelayed(std::move(m), eng_->Deliver());
}

void Partition::Decide(const TxnPtr& txn, bool commit) {
  const int64_t t0 = MonoNanos();
  if (!commit) ++epoch_;
  // Fragments of it still queued or waiting for a lock (it was aborted
  // before they ran, e.g. after a lock timeout elsewhere) are dropped.
  auto match = [&](const Pend& p) { return p.txn->id == txn->id; };
  pending_.erase(std::remove_if(pending_.begin(), pending_.end(), match),
                 pending_.end());
  blocked_.erase(std::remove_if(blocked_.begin(), blocked_.end(), match),
                 blocked_.end());
  size_t i = 0;
  Entry* e = Find(txn->id, &i);
  if (e == nullptr) {
    if (commit) eng_->Error("commit of unknown txn");
    return;
  }
  std::unique_ptr<Entry> own;
  if (commit) {
    if (scheme_ == Scheme::kSpeculation && i != 0) eng_->Error("commit of non-head");
    own = std::move(unc_[i]);
    unc_.erase(unc_.begin() + i);
    if (record_) eng_->Record(&own->hist);
    if (scheme_ == Scheme::kLocking) ReleaseAll(own.get());
  } else if (scheme_ == Scheme::kSpeculation) {
    // Undo everything speculated after it, newest first, then it; re-queue
    // the later ones in order.
    std::vector<Pend> again;
    for (size_t j = unc_.size(); j-- > i;) {
      UndoEntry(unc_[j].get());
      if (j == i) continue;
      Entry* x = unc_[j].get();
      ++local_.reexec;
      if (x->mp) {
        for (auto r = x->rounds_done.rbegin(); r != x->rounds_done.rend(); ++r) {
          again.push_back(Pend{x->txn, *r, t0, {}});
        }
      } else {
        again.push_back(Pend{x->txn, 0, t0, {}});
      }
    }
    for (Pend& p : again) pending_.push_front(std::move(p));  // reversed twice
    own = std::move(unc_[i]);
    unc_.erase(unc_.begin() + i, unc_.end());
  } else {
    UndoEntry(e);
    own = std::move(unc_[i]);
    unc_.erase(unc_.begin() + i);
    if (scheme_ == Scheme::kLocking) ReleaseAll(own.get());
  }
  const int64_t t1 = MonoNanos();
  own->cpu_ns += t1 - t0;
  accounted_ += t1 - t0;
  if (commit) {
    if (txn->nrounds == 1) {
      ++local_.mp1_n;
      local_.mp1_wall_ns += t1 - own->start_ns;
      local_.mp1_cpu_ns += own->cpu_ns;
    } else {
      ++local_.mpr_n;
      local_.mpr_wall_ns += t1 - own->start_ns;
      local_.mpr_cpu_ns += own->cpu_ns;
      local_.mpr_rounds += txn->nrounds;
    }
  }
  if (scheme_ == Scheme::kSpeculation) {
    // Held results of SP transactions up to the next MP one are final now.
    while (!unc_.empty() && !unc_.front()->mp) {
      std::unique_ptr<Entry> sp = std::move(unc_.front());
      unc_.pop_front();
      CommitSp(sp.get());
    }
  }
  if (scheme_ == Scheme::kLocking) RetryBlocked();
}

}  // namespace internal
}  // namespace partitioned
}  // namespace corral
