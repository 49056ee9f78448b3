// Transparent replay (issue 24): what the proxy keeps of a client's running
// transaction so that, when the server fails it with 40001 / 40P01, the
// proxy can roll it back, run its statements again on a fresh snapshot and
// compare every result with what the client already received. All match:
// the transaction goes on as if nothing happened; any differs: the client
// gets the original error. The event loop's side (when to replay, the
// backend traffic) is in replay_loop.cc; this is the bookkeeping.
//
// Kept per transaction: the client's messages as it sent them (simple
// Query, and the extended protocol's Parse / Bind / Describe / Execute /
// Close-portal / Flush / Sync; with each Bind or Describe of the unnamed
// statement, the statement it meant then, since the proxy may have answered
// its Parse itself), the BEGIN the proxy held for it, and a 64-bit digest of
// every result message forwarded to the client (RowDescription, DataRow,
// CommandComplete, EmptyQueryResponse, ParseComplete, BindComplete,
// CloseComplete, NoData, ParameterDescription, PortalSuspended;
// ParameterStatus / Notice are not results). The loop re-sends the
// extended protocol's messages through its own forwarding, so statement
// names are mapped to the backend's corral_s<N> again, and statements are
// prepared again where the rollback lost them. What the log cannot replay
// makes it unreplayable (the transaction then fails as it does without
// replay): statements that change the session (SET, ...), savepoints
// (SAVEPOINT / RELEASE / ROLLBACK TO tags), COPY, a FunctionCall, a Close of
// a named statement or a Parse redefining a name, an error the client saw,
// and a log past `max_bytes` (overflowed).
//
// Extended protocol at the error (SplitFailedUnit): the failed unit is the
// client's messages after its previous Sync up to its last Sync; the client
// saw the results of the unit's first k Executes (k completions: C / I / s)
// and of the Parse / Bind / Describe messages after them; the (k+1)-th
// Execute failed, and the server skipped the rest up to the Sync. Replayed:
// everything before that Execute (with a Sync of the proxy's ending it, in
// an explicit transaction block only), compared; then, all matched, the
// failed Execute and the rest of the unit, whose results the client did not
// see, forwarded. Unreplayable shapes: rows of the failed Execute already
// sent, no (k+1)-th Execute (the error was not an Execute's). Units the
// client sent behind the failed one (libpq's pipeline mode: several Syncs
// in flight; SplitFailedUnit's `behind`), which the server answered in the
// failed transaction (kept from the client too), are re-sent after the
// failed unit's Sync (later_from()) and answered as the server answers
// them then: once the failed unit's ReadyForQuery went to the client, they
// are the client's ordinary traffic. Shapes not replayed: a simple Query
// among them (its message restarted the count of the current results),
// and, decided by the loop, a statement among them that may end the failed
// block (COMMIT, ROLLBACK, savepoints: what follows it would have run for
// real) or a failed unit that ended the transaction itself (its COMMIT
// failed: the units behind it ran after it, outside it).
//
// Implicit transactions (no block open at the error: autocommit; a unit
// of Parse / Bind / Execute ... / Sync, or one simple Query, which the
// server runs as one transaction, committed at its end) take
// SplitImplicitUnit instead: the failed unit is the log's last (the units
// before it, pipelined in the same proxy transaction, committed already
// and are never re-sent); its results the client received are the digests
// since the last ReadyForQuery (compare_from()). Replayed:
//  - nothing of the unit reached the client (a simple Query failing in its
//    first statement): the unit again, as it was, all its results new;
//  - otherwise (wrapped()): the proxy opens a block (plain BEGIN: the
//    session's default isolation, as the implicit transaction had), re-sends
//    the whole unit, compares from the unit's first result (matched: kept
//    from the client; past what it received: forwarded), and at the unit's
//    ReadyForQuery ('T') sends COMMIT, whose ReadyForQuery ('I') goes to
//    the client. Nothing commits before every result the client saw
//    matched, so a difference rolls the block back and the client gets the
//    original error, as atomic as the implicit transaction was. This covers
//    earlier statements of the unit (several Executes before one Sync,
//    "UPDATE ..; UPDATE .." in one Query), rows of the failed statement
//    already sent, and a 40001 at the implicit commit (every result
//    received, none new). A COMMIT failing again with 40001 after new
//    results went out gives the client the original error after them, as
//    the server does when an implicit transaction's commit fails.
// Statements that cannot run in a block (VACUUM, CREATE INDEX
// CONCURRENTLY, ...) would fail in a wrapped replay with their own error,
// forwarded: they are not expected to conflict.
//
//   ReplayLog log;
//   log.Start(/*enabled=*/true, /*max_bytes=*/65536, "BEGIN ISOLATION LEVEL SERIALIZABLE");
//   log.OnClientMessage('Q', query_raw, false);  // forwarded to the server
//   log.OnForwarded('C', command_complete);      // forwarded to the client
//   log.OnReady();                               // its ReadyForQuery
//   log.OnClientMessage('B', bind_raw, false, &unnamed_def);  // extended protocol
//   ... 40001 ...  if (log.replayable() && (!in_block ? log.SplitImplicitUnit()
//                                           : !log.extended() || log.SplitFailedUnit(in_block))) {
//     log.MarkError(); log.BeginCompare(); ...  // re-send queries()[0, split()), then the rest
//   for each replayed result: log.Compare(type, raw) == ReplayLog::kMatch ...
//
// Thread safety: none; one event loop owns it (through its Client).
#ifndef CORRAL_ADAPTERS_PROXY_REPLAY_H_
#define CORRAL_ADAPTERS_PROXY_REPLAY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/string_view.h"
#include "adapters/proxy/prepared.h"

