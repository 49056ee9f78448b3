#include "adapters/pg_executor.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/time/clock.h"
#include "adapters/libpq_connection.h"

namespace corral {
namespace adapters {

using scheduler::AbortCause;
using scheduler::ExecResult;
using scheduler::Outcome;

absl::StatusOr<PgIsolation> ParsePgIsolation(absl::string_view text) {
  std::string t = absl::AsciiStrToLower(absl::StripAsciiWhitespace(text));
  t = absl::StrReplaceAll(t, {{"_", "-"}, {" ", "-"}});
  if (t == "serializable") return PgIsolation::kSerializable;
  if (t == "repeatable-read") return PgIsolation::kRepeatableRead;
  if (t == "read-committed") return PgIsolation::kReadCommitted;
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown isolation level '", text,
      "' (want serializable, repeatable-read or read-committed)"));
}

const char* PgIsolationName(PgIsolation i) {
  switch (i) {
    case PgIsolation::kSerializable: return "serializable";
    case PgIsolation::kRepeatableRead: return "repeatable-read";
    case PgIsolation::kReadCommitted: return "read-committed";
  }
  return "unknown";
}

const char* PgIsolationSql(PgIsolation i) {
  switch (i) {
    case PgIsolation::kSerializable: return "SERIALIZABLE";
    case PgIsolation::kRepeatableRead: return "REPEATABLE READ";
    case PgIsolation::kReadCommitted: return "READ COMMITTED";
  }
  return "SERIALIZABLE";
}

ExecResult ClassifyPgError(const PgResult& r, bool lock_timeout_is_conflict,
                           absl::string_view what) {
  if (r.ok()) return ExecResult::Commit();
  const std::string& st = r.sqlstate();
  if (!r.connection_lost()) {
    if (st == kSqlStateSerialization) return ExecResult::Conflict(AbortCause::kSerialization);
    if (st == kSqlStateDeadlock) return ExecResult::Conflict(AbortCause::kDeadlockDetected);
    if (st == kSqlStateLockNotAvailable && lock_timeout_is_conflict) {
      return ExecResult::Conflict(AbortCause::kLockTimeout);
    }
  }
  return ExecResult::Failed(r.ToStatus(what));
}

// The PgSession of one attempt. Records the first error; see PgSession.
class PgExecutor::Session final : public PgSession {
 public:
  explicit Session(PgExecutor& ex) : ex_(ex) {}

  absl::StatusOr<PgResult> Exec(absl::string_view name, const PgParams& params) override {
    if (failed_) return AlreadyFailed();
    const std::string* sql =
        ex_.options_.catalog ? ex_.options_.catalog->Find(name) : nullptr;
    if (sql == nullptr) {
      return ClientError(absl::InvalidArgumentError(
          absl::StrCat("no statement template named '", name, "' in the catalog")));
    }
    return Prepared(name, *sql, params);
  }

  absl::StatusOr<PgResult> ExecTemplate(const PgTemplate& t, const PgParams& params) override {
    if (failed_) return AlreadyFailed();
    if (t.name.empty()) return ClientError(absl::InvalidArgumentError("template without a name"));
    return Prepared(t.name, t.sql, params);
  }

  absl::StatusOr<PgResult> ExecSql(absl::string_view sql) override {
    if (failed_) return AlreadyFailed();
    return Check(ex_.conn_->Exec(sql), sql);
  }

  bool failed() const { return failed_; }
  // Set when a statement failed (else the failure was a client-side error).
  const absl::optional<PgResult>& error() const { return error_; }
  const std::string& what() const { return what_; }
  const absl::Status& status() const { return status_; }

 private:
  absl::StatusOr<PgResult> Prepared(absl::string_view name, const std::string& sql,
                                    const PgParams& params) {
    bool mismatch = false;
    PgResult p = ex_.EnsurePrepared(name, sql, &mismatch);
    if (mismatch) {
      return ClientError(absl::InvalidArgumentError(absl::StrCat(
          "template '", name, "' was prepared on this connection with different SQL")));
    }
    if (!p.ok()) return Check(std::move(p), absl::StrCat("PREPARE ", name));
    return Check(ex_.conn_->ExecPrepared(name, params), name);
  }

  absl::StatusOr<PgResult> Check(PgResult r, absl::string_view what) {
    if (r.ok()) return r;
    failed_ = true;
    what_ = std::string(what);
    status_ = r.ToStatus(what);
    error_ = std::move(r);
    return status_;
  }

  absl::Status ClientError(absl::Status s) {
    failed_ = true;
    status_ = std::move(s);
    return status_;
  }

