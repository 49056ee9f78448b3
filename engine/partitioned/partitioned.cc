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

namespace {

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

// ---------------------------------------------------------------- Locking

bool Partition::Grantable(uint64_t id, const std::vector<Op>& ops,
                          std::vector<uint64_t>* holders) const {
  if (locks_.empty()) return true;
  bool ok = true;
  for (const Op& op : ops) {
    auto it = locks_.find(op.key / P_);
    if (it == locks_.end()) continue;
    const LockState& ls = it->second;
    if (ls.x != 0 && ls.x != id) {
      ok = false;
      holders->push_back(ls.x);
    }
    if (op.kind == Op::kAdd) {
      for (uint64_t s : ls.s) {
        if (s != id) {
          ok = false;
          holders->push_back(s);
        }
      }
    }
  }
  return ok;
}

void Partition::Acquire(uint64_t id, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    LockState& ls = locks_[op.key / P_];
    if (op.kind == Op::kAdd) {
      ls.x = id;
    } else if (ls.x != id &&
               std::find(ls.s.begin(), ls.s.end(), id) == ls.s.end()) {
      ls.s.push_back(id);
    }
  }
}

void Partition::Release(uint64_t id, const std::vector<Op>& ops) {
  for (const Op& op : ops) {
    auto it = locks_.find(op.key / P_);
    if (it == locks_.end()) continue;
    LockState& ls = it->second;
    if (ls.x == id) ls.x = 0;
    ls.s.erase(std::remove(ls.s.begin(), ls.s.end(), id), ls.s.end());
    if (ls.x == 0 && ls.s.empty()) locks_.erase(it);
  }
}

void Partition::ReleaseAll(Entry* e) {
  for (int r : e->rounds_done) Release(e->txn->id, e->txn->frags[r][idx_]);
}

bool Partition::WouldDeadlock(uint64_t id,
                              const std::vector<uint64_t>& holders) const {
  // Waits-for edges of the lock waits at this partition (MP txns only: an
  // SP txn holds no locks while it waits).
  std::vector<uint64_t> stack(holders.begin(), holders.end()), seen;
  while (!stack.empty()) {
    uint64_t h = stack.back();
    stack.pop_back();
    if (h == id) return true;
    if (std::find(seen.begin(), seen.end(), h) != seen.end()) continue;
    seen.push_back(h);
    for (const Pend& b : blocked_) {
      if (b.txn->id == h) {
        stack.insert(stack.end(), b.waits_on.begin(), b.waits_on.end());
      }
    }
  }
  return false;
}

void Partition::RetryBlocked() {
  if (blocked_.empty()) return;
  std::vector<Pend> b;
  b.swap(blocked_);
  // Continuations first (they hold locks), then the rest in order.
  for (auto it = b.rbegin(); it != b.rend(); ++it) {
    pending_.push_front(std::move(*it));
  }
  // Continuations of active transactions are run at once.
  std::deque<Pend> rest;
  while (!pending_.empty()) {
    Pend p = std::move(pending_.front());
    pending_.pop_front();
    size_t i;
    if (p.txn->mp && p.round != p.txn->first_round[idx_] &&
        Find(p.txn->id, &i) != nullptr) {
      ExecFragment(std::move(p));
    } else {
      rest.push_back(std::move(p));
    }
  }
  pending_.swap(rest);
}

int64_t Partition::CheckTimeouts() {
  const int64_t now = MonoNanos();
  int64_t wake = 0;
  for (size_t i = 0; i < blocked_.size();) {
    Pend& b = blocked_[i];
    if (!b.txn->mp) {
      ++i;
      continue;
    }
    const int64_t due = b.since + lock_timeout_ns_;
    if (due <= now) {
      // Distributed deadlock (or a very long wait): vote no.
      size_t k;
      Entry* e = Find(b.txn->id, &k);
      Respond(b.txn, b.round, e, false, true);
      blocked_.erase(blocked_.begin() + i);
      continue;
    }
    wake = wake == 0 ? due : std::min(wake, due);
    ++i;
  }
  return wake;
}

// ------------------------------------------------------------ Coordinator

int64_t ThreadCpuNanos() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000000000LL + ts.tv_nsec;
}

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

}  // namespace

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
  return std::unique_ptr<PartitionedEngine>(new EngineImpl(std::move(o)));
}

}  // namespace partitioned
}  // namespace corral
