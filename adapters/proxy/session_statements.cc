// Statement classification for session_params (see session_params.h): what
// one client statement does to session state (SET, RESET, DISCARD ALL,
// savepoints, LISTEN, ...), found with libpg_query after the cheap
// pre-filter StatementMayChangeSession, and the statements refused under
// transaction pooling (temp tables, WITH HOLD cursors, session advisory
// locks, SQL PREPARE, LISTEN inside a transaction, SET ROLE, ...).
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/session_detail.h"
#include "adapters/proxy/session_params.h"
#include "pg_query.h"
#include "policies/json.h"

namespace corral {
namespace proxy {
namespace session_detail {
namespace {

const char kPoolHint[] =
    "corral proxy uses transaction pooling: each transaction may run on a different server "
    "connection, so state kept in a server session cannot follow the client.";

Refusal Refuse(std::string message, absl::string_view hint) {
  return Refusal{"0A000", std::move(message), absl::StrCat(hint, " (", kPoolHint, ")")};
}


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

absl::optional<Refusal> StatementEffectsOf(absl::string_view sql, bool in_block, std::vector<Effect>* out) {
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
  bool block = in_block;
  for (const Json& s : stmts->items()) {
    const Json* stmt = s.Get("stmt");
    if (stmt == nullptr) continue;
    if (absl::optional<Refusal> refusal = StatementEffects(text, *stmt, &block, out)) return refusal;
  }
  return absl::nullopt;
}

}  // namespace session_detail

using namespace session_detail;  // NOLINT: the module's own helpers

absl::string_view LeadingWord(absl::string_view sql) {
  size_t j = 0;
  while (j < sql.size() && absl::ascii_isalpha(static_cast<unsigned char>(sql[j]))) ++j;
  return sql.substr(0, j);
}

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
  // The leading word, lowered into a small buffer (this runs on every statement).
  const absl::string_view lead = LeadingWord(sql.substr(i));
  char buf[10];
  absl::string_view w;
  if (lead.size() <= sizeof(buf)) {
    for (size_t k = 0; k < lead.size(); ++k) buf[k] = absl::ascii_tolower(static_cast<unsigned char>(lead[k]));
    w = absl::string_view(buf, lead.size());
  }
  for (absl::string_view k : {"set", "reset", "discard", "savepoint", "rollback", "release", "listen",
                              "prepare", "declare"}) {
    if (w == k) return true;
  }
  // The words looked for anywhere in the text, in one pass (compared only
  // where their first letter stands).
  bool temp = false, into = false;
  for (size_t k = 0; k + 1 < sql.size(); ++k) {
    // The second letter first, inline: most letters that start no word
    // looked for end here (e.g. the a's of "pgbench_accounts.abalance").
    const char second = absl::ascii_tolower(static_cast<unsigned char>(sql[k + 1]));
    if (second != 'e' && second != 'n' && second != 'd') continue;
    const absl::string_view rest = sql.substr(k);
    switch (absl::ascii_tolower(static_cast<unsigned char>(sql[k]))) {
      case 't':
        temp = temp || absl::StartsWithIgnoreCase(rest, "temp");
        break;
      case 'i':
        into = into || absl::StartsWithIgnoreCase(rest, "into");
        break;
      case 's':
        if (absl::StartsWithIgnoreCase(rest, "set_config")) return true;
        break;
      case 'a':
        if (absl::StartsWithIgnoreCase(rest, "advisory")) return true;
        break;
      default:
        break;
    }
  }
  if (w == "create" && temp) return true;
  if ((w == "select" || w == "with") && temp && into) return true;
  // Several statements in one string: parse to see each.
  const size_t semi = sql.find(';');
  if (semi != absl::string_view::npos) {
    for (size_t k = semi + 1; k < sql.size(); ++k) {
      if (!absl::ascii_isspace(sql[k]) && sql[k] != ';') return true;
    }
  }
  return false;
}

std::string Refusal::AsSql() const {
  const std::string body = absl::StrCat("BEGIN RAISE EXCEPTION USING ERRCODE = ", QuoteLiteral(sqlstate),
                                        ", MESSAGE = ", QuoteLiteral(message), ", HINT = ", QuoteLiteral(hint),
                                        "; END");
  return absl::StrCat("DO ", QuoteLiteral(body));
}

}  // namespace proxy
}  // namespace corral
