// Private internals of the partitioned engine, shared by its .cc files:
// TxnCtl/PMsg/CMsg (messages), PStats/CStats (counters), Partition (one
// partition's executor), Coordinator (2PC) and EngineImpl (the engine front).
// Thread-safety: see each class; inboxes and stats are the only cross-thread
// state. Not part of the public API: include only from this library.
#ifndef CORRAL_ENGINE_PARTITIONED_PARTITIONED_INTERNAL_H_
#define CORRAL_ENGINE_PARTITIONED_PARTITIONED_INTERNAL_H_

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
#include "engine/partitioned/partitioned.h"

namespace corral {
namespace partitioned {
namespace internal {

constexpr uint64_t kSpIdBase = uint64_t{1} << 62;

struct TxnCtl {
  uint64_t id = 0;  // MP: coordinator sequence (global order); SP: kSpIdBase+
  TxnRequest req;
  bool mp = false;
  int home = 0;
  int nrounds = 1;
  std::vector<std::vector<std::vector<Op>>> frags;  // [round][partition]
  std::vector<std::vector<int>> parts;              // participants per round
  std::vector<int> first_round, last_round;         // per partition, -1
  int abort_partition = -1;
  int64_t submit_ns = 0;
  int system_retries = 0;
  std::vector<std::pair<int64_t, int64_t>> reads;  // MP: gathered by coord.
};
using TxnPtr = std::shared_ptr<TxnCtl>;

struct PMsg {
  enum Kind { kSp, kFrag, kDecision, kScheme } kind = kSp;
  TxnPtr txn;
  int round = 0;
  bool commit = false;
  Scheme scheme = Scheme::kBlocking;
};

struct CMsg {
  enum Kind { kNew, kResp, kSwitch } kind = kNew;
  TxnPtr txn;
  int part = -1;
  int round = 0;
  bool yes = true;
  bool system_abort = false;
  uint64_t epoch = 0;
  std::vector<std::pair<int64_t, int64_t>> reads;
  Scheme scheme = Scheme::kBlocking;
  Event* done = nullptr;
};

// Counters of one partition (guarded by the partition's stats mutex).
struct PStats {
  int64_t sp_plain_n = 0, sp_plain_ns = 0;  // no undo, no locks
  int64_t sp_spec_n = 0, sp_spec_ns = 0;    // with undo (speculative)
  int64_t sp_lock_n = 0, sp_lock_ns = 0;    // with locks and undo
  int64_t mp1_n = 0, mp1_wall_ns = 0, mp1_cpu_ns = 0;  // single-round MP
  int64_t mpr_n = 0, mpr_wall_ns = 0, mpr_cpu_ns = 0, mpr_rounds = 0;
  int64_t gap_n = 0, gap_ns = 0;  // idle between two rounds
  int64_t reexec = 0;
  int64_t mp_overhead_ns = 0;  // busy time of MP work not in one txn
  int64_t busy_ns = 0;         // all non-waiting time of the thread
  int64_t sp_committed = 0, sp_aborted = 0;
  void Add(const PStats& o) {
    sp_plain_n += o.sp_plain_n; sp_plain_ns += o.sp_plain_ns;
    sp_spec_n += o.sp_spec_n; sp_spec_ns += o.sp_spec_ns;
    sp_lock_n += o.sp_lock_n; sp_lock_ns += o.sp_lock_ns;
    mp1_n += o.mp1_n; mp1_wall_ns += o.mp1_wall_ns; mp1_cpu_ns += o.mp1_cpu_ns;
    mpr_n += o.mpr_n; mpr_wall_ns += o.mpr_wall_ns; mpr_cpu_ns += o.mpr_cpu_ns;
    mpr_rounds += o.mpr_rounds;
    gap_n += o.gap_n; gap_ns += o.gap_ns;
    reexec += o.reexec;
    mp_overhead_ns += o.mp_overhead_ns;
    busy_ns += o.busy_ns;
    sp_committed += o.sp_committed; sp_aborted += o.sp_aborted;
  }
};

struct CStats {
  int64_t mp_committed = 0, mp_aborted = 0, system_aborts = 0;
  int64_t multi_round = 0, busy_ns = 0, decided = 0;
};

class EngineImpl;

// One partition: its data, its queue and its scheme state. Everything but
// the inbox and the stats is touched only by the partition's thread.
class Partition {
 public:
  Partition(EngineImpl* eng, int idx, const PartitionedOptions& o);
  void Run();
  Inbox<PMsg>& inbox() { return inbox_; }
  // Only while quiescent.
  int64_t& value(int64_t local) { return val_[local]; }
  int64_t SumValues() const {
    int64_t s = 0;
    for (int64_t v : val_) s += v;
    return s;
  }
  PStats TakeStats() {
    MuLock l(&stats_mu_);
    PStats s = stats_;
    stats_ = PStats();
    return s;
  }
  // CPU time of the partition's thread so far (0 before it started).
  int64_t ThreadCpu() {
    clockid_t cid;
    {
      MuLock l(&stats_mu_);
      if (!has_cid_) return 0;
      cid = cid_;
    }
    timespec ts;
    if (clock_gettime(cid, &ts) != 0) return 0;
    return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
  }

