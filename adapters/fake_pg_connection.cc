#include "adapters/fake_pg_connection.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace corral {
namespace adapters {
namespace {

// The first word of a statement, upper-cased.
std::string Verb(absl::string_view sql) {
  sql = absl::StripLeadingAsciiWhitespace(sql);
  size_t end = 0;
  while (end < sql.size() && absl::ascii_isalpha(static_cast<unsigned char>(sql[end]))) ++end;
  return absl::AsciiStrToUpper(sql.substr(0, end));
}

std::string ParamsText(absl::Span<const absl::optional<std::string>> params) {
  return absl::StrJoin(params, ",", [](std::string* out, const absl::optional<std::string>& p) {
    out->append(p.has_value() ? *p : "\\N");
  });
}

}  // namespace

void FakePgConnection::AddRule(Rule r) {
  absl::MutexLock l(&mu_);
  rules_.push_back(std::move(r));
}

void FakePgConnection::FailNth(int64_t nth, std::string sqlstate, std::string message) {
  Rule r;
  r.nth = nth;
  r.sqlstate = std::move(sqlstate);
  r.message = std::move(message);
  AddRule(std::move(r));
}

void FakePgConnection::FailWhen(std::string match, std::string sqlstate, int times,
                                std::string message, std::string detail) {
  Rule r;
  r.match = std::move(match);
  r.sqlstate = std::move(sqlstate);
  r.times = times;
  r.message = std::move(message);
  r.detail = std::move(detail);
  AddRule(std::move(r));
}

void FakePgConnection::DropNth(int64_t nth, bool after_apply) {
  Rule r;
  r.nth = nth;
  r.drop = true;
  r.after_apply = after_apply;
  AddRule(std::move(r));
}

void FakePgConnection::DropWhen(std::string match, int times, bool after_apply) {
  Rule r;
  r.match = std::move(match);
  r.times = times;
  r.drop = true;
  r.after_apply = after_apply;
  AddRule(std::move(r));
}

void FakePgConnection::FailResets(int n) {
  absl::MutexLock l(&mu_);
  failing_resets_ = n;
}

void FakePgConnection::SetResponder(Responder r) {
  absl::MutexLock l(&mu_);
  responder_ = std::move(r);
}

std::vector<std::string> FakePgConnection::log() const {
  absl::MutexLock l(&mu_);
  return log_;
}

std::vector<std::string> FakePgConnection::committed() const {
  absl::MutexLock l(&mu_);
  return committed_;
}

int64_t FakePgConnection::statements() const {
  absl::MutexLock l(&mu_);
  return statements_;
}

int FakePgConnection::resets() const {
  absl::MutexLock l(&mu_);
  return resets_;
}

bool FakePgConnection::in_transaction() const {
  absl::MutexLock l(&mu_);
  return txn_ != TxnState::kIdle;
}

bool FakePgConnection::connected() const {
  absl::MutexLock l(&mu_);
  return connected_;
}

int FakePgConnection::backend_pid() const {
  absl::MutexLock l(&mu_);
  return connected_ ? pid_ : 0;
}

const FakePgConnection::Rule* FakePgConnection::Fire(int64_t nth, absl::string_view sql,
                                                     absl::string_view name, bool prepare) {
  for (Rule& r : rules_) {
    if (r.times == 0 || r.on_prepare != prepare) continue;
    if (r.nth != 0 && r.nth != nth) continue;
    if (!r.match.empty() && !absl::StrContains(sql, r.match) &&
        !(!name.empty() && absl::StrContains(name, r.match))) {
      continue;
    }
    if (r.times > 0) --r.times;
    return &r;
  }
  return nullptr;
}

void FakePgConnection::DropLocked() {
  connected_ = false;
  txn_ = TxnState::kIdle;  // the server rolls back an open transaction
  pending_.clear();
  prepared_.clear();
}

PgResult FakePgConnection::Apply(const std::string& entry, absl::string_view sql,
                                 absl::Span<const absl::optional<std::string>> params) {
  const std::string verb = Verb(sql);
  if (verb == "BEGIN" || verb == "START") {
    if (txn_ == TxnState::kIdle) {
      txn_ = TxnState::kOpen;
      pending_.clear();
    }
    return PgResult::Ok("BEGIN");
  }
  if (verb == "COMMIT" || verb == "END") {
    const bool failed = txn_ == TxnState::kFailed;
    if (txn_ == TxnState::kOpen) {
      committed_.insert(committed_.end(), pending_.begin(), pending_.end());
    }
    txn_ = TxnState::kIdle;
    pending_.clear();
    return PgResult::Ok(failed ? "ROLLBACK" : "COMMIT");
  }
  if (verb == "ROLLBACK" || verb == "ABORT") {
    txn_ = TxnState::kIdle;
    pending_.clear();
    return PgResult::Ok("ROLLBACK");
  }
  if (txn_ == TxnState::kFailed) {
    return PgResult::Error(std::string(kSqlStateInFailedTxn),
                           "current transaction is aborted, commands ignored until end of "
                           "transaction block");
  }
  if (verb == "SET" || verb == "SHOW" || verb == "RESET" || verb == "DISCARD") {
    return PgResult::Ok(verb);  // session commands: no data effect
  }
  PgResult r = responder_ ? responder_(sql, params) : PgResult::Ok("OK");
  if (r.ok()) {
    if (txn_ == TxnState::kOpen) {
      pending_.push_back(entry);
    } else {
      committed_.push_back(entry);  // autocommit
    }
  } else if (txn_ == TxnState::kOpen) {
    txn_ = TxnState::kFailed;
  }
  return r;
}

PgResult FakePgConnection::Statement(std::string entry, absl::string_view sql,
                                     absl::string_view name,
                                     absl::Span<const absl::optional<std::string>> params) {
  absl::MutexLock l(&mu_);
  if (!connected_) {
    log_.push_back(entry + " -> LOST");
    return PgResult::Lost("no connection to the server");
  }
  const int64_t n = ++statements_;
  const Rule* rule = Fire(n, sql, name, /*prepare=*/false);
  if (rule != nullptr && rule->drop && !rule->after_apply) {
    DropLocked();
    log_.push_back(entry + " -> LOST");
    return PgResult::Lost("server closed the connection unexpectedly");
  }
  if (rule != nullptr && !rule->drop) {
    if (txn_ == TxnState::kOpen) txn_ = TxnState::kFailed;
    log_.push_back(absl::StrCat(entry, " -> ", rule->sqlstate));
    return PgResult::Error(rule->sqlstate, rule->message, rule->detail);
  }
  PgResult r;
  if (!name.empty() && !prepared_.contains(name)) {
    if (txn_ == TxnState::kOpen) txn_ = TxnState::kFailed;
    r = PgResult::Error("26000", absl::StrCat("prepared statement \"", name, "\" does not exist"));
  } else {
    r = Apply(entry, sql, params);
  }
  if (rule != nullptr) {  // drop after apply
    DropLocked();
    log_.push_back(entry + " -> LOST");
    return PgResult::Lost("server closed the connection unexpectedly");
  }
  log_.push_back(r.ok() ? entry : absl::StrCat(entry, " -> ", r.sqlstate()));
  return r;
}

PgResult FakePgConnection::Exec(absl::string_view sql) {
  return Statement(absl::StrCat("EXEC ", sql), sql, "", {});
}

PgResult FakePgConnection::ExecPrepared(absl::string_view name,
                                        absl::Span<const absl::optional<std::string>> params) {
  std::string sql;
  {
    absl::MutexLock l(&mu_);
    auto it = prepared_.find(name);
    if (it != prepared_.end()) sql = it->second;
  }
  return Statement(absl::StrCat("EXECP ", name, "(", ParamsText(params), ")"), sql, name, params);
}

PgResult FakePgConnection::Prepare(absl::string_view name, absl::string_view sql) {
  absl::MutexLock l(&mu_);
  std::string entry = absl::StrCat("PREPARE ", name, ": ", sql);
  if (!connected_) {
    log_.push_back(entry + " -> LOST");
    return PgResult::Lost("no connection to the server");
  }
  const Rule* rule = Fire(0, sql, name, /*prepare=*/true);
  PgResult r;
  if (rule != nullptr && rule->drop) {
    DropLocked();
    log_.push_back(entry + " -> LOST");
    return PgResult::Lost("server closed the connection unexpectedly");
  } else if (rule != nullptr) {
    r = PgResult::Error(rule->sqlstate, rule->message, rule->detail);
  } else if (txn_ == TxnState::kFailed) {
    r = PgResult::Error(std::string(kSqlStateInFailedTxn),
                        "current transaction is aborted, commands ignored until end of "
                        "transaction block");
  } else if (prepared_.contains(name)) {
    r = PgResult::Error("42P05", absl::StrCat("prepared statement \"", name, "\" already exists"));
  } else {
    prepared_[std::string(name)] = std::string(sql);
    r = PgResult::Ok("PREPARE");
  }
  if (!r.ok() && txn_ == TxnState::kOpen) txn_ = TxnState::kFailed;
  log_.push_back(r.ok() ? entry : absl::StrCat(entry, " -> ", r.sqlstate()));
  return r;
}

absl::Status FakePgConnection::Reset() {
  absl::MutexLock l(&mu_);
  ++resets_;
  DropLocked();
  if (failing_resets_ > 0) {
    --failing_resets_;
    log_.push_back("RESET failed");
    return absl::UnavailableError("reconnect failed: scripted (server unreachable)");
  }
  connected_ = true;
  ++pid_;
  log_.push_back("RESET ok");
  return absl::OkStatus();
}

}  // namespace adapters
}  // namespace corral
