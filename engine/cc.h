// Internal: the concurrency-control protocol seam of the engine.
//
// A CcProtocol is chosen by name (CcProtocol::Create) and makes one TxImpl per
// worker slot. A TxImpl implements the procedure-facing Tx API for one attempt
// at a time: Begin, the procedure's calls, then Commit or Abort. Protocols:
// occ.cc (Silo-style OCC), twopl.cc (2PL NO_WAIT / WAIT_DIE / DL_DETECT and
// the "none" baseline), timestamp.cc (Deneva's TIMESTAMP and MVCC), maat.cc
// (Deneva's MaaT), planned.cc + calvin.cc, qstore.cc, orthrus.cc ("planned",
// "calvin", "qstore" and "orthrus":
// declared locks up front, the procedure run through a guard).
//
//   auto cc = CcProtocol::Create("2pl-waitdie").value();
//   std::unique_ptr<TxImpl> tx = cc->NewTx(worker_id, &arena, false);
//   tx->Begin(ts); status = proc(*tx);
//   if (tx->conflicted() || !status.ok()) tx->Abort(); else cause = tx->Commit();
//
// Thread-safety: a CcProtocol is shared by all workers (thread-safe); each
// TxImpl is used by one thread at a time.
#ifndef CORRAL_ENGINE_CC_H_
#define CORRAL_ENGINE_CC_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/engine.h"
#include "engine/qstore_placement.h"
#include "engine/storage.h"
#include "engine/txn_api.h"
#include "scheduler/txn.h"

namespace corral {
namespace engine {

// The statuses Tx calls return (code-only: no allocation, no shared rep).
inline absl::Status ConflictStatus() { return absl::Status(absl::StatusCode::kUnavailable, ""); }
inline absl::Status NotFoundStatus() { return absl::Status(absl::StatusCode::kNotFound, ""); }
inline absl::Status ExistsStatus() { return absl::Status(absl::StatusCode::kAlreadyExists, ""); }

// Per-transaction scratch memory (row copies, before-images), reset per
// attempt; chunks are kept, so the steady state does not allocate.
// Thread-compatible.
class ScratchArena {
 public:
  ScratchArena() = default;
  ScratchArena(const ScratchArena&) = delete;
  ScratchArena& operator=(const ScratchArena&) = delete;
  ~ScratchArena();
  char* Allocate(size_t n);  // 8-byte aligned, stable until Reset
  void Reset() {
    chunk_ = 0;
    used_ = 0;
  }

 private:
  std::vector<std::pair<char*, size_t>> chunks_;
  size_t chunk_ = 0;
  size_t used_ = 0;
};

// Waits politely: spins a little, then yields, then naps. Thread-compatible.
class Waiter {
 public:
  void Wait();
  int rounds() const { return rounds_; }

 private:
  int rounds_ = 0;
};

// Planned protocols (planned.cc): the TxImpl runs a whole transaction itself
// (plan, lock, execute, commit, release), re-planning inside as needed.
class PlannedRunner {
 public:
  // `declarer` (may be null) declares the accesses up front; `ts` is the
  // logical transaction's timestamp; sleeps txn_delay_ns before commit
  // holding the locks; counts into *stats.
  virtual scheduler::ExecResult RunPlanned(absl::FunctionRef<absl::Status(Tx&)> proc,
                                           const ProcedureTxn* declarer, uint64_t ts,
                                           int64_t txn_delay_ns, ExecutorStats* stats) = 0;

 protected:
  ~PlannedRunner() = default;
};

// One attempt's state for one worker slot. Thread-compatible.
class TxImpl : public Tx {
 public:
  TxImpl(int worker_id, RecordArena* arena, bool record_footprint)
      : worker_id_(worker_id), arena_(arena), record_footprint_(record_footprint) {}

