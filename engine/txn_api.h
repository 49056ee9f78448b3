// The transaction API that stored procedures are written against.
//
// A stored procedure is a function `absl::Status (Tx&)`. It reads and writes
// rows only through the Tx it is given; the same procedure runs unchanged
// under every concurrency-control protocol ("occ", "2pl-nowait",
// "2pl-waitdie", "2pl-dldetect", "timestamp", "mvcc", "maat", see engine.h).
//
// Error contract (no exceptions):
//  * Every Tx call returns absl::Status. OK means it worked. NotFound (Read,
//    ReadForUpdate, Delete of a missing key) and AlreadyExists (Insert of a
//    present key) are ordinary results the procedure may handle.
//  * A concurrency conflict returns a status with code kUnavailable
//    (IsConflict(s) is true) and marks the attempt as doomed: every later call
//    fails the same way. The procedure should just propagate it
//    (ENGINE_RETURN_IF_ERROR). Even if it swallows it, the executor reports
//    ExecResult::Conflict(cause) and rolls back; the scheduler retries.
//  * To roll back on purpose (TPC-C NewOrder's invalid item, TATP's failed
//    insert) return UserAbortError("why"): the executor rolls back and
//    reports ExecResult::UserAbort (not retried).
//  * Any other non-OK status rolls back and reports ExecResult::Failed.
//  * OK from the procedure asks to commit; commit may still fail validation
//    (OCC, MaaT) and then reports Conflict(kValidation / kRangeEmpty).
//
// Views: ConstRow/Row returned by a call stay valid until the attempt ends.
// Writes go through the Row returned by ReadForUpdate or Insert (modify it in
// place: the engine installs it at commit or undoes it on abort). A later
// Read of a row this attempt wrote sees the write. Do not keep views, or
// state derived from a failed attempt, across attempts: a retry calls the
// procedure again from the start.
//
// Isolation: committed transactions are conflict-serializable for point
// reads/writes under every protocol. Scans return the rows present in the
// index range when scanned and protect those rows (OCC validates their
// versions at commit, 2PL locks them to commit); rows inserted into the
// range by concurrent transactions (phantoms) are not detected.
//
// Example (money transfer; `accounts` is a Table* with a double column):
//
//   absl::Status Transfer(Tx& tx, const Table* accounts, int bal,
//                         uint64_t from, uint64_t to, double amount) {
//     Row a, b;
//     ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(accounts, from, &a));
//     if (a.GetDouble(bal) < amount) return UserAbortError("insufficient funds");
//     ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(accounts, to, &b));
//     a.AddDouble(bal, -amount);
//     b.AddDouble(bal, amount);
//     return absl::OkStatus();
//   }
//
//   // Carrying a call through the scheduler: subclass ProcedureTxn.
//   class TransferTxn : public ProcedureTxn {
//    public:
//     absl::Status Run(Tx& tx) override { return Transfer(tx, t_, 0, f_, to_, amt_); }
//     ...parameters as members...
//   };
//
// Thread-safety: a Tx belongs to one executor (one worker thread); it is not
// shared. Procedures may read their ProcedureTxn's members freely.
#ifndef CORRAL_ENGINE_TXN_API_H_
#define CORRAL_ENGINE_TXN_API_H_

#include <cstdint>
#include <functional>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "engine/schema.h"
#include "scheduler/txn.h"