  absl::Status AlreadyFailed() const {
    return absl::FailedPreconditionError(
        absl::StrCat("transaction already failed: ", status_.message()));
  }

  PgExecutor& ex_;
  bool failed_ = false;
  absl::optional<PgResult> error_;
  std::string what_;
  absl::Status status_;
};

PgExecutor::PgExecutor(std::unique_ptr<PgConnection> conn, PgExecutorOptions options)
    : options_(std::move(options)),
      begin_sql_(absl::StrCat("BEGIN ISOLATION LEVEL ", PgIsolationSql(options_.isolation))),
      conn_(std::move(conn)) {}

absl::StatusOr<std::unique_ptr<PgExecutor>> PgExecutor::Create(std::unique_ptr<PgConnection> conn,
                                                               PgExecutorOptions options) {
  if (conn == nullptr) return absl::InvalidArgumentError("PgExecutor: null connection");
  if (!conn->connected()) return absl::UnavailableError("PgExecutor: connection is not open");
  if (options.reconnect_attempts < 1) {
    return absl::InvalidArgumentError("PgExecutor: reconnect_attempts must be >= 1");
  }
  std::unique_ptr<PgExecutor> ex(new PgExecutor(std::move(conn), std::move(options)));
  absl::Status s = ex->Setup();
  if (!s.ok()) return s;
  return ex;
}

absl::StatusOr<std::unique_ptr<PgExecutor>> PgExecutor::Connect(const std::string& conninfo,
                                                                PgExecutorOptions options) {
  absl::StatusOr<std::unique_ptr<PgConnection>> c = ConnectLibpq(conninfo);
  if (!c.ok()) return c.status();
  return Create(*std::move(c), std::move(options));
}

absl::Status PgExecutor::Setup() {
  std::vector<std::string> stmts;
  if (options_.statement_timeout_ms > 0) {
    stmts.push_back(absl::StrCat("SET statement_timeout = ", options_.statement_timeout_ms));
  }
  if (options_.lock_timeout_ms > 0) {
    stmts.push_back(absl::StrCat("SET lock_timeout = ", options_.lock_timeout_ms));
  }
  stmts.insert(stmts.end(), options_.session_setup.begin(), options_.session_setup.end());
  for (const std::string& s : stmts) {
    PgResult r = conn_->Exec(s);
    if (!r.ok()) return r.ToStatus(absl::StrCat("session setup: ", s));
  }
  return absl::OkStatus();
}

absl::Status PgExecutor::Reconnect() {
  prepared_.clear();
  absl::Status last;
  absl::Duration backoff = options_.reconnect_backoff;
  for (int i = 0; i < options_.reconnect_attempts; ++i) {
    if (i > 0) {
      if (options_.sleep) {
        options_.sleep(backoff);
      } else {
        absl::SleepFor(backoff);
      }
      backoff = std::min(backoff * 2, absl::Seconds(1));
    }
    last = conn_->Reset();
    if (last.ok()) last = Setup();
    if (last.ok()) {
      stats_.reconnects.fetch_add(1, std::memory_order_relaxed);
      return absl::OkStatus();
    }
    stats_.reconnect_failures.fetch_add(1, std::memory_order_relaxed);
    prepared_.clear();
  }
  return absl::UnavailableError(absl::StrCat("gave up reconnecting after ",
                                             options_.reconnect_attempts,
                                             " tries; last error: ", last.message()));
}

void PgExecutor::Rollback() {
  stats_.rollbacks.fetch_add(1, std::memory_order_relaxed);
  PgResult r = conn_->Exec("ROLLBACK");
  if (r.connection_lost()) {
    // The server rolls back a transaction whose connection died; only the
    // connection needs repair. If that fails, the next attempt retries it.
    Reconnect().IgnoreError();
  }
}

PgResult PgExecutor::EnsurePrepared(absl::string_view name, const std::string& sql,
                                    bool* mismatch) {
  auto it = prepared_.find(name);
  if (it != prepared_.end()) {
    *mismatch = it->second != sql;
    return PgResult::Ok("PREPARE");
  }
  PgResult r = conn_->Prepare(name, sql);
  if (r.ok()) {
    prepared_.emplace(std::string(name), sql);
    stats_.prepares.fetch_add(1, std::memory_order_relaxed);
  }
  return r;
}

ExecResult PgExecutor::AfterStatementError(const PgResult& r, absl::string_view what) {
  if (r.connection_lost()) {
    absl::Status rc = Reconnect();
    return ExecResult::Failed(absl::UnavailableError(absl::StrCat(
        "connection lost during ", what,
        " (before COMMIT: the server rolled the transaction back; not retried): ", r.message(),
        rc.ok() ? "; reconnected" : absl::StrCat("; ", rc.message()))));
  }
  Rollback();
  return ClassifyPgError(r, options_.lock_timeout_is_conflict, what);
}

