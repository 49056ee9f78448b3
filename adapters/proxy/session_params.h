// Per-client session parameters under transaction pooling (issue 26, items 0
// and 1): what each client has SET, what each backend currently has, the SQL
// that brings a backend to a client's state before the client's transaction
// runs there, and the statements whose effect cannot follow a client from
// one backend to the next.
//
// A client's parameters come from its startup packet, from the statements it
// sends (SET, SET SESSION CHARACTERISTICS AS TRANSACTION ..., SET TIME ZONE,
// SET NAMES, RESET, RESET ALL, DISCARD ALL, set_config(..., false); found
// with libpg_query after a cheap pre-filter, so ordinary DML is not parsed),
// and from the ParameterStatus messages of the backend it owns (the ground
// truth for GUC_REPORT parameters). Changes follow PostgreSQL's transaction
// rules: a SET inside a transaction takes effect at COMMIT, is undone by
// ROLLBACK, by a failed transaction and by ROLLBACK TO an earlier savepoint;
// SET LOCAL and SET TRANSACTION are transaction-local and not tracked. Any
// parameter name is tracked (work_mem, custom.names, ...); startup-packet
// parameters only from the known set (kKnownParams).
//
// How the proxy calls it (see the report of issue 26 for the full protocol):
//
//   ClientSession cs(client_id);
//   for (k, v : startup packet) cs.SetStartupParameter(k, v);   // user/database ignored
//   for (k, v : cs.LoginParameterStatus(server_params)) send ParameterStatus(k, v);
//   ...
//   if (auto refusal = cs.OnStatement(query_text)) { send refusal (or run refusal->AsSql()) }
//   BackendSession& bs = backend->session;        // made from its connect ParameterStatus
//   std::string sql = AttachSql(&cs, &bs);        // "" in the common case
//   if (!sql.empty()) send it first as an internal (swallowed) simple Query;
//   // every ParameterStatus from that backend while the client owns it:
//   bs.OnParameterStatus(k, v); if (cs.OnParameterStatus(k, v)) forward it;
//   // every CommandComplete / ErrorResponse / ReadyForQuery the client receives:
//   cs.OnCommandComplete(tag); cs.OnError(); cs.OnReadyForQuery(status);
//   DetachSession(&cs, &bs);                      // when the client leaves the backend
//
// Thread-safety: none. Both classes are used by the proxy's single event-loop
// thread that owns the client and the backend; no locking.
#ifndef CORRAL_ADAPTERS_PROXY_SESSION_PARAMS_H_
#define CORRAL_ADAPTERS_PROXY_SESSION_PARAMS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"

namespace corral {
namespace proxy {

// Parameter name (lower case) -> value as PostgreSQL's SHOW / set_config
// spell it (a list such as search_path flattened: `a, "b c"`). A name absent
// from the map is at the server's default.
using ParamMap = std::map<std::string, std::string, std::less<>>;
using ParamList = std::vector<std::pair<std::string, std::string>>;

// The parameters the proxy accepts in a startup packet (PgBouncer's tracked
// set plus track_extra_parameters-style extras), lower case.
extern const char* const kKnownParams[14];

// A statement that cannot run under transaction pooling, as an error for the
// client.
struct Refusal {
  std::string sqlstate;  // "0A000" (feature_not_supported)
  std::string message;
  std::string hint;
  // A DO block that raises this error on the server, for the proxy to run in
  // place of the refused statement: the client then gets exactly one error
  // and its transaction (if any) fails as PostgreSQL would fail it.
  std::string AsSql() const;
};

// PostgreSQL's quote_literal: 'it''s'; E'a\\b' when the value has a backslash
// (right whatever standard_conforming_strings is).
std::string QuoteLiteral(absl::string_view value);
// A GUC name the proxy will put in SQL unquoted: [a-z_][a-z0-9_$]* parts
// joined by single dots (custom "ext.name"), at most 63 bytes each. Input
// must already be lower case.
bool IsValidParamName(absl::string_view name);
// GUC_REPORT in PostgreSQL 15 (case-insensitive): client_encoding, DateStyle,
// TimeZone, ... (search_path is not reported before PostgreSQL 16).
bool IsReportedParam(absl::string_view name);
// PostgreSQL's spelling of a reported parameter's name ("DateStyle") for a
// ParameterStatus message; `lower` itself for others.
std::string ReportName(absl::string_view lower);
// Whether two values of `name` (lower case) mean the same setting, closely
// enough to skip a SET: booleans (on/true/1...), durations ("5s" == "5000"),
// encodings (utf-8 == UTF8), case and spaces in DateStyle and the like.
// search_path, application_name and unknown names compare exactly. Never
// allocates.
bool ParamValuesEqual(absl::string_view name, absl::string_view a, absl::string_view b);

// Whether a default_transaction_isolation value (any case, quoted or not:
// 'SERIALIZABLE', serializable) is SERIALIZABLE. Never allocates.
bool IsSerializableValue(absl::string_view value);
// Whether a boolean parameter's value is true (on, true, yes, 1; any case,
// quoted or not). Never allocates.
bool IsOnValue(absl::string_view value);

// The pre-filter OnStatement uses: false when `sql` can neither change
// session state nor need a refusal (ordinary DML), so the proxy can skip the
// call. Never allocates; may say true for statements that change nothing.
bool StatementMayChangeSession(absl::string_view sql);

// The letters at the start of `sql` (none skipped: the caller has skipped
// the whitespace and comments before a statement's first keyword).
absl::string_view LeadingWord(absl::string_view sql);

class ClientSession;

// What one backend connection has now: the values set on it since it
// connected, and the values it reported at connect (its defaults).
class BackendSession {
 public:
  // `connect_params`: the ParameterStatus messages the backend sent while
  // the proxy logged in (its defaults for the reported parameters).
  explicit BackendSession(const ParamList& connect_params = {});

