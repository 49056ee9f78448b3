// The embedded in-memory OLTP engine: Database facade and per-worker executor.
//
// Design note.
//  * Storage (storage.h, schema.h): fixed-size rows behind a 48-byte record
//    header; uint64 primary keys (workloads pack composite keys with
//    KeyPacker); a hash index per table (lock-free lookups, striped
//    latches for inserts/erases, growing bucket array), optional ordered
//    (absl::btree_map + reader-writer latch) primary and secondary indexes for scans.
//  * Procedures (txn_api.h): `absl::Status (Tx&)`, written once, run under any
//    protocol. Conflicts come back as a status (no exceptions).
//  * Protocols, chosen by name at run time (DatabaseOptions::protocol):
//      "occ"          Silo-style OCC: reads copy the row between two reads of
//                     its TID word; writes are buffered; commit locks the
//                     write set in address order, validates the read set
//                     (versions unchanged, not locked by others), installs
//                     with a TID larger than everything seen (per-worker, no
//                     shared counter). Inserts are published locked+absent.
//      "2pl-nowait"   strict 2PL, a conflicting request aborts at once.
//      "2pl-waitdie"  strict 2PL, an older requester waits, a younger one
//                     dies; the timestamp (clock ns + worker slot) is kept
//                     across retries of the same ProcedureTxn.
//      "2pl-dldetect" strict 2PL, waiters publish the record they wait for
//                     (edges are derived from its live lock word); a waiter
//                     on a cycle of the wait-for graph aborts (kDeadlock) if
//                     it is the youngest of the cycle's component.
//    In wait-die and dldetect a fresh request from a younger transaction does
//    not barge past an older waiter (it dies / waits behind it).
//      "timestamp"    Deneva's basic T/O (timestamp.cc): a fresh timestamp
//                     per attempt from a shared counter; per-record read and
//                     write timestamps; buffered pre-writes that younger
//                     readers wait for; a too-late access aborts
//                     (kTimestampTooOld).
//      "mvcc"         Deneva's multi-version T/O (timestamp.cc): as above,
//                     but old versions are kept (and garbage-collected once
//                     no running attempt can read them), so reads never abort
//                     and a reader sees the snapshot at its timestamp.
//      "maat"         Deneva's MaaT (maat.cc): OCC whose commit timestamp is
//                     picked from a range [lower, upper] that conflicting
//                     transactions narrow; an empty range aborts
//                     (kRangeEmpty).
//      "calvin"       Calvin (calvin.cc): a sequencer seals submitted
//                     transactions into batches, one lock-manager thread
//                     grants their declared locks in batch order (per-lock
//                     FIFO queues); a transaction runs once it holds them
//                     all and releases them at once. No deadlocks, no CC
//                     aborts.
//      "planned"      deadlock-free 2PL (planned.cc): the declared locks,
//                     taken up front in one global order on a shared table.
//      "qstore"       Q-Store's queue-oriented execution (qstore.cc): planner
//                     threads place each transaction of a sealed batch on
//                     the execution queues of the granules it declared, in
//                     the batch's priority order. Conservative (default):
//                     it runs when it heads all of them; no lock table, no
//                     lock manager, no CC aborts. Speculative
//                     (qstore_execution, qstore_spec.cc): each access waits
//                     only for the head of its granule's queue, a queue is
//                     given up (writes installed uncommitted) once the
//                     program moved past its granules, later fragments read
//                     them speculatively, and an abort cascades to the
//                     transactions that did (AbortCause::kCascade, retried).
//      "orthrus"      Orthrus (orthrus.cc): orthrus_cc_threads
//                     concurrency-control threads each own a hash partition
//                     of the lock table; an executor sends its declared
//                     locks as a message (single-producer queues, no shared
//                     latches), CC threads acquire them in partition order
//                     (forwarding the request from one to the next) with
//                     FIFO grants, the last one replies; release by message.
//    All four need the read/write set in advance: ProcedureTxn::DeclareAccesses,
//    or a reconnaissance run (OLLP); an access outside the locks held is
//    refused and the transaction re-planned (txn_api.h).
//      "none"         no concurrency control (single-thread baseline for
//                     benchmarks only; unsafe with concurrent executors).
//    2PL locks are per record (one atomic word: exclusive bit + mask of
//    holder worker slots, so at most 63 workers), held to commit/abort;
//    writes are in place with before-images for undo. Waits spin briefly,
//    then yield, then sleep in short naps, so oversubscribed workers do not
//    burn the cores.
//  * Isolation: conflict-serializable for point accesses; scans protect the
//    rows they return but not phantoms (see txn_api.h).
//  * Executors: one EngineExecutor per worker slot, with reused read/write
//    sets and buffers (no per-transaction allocation in the steady state);
//    it implements scheduler::Executor, so the scheduler's WorkerPool drives
//    it. A conflict abort is reported (the caller retries). Before returning
//    it, the executor waits (bounded, politely) until the record that caused
//    it is released by the transaction in the way, so an immediate retry does
//    not hit the same in-flight transaction again; an optional exponential
//    backoff can be added (ExecutorOptions).
//
// Usage:
//   auto db = Database::Create({.protocol = "occ"}).value();
//   Schema s; int bal = s.AddDouble("balance");
//   Table* acct = db->CreateTable("account", s, {}).value();
//   for (uint64_t k = 0; k < 100; ++k)
//     db->Load(acct, k, [&](const Row& r) { r.SetDouble(bal, 100); }).IgnoreError();
//   auto ex = db->NewExecutor(/*worker_id=*/0, {}).value();
//   FunctionTxn t([&](Tx& tx) { Row r; ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(acct, 1, &r));
//                               r.AddDouble(bal, 5); return absl::OkStatus(); });
//   scheduler::ExecResult res = ex->Execute(t);   // retry while kConflictAbort
//
// Thread-safety: Database schema setup (CreateTable, CreateIndex) and Load
// are single-threaded, before executors run. NewExecutor is thread-safe.
// Each EngineExecutor is used by one thread at a time; different executors
// run concurrently. Peek/Count are for quiescent checks.
#ifndef CORRAL_ENGINE_ENGINE_H_
#define CORRAL_ENGINE_ENGINE_H_