  // Starts an attempt; `ts` is the wait-die timestamp (smaller = older).
  virtual void Begin(uint64_t ts) = 0;
  // Tries to commit. kNone on success; otherwise the attempt was rolled back.
  virtual scheduler::AbortCause Commit() = 0;
  // Rolls the attempt back.
  virtual void Abort() = 0;
  // Whether what the attempt read is still current. The executor asks before
  // honouring a user abort or error: a decision made on reads that were
  // already stale (possible under OCC) is a conflict, not the user's.
  virtual bool ReadsStillValid() { return true; }
  // The abort cause reported when ReadsStillValid() is false.
  virtual scheduler::AbortCause StaleReadCause() const { return scheduler::AbortCause::kValidation; }
  // Non-null for the planned protocols: the executor hands them the whole
  // transaction instead of driving Begin / procedure / Commit itself.
  virtual PlannedRunner* planned() { return nullptr; }
  // After a conflict abort: waits (politely, until `deadline_ns` on the
  // steady clock) until the record that caused it is no longer held by the
  // transaction in the way, so an immediate retry does not hit the same
  // in-flight transaction again. Returns at once if there is none.
  void WaitForObstacle(int64_t deadline_ns);

  bool conflicted() const override { return cause_ != scheduler::AbortCause::kNone; }
  int worker_id() const override { return worker_id_; }
  scheduler::AbortCause cause() const { return cause_; }
  const Footprint& footprint() const { return footprint_; }

 protected:
  absl::Status Fail(scheduler::AbortCause c) {
    MarkConflict(c);
    return ConflictStatus();
  }
  // Remembers what blocked this attempt (first one wins). occ: a record whose
  // TID lock bit was set; 2PL: a record whose lock word conflicted.
  void SetObstacle(const Record* rec, bool occ_tid, bool exclusive) {
    if (obstacle_ != nullptr) return;
    obstacle_ = rec;
    obstacle_occ_ = occ_tid;
    obstacle_exclusive_ = exclusive;
    obstacle_in_flight_ = false;
    obstacle_custom_ = false;
  }
  // The timestamp-family protocols: an absent record still in the hash
  // index (another's insert in flight); clear once it is present or gone.
  void SetInFlightObstacle(const Record* rec) {
    if (obstacle_ != nullptr) return;
    obstacle_ = rec;
    obstacle_in_flight_ = true;
    obstacle_custom_ = false;
  }
  // A protocol-defined obstacle: cleared once ObstacleCleared(rec) is true.
  void SetCustomObstacle(const Record* rec) {
    if (obstacle_ != nullptr) return;
    obstacle_ = rec;
    obstacle_custom_ = true;
  }
  virtual bool ObstacleCleared(const Record* rec) { return true; }
  void ResetAttempt() {
    cause_ = scheduler::AbortCause::kNone;
    obstacle_ = nullptr;
  }
  const Record* obstacle_ = nullptr;
  bool obstacle_occ_ = false;
  bool obstacle_exclusive_ = false;
  bool obstacle_in_flight_ = false;
  bool obstacle_custom_ = false;
  void MarkConflict(scheduler::AbortCause c) {
    if (cause_ == scheduler::AbortCause::kNone) cause_ = c;
  }
  // The protocol-independent part of Scan: walks `spec`'s index range in
  // batches of 64 entries (the index latch is taken once per batch) and calls
  // visit(const OrderedIndex::Entry&) for each, which may append the row to
  // *out (or skip it) and returns non-OK to stop the scan with that status.
  // Stops once *out holds spec.limit rows.
  template <typename Visit>
  absl::Status ScanBatches(const ScanSpec& spec, std::vector<ConstRow>* out, Visit visit) {
    out->clear();
    if (conflicted()) return ConflictStatus();
    const OrderedIndex* idx = spec.index;
    size_t limit = spec.limit < 0 ? ~size_t{0} : static_cast<size_t>(spec.limit);
    bool has_after = false;
    std::pair<uint64_t, uint64_t> after{0, 0};
    while (out->size() < limit) {
      size_t want = limit - out->size();
      if (want > 64) want = 64;
      scan_buf_.clear();
      idx->Collect(spec.lo, spec.hi, spec.descending, has_after, after, want, &scan_buf_);
      for (const OrderedIndex::Entry& e : scan_buf_) {
        absl::Status st = visit(e);
        if (!st.ok()) return st;
        if (out->size() >= limit) break;
      }
      if (scan_buf_.size() < want) break;
      has_after = true;
      after = {scan_buf_.back().key, scan_buf_.back().pk};
    }
    return absl::OkStatus();
  }

