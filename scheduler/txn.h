// What flows through Corral's run queues, and the executor seam.
//
// A Txn is one transaction to be scheduled: its references (from the
// front-end's extraction), an optional hard-partition key, its type for
// statistics, and whatever payload the executor needs (a subclass carries it:
// the embedded engine's stored-procedure call, the PostgreSQL adapter's
// statements). The scheduler never looks at the payload.
//
// An Executor runs one attempt of a Txn and reports the outcome. The embedded
// engine's workers and the PostgreSQL adapter's connections implement it; the
// scheduler knows nothing else about them.
//
//   class MyTxn : public scheduler::Txn { ... payload ... };
//   class MyExecutor : public scheduler::Executor {
//     ExecResult Execute(scheduler::Txn& t) override {
//       auto& mine = static_cast<MyTxn&>(t);
//       ...
//       return ExecResult::Commit();
//     }
//   };
#ifndef CORRAL_SCHEDULER_TXN_H_
#define CORRAL_SCHEDULER_TXN_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "common/ids.h"

namespace corral {
namespace scheduler {

// How one attempt of a transaction ended.
enum class Outcome : uint8_t {
  kCommitted,      // committed
  kConflictAbort,  // aborted by concurrency control: retried, counts in History
  kUserAbort,      // the transaction's own logic rolled back (not retried)
  kFailed,         // an error that is neither (bad SQL, lost connection): not retried
};

// Why a conflict abort happened. Engine causes and PostgreSQL SQLSTATEs share
// one enum so that statistics print the same way for both back ends.
enum class AbortCause : uint8_t {
  kNone = 0,
  kValidation,     // OCC read-set validation failed
  kLockConflict,   // 2PL NO_WAIT found a lock held
  kWaitDie,        // 2PL WAIT_DIE: younger requester died
  kDeadlock,       // deadlock detector chose this transaction as victim
  kLockTimeout,    // waited too long for a lock (engine timeout or SQLSTATE 55P03)
  kSerialization,  // SQLSTATE 40001
  kDeadlockDetected,  // SQLSTATE 40P01
  kCascade,        // speculation: re-executed because an earlier txn aborted
  kTimestampTooOld,  // T/O, MVCC: a younger txn already read/wrote the record
  kRangeEmpty,     // MaaT: the txn's commit-timestamp range became empty
  kCount,
};

const char* AbortCauseName(AbortCause c);
const char* OutcomeName(Outcome o);

struct ExecResult {
  Outcome outcome = Outcome::kCommitted;
  AbortCause cause = AbortCause::kNone;
  absl::Status status;  // detail for kUserAbort / kFailed

  static ExecResult Commit() { return {}; }
  static ExecResult Conflict(AbortCause c) { return {Outcome::kConflictAbort, c, {}}; }
  static ExecResult UserAbort(absl::Status s = absl::AbortedError("user abort")) {
    return {Outcome::kUserAbort, AbortCause::kNone, std::move(s)};
  }
  static ExecResult Failed(absl::Status s) {
    return {Outcome::kFailed, AbortCause::kNone, std::move(s)};
  }
};

using corral::RefVec;  // defined in common/ids.h

// One transaction to schedule. Thread-compatible: owned by one thread at a
// time (the submitter, then the queue, then the executing worker).
class Txn {
 public:
  virtual ~Txn() = default;

  RefVec refs;                    // scheduling references (policy-extracted)
  RefMult ref_mult;               // statements naming each of refs (empty: 1 each)
  // refs holds no reference twice (the reference extractor's output): the
  // Schedule and State then skip their per-reference duplicate scans.
  bool refs_distinct = false;
  // Non-empty: the History learns from these instead of refs (what the
  // transaction touched, when refs is only what routing could see before
  // it ran: the embedded runner's route_on = first / templates, as a proxy
  // sees a transaction). Distinct, like refs.
  RefVec learn_refs;
  uint64_t partition_key = 0;     // for the Hard Partition baseline
  TxnTypeId type{0};              // workload transaction type, for statistics
  int64_t decision_start_ns = 0;  // when scheduling began (response time origin)
  int64_t enqueue_ns = 0;         // when it entered its run queue
  QueueId queue{-1};              // queue chosen by the schedule
  // The lead that placed it (learned, with
  // ScheduleOptions::lead_attributed_aborts; 0 = none), and whether on one
  // of its split set's queues: whom its conflict aborts count for
  // (RecordConflictAbort, worker_pool.h).
  RefId placed_by{0};
  bool placed_split = false;
  int32_t attempts = 0;           // attempts so far (retries included)

  // The references the History learns from (learn_refs, else refs).
  const RefVec& learned_refs() const { return learn_refs.empty() ? refs : learn_refs; }
};

// Runs transactions. Thread-compatible: each Executor is driven by exactly
// one worker thread at a time; different Executors run concurrently.
class Executor {
 public:
  virtual ~Executor() = default;
  // Runs one attempt of `txn`. Must leave no effect behind unless it returns
  // kCommitted.
  virtual ExecResult Execute(Txn& txn) = 0;
};

}  // namespace scheduler
}  // namespace corral

#endif  // CORRAL_SCHEDULER_TXN_H_