#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engine/latch.h"
#include "engine/schema.h"
#include "engine/storage.h"
#include "engine/txn_api.h"
#include "scheduler/txn.h"

namespace corral {
namespace engine {

class CcProtocol;  // cc.h (internal)
class TxImpl;      // cc.h (internal)

struct DatabaseOptions {
  // "occ", "2pl-nowait", "2pl-waitdie", "2pl-dldetect", "timestamp", "mvcc",
  // "maat", "calvin", "planned", "qstore", "orthrus", or "none".
  std::string protocol = "occ";
  // calvin: the sequencer seals a batch calvin_batch_ns after its first
  // transaction arrived (time-based), or earlier once calvin_batch_txns
  // (> 0: count-based) transactions wait.
  int calvin_batch_txns = 0;
  int64_t calvin_batch_ns = 100000;
  // qstore: its sequencer batches as calvin's (qstore_batch_ns,
  // qstore_batch_txns); qstore_planners planner threads each place a slice
  // of the batch (its priority group) on qstore_queues execution queues.
  int qstore_batch_txns = 0;
  int64_t qstore_batch_ns = 100000;
  int qstore_queues = 1024;
  int qstore_planners = 1;
  // qstore: how a lock granule is placed on a queue (engine/qstore_placement.h):
  // "hash", "range" (each table's loaded key space cut into qstore_queues
  // contiguous ranges) or "learned" (conflicting granules clustered onto one
  // queue, learned over the first qstore_learn_txns transactions).
  std::string qstore_placement = "hash";
  int64_t qstore_learn_txns = 2000;
  // qstore: "conservative" (a transaction runs once it heads every queue it
  // is on; no cascading aborts) or "speculative" (per-fragment queue heads,
  // uncommitted reads, commit after its dependencies, cascading aborts; the
  // paper's evaluated mode).
  std::string qstore_execution = "conservative";
  // orthrus: the number of concurrency-control threads (1 to
  // kMaxOrthrusCcThreads), each owning one hash partition of the lock table;
  // the executors are the execution threads.
  int orthrus_cc_threads = 1;
};

inline constexpr int kMaxOrthrusCcThreads = 16;

// The protocol names accepted by DatabaseOptions::protocol (without "none").
const std::vector<std::string>& ProtocolNames();

struct ExecutorOptions {
  // Before returning a conflict abort, wait backoff_ns * 2^min(attempts-1, 10)
  // (capped by max_backoff_ns). 0 = return at once.
  int64_t backoff_ns = 0;
  int64_t max_backoff_ns = 1000000;
  // Before returning a conflict abort, wait (spin, yield, nap) up to this
  // long for the record that caused it to be released by the transaction in
  // the way (OCC: its commit lock or in-flight insert; 2PL: the conflicting
  // lock), so an immediate retry does not collide with the same in-flight
  // transaction again and again while it is descheduled. 0 = off.
  int64_t obstacle_wait_ns = 1000000;
  // After a transaction's operations succeed and before it commits, the
  // worker sleeps this long, holding what the transaction holds (2PL locks,
  // an OCC read set that may go stale). Models the wall time a transaction
  // spends beyond its CPU: client round trips of an interactive transaction,
  // a slower engine. Workers sleep, so more transactions are in flight than
  // there are cores: how a 2-core machine shows the contention of a larger
  // one. 0 = off.
  int64_t txn_delay_ns = 0;
  // Record the (record, version) pairs each committed transaction read and
  // wrote (tests: serializability checks). Costs a little per operation.
  bool record_footprint = false;
};

// Per-executor counters. Read them from the executor's own thread, or after
// it stopped.
struct ExecutorStats {
  uint64_t commits = 0;
  uint64_t user_aborts = 0;
  uint64_t failed = 0;
  std::array<uint64_t, static_cast<size_t>(scheduler::AbortCause::kCount)> conflicts{};
  uint64_t total_conflicts() const;
  // Planned protocols ("calvin", "planned", "qstore", "orthrus"):
  // transactions whose accesses were declared up front (complete),
  // reconnaissance runs, re-plans after an execution strayed outside its
  // locks, and phase times (ns): recon, sequencing (submit to batch sealed;
  // 0 for planned and orthrus; qstore: to placed on its queues, planning
  // included), lock wait (then to all locks held; qstore: to heading all its
  // queues), execution (locks held to released).
  uint64_t declared = 0;
  uint64_t recons = 0;
  uint64_t replans = 0;
  int64_t recon_ns = 0;
  int64_t sequence_ns = 0;
  int64_t lock_wait_ns = 0;
  int64_t exec_ns = 0;
  // Lock requests (plans) granted, and the execution queues they spanned
  // (qstore: the queue heads each had to reach; 0 for the others).
  uint64_t lock_requests = 0;
  uint64_t queue_spans = 0;
  // qstore speculative: speculation dependencies taken (an access to a
  // granule whose last writer had not committed), queues given up before
  // the transaction's end, and attempts that came back to a queue they had
  // given up (re-run holding their queues to the end).
  uint64_t spec_dependencies = 0;
  uint64_t spec_early_releases = 0;
  uint64_t spec_late_accesses = 0;
};

// What one committed transaction read and wrote: (table, key, version).
struct Footprint {
  struct Access {
    int table;
    uint64_t key;
    uint64_t version;  // read: version seen; write: version produced
    bool operator==(const Access& o) const {
      return table == o.table && key == o.key && version == o.version;
    }
  };
  std::vector<Access> reads;
  std::vector<Access> writes;
  void clear() {
    reads.clear();
    writes.clear();
  }
};

class EngineExecutor;

// Tables, indexes, the chosen protocol, and the executors' shared state.
// Thread-safety: see the file comment.
class Database {
 public:
  static absl::StatusOr<std::unique_ptr<Database>> Create(const DatabaseOptions& options);
  ~Database();
  Database(const Database&) = delete;
  Database& operator=(const Database&) = delete;