  const int worker_id_;
  RecordArena* const arena_;
  const bool record_footprint_;
  scheduler::AbortCause cause_ = scheduler::AbortCause::kNone;
  ScratchArena scratch_;
  std::vector<OrderedIndex::Entry> scan_buf_;
  Footprint footprint_;
};

// Observes 2PL waits (tests): called when a requester with timestamp
// `waiter_ts` decides to wait for a holder with timestamp `holder_ts`.
using WaitObserver = std::function<void(uint64_t waiter_ts, uint64_t holder_ts)>;
// Observes qstore's planning (tests): called on a planner thread for each
// transaction as it is placed on its execution queues, in the batch's
// deterministic order, with the worker slot that submitted it.
using PlanObserver = std::function<void(int worker)>;

class CcProtocol {
 public:
  virtual ~CcProtocol() = default;
  // "occ", "2pl-nowait", "2pl-waitdie", "2pl-dldetect", "timestamp", "mvcc",
  // "maat", "calvin", "qstore", "planned", "orthrus", "none". `options`
  // carries the protocols' settings (calvin's and qstore's batching,
  // qstore's queues, orthrus's CC thread count).
  static absl::StatusOr<std::unique_ptr<CcProtocol>> Create(absl::string_view name,
                                                            const DatabaseOptions& options = {});
  virtual std::unique_ptr<TxImpl> NewTx(int worker_id, RecordArena* arena,
                                        bool record_footprint) = 0;
  // Test hook for wait-die (ignored by other protocols). Set before executors run.
  virtual void SetWaitObserver(WaitObserver obs) {}
  // Test hook for qstore (ignored by other protocols). Set before executors run.
  virtual void SetPlanObserver(PlanObserver obs) {}
  // Called once by the Database when its first executor is made (tables
  // loaded, no transaction yet): qstore's range placement reads the tables'
  // key spaces here.
  virtual void TablesLoaded(const std::vector<std::unique_ptr<Table>>& tables) {}
  // Database::ProtocolReport: a line on run-time decisions ("" if none).
  virtual std::string Report() const { return ""; }
  // MVCC: older row versions currently kept (tests of garbage collection);
  // 0 for single-version protocols.
  virtual int64_t RetainedVersions() const { return 0; }
};

std::unique_ptr<CcProtocol> NewOccProtocol();
// mode: 0 none, 1 no-wait, 2 wait-die, 3 deadlock detection.
std::unique_ptr<CcProtocol> NewTwoPlProtocol(int mode);
// Basic T/O ("timestamp") or multi-version T/O ("mvcc"): timestamp.cc.
std::unique_ptr<CcProtocol> NewTimestampProtocol(bool mvcc);
// OCC with dynamic timestamp ranges ("maat"): maat.cc.
std::unique_ptr<CcProtocol> NewMaatProtocol();
// Calvin ("calvin", calvin.cc): batches close after batch_ns, or once
// batch_txns (> 0) transactions wait.
std::unique_ptr<CcProtocol> NewCalvinProtocol(int batch_txns, int64_t batch_ns);
// Q-Store ("qstore", qstore.cc): a sequencer batches as calvin's does;
// `planners` planner threads place each transaction of a batch on the
// execution queues (of `queues`) of the granules it declared, in the
// batch's priority order. Conservative: it runs when it heads all of them
// (a user abort rolls back that transaction alone). Speculative
// (qstore_spec.cc): per-fragment heads, queues given up before commit,
// speculation dependencies and cascading aborts. `placement` maps a granule to its
// queue (qstore_placement.h); learned placement learns from the first
// `learn_txns` transactions (placed by hash meanwhile).
std::unique_ptr<CcProtocol> NewQStoreProtocol(int batch_txns, int64_t batch_ns, int queues,
                                              int planners, PlacementKind placement,
                                              int64_t learn_txns, bool speculative);
// Deadlock-free planned 2PL ("planned", planned.cc).
std::unique_ptr<CcProtocol> NewPlannedLockingProtocol();
// Orthrus ("orthrus", orthrus.cc): cc_threads (>= 1) concurrency-control
// threads, each owning one hash partition of the lock table.
std::unique_ptr<CcProtocol> NewOrthrusProtocol(int cc_threads);

}  // namespace engine
}  // namespace corral

#endif  // CORRAL_ENGINE_CC_H_