namespace corral {
namespace proxy {

class ReplayLog {
 public:
  // Where a transaction's replay stands (the loop moves it).
  enum class Phase {
    kOff,        // not recording: replay off, or the transaction became unreplayable
    kRecording,  // the transaction runs; its messages and results are kept
    kAbsorbing,  // a 40001 / 40P01 was kept from the client; its ReadyForQuery ends the attempt
    kWaiting,    // rolled back; waiting for the holder of a conflicting reference to end
    kReplaying,  // the statements run again; results are compared
    kFailing,    // a replayed result differed: the rest is drained, then the original error
  };
  enum Match { kMatch, kMismatch, kNew };

  // A new transaction. `begin`: the BEGIN text the proxy sends for it ("" when
  // none: an implicit transaction, or the client's own BEGIN in its log).
  void Start(bool enabled, size_t max_bytes, absl::string_view begin);
  // The transaction ended: nothing kept.
  void Clear();

  // A message of the client forwarded to the server in this transaction
  // (`may_change_session`: running it may change the session, which a
  // rolled-back replay would undo, or it cannot be re-sent as it is: the
  // log becomes unreplayable). `unnamed`: for a Bind / Describe of the
  // unnamed statement, the statement the client meant (re-sent with it).
  void OnClientMessage(char type, absl::string_view raw, bool may_change_session,
                       const PreparedDef* unnamed = nullptr);
  // A ReadyForQuery of the client's own batch went to it: the next results
  // belong to its next batch.
  void OnReady();
  // A backend message forwarded to the client.
  void OnForwarded(char type, absl::string_view raw) {
    if (phase_ == Phase::kRecording) Record(type, raw);
  }
  // What the client received cannot be reproduced (an error it saw).
  void MarkUnreplayable() { unreplayable_ = true; }

