// The 2PC coordinator: orders MP transactions, sends fragments round by
// round, collects votes, decides and retries system aborts.
// Thread-safety: runs on the coordinator's own thread; only its inbox and
// stats are shared with other threads.
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

namespace {

int64_t ThreadCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

}  // namespace

void Coordinator::Run() {
  prctl(PR_SET_TIMERSLACK, 1000UL, 0, 0, 0);
  // The coordinator's cost is its thread's CPU time (wall time would count
  // the time it waits for a core on a shared machine).
  int64_t cpu_mark = ThreadCpuNanos();
  std::vector<CMsg> msgs;
  while (true) {
    msgs.clear();
    inbox_.Pop(&msgs, true, 0);
    if (msgs.empty() && inbox_.stopped()) break;
    for (CMsg& m : msgs) {
      switch (m.kind) {
        case CMsg::kNew:
          if (draining_) {
            held_.push_back(std::move(m.txn));
          } else {
            Start(std::move(m.txn));
          }
          break;
        case CMsg::kResp:
          OnResponse(std::move(m));
          break;
        case CMsg::kSwitch:
          draining_ = true;
          next_scheme_ = m.scheme;
          switch_waiters_.push_back(m.done);
          break;
      }
    }
    if (draining_ && live_.empty()) {
      for (int p = 0; p < P_; ++p) {
        PMsg s;
        s.kind = PMsg::kScheme;
        s.scheme = next_scheme_;
        eng_->part(p)->inbox().PushDelayed(std::move(s), eng_->Deliver());
      }
      scheme_ = next_scheme_;
      draining_ = false;
      for (Event* n : switch_waiters_) n->Notify();
      switch_waiters_.clear();
      while (!held_.empty()) {
        TxnPtr t = std::move(held_.front());
        held_.pop_front();
        Start(std::move(t));
      }
    }
    const int64_t cpu_now = ThreadCpuNanos();
    local_.busy_ns += cpu_now - cpu_mark;
    cpu_mark = cpu_now;
    MuLock l(&stats_mu_);
    stats_.mp_committed += local_.mp_committed;
    stats_.mp_aborted += local_.mp_aborted;
    stats_.system_aborts += local_.system_aborts;
    stats_.busy_ns += local_.busy_ns;
    stats_.decided += local_.decided;
    local_ = CStats();
  }
}

void Coordinator::Start(TxnPtr t) {
  t->id = ++seq_;
  State& st = live_[t->id];
  st.txn = std::move(t);
  st.touched.assign(P_, 0);
  SendRound(&st);
}

void Coordinator::SendRound(State* st) {
  const int64_t at = eng_->Deliver();
  for (int p : st->txn->parts[st->round]) {
    st->touched[p] = 1;
    PMsg m;
    m.kind = PMsg::kFrag;
    m.txn = st->txn;
    m.round = st->round;
    eng_->part(p)->inbox().PushDelayed(std::move(m), at);
  }
}

void Coordinator::OnResponse(CMsg m) {
  auto it = live_.find(m.txn->id);
  if (it == live_.end() || it->second.txn != m.txn ||
      it->second.round != m.round) {
    return;  // already decided, or a stale round
  }
  const int part = m.part;
  it->second.resp[part] = std::move(m);
  if (scheme_ == Scheme::kSpeculation) {
    // Strictly in order: only the oldest undecided transaction advances.
    while (!live_.empty() && Progress(live_.begin())) {
    }
    if (!live_.empty() && live_.begin() != it) {
      // A later round of the head may now be sendable; nothing else to do.
    }
  } else {
    Progress(it);
  }
}

bool Coordinator::Progress(std::map<uint64_t, State>::iterator it) {
  State& st = it->second;
  const bool spec = scheme_ == Scheme::kSpeculation;
  while (true) {
    if (spec) {
      // A result computed before an abort reached that partition is stale.
      for (auto r = st.resp.begin(); r != st.resp.end();) {
        if (r->second.epoch != aborts_sent_[r->first]) {
          r = st.resp.erase(r);
        } else {
          ++r;
        }
      }
    }
    bool no = false, sys = false;
    for (auto& r : st.resp) {
      if (!r.second.yes) {
        no = true;
        sys = sys || r.second.system_abort;
      }
    }
    if (no) {
      Decide(it, false, sys);
      return true;
    }
    if (st.resp.size() < st.txn->parts[st.round].size()) return false;
    for (auto& r : st.resp) {
      st.txn->reads.insert(st.txn->reads.end(), r.second.reads.begin(),
                           r.second.reads.end());
    }
    st.resp.clear();
    if (st.round + 1 < st.txn->nrounds) {
      ++st.round;
      SendRound(&st);
      return false;
    }
    Decide(it, true, false);
    return true;
  }
}

void Coordinator::Decide(std::map<uint64_t, State>::iterator it, bool commit,
                         bool sys) {
  State& st = it->second;
  const int64_t at = eng_->Deliver();
  int sent = 0;
  for (int p = 0; p < P_; ++p) sent += st.touched[p] ? 1 : 0;
  eng_->DecisionsSent(sent);
  for (int p = 0; p < P_; ++p) {
    if (!st.touched[p]) continue;
    PMsg m;
    m.kind = PMsg::kDecision;
    m.txn = st.txn;
    m.commit = commit;
    if (!commit) ++aborts_sent_[p];
    eng_->part(p)->inbox().PushDelayed(std::move(m), at);
  }
  ++local_.decided;
  TxnPtr t = std::move(st.txn);
  live_.erase(it);
  if (commit) {
    ++local_.mp_committed;
    TxnResult r;
    r.committed = true;
    r.reads = std::move(t->reads);
    eng_->Finish(t.get(), std::move(r));
    return;
  }
  if (sys) ++local_.system_aborts;
  if (sys && t->system_retries < max_retries_) {
    // Partitions may still hold messages of this attempt: copy, not move.
    auto again = std::make_shared<TxnCtl>(*t);
    again->reads.clear();
    again->system_retries = t->system_retries + 1;
    if (draining_) {
      held_.push_back(std::move(again));
    } else {
      Start(std::move(again));
    }
    return;
  }
  ++local_.mp_aborted;
  TxnResult r;
  r.user_aborted = !sys;
  eng_->Finish(t.get(), std::move(r));
}

}  // namespace internal
}  // namespace partitioned
}  // namespace corral
