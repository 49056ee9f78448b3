// PgExecutor: runs PgTxn attempts on one PostgreSQL connection (one executor
// per run queue) and classifies each outcome for the scheduler.
//
//   PgExecutorOptions o;
//   o.isolation = PgIsolation::kSerializable;
//   o.catalog = catalog;                          // std::shared_ptr<const PgCatalog>
//   auto ex = PgExecutor::Connect(conninfo, o);   // or Create(std::move(conn), o)
//   if (!ex.ok()) return ex.status();
//   scheduler::ExecResult r = (*ex)->Execute(txn); // txn is a PgTxn
//
// One attempt: BEGIN ISOLATION LEVEL <isolation>; the procedure; COMMIT.
//
//   what happened                               ExecResult
//   COMMIT succeeded                            Commit
//   SQLSTATE 40001                              Conflict(kSerialization)
//   SQLSTATE 40P01                              Conflict(kDeadlockDetected)
//   SQLSTATE 55P03 (lock_timeout, NOWAIT)       Conflict(kLockTimeout) if lock_timeout_is_conflict,
//                                               else Failed
//   any other SQL error (23505, 42601, 57014..) Failed (status: SQLSTATE, message, detail)
//   procedure returned an error of its own      UserAbort (its status)
//   connection lost before COMMIT               Failed (server rolled it back); reconnect
//   connection lost during COMMIT               Failed "outcome unknown"; reconnect; never retried
//
// After any error the executor sends ROLLBACK (when the connection still
// works). Templates are prepared lazily, once per connection; a reconnect
// forgets them and re-runs the session setup (statement_timeout, lock_timeout,
// session_setup). Reconnecting tries reconnect_attempts times with doubling
// backoff; if it still fails, later attempts first try again and report
// Failed(Unavailable) without starting the transaction.
#ifndef CORRAL_ADAPTERS_PG_EXECUTOR_H_
#define CORRAL_ADAPTERS_PG_EXECUTOR_H_

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "adapters/pg_connection.h"
#include "adapters/pg_procedure.h"
#include "scheduler/txn.h"

namespace corral {
namespace adapters {

enum class PgIsolation : uint8_t { kSerializable, kRepeatableRead, kReadCommitted };

// "serializable", "repeatable-read", "read-committed" (also with '_' or ' ',
// any case).
absl::StatusOr<PgIsolation> ParsePgIsolation(absl::string_view text);
const char* PgIsolationName(PgIsolation i);  // "serializable", ...
const char* PgIsolationSql(PgIsolation i);   // "SERIALIZABLE", "REPEATABLE READ", "READ COMMITTED"

struct PgExecutorOptions {
  PgIsolation isolation = PgIsolation::kSerializable;
  // Classify SQLSTATE 55P03 as a conflict (retried) instead of a failure.
  bool lock_timeout_is_conflict = false;
  // SET at every (re)connect; 0 leaves the server's setting.
  int statement_timeout_ms = 30000;
  int lock_timeout_ms = 0;
  // More statements to run at every (re)connect (e.g. "SET deadlock_timeout = '100ms'").
  std::vector<std::string> session_setup;
  // Reconnect tries per loss, with backoff doubling from reconnect_backoff up to 1 s.
  int reconnect_attempts = 5;
  absl::Duration reconnect_backoff = absl::Milliseconds(20);
  // Templates for PgSession::Exec; may be null.
  std::shared_ptr<const PgCatalog> catalog;
  // How to wait between reconnect tries (tests inject a no-op); null = absl::SleepFor.
  std::function<void(absl::Duration)> sleep;
};

// Counters since creation.
struct PgExecutorStats {
  int64_t commits = 0;
  int64_t conflicts = 0;
  int64_t user_aborts = 0;
  int64_t failures = 0;
  int64_t rollbacks = 0;       // ROLLBACK statements sent
  int64_t prepares = 0;        // templates prepared (all connections)
  int64_t reconnects = 0;      // successful reconnects
  int64_t reconnect_failures = 0;  // failed reconnect tries
};

// The classification of one failed statement (see the table above). `what`
// names the statement in the status message.
scheduler::ExecResult ClassifyPgError(const PgResult& r, bool lock_timeout_is_conflict,
                                      absl::string_view what);

// Thread-compatible: one worker thread calls Execute/Run at a time (the
// scheduler's contract for Executor); stats() may be called from any thread.
class PgExecutor final : public scheduler::Executor {
 public:
  // Takes a connected connection and runs the session setup on it.
  static absl::StatusOr<std::unique_ptr<PgExecutor>> Create(std::unique_ptr<PgConnection> conn,
                                                            PgExecutorOptions options);
  // Opens a libpq connection, then Create().
  static absl::StatusOr<std::unique_ptr<PgExecutor>> Connect(const std::string& conninfo,
                                                             PgExecutorOptions options);

  // `txn` must be a PgTxn (else Failed(InvalidArgument)).
  scheduler::ExecResult Execute(scheduler::Txn& txn) override;
  // One attempt of a procedure.
  scheduler::ExecResult Run(PgProcedure& procedure);

  PgExecutorStats stats() const;
  const PgExecutorOptions& options() const { return options_; }
  // The connection (tests use it to find the backend pid).
  PgConnection& connection() { return *conn_; }

 private:
  class Session;
  PgExecutor(std::unique_ptr<PgConnection> conn, PgExecutorOptions options);

  absl::Status Setup();
  absl::Status Reconnect();
  void Rollback();
  // Makes sure `name` is prepared as `sql` on this connection.
  PgResult EnsurePrepared(absl::string_view name, const std::string& sql, bool* mismatch);
  scheduler::ExecResult AfterStatementError(const PgResult& r, absl::string_view what);
  scheduler::ExecResult Count(scheduler::ExecResult r);

  const PgExecutorOptions options_;
  const std::string begin_sql_;
  std::unique_ptr<PgConnection> conn_;
  // name -> SQL of the templates prepared on the current connection.
  absl::flat_hash_map<std::string, std::string> prepared_;

  struct AtomicStats {
    std::atomic<int64_t> commits{0}, conflicts{0}, user_aborts{0}, failures{0}, rollbacks{0},
        prepares{0}, reconnects{0}, reconnect_failures{0};
  };
  AtomicStats stats_;
};

// `n` executors with one libpq connection each, e.g. one per run queue for
// the scheduler's WorkerPool. Fails (closing what it opened) if any
// connection fails.
absl::StatusOr<std::vector<std::unique_ptr<PgExecutor>>> ConnectPgExecutors(
    const std::string& conninfo, int n, const PgExecutorOptions& options);

}  // namespace adapters
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PG_EXECUTOR_H_
