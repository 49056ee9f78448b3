#include "adapters/proxy/session_params.h"

#include <cctype>
#include <cstdlib>
#include <cstring>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "pg_query.h"
#include "policies/json.h"

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

namespace {

std::string_view Std(absl::string_view s) { return std::string_view(s.data(), s.size()); }

// `needle` is lower case.
bool ContainsIgnoreCase(absl::string_view hay, absl::string_view needle) {
  if (needle.size() > hay.size()) return false;
  for (size_t i = 0; i + needle.size() <= hay.size(); ++i) {
    if (absl::EqualsIgnoreCase(hay.substr(i, needle.size()), needle)) return true;
  }
  return false;
}

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

// ---- statement effects (libpg_query) ----

enum class Kind {
  kSet,
  kReset,
  kResetAll,
  kDiscardAll,
  kSavepoint,
  kRollbackTo,
  kRelease,
  kListen,
  kBegin,
  kEnd,
};

struct Effect {
  Kind kind;
  std::string name;
  std::string value;
};

const char kPoolHint[] =
    "corral proxy uses transaction pooling: each transaction may run on a different server "
    "connection, so state kept in a server session cannot follow the client.";

Refusal Refuse(std::string message, absl::string_view hint) {
  return Refusal{"0A000", std::move(message), absl::StrCat(hint, " (", kPoolHint, ")")};
}

}  // namespace

bool StatementMayChangeSession(absl::string_view sql) {
  size_t i = 0;
  while (i < sql.size()) {
    const char ch = sql[i];
    if (absl::ascii_isspace(ch) || ch == '(') {
      ++i;
    } else if (ch == '-' && i + 1 < sql.size() && sql[i + 1] == '-') {
      while (i < sql.size() && sql[i] != '\n') ++i;
    } else if (ch == '/' && i + 1 < sql.size() && sql[i + 1] == '*') {
      size_t e = sql.find("*/", i + 2);
      i = e == absl::string_view::npos ? sql.size() : e + 2;
    } else {
      break;
    }
  }
  size_t j = i;
  while (j < sql.size() && absl::ascii_isalpha(sql[j])) ++j;
  const absl::string_view w = sql.substr(i, j - i);
  for (absl::string_view k : {"set", "reset", "discard", "savepoint", "rollback", "release", "listen",
                              "prepare", "declare"}) {
    if (absl::EqualsIgnoreCase(w, k)) return true;
  }
  if (absl::EqualsIgnoreCase(w, "create") && ContainsIgnoreCase(sql, "temp")) return true;
  if ((absl::EqualsIgnoreCase(w, "select") || absl::EqualsIgnoreCase(w, "with")) && ContainsIgnoreCase(sql, "temp") &&
      ContainsIgnoreCase(sql, "into")) {
    return true;
  }
  if (ContainsIgnoreCase(sql, "set_config") || ContainsIgnoreCase(sql, "advisory")) return true;
  // Several statements in one string: parse to see each.
  const size_t semi = sql.find(';');
  if (semi != absl::string_view::npos) {
    for (size_t k = semi + 1; k < sql.size(); ++k) {
      if (!absl::ascii_isspace(sql[k]) && sql[k] != ';') return true;
    }
  }
  return false;
}