  const std::string& protocol() const { return protocol_name_; }

  absl::StatusOr<Table*> CreateTable(absl::string_view name, const Schema& schema,
                                     const TableOptions& options);
  // A non-unique secondary ordered index over `table`, keyed by key_of(row).
  // Create it before loading rows. The indexed columns must not be updated.
  absl::StatusOr<OrderedIndex*> CreateIndex(Table* table, absl::string_view name,
                                            OrderedIndex::KeyFn key_of);
  Table* FindTable(absl::string_view name) const;
  // Planned protocols: locks on `table` cover granules of keys that agree
  // above the low `low_bits` bits (0 = one row, the default). Set before
  // executors run; every transaction then locks that table at that grain.
  absl::Status SetLockGranule(Table* table, int low_bits);
  const std::vector<std::unique_ptr<Table>>& tables() const { return tables_; }

  // Loads a row outside any transaction (before executors run): `fill`
  // fills in the zeroed row, then it is indexed. AlreadyExists if present.
  absl::Status Load(Table* table, uint64_t key, absl::FunctionRef<void(const Row&)> fill);
  // Non-transactional read of a committed row (quiescent use only).
  absl::Status Peek(const Table* table, uint64_t key, ConstRow* out) const;
  // What the protocol decided at run time, one line ("" if nothing): qstore,
  // its placement (learned: hot granules and clusters, once learned).
  std::string ProtocolReport() const;

