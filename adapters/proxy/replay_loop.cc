// Proxy::Loop: transparent replay (replay.h; proxy_internal.h lists the
// loop's files). The hooks elsewhere are small: Forward notes the client's
// messages (NoteReplayMessage), OnBackendInput hands a 40001 / 40P01 of a
// client's own batch to ReplayOnConflict, the messages of a running replay
// to ReplayMessage and its ReadyForQuerys to ReplayOnReady; Detach tells
// waiting replays that a holder ended; the client's messages wait while a
// replay runs (ReplayHolds).
//
// One replay, on the client's own backend (it keeps it throughout):
//   1. the error and its ReadyForQuery are kept from the client;
//   2. ROLLBACK (unless the server ended the transaction itself, as after a
//      failed COMMIT); wait until the running transaction that touched one
//      of this transaction's references (the holder) ends or rolls back;
//   3. the BEGIN the proxy held for it, then every earlier Query pipelined,
//      their results swallowed and compared with the digests of what the
//      client received;
//   4. all matched: the failed Query again, its results (past what the
//      client got) forwarded, and the client's transaction goes on.
// Extended protocol (the log holds Parse / Bind / ... messages): 3. and 4.
// re-send the client's messages through Forward (ReplayForward), so
// statement names map to this backend's corral_s<N> and statements the
// rollback or the backend lacks are parsed again (injected answers are
// dropped by the usual bookkeeping, then ReplayVisible compares what the
// client would see). The failed unit splits before its failed Execute
// (ReplayLog::SplitFailedUnit): the part the client saw results of goes in
// 3., ended by a Sync of the proxy's; 4. is the failed Execute and the rest
// of the unit (what the server skipped after the error), up to the
// client's Sync, whose ReadyForQuery ends the replay.
// Another 40001 / 40P01 runs it again (replay_max_attempts in all, while no
// new result went out); a
// differing result, or the last attempt failing, gives the client the
// original error, with the server left in the state that error implies
// (a failed transaction block: ROLLBACK, BEGIN, an error).
// Not replayed (the error goes to the client as without replay):
// savepoints, SET and other session changes (also prepared), COPY, a
// FunctionCall, a Close of a named statement or a name parsed anew, a
// transaction past replay_buffer_bytes, a Query whose results the client
// had started to receive; shapes not replayed (replay_unreplayable_shape):
// more of the client's in flight behind an implicit transaction's unit or
// a simple Query, a next unit sent in part, and those SplitFailedUnit
// refuses (a unit without its Sync, rows of the failed Execute sent, an
// error not an Execute's, a simple Query among the units behind).
// Extended-protocol units in flight behind the failed one in a block
// (libpq's pipeline mode, several Syncs outstanding): their answers in the
// failed transaction are absorbed too (kAbsorbing ends at the last one's
// ReadyForQuery); step 4 re-sends them after the failed unit, in batches
// of replay kind 4, swallowed until the failed unit's ReadyForQuery ends
// the replay, after which they are the client's ordinary traffic; a replay
// given up before step 4 re-sends them behind the failed block it leaves,
// so the server answers them as it did the first time; units behind a
// failed COMMIT (it ended the transaction: they ran after it, for real),
// or among which one may end the failed block (MayControlTransaction),
// are not replayed. A COMMIT the server failed with 40001 is replayed; one
// whose outcome is unknown (the server connection lost) never is
// (FailBackend).
// Implicit transactions (no block open at the error; replays_implicit;
// ReplayLog::SplitImplicitUnit): steps 3 and 4 are one, the failed unit
// alone (simple Query or extended unit) in a batch of replay kind 2, its
// results compared from its first one the client received (matched: kept
// back; new: forwarded; an error or fewer results before all matched: a
// difference). When the client had received some (wrapped()), a BEGIN of
// the proxy's opens a block first, and at the unit's ReadyForQuery ('T')
// a COMMIT of the proxy's (replay kind 3: its error is the client's, a
// 40001 runs the replay again while nothing new went out) ends it, whose
// ReadyForQuery the client gets: nothing commits before every result it
// saw matched. The connection lost during that COMMIT: the client gets the
// lost-connection error (outcome unknown), as FailBackend answers any.
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/types/optional.h"
#include "adapters/proxy/proxy_internal.h"
#include "adapters/proxy/session_params.h"
#include "adapters/proxy/wire.h"
#include "policies/sql_lexer.h"

