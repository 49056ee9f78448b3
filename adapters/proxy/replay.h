// Transparent replay (issue 24): what the proxy keeps of a client's running
// transaction so that, when the server fails it with 40001 / 40P01, the
// proxy can roll it back, run its statements again on a fresh snapshot and
// compare every result with what the client already received. All match:
// the transaction goes on as if nothing happened; any differs: the client
// gets the original error. The event loop's side (when to replay, the
// backend traffic) is in replay_loop.cc; this is the bookkeeping.
//
// Kept per transaction: the client's simple-protocol Query messages, the
// BEGIN the proxy held for it, and a 64-bit digest of every result message
// forwarded to the client (RowDescription, DataRow, CommandComplete,
// EmptyQueryResponse; ParameterStatus / Notice are not results). What the
// log cannot replay makes it unreplayable (the transaction then fails as
// it does without replay): extended-protocol messages, statements that
// change the session (SET, ...), savepoints (SAVEPOINT / RELEASE /
// ROLLBACK TO tags), COPY, an error the client saw, and a log past
// `max_bytes` (overflowed).
//
//   ReplayLog log;
//   log.Start(/*enabled=*/true, /*max_bytes=*/65536, "BEGIN ISOLATION LEVEL SERIALIZABLE");
//   log.OnClientMessage('Q', query_raw);      // forwarded to the server
//   log.OnForwarded('C', command_complete);   // forwarded to the client
//   ... 40001 ...  if (log.replayable()) { log.BeginCompare(); ...
//   for each replayed result: log.Compare(type, raw) == ReplayLog::kMatch ...
//
// Thread safety: none; one event loop owns it (through its Client).
#ifndef CORRAL_ADAPTERS_PROXY_REPLAY_H_
#define CORRAL_ADAPTERS_PROXY_REPLAY_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

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

  // A message of the client forwarded to the server in this transaction.
  // Only simple Query messages are kept (`may_change_session`: the Query's
  // text may change the session, which a rolled-back replay would undo).
  void OnClientMessage(char type, absl::string_view raw, bool may_change_session);
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

  // Comparing a replay: from the first digest.
  void BeginCompare() { pos_ = 0; }
  // A replayed result: kMatch / kMismatch against the digest at the cursor
  // (advancing it), kNew past the end of what the client received (recorded:
  // it is forwarded).
  Match Compare(char type, absl::string_view raw);
  // Every digest was matched.
  bool compared_all() const { return pos_ == digests_.size(); }

  const std::string& begin() const { return begin_; }
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
  bool last_sent = false;      // the failed Query was sent again
  bool conflict_again = false; // a replayed Query failed with 40001 / 40P01
  const void* wait_for = nullptr;  // kWaiting: the holder's backend
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
  std::vector<std::string> queries_;  // whole Query messages
  std::vector<uint64_t> digests_;
  size_t current_start_ = 0;  // digests_ index where the last Query's results start
  size_t pos_ = 0;            // compare cursor
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_REPLAY_H_