  // An executor for worker slot `worker_id` (0 <= id < 63, one executor per
  // slot at a time).
  absl::StatusOr<std::unique_ptr<EngineExecutor>> NewExecutor(int worker_id,
                                                              const ExecutorOptions& options);

  // --- internal ---
  CcProtocol& cc() { return *cc_; }

 private:
  explicit Database(std::string protocol);
  std::string protocol_name_;
  std::unique_ptr<CcProtocol> cc_;
  std::vector<std::unique_ptr<Table>> tables_;
  RecordArena load_arena_;
  mutable RwLatch mu_;
  // Per worker slot record arenas, kept for the Database's lifetime because
  // records are never freed while it lives.
  std::vector<std::unique_ptr<RecordArena>> arenas_ ABSL_GUARDED_BY(mu_);
  bool tables_announced_ ABSL_GUARDED_BY(mu_) = false;  // cc_->TablesLoaded called
};

// Runs transactions for one worker slot. Thread-compatible: one thread at a
// time. Implements the scheduler's Executor seam.
class EngineExecutor : public scheduler::Executor {
 public:
  ~EngineExecutor() override;

  // `txn` must be a ProcedureTxn. One attempt; no effect unless kCommitted.
  scheduler::ExecResult Execute(scheduler::Txn& txn) override;
  // One attempt of `proc` (tests, benchmarks). `ts_slot` carries the wait-die
  // timestamp across retries: pass the same variable (initially 0) on every
  // retry of the same logical transaction, or null for a fresh one.
  // `declarer` (planned protocols) declares the accesses up front; null:
  // found by reconnaissance.
  scheduler::ExecResult Run(absl::FunctionRef<absl::Status(Tx&)> proc, uint64_t* ts_slot,
                            int attempts = 1, const ProcedureTxn* declarer = nullptr);

  int worker_id() const { return worker_id_; }
  const ExecutorStats& stats() const { return stats_; }
  // The footprint of the last committed transaction (record_footprint only).
  const Footprint& last_footprint() const;

 private:
  friend class Database;
  EngineExecutor(Database* db, int worker_id, const ExecutorOptions& options,
                 std::unique_ptr<TxImpl> tx);
  void Backoff(int attempts);

  Database* const db_;
  const int worker_id_;
  const ExecutorOptions options_;
  std::unique_ptr<TxImpl> tx_;
  ExecutorStats stats_;
};

}  // namespace engine
}  // namespace corral

#endif  // CORRAL_ENGINE_ENGINE_H_