namespace corral {
namespace engine {

class Table;         // storage.h
class OrderedIndex;  // storage.h

// Rolls back the attempt on purpose; reported as ExecResult::UserAbort.
absl::Status UserAbortError(absl::string_view why);
bool IsUserAbort(const absl::Status& s);
// True for the status the engine returns on a concurrency conflict.
bool IsConflict(const absl::Status& s);

#define ENGINE_RETURN_IF_ERROR(expr)              \
  do {                                            \
    ::absl::Status engine_status_ = (expr);       \
    if (!engine_status_.ok()) return engine_status_; \
  } while (0)

// An ordered-index range scan: keys in [lo, hi] (inclusive) of `index`,
// ascending or descending, at most `limit` rows (limit < 0: no limit). With
// descending = true and limit = 1 it returns the latest row of the range
// (TPC-C order-status); ascending with limit = 1 the oldest (delivery).
// for_update = true takes write intent on the returned rows up front (2PL:
// exclusive locks), for rows the procedure will then update or delete.
struct ScanSpec {
  const OrderedIndex* index = nullptr;
  uint64_t lo = 0;
  uint64_t hi = ~uint64_t{0};
  int limit = -1;
  bool descending = false;
  bool for_update = false;
};

// The rows a transaction will access, declared before it runs (the planned
// protocols "calvin", "qstore", "planned" and "orthrus" lock them up front). Entries name a
// (table, primary key) and whether the access writes (ReadForUpdate, Insert,
// Delete, a for_update scan) or only reads; a key may be declared more than
// once (the strongest mode wins). The lock is taken on the table's lock
// granule of the key (Database::SetLockGranule), so declaring any key of a
// granule covers every key of it (TPC-C: one key of a district's orders
// covers the order NewOrder is about to insert). Thread-compatible.
class AccessSet {
 public:
  struct Entry {
    const Table* table;
    uint64_t key;
    bool write;
  };
  void Read(const Table* table, uint64_t key) { entries_.push_back({table, key, false}); }
  void Write(const Table* table, uint64_t key) { entries_.push_back({table, key, true}); }
  void Add(const Table* table, uint64_t key, bool write) { entries_.push_back({table, key, write}); }
  const std::vector<Entry>& entries() const { return entries_; }
  void clear() { entries_.clear(); }
  // The worker slot that will run the transaction (Tx::worker_id()), for
  // procedures whose keys depend on it (TPC-C's history rows).
  int worker_id() const { return worker_id_; }
  void set_worker_id(int w) { worker_id_ = w; }

 private:
  std::vector<Entry> entries_;
  int worker_id_ = 0;
};

// The operations a stored procedure may perform. Implemented once per
// protocol; procedures see only this interface.
class Tx {
 public:
  virtual ~Tx() = default;

  // Reads the row with primary key `key`. NotFound if absent.
  virtual absl::Status Read(const Table* table, uint64_t key, ConstRow* out) = 0;
  // Reads the row for writing: modify *out in place. NotFound if absent.
  virtual absl::Status ReadForUpdate(const Table* table, uint64_t key, Row* out) = 0;
  // Inserts a new zero-filled row with primary key `key` and returns it in
  // *out to fill in (fill every column a secondary index reads before the
  // procedure returns). AlreadyExists if the key is present.
  virtual absl::Status Insert(const Table* table, uint64_t key, Row* out) = 0;
  // Deletes the row with primary key `key`. NotFound if absent.
  virtual absl::Status Delete(const Table* table, uint64_t key) = 0;
  // Appends the rows of the range to *out (cleared first), in index order.
  // For a secondary index, the rows are the base table's rows.
  virtual absl::Status Scan(const ScanSpec& spec, std::vector<ConstRow>* out) = 0;

  // Whether this attempt has hit a conflict (it will roll back).
  virtual bool conflicted() const = 0;
  // The executor's worker slot (0-based).
  virtual int worker_id() const = 0;
};

// A scheduler transaction that carries a stored-procedure call. Workloads
// subclass it (parameters as members). EngineExecutor::Execute requires that
// the scheduler::Txn it gets is a ProcedureTxn.
class ProcedureTxn : public scheduler::Txn {
 public:
  // Runs the procedure once. Called again from the start on every retry.
  virtual absl::Status Run(Tx& tx) = 0;

  // Planned protocols ("calvin", "qstore", "planned", "orthrus"): declares every row Run will
  // access, from the parameters alone, and returns true. Returns false when
  // the rows depend on what the transaction reads (TPC-C's customer by last
  // name, Delivery's oldest order): the engine then finds them with a
  // reconnaissance run of Run against committed data (Calvin's OLLP) and
  // re-plans if the execution strays outside them. An access outside a
  // declared set is never executed: the attempt is rolled back and re-planned
  // (ExecutorStats::replans). Other protocols never call it.
  virtual bool DeclareAccesses(AccessSet& set) const { return false; }

  // Engine-managed: the 2PL wait-die timestamp, assigned on the first attempt
  // and kept across retries. Workloads leave it alone (0 = not yet assigned).
  uint64_t engine_ts = 0;
};

// A ProcedureTxn around a callable, for tests and small tools.
class FunctionTxn : public ProcedureTxn {
 public:
  explicit FunctionTxn(std::function<absl::Status(Tx&)> fn) : fn_(std::move(fn)) {}
  absl::Status Run(Tx& tx) override { return fn_(tx); }

 private:
  std::function<absl::Status(Tx&)> fn_;
};

}  // namespace engine
}  // namespace corral

#endif  // CORRAL_ENGINE_TXN_API_H_