namespace {

const std::string& Str(const Json* j, absl::string_view key) {
  static const std::string* const kEmpty = new std::string();
  const Json* v = j == nullptr ? nullptr : j->Get(key);
  return v != nullptr && (v->is_string() || v->is_number()) ? v->str() : *kEmpty;
}

// A numeric constant as written at `location` (libpg_query 15-4.0.0's JSON
// drops zero and negative ival values).
std::string NumberAt(absl::string_view sql, const Json* loc) {
  if (loc == nullptr) return "";
  const long at = std::strtol(loc->str().c_str(), nullptr, 10);
  if (at < 0 || static_cast<size_t>(at) >= sql.size()) return "";
  size_t i = at;
  size_t j = i;
  if (j < sql.size() && (sql[j] == '-' || sql[j] == '+')) ++j;
  if (j == sql.size() || !absl::ascii_isdigit(sql[j])) return "0";  // READ WRITE, NOT DEFERRABLE: 0
  while (j < sql.size() && (absl::ascii_isalnum(sql[j]) || sql[j] == '.' || sql[j] == '_')) ++j;
  return std::string(sql.substr(i, j - i));
}

// The text of an A_Const node; false for anything else (ParamRef, casts...).
bool ConstText(absl::string_view sql, const Json& node, std::string* out, bool* is_string) {
  if (node.NodeType() != "A_Const") return false;
  const Json* c = node.NodeBody();
  *is_string = false;
  if (const Json* s = c->Get("sval")) {
    *out = Str(s, "sval");
    *is_string = true;
    return true;
  }
  if (const Json* f = c->Get("fval")) {
    *out = Str(f, "fval");
    return true;
  }
  if (const Json* b = c->Get("boolval")) {
    const Json* v = b->Get("boolval");
    *out = v != nullptr && v->is_bool() && v->boolean() ? "on" : "off";
    return true;
  }
  if (c->Get("ival") != nullptr) {
    const Json* iv = c->Get("ival")->Get("ival");
    *out = iv != nullptr ? iv->str() : NumberAt(sql, c->Get("location"));
    if (iv == nullptr && out->empty()) *out = "0";
    return true;
  }
  return false;
}

// A SET's argument list flattened as PostgreSQL flattens it (SHOW's text).
bool FlattenArgs(absl::string_view sql, absl::string_view name, const Json* args, std::string* out) {
  out->clear();
  if (args == nullptr || !args->is_array() || args->items().empty()) return false;
  const bool list_quote = IsListQuote(name);
  for (const Json& a : args->items()) {
    std::string v;
    bool is_string = false;
    if (!ConstText(sql, a, &v, &is_string)) return false;
    if (!out->empty()) out->append(", ");
    out->append(list_quote && is_string ? QuoteIdent(v) : v);
  }
  return true;
}

std::string Lower(absl::string_view s) { return absl::AsciiStrToLower(std::string(s)); }

// Calls `f` on every node body of type `type` in the tree.
template <typename F>
void ForEachNode(const Json& j, absl::string_view type, F&& f) {
  if (j.is_object()) {
    if (j.NodeType() == type) f(*j.NodeBody());
    for (const Json& v : j.items()) ForEachNode(v, type, f);
  } else if (j.is_array()) {
    for (const Json& v : j.items()) ForEachNode(v, type, f);
  }
}

bool IsTemp(const Json* rel) { return Str(rel, "relpersistence") == "t"; }

// Effects of one parsed statement. Returns a refusal when it must not run.
absl::optional<Refusal> StatementEffects(absl::string_view sql, const Json& stmt, bool* block,
                                         std::vector<Effect>* out) {
  const absl::string_view type = stmt.NodeType();
  const Json* body = stmt.NodeBody();
  if (body == nullptr) return absl::nullopt;
  if (type == "VariableSetStmt") {
    const Json* local = body->Get("is_local");
    if (local != nullptr && local->is_bool() && local->boolean()) return absl::nullopt;  // SET LOCAL
    const std::string& kind = Str(body, "kind");
    const std::string name = Lower(Str(body, "name"));
    if (kind == "VAR_RESET_ALL") {
      out->push_back({Kind::kResetAll, "", ""});
      return absl::nullopt;
    }
    if (kind == "VAR_SET_MULTI") {
      if (name != "session characteristics") return absl::nullopt;  // SET TRANSACTION: local
      const Json* args = body->Get("args");
      if (args == nullptr) return absl::nullopt;
      for (const Json& d : args->items()) {
        const Json* de = d.NodeBody();
        const std::string& def = Str(de, "defname");
        std::string v;
        bool is_string = false;
        if (de == nullptr || de->Get("arg") == nullptr || !ConstText(sql, *de->Get("arg"), &v, &is_string)) {
          continue;
        }
        if (def == "transaction_isolation") {
          out->push_back({Kind::kSet, "default_transaction_isolation", Lower(v)});
        } else if (def == "transaction_read_only") {
          out->push_back({Kind::kSet, "default_transaction_read_only", v == "1" ? "on" : "off"});
        } else if (def == "transaction_deferrable") {
          out->push_back({Kind::kSet, "default_transaction_deferrable", v == "1" ? "on" : "off"});
        }
      }
      return absl::nullopt;
    }
    if (name == "role" || name == "session_authorization") {
      if (kind == "VAR_RESET" || kind == "VAR_SET_DEFAULT") return absl::nullopt;
      return Refuse(absl::StrCat("SET ", name == "role" ? "ROLE" : "SESSION AUTHORIZATION",
                                 " is not supported through corral proxy"),
                    "Use SET LOCAL ROLE inside a transaction, or log in as that role.");
    }
    if (absl::StartsWith(name, "transaction_")) return absl::nullopt;  // transaction-scoped
    if (kind == "VAR_RESET" || kind == "VAR_SET_DEFAULT") {
      out->push_back({Kind::kReset, name, ""});
      return absl::nullopt;
    }
    if (kind == "VAR_SET_VALUE") {
      std::string v;
      // Forms kept as the server reports them (SET TIME ZONE INTERVAL ...)
      // are left to ParameterStatus.
      if (FlattenArgs(sql, name, body->Get("args"), &v)) out->push_back({Kind::kSet, name, std::move(v)});
      return absl::nullopt;
    }
    if (kind == "VAR_SET_CURRENT") return absl::nullopt;  // SET x FROM CURRENT: value unknown here
    return absl::nullopt;
  }
  if (type == "DiscardStmt") {
    if (Str(body, "target") == "DISCARD_ALL") out->push_back({Kind::kDiscardAll, "", ""});
    return absl::nullopt;
  }
  if (type == "TransactionStmt") {
    const std::string& kind = Str(body, "kind");
    const std::string& sp = Str(body, "savepoint_name");
    if (kind == "TRANS_STMT_BEGIN" || kind == "TRANS_STMT_START") {
      *block = true;
      out->push_back({Kind::kBegin, "", ""});
    } else if (kind == "TRANS_STMT_COMMIT" || kind == "TRANS_STMT_ROLLBACK") {
      *block = false;
      out->push_back({Kind::kEnd, "", ""});
    } else if (kind == "TRANS_STMT_SAVEPOINT") {
      out->push_back({Kind::kSavepoint, sp, ""});
    } else if (kind == "TRANS_STMT_ROLLBACK_TO") {
      out->push_back({Kind::kRollbackTo, sp, ""});
    } else if (kind == "TRANS_STMT_RELEASE") {
      out->push_back({Kind::kRelease, sp, ""});
    }
    return absl::nullopt;
  }
  // A temporary table outlives its transaction unless ON COMMIT DROP.
  bool temp_table = false;
  if (type == "CreateStmt") {
    temp_table = IsTemp(body->Get("relation")) && Str(body, "oncommit") != "ONCOMMIT_DROP";
  } else if (type == "CreateTableAsStmt" || type == "SelectStmt") {
    const Json* into = body->Get(type == "SelectStmt" ? "intoClause" : "into");
    temp_table = into != nullptr && IsTemp(into->Get("rel")) && Str(into, "onCommit") != "ONCOMMIT_DROP";
  }
  if (temp_table) {
    return Refuse("temporary tables are not supported through corral proxy",
                  "Create it with ON COMMIT DROP inside an explicit transaction, or use a regular table.");
  }
  if ((type == "ViewStmt" && IsTemp(body->Get("view"))) ||
      (type == "CreateSeqStmt" && IsTemp(body->Get("sequence")))) {
    return Refuse("temporary views and sequences are not supported through corral proxy",
                  "Use a regular view or sequence.");
  }
  if (type == "DeclareCursorStmt") {
    const long options = std::strtol(Str(body, "options").c_str(), nullptr, 10);
    if (options & 0x0020) {  // CURSOR_OPT_HOLD
      return Refuse("DECLARE ... WITH HOLD is not supported through corral proxy",
                    "Use a cursor without WITH HOLD and fetch from it inside one transaction.");
    }
  }
  if (type == "PrepareStmt") {
    return Refuse("SQL-level PREPARE is not supported through corral proxy",
                  "Use the extended query protocol's prepared statements (Parse/Bind), which the "
                  "proxy prepares on each server connection.");
  }
  if (type == "ListenStmt") {
    if (*block) {
      return Refuse("LISTEN inside a transaction block is not supported through corral proxy",
                    "Run LISTEN outside a transaction block; notifications then reach the client "
                    "while it runs statements on the same server connection.");
    }
    out->push_back({Kind::kListen, "", ""});
  }
  // Function calls anywhere in the statement.
  absl::optional<Refusal> refusal;
  ForEachNode(stmt, "FuncCall", [&](const Json& fc) {
    if (refusal.has_value()) return;
    const Json* names = fc.Get("funcname");
    if (names == nullptr || !names->is_array() || names->items().empty()) return;
    const std::string fn = Lower(Str(names->items().back().NodeBody(), "sval"));
    if (fn == "pg_advisory_lock" || fn == "pg_advisory_lock_shared" || fn == "pg_try_advisory_lock" ||
        fn == "pg_try_advisory_lock_shared") {
      refusal = Refuse(absl::StrCat("session-level advisory locks (", fn,
                                    ") are not supported through corral proxy"),
                       "Use pg_advisory_xact_lock or pg_try_advisory_xact_lock, released at the end "
                       "of the transaction.");
      return;
    }
    if (fn != "set_config") return;
    const Json* args = fc.Get("args");
    if (args == nullptr || args->items().size() != 3) return;
    std::string name, value, local;
    bool s1 = false, s2 = false, s3 = false;
    if (!ConstText(sql, args->items()[0], &name, &s1) || !ConstText(sql, args->items()[1], &value, &s2) ||
        !ConstText(sql, args->items()[2], &local, &s3)) {
      refusal = Refuse("set_config with non-constant arguments is not supported through corral proxy",
                       "Use constant arguments, SET, or set_config(..., true) inside a transaction.");
      return;
    }
    if (ParseBool(local) != 0) return;  // is_local: transaction-scoped
    name = Lower(name);
    if (name == "role" || name == "session_authorization") {
      refusal = Refuse("set_config('role' / 'session_authorization', ..., false) is not supported "
                       "through corral proxy",
                       "Use SET LOCAL ROLE inside a transaction, or log in as that role.");
      return;
    }
    if (absl::StartsWith(name, "transaction_")) return;
    out->push_back({Kind::kSet, name, value});
  });
  return refusal;
}

}  // namespace