  bool recording() const { return phase_ == Phase::kRecording; }
  // The log can be replayed: recording, nothing unreplayable, within bounds.
  bool replayable() const { return phase_ == Phase::kRecording && !unreplayable_ && !overflowed_; }
  bool overflowed() const { return overflowed_; }
  // Results of the last (current) Query forwarded so far: a Query whose
  // results the client has started to receive is not replayed (the replay
  // could not take back what a multi-statement Query commits after them).
  size_t results_in_current() const { return digests_.size() - current_start_; }
  // The log has extended-protocol messages (replayed through the loop's
  // forwarding, SplitFailedUnit).
  bool extended() const { return extended_; }
  // At the error of a client's unit, extended log: where its replay splits
  // (see the file comment): sets split(); false when the shape is not
  // replayable. `in_block`: the server had a transaction block open.
  // `behind`: the client's units (each up to its Sync or Query) sent after
  // the failed one, in flight (libpq's pipeline mode): the failed unit is
  // the one before them, and they are re-sent after it (later_from()).
  bool SplitFailedUnit(bool in_block, int behind = 0);
  // At the error of an implicit transaction (no block open): the log's last
  // unit is replayed, split() its first message (see the file comment);
  // false when the unit is not whole (its Sync not sent).
  bool SplitImplicitUnit();
  bool implicit() const { return implicit_; }
  // The implicit unit's replay runs in a block of the proxy's (some of its
  // results reached the client: compared before anything commits).
  bool wrapped() const { return wrapped_; }
  // Index of the first digest a replay compares (0; an implicit unit's first).
  size_t compare_from() const { return compare_from_; }
  // Index in queries() of the first message re-sent after everything before
  // it matched; whether a Sync of the proxy ends the part before it.
  size_t split() const { return split_; }
  // Index in queries() just past the failed unit: the units in flight
  // behind it start there (queries().size() when none); their number.
  size_t later_from() const { return later_from_; }
  int behind() const { return behind_; }
  bool sync_before_split() const { return sync_before_split_; }
  // The error was kept from the client: results forwarded from now on are
  // new (a second conflict after one went out cannot be replayed).
  void MarkError() { at_error_ = digests_.size(); }
  size_t new_results() const { return digests_.size() - at_error_; }
  // The unnamed statement meant by message i (a Bind / Describe of it), or null.
  const PreparedDef* unnamed_at(size_t i) const;
  // Comparing a replay: from the first digest (an implicit unit's first).
  void BeginCompare() { pos_ = compare_from_; }
  // A replayed result: kMatch / kMismatch against the digest at the cursor
  // (advancing it), kNew past the end of what the client received (recorded:
  // it is forwarded).
  Match Compare(char type, absl::string_view raw);
  // Every digest was matched.
  bool compared_all() const { return pos_ == digests_.size(); }

  const std::string& begin() const { return begin_; }
  // Every client message kept, whole (type byte first), in order.
  const std::vector<std::string>& queries() const { return queries_; }
  size_t digests() const { return digests_.size(); }
  size_t bytes() const { return bytes_; }

  // The loop's state for the replay in progress.
  Phase phase() const { return phase_; }
  void set_phase(Phase p) { phase_ = p; }
  std::string original_error;  // the ErrorResponse kept from the client, whole
  std::string original_state;  // its SQLSTATE
  char original_status = 'E';  // the ReadyForQuery status that came with it
  int attempts = 0;            // replays run for this error
  int outstanding = 0;         // replayed Queries not answered yet
  int absorbed = 0;            // ReadyForQuerys of the failed attempt kept (its unit's, then behind()'s)
  bool last_sent = false;      // the failed Query was sent again
  bool conflict_again = false; // a replayed Query failed with 40001 / 40P01
  bool commit_sent = false;    // wrapped implicit replay: the proxy's COMMIT is out
  const void* wait_for = nullptr;  // kWaiting: the holder's backend
  // Restart on a hot key (restart_loop.cc): the run is the proxy's own,
  // before a held statement: every logged Query is compared (none is
  // "last"), and a match lets the held statement go.
  bool restart = false;
  int holders_waited = 0;          // this round (bounded: a replay is not starved)

  // The digest of one message (type byte and body).
  static uint64_t Digest(char type, absl::string_view raw);

 private:
  void Add(size_t n);
  void Record(char type, absl::string_view raw);

  Phase phase_ = Phase::kOff;
  bool unreplayable_ = false;
  bool overflowed_ = false;
  size_t max_bytes_ = 0;
  size_t bytes_ = 0;
  std::string begin_;
  std::vector<std::string> queries_;  // whole client messages
  std::vector<std::pair<size_t, PreparedDef>> unnamed_;  // queries_ index -> unnamed statement meant
  std::vector<uint64_t> digests_;
  size_t current_start_ = 0;  // digests_ index where the last Query's / batch's results start
  bool extended_ = false;
  int completions_ = 0;       // C / I / s results since current_start_
  int trailing_rows_ = 0;     // DataRows since the last other result
  size_t split_ = 0;
  size_t later_from_ = 0;
  int behind_ = 0;
  bool sync_before_split_ = false;
  bool implicit_ = false;
  bool wrapped_ = false;
  size_t compare_from_ = 0;
  size_t at_error_ = 0;
  size_t pos_ = 0;            // compare cursor
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_REPLAY_H_