 private:
  struct Undo {
    int64_t local;
    int64_t val;
    uint32_t ver;
  };
  struct Entry {
    TxnPtr txn;
    bool mp = false;
    bool finished = false;   // executed its last fragment here
    bool sp_aborted = false;  // SP user abort (already undone)
    std::vector<Undo> undo;
    std::vector<AccessRecord> hist;
    std::vector<std::pair<int64_t, int64_t>> reads;
    std::vector<int> rounds_done;
    int64_t start_ns = 0, cpu_ns = 0, last_end_ns = 0;
    int64_t exec_ns = 0;  // SP: its execution time (stats at commit)
  };
  struct Pend {
    TxnPtr txn;
    int round = 0;
    int64_t since = 0;
    std::vector<uint64_t> waits_on;
  };
  struct LockState {
    uint64_t x = 0;
    std::vector<uint64_t> s;
  };

  bool CanStart() const;
  void Handle(PMsg m);
  void RunPending(Pend p);
  void ExecSp(Pend p);
  void ExecFragment(Pend p);
  void Decide(const TxnPtr& txn, bool commit);
  void CommitSp(Entry* e);
  void Execute(Entry* e, const std::vector<Op>& ops, bool undo);
  void UndoEntry(Entry* e);
  void Respond(const TxnPtr& txn, int round, Entry* e, bool yes, bool sys);
  // Locking.
  bool Grantable(uint64_t id, const std::vector<Op>& ops,
                 std::vector<uint64_t>* holders) const;
  void Acquire(uint64_t id, const std::vector<Op>& ops);
  void Release(uint64_t id, const std::vector<Op>& ops);
  void ReleaseAll(Entry* e);
  bool WouldDeadlock(uint64_t id, const std::vector<uint64_t>& holders) const;
  void RetryBlocked();
  int64_t CheckTimeouts();
  Entry* Find(uint64_t id, size_t* index);

  EngineImpl* const eng_;
  const int idx_;
  const int P_;
  const bool record_;
  const int64_t lock_timeout_ns_;
  Inbox<PMsg> inbox_;
  Scheme scheme_;
  std::vector<int64_t> val_;
  std::vector<uint32_t> ver_;
  std::deque<Pend> pending_;
  std::deque<std::unique_ptr<Entry>> unc_;  // uncommitted / active
  std::vector<Pend> blocked_;               // locking: lock waits
  absl::flat_hash_map<int64_t, LockState> locks_;
  uint64_t epoch_ = 0;
  // Busy-time attribution of the current loop iteration: the time not
  // measured by a handler (inbox, wake-ups, bookkeeping) goes to the kind
  // of work the iteration did.
  int64_t accounted_ = 0;
  int iter_cat_ = 0;  // 0 none, 1 SP plain, 2 SP speculative, 3 SP locked, 4 MP
  Entry* iter_entry_ = nullptr;
  PStats local_;  // flushed into stats_ after each step
  Mu stats_mu_;
  PStats stats_ ABSL_GUARDED_BY(stats_mu_);
  bool has_cid_ ABSL_GUARDED_BY(stats_mu_) = false;
  clockid_t cid_ ABSL_GUARDED_BY(stats_mu_);
};

// The coordinator: orders MP transactions, sends their fragments round by
// round, collects votes, decides (2PC) and retries system aborts. Only its
// thread touches its state but the inbox and the stats.
class Coordinator {
 public:
  Coordinator(EngineImpl* eng, const PartitionedOptions& o)
      : eng_(eng), P_(o.partitions), max_retries_(o.max_system_retries),
        inbox_(o.stall_mode), scheme_(o.scheme), aborts_sent_(o.partitions, 0) {}
  void Run();
  Inbox<CMsg>& inbox() { return inbox_; }
  CStats TakeStats() {
    MuLock l(&stats_mu_);
    CStats s = stats_;
    stats_ = CStats();
    return s;
  }