namespace corral {
namespace proxy {

using Phase = ReplayLog::Phase;

namespace {

// A simple Query's text may change the session (or cannot be re-sent in a
// block of the proxy's): StatementMayChangeSession of each statement
// (it refuses every string of several), and in a string of several,
// transaction control (a BEGIN there turns the rest into an explicit block,
// which a replay's COMMIT would end).
// A statement that may end (or, in a failed block, revive) the transaction
// block: transaction control, savepoints, PREPARE TRANSACTION. A leading
// comment or the like is not looked into (true).
bool MayControlTransaction(absl::string_view text) {
  const absl::string_view w = LeadingWord(absl::StripLeadingAsciiWhitespace(text));
  if (w.empty()) return true;
  for (absl::string_view k :
       {"begin", "start", "commit", "end", "rollback", "abort", "prepare", "savepoint", "release"}) {
    if (absl::EqualsIgnoreCase(w, k)) return true;
  }
  return false;
}

bool QueryMayChangeSession(absl::string_view sql) {
  // False says one statement that changes nothing (StatementMayChangeSession
  // is true for every string of several): no split needed, the usual case.
  if (!StatementMayChangeSession(sql)) return false;
  const std::vector<StatementSpan> spans = SplitStatements(sql);
  if (spans.size() <= 1) return true;
  for (const StatementSpan& s : spans) {
    if (StatementMayChangeSession(s.text) || MayControlTransaction(s.text)) return true;
  }
  return false;
}

// The units in flight behind the failed one, messages [from, end) of c's
// log: one may end the failed block (a COMMIT ends it, and what follows it
// then runs for real, its answers absorbed: it must not run again).
bool LaterUnitsMayEndTheBlock(const Client& c, size_t from) {
  const ReplayLog& r = c.replay;
  const auto& qs = r.queries();
  for (size_t i = from; i < qs.size(); ++i) {
    wire::Reader m(absl::string_view(qs[i]).substr(5));
    if (qs[i][0] == 'P') {
      m.CString();  // the name
      if (MayControlTransaction(m.CString())) return true;
    } else if (qs[i][0] == 'B') {
      m.CString();  // the portal
      const std::string stmt(m.CString());
      const PreparedDef* d = stmt.empty() ? r.unnamed_at(i) : nullptr;
      if (!stmt.empty()) {
        auto it = c.stmts.find(stmt);
        if (it != c.stmts.end()) d = &it->second;
      }
      if (d == nullptr || MayControlTransaction(d->query)) return true;
    }
  }
  return false;
}

}  // namespace

void Proxy::Loop::NoteReplayMessage(Client* c, char type, absl::string_view raw) {
  if (!c->replay.recording()) return;
  bool may_change_session = false;
  const PreparedDef* unnamed = nullptr;
  wire::Reader r(raw.substr(5));
  switch (type) {
    case 'Q':
      may_change_session = QueryMayChangeSession(r.CString());
      break;
    case 'P': {
      // A name the transaction redefines: an earlier Bind of it would be
      // re-sent with the later statement.
      const std::string name(r.CString());
      if (!name.empty()) {
        auto it = c->stmts.find(name);
        if (it != c->stmts.end()) {
          const absl::string_view query = r.CString();
          may_change_session = it->second.query != query;  // (the refused form differs too: kept off)
        }
      }
      break;
    }
    case 'B':
    case 'D': {
      std::string stmt;
      if (type == 'B') {
        r.CString();  // the portal
        stmt = std::string(r.CString());
      } else {
        if (r.Byte() != 'S') break;  // a portal's description
        stmt = std::string(r.CString());
      }
      auto it = c->stmts.find(stmt);
      if (it == c->stmts.end()) break;  // the server's error to give (the client sees it: unreplayable)
      if (type == 'B' && it->second.may_change_session) may_change_session = true;
      if (stmt.empty()) unnamed = &it->second;
      break;
    }
    case 'C':
      // Closing a named statement frees its name for another definition.
      may_change_session = r.Byte() == 'S' && !r.CString().empty();
      break;
    default:
      break;
  }
  c->replay.OnClientMessage(type, raw, may_change_session, unnamed);
}

bool Proxy::Loop::ReplayOnConflict(Client* c, Backend* b, absl::string_view raw, absl::string_view state) {
  ReplayLog& r = c->replay;
  // (The log may be kept for restart_on_hot_key alone.)
  if (!r.recording() || c->backend != b || !c->pool->db->replay) return false;
  // Replay on, nothing unreplayable, within bounds; no later message of
  // the client in flight behind the failed batch. Simple Queries: no result
  // of the failed Query went out. Extended protocol: the failed unit has a
  // shape SplitFailedUnit replays.
  bool ok = r.replayable();
  // The client's units in flight behind the failed one (libpq's pipeline
  // mode: several Syncs outstanding), which the server answers in the
  // failed transaction: kept from the client too, re-sent after the failed
  // unit (ReplayLog::SplitFailedUnit). Replayed in a transaction block of
  // extended-protocol units; a unit sent in part (no Sync yet), or units
  // behind an implicit transaction's (each its own transaction) or a simple
  // Query's, are shapes not replayed.
  int behind = 0;
  bool internal_behind = false;
  for (size_t i = 1; i + 1 < b->batches.size(); ++i) {
    ++behind;
    internal_behind = internal_behind || b->batches[i].swallow || b->batches[i].replay != 0;
  }
  if (ok && (b->batches.back().msgs != 0 || internal_behind ||
             (behind > 0 && (b->block == 'I' || !r.extended())))) {
    ok = false;
    stats_.replay_unreplayable_shape++;
  } else if (ok && b->block == 'I') {
    // No block open: an implicit transaction, its last unit replayed alone.
    ok = r.SplitImplicitUnit();
    if (!ok) stats_.replay_unreplayable_shape++;
  } else if (ok && r.extended()) {
    ok = r.SplitFailedUnit(/*in_block=*/true, behind) && (behind == 0 || !LaterUnitsMayEndTheBlock(*c, r.later_from()));
    if (!ok) stats_.replay_unreplayable_shape++;
  } else if (ok) {
    ok = r.results_in_current() == 0;
  }
  if (!ok) {
    stats_.replay_unreplayable++;
    if (r.overflowed()) stats_.replay_overflows++;
    r.set_phase(Phase::kOff);
    return false;
  }
  r.MarkError();
  r.original_error = std::string(raw);
  r.original_state = std::string(state);
  r.attempts = 0;
  r.absorbed = 0;
  r.set_phase(Phase::kAbsorbing);
  return true;
}

namespace {

// Results the loop may still drop after ReplayMessage (an injected
// Parse's ParseComplete, a Close's CloseComplete, the answer to a Describe
// of the proxy's): compared only once known to be the client's
// (ReplayVisible).
bool DecidedLater(char type) {
  return type == '1' || type == '3' || type == 't' || type == 'T' || type == 'n';
}

}  // namespace

// A result of a replayed batch the client would see: compared with what it
// received; true when it goes to the client (new, in the last part).
static bool CompareReplayed(ReplayLog& r, bool last, char type, absl::string_view raw) {
  const ReplayLog::Match m = r.Compare(type, raw);
  if (m == ReplayLog::kMatch) return false;
  if (m == ReplayLog::kNew && last) return true;
  // A different result, or one more than the client received.
  r.set_phase(Phase::kFailing);
  return false;
}

bool Proxy::Loop::ReplayMessage(Client* c, Backend* b, int batch_replay, char type, absl::string_view raw) {
  ReplayLog& r = c->replay;
  // The failed attempt's rest, proxy-internal statements, a replay being
  // drained after a difference or a new conflict, the units behind the
  // failed one before its replay succeeded: nothing goes out.
  if (r.phase() != Phase::kReplaying || batch_replay == 0 || batch_replay == 4 || r.conflict_again ||
      type == 'Z') {
    return false;
  }
  // The last part's results go out once past what the client received.
  const bool last = batch_replay >= 2 && r.compared_all();
  if (batch_replay == 3) {
    // The COMMIT of a wrapped implicit replay: its tag is the proxy's; an
    // error (not a conflict, which runs the replay again) is the client's,
    // as at the implicit transaction's commit.
    if (type == 'E') {
      const absl::string_view state = wire::ErrorSqlState(raw.substr(5));
      if (state == "40001" || state == "40P01") {
        r.conflict_again = true;
        return false;
      }
      r.MarkUnreplayable();
      return true;
    }
    return type == 'N' || type == 'A' || type == 'S';
  }
  if (DecidedLater(type)) return true;  // ReplayVisible, unless the loop drops it
  switch (type) {
    case 'D':
    case 'C':
    case 'I':
    case '2':
    case 's':
      return CompareReplayed(r, last, type, raw);
    case 'E': {
      const absl::string_view state = wire::ErrorSqlState(raw.substr(5));
      if (state == "40001" || state == "40P01") {
        r.conflict_again = true;
        return false;
      }
      if (last) {  // the failed statement's own result this time: the client's
        r.MarkUnreplayable();
        return true;
      }
      r.set_phase(Phase::kFailing);  // the client saw that statement succeed
      return false;
    }
    case 'N':
    case 'A':
    case 'S':
      return last;
    default:  // COPY and the like never reach a replayable log
      r.set_phase(Phase::kFailing);
      return false;
  }
}

bool Proxy::Loop::ReplayVisible(Client* c, int batch_replay, char type, absl::string_view raw) {
  if (!DecidedLater(type) || batch_replay == 3) return true;
  return CompareReplayed(c->replay, batch_replay == 2, type, raw);
}

bool Proxy::Loop::ReplayOnReady(Client* c, Backend* b, int batch_replay) {
  ReplayLog& r = c->replay;
  switch (r.phase()) {
    case Phase::kOff:
      return false;
    case Phase::kRecording:
      r.OnReady();  // the next results are the client's next batch's
      return false;
    case Phase::kAbsorbing:
      // The failed unit's ReadyForQuery, then those of the units behind it:
      // the failed attempt is over at the last.
      if (r.absorbed++ == 0) {
        r.original_status = b->status;
        if (b->status == 'I' && r.behind() > 0) {
          // The failed unit ended the transaction (its COMMIT failed): the
          // units behind it run after it, outside it, for real; they must
          // not run again. Not replayed: the client gets the error, then
          // their answers as the server gives them.
          stats_.replay_unreplayable++;
          stats_.replay_unreplayable_shape++;
          ReplayGiveUp(c, b);
          return true;
        }
      }
      if (r.absorbed > r.behind()) ReplayRound(c, b);
      return true;
    case Phase::kWaiting:
      return true;
    case Phase::kReplaying:
    case Phase::kFailing:
      break;
  }
  if (batch_replay == 0 || batch_replay == 4 || --r.outstanding > 0) return true;
  // Every replayed Query sent so far has answered.
  if (r.conflict_again) {
    r.conflict_again = false;
    if (++r.attempts >= opt_.replay_max_attempts || r.new_results() > 0) {
      (r.restart ? stats_.restart_mismatches : stats_.replay_exhausted)++;
      ReplayGiveUp(c, b);
    } else {
      ReplayRound(c, b);
    }
    return true;
  }
  // (The last part of an implicit unit compares too: fewer results than
  // the client received is a difference.)
  if (r.phase() == Phase::kFailing || !r.compared_all()) {
    (r.restart ? stats_.restart_mismatches : stats_.replay_mismatches)++;
    ReplayGiveUp(c, b);
    return true;
  }
  if (r.restart) {
    RestartDone(c, b);  // every logged Query matched: the held one goes on
    return true;
  }
  if (!r.last_sent) {
    // Everything before the failed Query matched: it runs again, its
    // results go to the client.
    SendReplayLast(c, b);
    return true;
  }
  char status = b->status;
  if (r.wrapped() && !r.commit_sent) {
    // The implicit unit matched in the proxy's block: commit it, the
    // client's ReadyForQuery comes with the COMMIT's. An error of the
    // unit's own (forwarded) failed the block: rolled back, as the server
    // ends a failed implicit transaction.
    if (b->status == 'T') {
      SendReplayQuery(b, "COMMIT", 3);
      r.commit_sent = true;
      r.outstanding = 1;
      return true;
    }
    if (b->status != 'I') SendInternal(b, "ROLLBACK");
    status = 'I';
  }
  // The failed Query answered on the replay: the client goes on. The
  // conflict taught the History as the client's own abort would have.
  stats_.replay_matches++;
  RouterOf(c).Finish(&c->route, scheduler::Outcome::kConflictAbort);
  r.set_phase(Phase::kRecording);
  r.OnReady();  // the replayed unit ended: the client's next results are its next unit's
  r.attempts = 0;
  r.last_sent = false;
  r.commit_sent = false;
  ClientReady(c, status);
  MarkDirty(c);
  if (b->Idle() && b->status == 'I') {
    EndTxn(c, b);
  } else {
    Pump(c);
  }
  return true;
}

void Proxy::Loop::ReplayRound(Client* c, Backend* b) {
  NoteAttempt(c, b, scheduler::Outcome::kConflictAbort);  // the attempt that failed
  c->replay.set_phase(Phase::kWaiting);
  if (b->status != 'I') SendInternal(b, "ROLLBACK");
  // This transaction no longer holds anything: replays waiting for it go on.
  ReplayHolderEnded(b);
  ReplayWhenFree(c, b);
}

void Proxy::Loop::ReplayWhenFree(Client* c, Backend* b) {
  // The running transaction (not one waiting to replay, which holds
  // nothing) that touched one of c's references, as retry routing picks it
  // (RetryHolder); when it ends, the next one, until none is left (at most
  // as many as the pool has backends).
  Pool& pool = *c->pool;
  if (c->replay.holders_waited >= static_cast<int>(pool.backends.size())) {
    SendReplay(c, b);
    return;
  }
  const int holder = RetryHolder(pool, c, c->route.txn.refs);
  // A holder whose backend still waits for its cluster locks has not
  // started on the server (nothing of it ran to conflict with), and it may
  // wait for a key this transaction's backend holds through its replay:
  // waiting for it would close a cycle that nothing breaks.
  if (holder >= 0 && !AwaitsClusterLocks(*pool.backends[holder])) {
    if (c->replay.holders_waited++ == 0) stats_.replay_waits++;
    c->replay.wait_for = pool.backends[holder].get();
    return;
  }
  SendReplay(c, b);
}

void Proxy::Loop::SendReplay(Client* c, Backend* b) {
  ReplayLog& r = c->replay;
  r.set_phase(Phase::kReplaying);
  r.wait_for = nullptr;
  r.holders_waited = 0;
  r.BeginCompare();
  r.outstanding = 0;
  r.last_sent = false;
  r.conflict_again = false;
  r.commit_sent = false;
  if (c->pool->db->restart) c->key_snap = locks()->Epoch();  // before the new snapshot
  if (!r.restart) {
    stats_.replays++;
    if (r.extended()) stats_.replays_extended++;
  }
  // Table locks (cluster.h): the ROLLBACK released its stripes; they come
  // back right after its BEGIN, before its first statement's snapshot.
  const bool lock = PrepareTableLock(c, b);
  if (r.implicit()) {
    // The failed unit alone (the units before it committed), in a block of
    // the proxy's when some of its results reached the client (replay.h).
    stats_.replays_implicit++;
    if (r.wrapped()) SendHeldBegin(b, "BEGIN");
    b->table_lock_sql.clear();  // (not wrapped: no block to lock in)
    SendReplayLast(c, b);
    return;
  }
  if (!r.begin().empty()) {
    SendHeldBegin(b, r.begin());
  } else if (lock) {
    // The log's first unit opens the block itself (its BEGIN warns).
    SendHeldBegin(b, "BEGIN");
    b->drop_begin_warning = true;
  }
  const auto& qs = r.queries();
  if (r.extended() && r.restart) {
    // A restart: every unit, whole, compared (its held unit never went).
    b->unnamed_key.clear();
    ReplayForward(c, b, 0, qs.size(), 1);
  } else if (r.extended()) {
    b->unnamed_key.clear();  // (a Parse the server skipped after the error set it)
    // Everything before the failed Execute (SplitFailedUnit), through the
    // loop's forwarding; a Sync of the proxy's ends its last part.
    ReplayForward(c, b, 0, r.split(), 1);
    if (r.sync_before_split()) {
      std::string sync;
      wire::AppendEmpty(&sync, 'S');
      Send(b, sync);
      Batch& open = b->batches.back();
      open.msgs++;
      open.replay = 1;
      open.swallow = true;
      EndBatch(b);
      r.outstanding++;
    }
  } else {
    // The earlier Queries pipelined; the failed one only once they matched
    // (it may be a COMMIT). A restart compares them all: its held
    // statement was never sent.
    const size_t compared = r.restart ? qs.size() : (qs.empty() ? 0 : qs.size() - 1);
    for (size_t i = 0; i < compared; ++i) {
      SendReplayRaw(b, qs[i], 1);
      b->batches[b->batches.size() - 2].swallow = true;  // answered by the last one, should the server fail
      r.outstanding++;
    }
  }
  if (r.outstanding == 0) {
    if (r.restart) {
      RestartDone(c, b);
    } else {
      SendReplayLast(c, b);
    }
  }
}

void Proxy::Loop::SendReplayLast(Client* c, Backend* b) {
  ReplayLog& r = c->replay;
  if (r.extended()) {
    ReplayForward(c, b, r.split(), r.later_from(), 2);
    // The units behind it: answered as the server answers them, once the
    // failed unit's replay succeeded (ReplayOnReady; swallowed otherwise).
    if (r.behind() > 0) ReplayForward(c, b, r.later_from(), r.queries().size(), 4);
  } else {
    SendReplayRaw(b, r.queries().back(), 2);
  }
  r.outstanding = 1;  // the unit's Sync (or Query)
  r.last_sent = true;
}

void Proxy::Loop::SendReplayRaw(Backend* b, absl::string_view query_msg, int kind) {
  Send(b, query_msg);
  Batch& open = b->batches.back();
  open.msgs++;
  open.replay = kind;
  EndBatch(b);
  b->unnamed_key.clear();  // a simple Query drops the unnamed statement
}

void Proxy::Loop::SendReplayQuery(Backend* b, absl::string_view sql, int kind) {
  std::string q;
  wire::AppendQuery(&q, sql);
  SendReplayRaw(b, q, kind);
}

void Proxy::Loop::ReplayForward(Client* c, Backend* b, size_t from, size_t to, int kind) {
  ReplayLog& r = c->replay;
  const auto& qs = r.queries();
  // The client's unnamed statement now, given back after: each Bind /
  // Describe of it is re-sent with the statement it meant then.
  auto now = c->stmts.find("");
  absl::optional<PreparedDef> unnamed_now;
  if (now != c->stmts.end()) unnamed_now = now->second;
  // Its references are the transaction's already.
  const size_t routed_ahead = c->routed_ahead;
  for (size_t i = from; i < to; ++i) {
    const char type = qs[i][0];
    if (const PreparedDef* d = r.unnamed_at(i); d != nullptr) c->stmts[""] = *d;
    b->batches.back().replay = kind;
    if (kind == 1) b->batches.back().swallow = true;  // answered by the last part, should the server fail
    c->routed_ahead = 1;
    Forward(c, b, type, qs[i]);
    if (type == 'S' || type == 'Q') r.outstanding++;
  }
  c->routed_ahead = routed_ahead;
  if (unnamed_now) {
    c->stmts[""] = std::move(*unnamed_now);
  } else {
    c->stmts.erase("");
  }
}

void Proxy::Loop::ReplayGiveUp(Client* c, Backend* b) {
  ReplayLog& r = c->replay;
  r.set_phase(Phase::kOff);  // the rest of the transaction runs as without replay
  // A restart's error answers the statement it held (restart_loop.cc).
  const bool restart = r.restart;
  r.restart = false;
  c->out.append(r.original_error);
  c->sess.OnError();
  c->route.conflict_state = r.original_state;
  if (b->status != 'I') SendInternal(b, "ROLLBACK");
  if (r.original_status != 'I') {
    // The client believes its transaction block failed: so does the server.
    SendInternal(b, r.begin().empty() ? "BEGIN" : r.begin());
    SendInternal(b, "DO $$BEGIN RAISE EXCEPTION 'corral: the replayed transaction differed'; END$$");
    ClientReady(c, 'E');
    // Units behind the failed one not re-sent this round: the server
    // answers them in the failed block, as it did the first time.
    if (!r.last_sent && r.behind() > 0) ReplayForward(c, b, r.later_from(), r.queries().size(), 0);
    if (restart) DropHeld(c);
    MarkDirty(c);
    Pump(c);
    return;
  }
  ClientReady(c, 'I');
  MarkDirty(c);
  if (b->Idle()) EndTxn(c, b);  // else at the ROLLBACK's ReadyForQuery
}

void Proxy::Loop::ReplayHolderEnded(Backend* b) {
  if (b->pool == nullptr) return;
  for (auto& other : b->pool->backends) {
    Client* w = other->client;
    if (w != nullptr && w->replay.phase() == Phase::kWaiting && w->replay.wait_for == b) {
      ReplayWhenFree(w, other.get());
    }
  }
}

bool Proxy::Loop::ReplayBackendLost(Client* c, Backend* b, char* status) {
  ReplayLog& r = c->replay;
  const Phase p = r.phase();
  // The failed unit's answer was kept (and those of the units behind it
  // absorbed so far, all of them past kAbsorbing), nothing of it re-sent:
  // answered here; the batches still outstanding by FailBackend.
  const bool answer = (p == Phase::kWaiting || p == Phase::kReplaying || p == Phase::kFailing ||
                       (p == Phase::kAbsorbing && r.absorbed > 0)) &&
                      !r.last_sent;
  r.set_phase(Phase::kOff);
  if (!answer) return false;  // the request's own batch is answered by FailBackend
  if (r.restart) DropHeld(c);  // the held statement: answered here
  r.restart = false;
  *status = r.original_status == 'I' ? 'I' : 'E';
  c->out.append(r.original_error);
  c->sess.OnError();
  ClientReady(c, *status);
  const int later = (p == Phase::kAbsorbing ? r.absorbed : r.behind() + 1) - 1;
  for (int i = 0; i < later; ++i) {
    ClientError(c, "08006", "server connection lost: the transaction was rolled back");
    ClientReady(c, 'I');
    *status = 'I';
  }
  MarkDirty(c);
  (void)b;
  return true;
}

}  // namespace proxy
}  // namespace corral