ExecResult PgExecutor::Count(ExecResult r) {
  switch (r.outcome) {
    case Outcome::kCommitted: stats_.commits.fetch_add(1, std::memory_order_relaxed); break;
    case Outcome::kConflictAbort: stats_.conflicts.fetch_add(1, std::memory_order_relaxed); break;
    case Outcome::kUserAbort: stats_.user_aborts.fetch_add(1, std::memory_order_relaxed); break;
    case Outcome::kFailed: stats_.failures.fetch_add(1, std::memory_order_relaxed); break;
  }
  return r;
}

ExecResult PgExecutor::Execute(scheduler::Txn& txn) {
  auto* pg = dynamic_cast<PgTxn*>(&txn);
  if (pg == nullptr || pg->procedure == nullptr) {
    return Count(ExecResult::Failed(absl::InvalidArgumentError(
        "PgExecutor: transaction is not a PgTxn with a procedure")));
  }
  return Run(*pg->procedure);
}

ExecResult PgExecutor::Run(PgProcedure& procedure) {
  if (!conn_->connected()) {
    absl::Status rc = Reconnect();
    if (!rc.ok()) {
      return Count(ExecResult::Failed(absl::UnavailableError(
          absl::StrCat("no connection to PostgreSQL; transaction not started: ", rc.message()))));
    }
  }
  PgResult begin = conn_->Exec(begin_sql_);
  if (!begin.ok()) return Count(AfterStatementError(begin, "BEGIN"));

  Session session(*this);
  absl::Status ps = procedure.Run(session);
  if (session.failed()) {
    if (session.error().has_value()) {
      return Count(AfterStatementError(*session.error(), session.what()));
    }
    Rollback();  // a client-side error (unknown template, ...): not a user abort
    return Count(ExecResult::Failed(session.status()));
  }
  if (!ps.ok()) {
    Rollback();
    return Count(ExecResult::UserAbort(std::move(ps)));
  }

  PgResult commit = conn_->Exec("COMMIT");
  if (commit.connection_lost()) {
    absl::Status rc = Reconnect();
    return Count(ExecResult::Failed(absl::UnavailableError(absl::StrCat(
        "connection lost during COMMIT: outcome unknown (the transaction may or may not have "
        "committed); not retried: ",
        commit.message(), rc.ok() ? "; reconnected" : absl::StrCat("; ", rc.message())))));
  }
  if (!commit.ok()) {
    // SSI reports most 40001s here. The server has ended the transaction;
    // ROLLBACK is a harmless no-op that keeps the rule "always roll back".
    Rollback();
    return Count(ClassifyPgError(commit, options_.lock_timeout_is_conflict, "COMMIT"));
  }
  if (commit.command_tag() == "ROLLBACK") {
    return Count(ExecResult::Failed(absl::InternalError(
        "COMMIT answered ROLLBACK: the transaction had failed without an error being seen")));
  }
  return Count(ExecResult::Commit());
}

absl::StatusOr<std::vector<std::unique_ptr<PgExecutor>>> ConnectPgExecutors(
    const std::string& conninfo, int n, const PgExecutorOptions& options) {
  if (n < 1) return absl::InvalidArgumentError("ConnectPgExecutors: n must be >= 1");
  std::vector<std::unique_ptr<PgExecutor>> out;
  out.reserve(n);
  for (int i = 0; i < n; ++i) {
    absl::StatusOr<std::unique_ptr<PgExecutor>> ex = PgExecutor::Connect(conninfo, options);
    if (!ex.ok()) {
      return absl::Status(ex.status().code(), absl::StrCat("executor ", i, " of ", n, ": ",
                                                           ex.status().message()));
    }
    out.push_back(*std::move(ex));
  }
  return out;
}

PgExecutorStats PgExecutor::stats() const {
  PgExecutorStats s;
  s.commits = stats_.commits.load(std::memory_order_relaxed);
  s.conflicts = stats_.conflicts.load(std::memory_order_relaxed);
  s.user_aborts = stats_.user_aborts.load(std::memory_order_relaxed);
  s.failures = stats_.failures.load(std::memory_order_relaxed);
  s.rollbacks = stats_.rollbacks.load(std::memory_order_relaxed);
  s.prepares = stats_.prepares.load(std::memory_order_relaxed);
  s.reconnects = stats_.reconnects.load(std::memory_order_relaxed);
  s.reconnect_failures = stats_.reconnect_failures.load(std::memory_order_relaxed);
  return s;
}

}  // namespace adapters
}  // namespace corral