 private:
  struct State {
    TxnPtr txn;
    int round = 0;
    std::map<int, CMsg> resp;
    std::vector<char> touched;
  };
  void Start(TxnPtr t);
  void SendRound(State* st);
  void OnResponse(CMsg m);
  // Returns true if the transaction was decided (and erased).
  bool Progress(std::map<uint64_t, State>::iterator it);
  void Decide(std::map<uint64_t, State>::iterator it, bool commit, bool sys);

  EngineImpl* const eng_;
  const int P_;
  const int max_retries_;
  Inbox<CMsg> inbox_;
  Scheme scheme_;
  uint64_t seq_ = 0;
  std::map<uint64_t, State> live_;  // by global order
  std::vector<uint64_t> aborts_sent_;
  bool draining_ = false;
  Scheme next_scheme_ = Scheme::kBlocking;
  std::vector<Event*> switch_waiters_;
  std::deque<TxnPtr> held_;
  CStats local_;
  Mu stats_mu_;
  CStats stats_ ABSL_GUARDED_BY(stats_mu_);
};

class EngineImpl final : public PartitionedEngine {
 public:
  explicit EngineImpl(PartitionedOptions o) : opts_(std::move(o)) {
    for (int i = 0; i < opts_.partitions; ++i) {
      parts_.push_back(std::make_unique<Partition>(this, i, opts_));
    }
    coord_ = std::make_unique<Coordinator>(this, opts_);
    scheme_.store(opts_.scheme);
    window_start_ = MonoNanos();
    for (int i = 0; i < opts_.partitions; ++i) {
      threads_.emplace_back([this, i] { parts_[i]->Run(); });
    }
    threads_.emplace_back([this] { coord_->Run(); });
  }
  ~EngineImpl() override {
    Drain();
    for (auto& p : parts_) p->inbox().Stop();
    coord_->inbox().Stop();
    for (auto& t : threads_) t.join();
  }

  absl::Status Load(int64_t key, int64_t value) override {
    if (key < 0 || key >= opts_.partitions * opts_.keys_per_partition) {
      return absl::OutOfRangeError(absl::StrCat("key ", key));
    }
    if (outstanding() != 0) {
      return absl::FailedPreconditionError("Load while transactions run");
    }
    parts_[key % opts_.partitions]->value(key / opts_.partitions) = value;
    return absl::OkStatus();
  }

  absl::Status Submit(TxnRequest req) override;
  void Drain() override {
    MuLock l(&mu_);
    idle_cv_.wait(mu_, [this]() ABSL_NO_THREAD_SAFETY_ANALYSIS {
      return outstanding_ == 0 && decisions_ == 0;
    });
  }
  absl::Status SwitchScheme(Scheme s) override {
    MuLock sl(&switch_mu_);
    Event done;
    CMsg m;
    m.kind = CMsg::kSwitch;
    m.scheme = s;
    m.done = &done;
    coord_->inbox().PushNow(std::move(m));
    done.Wait();
    scheme_.store(s);
    return absl::OkStatus();
  }
  Scheme scheme() const override { return scheme_.load(); }
  absl::StatusOr<int64_t> Sum() override {
    if (outstanding() != 0) {
      return absl::FailedPreconditionError("Sum while transactions run");
    }
    int64_t s = 0;
    for (auto& p : parts_) s += p->SumValues();
    return s;
  }
  absl::StatusOr<int64_t> Value(int64_t key) override {
    if (key < 0 || key >= opts_.partitions * opts_.keys_per_partition) {
      return absl::OutOfRangeError(absl::StrCat("key ", key));
    }
    if (outstanding() != 0) {
      return absl::FailedPreconditionError("Value while transactions run");
    }
    return parts_[key % opts_.partitions]->value(key / opts_.partitions);
  }
  Window TakeWindow() override;
  std::vector<AccessRecord> TakeHistory() override {
    MuLock l(&hist_mu_);
    std::vector<AccessRecord> h;
    h.swap(history_);
    return h;
  }
  int64_t protocol_errors() const override { return errors_.load(); }