  // A ParameterStatus from this backend (any time).
  void OnParameterStatus(absl::string_view name, absl::string_view value);

  // For tests and SHOW-style diagnostics.
  const ParamMap& values() const { return values_; }
  const std::set<std::string, std::less<>>& unknown() const { return unknown_; }
  uint64_t listen_owner() const { return listen_owner_; }

 private:
  friend std::string AttachSql(ClientSession* client, BackendSession* backend);
  friend void DetachSession(ClientSession* client, BackendSession* backend);
  friend std::string ResetSql(BackendSession* backend);
  ParamMap defaults_;  // reported at connect
  ParamMap values_;    // set since connect (absent = default)
  // Names whose value on the backend is not known (a RESET by a client whose
  // startup packet set them): re-SET or RESET at the next attach.
  std::set<std::string, std::less<>> unknown_;
  uint64_t listen_owner_ = 0;  // client id that LISTENed here, 0 = none
};

// One client's session parameters, committed and in its open transaction.
class ClientSession {
 public:
  // `id`: unique per client for the proxy's lifetime, not 0.
  explicit ClientSession(uint64_t id) : id_(id) {}

  uint64_t id() const { return id_; }

  // One startup-packet parameter. False (and ignored) for names outside
  // kKnownParams (user, database, options, replication, ...) or a value with
  // a NUL.
  bool SetStartupParameter(absl::string_view name, absl::string_view value);
  // The ParameterStatus messages for the client at login: `server_params`
  // (what the backend reported at its connect) with the client's startup
  // values in place of the server's. Remembers them (OnParameterStatus
  // forwards only changes) and the server's defaults.
  ParamList LoginParameterStatus(const ParamList& server_params);

  // A statement text the client sends: a simple Query's body (may hold
  // several statements) or the SQL of a prepared statement it executes.
  // Applies SET/RESET/... to the open transaction's state. Returns the
  // refusal when a statement's effect cannot follow the client across
  // transactions (nothing is applied then); the proxy must not send the
  // statement as it is. Unparsable SQL changes nothing (the server will
  // reject it).
  absl::optional<Refusal> OnStatement(absl::string_view sql);
  // The refusal OnStatement would return for `sql` now, changing nothing
  // (a Parse: the statement runs later, if at all). No pre-filter: for a
  // statement StatementMayChangeSession passed (PreparedDef::may_change_session).
  absl::optional<Refusal> RefusalFor(absl::string_view sql) const;
  // A ParameterStatus the backend this client owns sent. Returns whether the
  // proxy should forward it (the value differs from the last one the client
  // was told).
  bool OnParameterStatus(absl::string_view name, absl::string_view value);
  // The tag of each CommandComplete the client receives ("ROLLBACK" marks
  // the transaction rolled back, also a COMMIT of a failed one).
  void OnCommandComplete(absl::string_view tag);
  // Each ErrorResponse the client receives.
  void OnError();
  // Each ReadyForQuery status the client receives: 'I' ends the transaction
  // (committing the pending changes unless it rolled back or failed), 'T'
  // keeps it open, 'E' marks it failed.
  void OnReadyForQuery(char status);

  // The client's parameters as PostgreSQL would show them now.
  const ParamMap& committed() const { return committed_; }
  const ParamMap& current() const { return has_pending_ ? pending_ : committed_; }
  bool in_transaction() const { return status_ != 'I'; }

 private:
  friend std::string AttachSql(ClientSession* client, BackendSession* backend);
  friend void DetachSession(ClientSession* client, BackendSession* backend);
  ParamMap& Cur();
  void SetValue(const std::string& name, std::string value);
  void Reset(const std::string& name);
  void ResetAll();

  uint64_t id_;
  ParamMap startup_;
  ParamMap committed_;
  ParamMap pending_;
  bool has_pending_ = false;
  std::vector<std::pair<std::string, ParamMap>> savepoints_;
  char status_ = 'I';
  bool rolled_back_ = false;
  bool failed_ = false;
  bool listening_ = false;  // LISTENed on the backend it owns now
  ParamMap reported_;        // ParameterStatus values the client was told (lower-case keys)
  ParamMap server_defaults_;
  // Startup parameters RESET on the current backend (it went to its own
  // default, not the client's startup value).
  std::set<std::string, std::less<>> reset_here_;
};

// When the proxy gives `backend` to `client` (before the client's messages):
// the SQL (one simple-query string, "" when nothing differs, the common
// case, which allocates nothing) that brings the backend to the client's
// committed parameters: SET for values that differ, RESET for the ones the
// client has at the default, UNLISTEN * when another client LISTENed there.
// Updates `backend`'s model as if the SQL ran; the proxy runs it (results
// swallowed) before the client's first message and passes its
// ParameterStatus messages on as described above. If it fails (a startup
// value the server rejects), the proxy reports the error to the client.
std::string AttachSql(ClientSession* client, BackendSession* backend);
// When the client leaves `backend` (after ReadyForQuery 'I', or after the
// proxy's ROLLBACK for a client that went away): the backend now has the
// client's committed parameters.
void DetachSession(ClientSession* client, BackendSession* backend);

// The SQL that returns a backend to its defaults (RESET of everything set on
// it, UNLISTEN * if anyone listened), "" when it is there; updates the model.
// For a pool that wants idle backends clean, not needed for correctness.
std::string ResetSql(BackendSession* backend);

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_SESSION_PARAMS_H_