std::string Refusal::AsSql() const {
  const std::string body = absl::StrCat("BEGIN RAISE EXCEPTION USING ERRCODE = ", QuoteLiteral(sqlstate),
                                        ", MESSAGE = ", QuoteLiteral(message), ", HINT = ", QuoteLiteral(hint),
                                        "; END");
  return absl::StrCat("DO ", QuoteLiteral(body));
}

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

absl::optional<Refusal> ClientSession::OnStatement(absl::string_view sql) {
  if (!StatementMayChangeSession(sql)) return absl::nullopt;
  const std::string text(sql);
  PgQueryParseResult r = pg_query_parse(text.c_str());
  if (r.error != nullptr) {
    pg_query_free_parse_result(r);
    return absl::nullopt;  // the server rejects it; nothing changes
  }
  absl::StatusOr<Json> tree = ParseJson(r.parse_tree);
  pg_query_free_parse_result(r);
  if (!tree.ok()) return absl::nullopt;
  const Json* stmts = tree->Get("stmts");
  if (stmts == nullptr) return absl::nullopt;
  std::vector<Effect> effects;
  bool block = status_ != 'I';
  for (const Json& s : stmts->items()) {
    const Json* stmt = s.Get("stmt");
    if (stmt == nullptr) continue;
    if (absl::optional<Refusal> refusal = StatementEffects(text, *stmt, &block, &effects)) return refusal;
  }
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