  // Internal, for partitions and the coordinator.
  const PartitionedOptions& opts() const { return opts_; }
  Partition* part(int i) { return parts_[i].get(); }
  Coordinator* coord() { return coord_.get(); }
  int64_t Deliver() const { return MonoNanos() + opts_.network_stall_ns; }
  void Error(const char* what) {
    if (errors_.fetch_add(1) < 5) std::fprintf(stderr, "partitioned: protocol error: %s\n", what);
  }
  void Record(std::vector<AccessRecord>* recs) {
    if (recs->empty()) return;
    MuLock l(&hist_mu_);
    history_.insert(history_.end(), recs->begin(), recs->end());
  }
  void DecisionsSent(int n) {
    MuLock l(&mu_);
    decisions_ += n;
  }
  void DecisionApplied() {
    bool idle;
    {
      MuLock l(&mu_);
      --decisions_;
      idle = decisions_ == 0 && outstanding_ == 0;
    }
    if (idle) idle_cv_.notify_all();
  }
  void Finish(TxnCtl* t, TxnResult r) {
    r.multi_partition = t->mp;
    r.rounds = t->nrounds;
    r.system_retries = t->system_retries;
    r.latency_ns = MonoNanos() - t->submit_ns;
    if (r.committed) {
      committed_.fetch_add(1, std::memory_order_relaxed);
      if (t->mp) {
        mp_committed_.fetch_add(1, std::memory_order_relaxed);
        if (t->nrounds > 1) mr_committed_.fetch_add(1, std::memory_order_relaxed);
      }
    } else {
      aborted_.fetch_add(1, std::memory_order_relaxed);
      if (t->mp) mp_aborted_.fetch_add(1, std::memory_order_relaxed);
    }
    if (t->req.done) t->req.done(r);
    bool idle;
    {
      MuLock l(&mu_);
      --outstanding_;
      idle = decisions_ == 0 && outstanding_ == 0;
    }
    if (idle) idle_cv_.notify_all();
  }

 private:
  int64_t outstanding() {
    MuLock l(&mu_);
    return outstanding_ + decisions_;
  }

  const PartitionedOptions opts_;
  std::vector<std::unique_ptr<Partition>> parts_;
  std::unique_ptr<Coordinator> coord_;
  std::vector<std::thread> threads_;
  std::atomic<Scheme> scheme_;
  std::atomic<uint64_t> sp_ids_{0};
  std::atomic<int64_t> errors_{0};
  std::atomic<int64_t> committed_{0}, aborted_{0}, mp_committed_{0},
      mp_aborted_{0}, mr_committed_{0};
  Mu mu_;
  int64_t outstanding_ ABSL_GUARDED_BY(mu_) = 0;
  int64_t decisions_ ABSL_GUARDED_BY(mu_) = 0;  // sent, not yet applied
  CondVar idle_cv_;
  Mu switch_mu_;
  Mu hist_mu_;
  std::vector<AccessRecord> history_ ABSL_GUARDED_BY(hist_mu_);
  Mu window_mu_;
  int64_t window_start_ ABSL_GUARDED_BY(window_mu_) = 0;
  // Last known values, kept when a window cannot measure them.
  model::ModelParams last_ ABSL_GUARDED_BY(window_mu_);
  std::vector<int64_t> part_cpu_ = std::vector<int64_t>(64, 0);
  bool have_tsp_ = false, have_tsps_ = false, have_l_ = false,
       have_mp_ = false;
};

}  // namespace internal
}  // namespace partitioned
}  // namespace corral

#endif  // CORRAL_ENGINE_PARTITIONED_PARTITIONED_INTERNAL_H_
