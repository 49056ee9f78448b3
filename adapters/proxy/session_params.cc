#include "adapters/proxy/session_params.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/session_detail.h"

namespace corral {
namespace proxy {

const char* const kKnownParams[14] = {
    "client_encoding",
    "datestyle",
    "timezone",
    "standard_conforming_strings",
    "application_name",
    "intervalstyle",
    "search_path",
    "default_transaction_isolation",
    "default_transaction_read_only",
    "default_transaction_deferrable",
    "statement_timeout",
    "lock_timeout",
    "idle_in_transaction_session_timeout",
    "extra_float_digits",
};

namespace session_detail {

std::string Lower(absl::string_view s) { return absl::AsciiStrToLower(std::string(s)); }


std::string_view Std(absl::string_view s) { return std::string_view(s.data(), s.size()); }

bool IsKnown(absl::string_view lower) {
  for (const char* k : kKnownParams) {
    if (lower == k) return true;
  }
  return false;
}

// GUC_LIST_QUOTE parameters: their flattened value quotes each element as an
// identifier, and only set_config takes that flat value back unchanged.
bool IsListQuote(absl::string_view lower) {
  return lower == "search_path" || lower == "temp_tablespaces" ||
         lower == "session_preload_libraries" || lower == "local_preload_libraries";
}

bool IsBoolParam(absl::string_view lower) {
  return lower == "standard_conforming_strings" || lower == "default_transaction_read_only" ||
         lower == "default_transaction_deferrable";
}

bool IsDurationParam(absl::string_view lower) {
  return lower == "statement_timeout" || lower == "lock_timeout" ||
         lower == "idle_in_transaction_session_timeout";
}

// 1 true, 0 false, -1 not a boolean (PostgreSQL's parse_bool, full words).
int ParseBool(absl::string_view v) {
  v = absl::StripAsciiWhitespace(v);
  for (absl::string_view t : {"on", "true", "yes", "1", "t", "y"}) {
    if (absl::EqualsIgnoreCase(v, t)) return 1;
  }
  for (absl::string_view f : {"off", "false", "no", "0", "f", "n"}) {
    if (absl::EqualsIgnoreCase(v, f)) return 0;
  }
  return -1;
}

// A duration GUC's value in microseconds (default unit ms); false when not one.
bool ParseDurationUs(absl::string_view v, double* us) {
  v = absl::StripAsciiWhitespace(v);
  size_t i = 0;
  while (i < v.size() && (absl::ascii_isdigit(v[i]) || v[i] == '.' || v[i] == '-' || v[i] == '+')) ++i;
  if (i == 0 || i > 40) return false;
  char buf[48];
  std::memcpy(buf, v.data(), i);
  buf[i] = '\0';
  char* end = nullptr;
  const double n = std::strtod(buf, &end);
  if (end != buf + i) return false;
  absl::string_view unit = absl::StripAsciiWhitespace(v.substr(i));
  double mult;
  if (unit.empty() || unit == "ms") {
    mult = 1e3;
  } else if (unit == "us") {
    mult = 1;
  } else if (unit == "s") {
    mult = 1e6;
  } else if (unit == "min") {
    mult = 60e6;
  } else if (unit == "h") {
    mult = 3600e6;
  } else if (unit == "d") {
    mult = 86400e6;
  } else {
    return false;
  }
  *us = n * mult;
  return true;
}

// Equal ignoring case and the characters in `skip`.
bool EqualFolded(absl::string_view a, absl::string_view b, absl::string_view skip) {
  size_t i = 0, j = 0;
  while (true) {
    while (i < a.size() && skip.find(a[i]) != absl::string_view::npos) ++i;
    while (j < b.size() && skip.find(b[j]) != absl::string_view::npos) ++j;
    if (i == a.size() || j == b.size()) return i == a.size() && j == b.size();
    if (absl::ascii_tolower(static_cast<unsigned char>(a[i])) !=
        absl::ascii_tolower(static_cast<unsigned char>(b[j]))) {
      return false;
    }
    ++i;
    ++j;
  }
}

// PostgreSQL's quote_identifier, minus the keyword check (the values it
// quotes are read back by SplitIdentifierString, which has none).
std::string QuoteIdent(absl::string_view s) {
  bool plain = !s.empty() && (absl::ascii_islower(s[0]) || s[0] == '_');
  for (char ch : s) {
    if (!(absl::ascii_islower(ch) || absl::ascii_isdigit(ch) || ch == '_')) plain = false;
  }
  if (plain) return std::string(s);
  std::string out = "\"";
  for (char ch : s) {
    if (ch == '"') out.push_back('"');
    out.push_back(ch);
  }
  out.push_back('"');
  return out;
}

}  // namespace session_detail

using namespace session_detail;  // NOLINT: the module's own helpers


std::string QuoteLiteral(absl::string_view value) {
  const bool backslash = value.find('\\') != absl::string_view::npos;
  std::string out;
  out.reserve(value.size() + 3);
  if (backslash) out.push_back('E');
  out.push_back('\'');
  for (char ch : value) {
    if (ch == '\'' || ch == '\\') out.push_back(ch);
    out.push_back(ch);
  }
  out.push_back('\'');
  return out;
}

bool IsValidParamName(absl::string_view name) {
  if (name.empty()) return false;
  size_t part = 0;
  for (size_t i = 0; i <= name.size(); ++i) {
    if (i == name.size() || name[i] == '.') {
      if (part == 0 || part > 63) return false;
      part = 0;
      continue;
    }
    const char ch = name[i];
    const bool first = part == 0;
    if (!(absl::ascii_islower(ch) || ch == '_' || (!first && (absl::ascii_isdigit(ch) || ch == '$')))) {
      return false;
    }
    ++part;
  }
  return true;
}

bool IsReportedParam(absl::string_view name) {
  for (absl::string_view r : {"application_name", "client_encoding", "datestyle", "default_transaction_read_only",
                              "in_hot_standby", "integer_datetimes", "intervalstyle", "is_superuser",
                              "server_encoding", "server_version", "session_authorization",
                              "standard_conforming_strings", "timezone"}) {
    if (absl::EqualsIgnoreCase(name, r)) return true;
  }
  return false;
}

std::string ReportName(absl::string_view lower) {
  if (lower == "datestyle") return "DateStyle";
  if (lower == "intervalstyle") return "IntervalStyle";
  if (lower == "timezone") return "TimeZone";
  return std::string(lower);
}

bool ParamValuesEqual(absl::string_view name, absl::string_view a, absl::string_view b) {
  if (a == b) return true;
  if (name == "search_path" || name == "application_name" || !IsKnown(name)) return false;
  if (IsBoolParam(name)) {
    const int x = ParseBool(a);
    return x >= 0 && x == ParseBool(b);
  }
  if (IsDurationParam(name)) {
    double x = 0, y = 0;
    return ParseDurationUs(a, &x) && ParseDurationUs(b, &y) && x == y;
  }
  if (name == "client_encoding") return EqualFolded(a, b, "-_ ");
  return EqualFolded(a, b, " ");
}

// ---- BackendSession ----

BackendSession::BackendSession(const ParamList& connect_params) {
  for (const auto& [k, v] : connect_params) defaults_[Lower(k)] = v;
}

void BackendSession::OnParameterStatus(absl::string_view name, absl::string_view value) {
  const std::string lower = Lower(name);
  if (!IsKnown(lower)) return;
  auto it = values_.find(Std(lower));
  if (it != values_.end()) {
    if (!ParamValuesEqual(lower, it->second, value)) it->second = std::string(value);
    return;
  }
  auto d = defaults_.find(Std(lower));
  if (d != defaults_.end() && ParamValuesEqual(lower, d->second, value)) return;
  values_[lower] = std::string(value);
}

namespace {
// `value` lower case without quotes and blanks, into buf (false: longer).
bool Squeezed(absl::string_view value, char (&buf)[16], absl::string_view* out) {
  size_t n = 0;
  for (char ch : value) {
    if (ch == ' ' || ch == '\'' || ch == '"' || ch == '\t') continue;
    if (n == sizeof(buf)) return false;
    buf[n++] = absl::ascii_tolower(static_cast<unsigned char>(ch));
  }
  *out = absl::string_view(buf, n);
  return true;
}
}  // namespace

bool IsSerializableValue(absl::string_view value) {
  char buf[16];
  absl::string_view v;
  return Squeezed(value, buf, &v) && v == "serializable";
}

bool IsOnValue(absl::string_view value) {
  value = absl::StripAsciiWhitespace(value);
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
  }
  return session_detail::ParseBool(value) == 1;
}

// ---- ClientSession ----

bool ClientSession::SetStartupParameter(absl::string_view name, absl::string_view value) {
  const std::string lower = Lower(name);
  if (!IsKnown(lower) || value.find('\0') != absl::string_view::npos) return false;
  startup_[lower] = std::string(value);
  committed_[lower] = std::string(value);
  return true;
}

ParamList ClientSession::LoginParameterStatus(const ParamList& server_params) {
  ParamList out;
  for (const auto& [k, v] : server_params) {
    const std::string lower = Lower(k);
    server_defaults_[lower] = v;
    auto it = startup_.find(Std(lower));
    std::string value = v;
    if (it != startup_.end() && IsReportedParam(lower)) {
      value = it->second;
      if (lower == "client_encoding" && !ParamValuesEqual(lower, value, v)) {
        value = absl::AsciiStrToUpper(value);
      } else if (ParamValuesEqual(lower, value, v)) {
        value = v;  // the server's spelling
      }
    }
    reported_[lower] = value;
    out.emplace_back(k, value);
  }
  for (const auto& [k, v] : startup_) {
    if (IsReportedParam(k) && reported_.find(Std(k)) == reported_.end()) {
      reported_[k] = v;
      out.emplace_back(ReportName(k), v);
    }
  }
  return out;
}

ParamMap& ClientSession::Cur() {
  if (!has_pending_) {
    pending_ = committed_;
    has_pending_ = true;
  }
  return pending_;
}

void ClientSession::SetValue(const std::string& name, std::string value) { Cur()[name] = std::move(value); }

void ClientSession::Reset(const std::string& name) {
  auto it = startup_.find(Std(name));
  if (it != startup_.end()) {
    Cur()[name] = it->second;
    reset_here_.insert(name);
  } else {
    Cur().erase(name);
  }
}

void ClientSession::ResetAll() {
  Cur() = startup_;
  for (const auto& [k, v] : startup_) reset_here_.insert(k);
}

absl::optional<Refusal> ClientSession::RefusalFor(absl::string_view sql) const {
  std::vector<Effect> effects;
  return StatementEffectsOf(sql, status_ != 'I', &effects);
}

absl::optional<Refusal> ClientSession::OnStatement(absl::string_view sql) {
  if (!StatementMayChangeSession(sql)) return absl::nullopt;
  std::vector<Effect> effects;
  if (absl::optional<Refusal> refusal = StatementEffectsOf(sql, status_ != 'I', &effects)) return refusal;
  for (Effect& e : effects) {
    // In a failed transaction block the server ignores everything up to
    // ROLLBACK / ROLLBACK TO SAVEPOINT.
    if (status_ == 'E' && e.kind != Kind::kRollbackTo && e.kind != Kind::kEnd) continue;
    switch (e.kind) {
      case Kind::kSet:
        SetValue(e.name, std::move(e.value));
        break;
      case Kind::kReset:
        Reset(e.name);
        break;
      case Kind::kResetAll:
        ResetAll();
        break;
      case Kind::kDiscardAll:
        ResetAll();
        listening_ = false;
        break;
      case Kind::kSavepoint:
        savepoints_.emplace_back(e.name, current());
        break;
      case Kind::kRollbackTo:
      case Kind::kRelease:
        for (size_t i = savepoints_.size(); i-- > 0;) {
          if (savepoints_[i].first != e.name) continue;
          if (e.kind == Kind::kRollbackTo) {
            Cur() = savepoints_[i].second;
            savepoints_.resize(i + 1);
          } else {
            savepoints_.resize(i);
          }
          break;
        }
        break;
      case Kind::kListen:
        listening_ = true;
        break;
      case Kind::kBegin:
      case Kind::kEnd:
        break;
    }
  }
  return absl::nullopt;
}

bool ClientSession::OnParameterStatus(absl::string_view name, absl::string_view value) {
  const std::string lower = Lower(name);
  // A startup parameter RESET here went to the backend's own startup value,
  // not the client's: not the client's setting (it is SET again at the next
  // attach), so neither adopted nor forwarded.
  if (!reset_here_.empty() && reset_here_.count(lower) > 0) return false;
  if (IsKnown(lower)) {
    // Inside a transaction the report is undone with it (the server reports
    // the old value again then).
    ParamMap& m = has_pending_ || status_ != 'I' ? Cur() : committed_;
    auto it = m.find(Std(lower));
    if (it != m.end()) {
      if (!ParamValuesEqual(lower, it->second, value)) it->second = std::string(value);
    } else {
      auto d = server_defaults_.find(Std(lower));
      if (d == server_defaults_.end() || !ParamValuesEqual(lower, d->second, value)) {
        m[lower] = std::string(value);
      }
    }
  }
  auto r = reported_.find(Std(lower));
  if (r != reported_.end() && r->second == Std(value)) return false;
  reported_[lower] = std::string(value);
  return true;
}

void ClientSession::OnCommandComplete(absl::string_view tag) {
  if (tag == "ROLLBACK") rolled_back_ = true;
}

void ClientSession::OnError() { failed_ = true; }

void ClientSession::OnReadyForQuery(char status) {
  status_ = status;
  if (status == 'T') {
    rolled_back_ = false;  // a ROLLBACK TO SAVEPOINT (its tag is ROLLBACK too)
    failed_ = false;
    return;
  }
  if (status == 'E') {
    failed_ = true;
    return;
  }
  if (has_pending_) {
    if (!rolled_back_ && !failed_) committed_.swap(pending_);
    pending_.clear();
    has_pending_ = false;
  }
  savepoints_.clear();
  rolled_back_ = false;
  failed_ = false;
  status_ = 'I';
}

// ---- attach / detach ----

namespace {

void AppendSet(std::string* sql, const std::string& name, const std::string& value) {
  if (IsValidParamName(name) && !IsListQuote(name)) {
    absl::StrAppend(sql, "SET ", name, " = ", QuoteLiteral(value), ";");
  } else {
    absl::StrAppend(sql, "SELECT pg_catalog.set_config(", QuoteLiteral(name), ", ", QuoteLiteral(value),
                    ", false);");
  }
}

void AppendReset(std::string* sql, const std::string& name) {
  absl::StrAppend(sql, "RESET ", IsValidParamName(name) ? name : QuoteIdent(name), ";");
}

}  // namespace

std::string AttachSql(ClientSession* client, BackendSession* backend) {
  std::string sql;
  const ParamMap& want = client->committed_;
  const ParamMap& have = backend->values_;
  const bool any_unknown = !backend->unknown_.empty();
  auto unknown = [&](const std::string& n) { return any_unknown && backend->unknown_.count(n) > 0; };
  auto w = want.begin();
  auto h = have.begin();
  while (w != want.end() || h != have.end()) {
    if (h == have.end() || (w != want.end() && w->first < h->first)) {
      // The client has a value, the backend its default.
      auto d = backend->defaults_.find(w->first);
      if (unknown(w->first) || d == backend->defaults_.end() ||
          !ParamValuesEqual(w->first, w->second, d->second)) {
        AppendSet(&sql, w->first, w->second);
      }
      ++w;
    } else if (w == want.end() || h->first < w->first) {
      // The backend has a value the client never set.
      auto d = backend->defaults_.find(h->first);
      if (unknown(h->first) || d == backend->defaults_.end() ||
          !ParamValuesEqual(h->first, h->second, d->second)) {
        AppendReset(&sql, h->first);
      }
      ++h;
    } else {
      if (unknown(w->first) || !ParamValuesEqual(w->first, w->second, h->second)) {
        AppendSet(&sql, w->first, w->second);
      }
      ++w;
      ++h;
    }
  }
  if (any_unknown) {
    for (const std::string& n : backend->unknown_) {
      if (want.count(n) == 0 && have.count(n) == 0) AppendReset(&sql, n);
    }
    backend->unknown_.clear();
  }
  if (backend->listen_owner_ != 0 && backend->listen_owner_ != client->id_) {
    sql.append("UNLISTEN *;");
    backend->listen_owner_ = 0;
  }
  if (!sql.empty() && backend->values_ != want) backend->values_ = want;
  client->reset_here_.clear();
  client->listening_ = false;
  return sql;
}

void DetachSession(ClientSession* client, BackendSession* backend) {
  if (backend->values_ != client->committed_) backend->values_ = client->committed_;
  for (const std::string& n : client->reset_here_) backend->unknown_.insert(n);
  client->reset_here_.clear();
  if (client->listening_) backend->listen_owner_ = client->id_;
  client->listening_ = false;
}

std::string ResetSql(BackendSession* backend) {
  std::string sql;
  if (!backend->values_.empty() || !backend->unknown_.empty()) sql = "RESET ALL;";
  if (backend->listen_owner_ != 0) sql.append("UNLISTEN *;");
  backend->values_.clear();
  backend->unknown_.clear();
  backend->listen_owner_ = 0;
  return sql;
}

}  // namespace proxy
}  // namespace corral
