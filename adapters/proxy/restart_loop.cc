// Proxy::Loop: restart on a hot key (restart_on_hot_key; proxy_internal.h
// lists the loop's files; issue 24). Under SERIALIZABLE / REPEATABLE READ
// the server takes a transaction's snapshot at its first statement, so a
// later statement on a row another transaction is changing fails with
// 40001 however long the proxy holds it. What the proxy can do instead is
// start the transaction again, later, before the client sees anything of
// that statement:
//   - the hot references (History aborts >= worker_lock_threshold) of the
//     first unit, and those a reliable template predicts, take keys in the
//     key table before BEGIN goes to the server (KeysAdmit, also with one
//     loop), and the keys' release epoch is read then (Client::key_snap);
//   - a later simple Query of an open SERIALIZABLE / REPEATABLE READ block
//     that names a hot reference whose key the transaction lacks: taken
//     when free and not released since that epoch (KeyLocks::TakeIfFree),
//     and the Query goes on; otherwise it is held (RestartBeforeStatement),
//     the transaction is rolled back, it waits for the new keys keeping the
//     ones it holds (KeyLocks::AcquireMore: a wait that would close a cycle
//     requeues it for the union, all or nothing, so no deadlock), its log
//     runs again on a fresh snapshot through the replay machinery
//     (replay_loop.cc, every Query compared with what the client received,
//     none forwarded: ReplayLog::restart), and only then does the held
//     Query go to the server. A difference (or a conflict again,
//     replay_max_attempts times): the client gets 40001 for the held Query,
//     the server a failed block (ReplayGiveUp), nothing committed.
// Multi-proxy mode (cluster.h): a later statement's reference hot in the
// cluster whose advisory key the backend lacks restarts the transaction
// too (a key taken after the snapshot protects nothing). Rolled back, it
// takes the keys it lacks on the same backend before its log runs again:
// waiting for them when they sort after every key it holds, trying them
// otherwise (pg_try_advisory_lock, cluster_relock_tries times a
// millisecond apart: a bounded wait; RestartTried); a key another session
// still holds then sends it elsewhere (RestartElsewhere): every key
// unlocked, and the next Attach takes them all in order. Each session so
// waits only for keys above those it holds: no cycle between proxies.
// A restart granted its keys at once stays on its backend. One that must
// wait gives the backend back first (it holds no snapshot and no row: the
// transaction was rolled back) and waits with no backend, like a first
// unit waiting for its keys: a key holder may itself be waiting for a
// backend, and backends held by key waiters could otherwise all wait on it.
// Granted (KeysGranted -> ApplyInbox -> RestartResume), it goes back to its
// run queue; Attach re-runs the log instead of sending a BEGIN. In
// multi-proxy mode a restart whose backend holds advisory keys first waits
// keeping both, up to cluster_restart_hold_ms (RestartHold): given back, a
// row it read could change through another proxy and its re-run differ.
// Granted in time, it goes on on that backend (RestartWithKeys); past the
// bound (RestartHoldTimers: a holder that needs a backend, or waits on the
// server for one of its keys) it leaves as above.
// Covered: transactions whose BEGIN the proxy held (a simple Query, as
// pgbench, psql, asyncpg and pgjdbc send it), with later statements as
// simple Queries or extended-protocol units (Parse / Bind / Describe /
// Execute up to a Sync, arrived whole; libpq's PQexecParams, asyncpg,
// pgjdbc); the log is re-sent through the replay's forwarding
// (ReplayForward), every result compared. Not restarted (they run as
// without the feature): a log replay cannot re-run (session changes,
// savepoints, past replay_buffer_bytes, an error the client saw), a
// statement sent while an earlier one is outstanding (pipelined), a unit
// still arriving (no Sync yet) or ended by a Flush, READ COMMITTED blocks.
#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "adapters/proxy/proxy_internal.h"
#include "adapters/proxy/wire.h"
#include "common/clock.h"

namespace corral {
namespace proxy {
namespace {

// The block's snapshot is its first statement's: SERIALIZABLE or
// REPEATABLE READ, from the BEGIN's own words or else the session default.
bool SnapshotIsolation(absl::string_view begin, const ClientSession& sess) {
  auto snapshot = [](absl::string_view text) {
    const std::string t = absl::AsciiStrToLower(text);
    return absl::StrContains(t, "serializable") || absl::StrContains(t, "repeatable");
  };
  if (absl::StrContains(absl::AsciiStrToLower(begin), "isolation")) return snapshot(begin);
  const ParamMap& p = sess.current();
  auto it = p.find("default_transaction_isolation");
  return it != p.end() && snapshot(it->second);
}

// The later statements (units up to a Sync, or Queries) its log holds:
// the ordinal of the statement about to run (1: the first after the unit
// that routed the transaction).
int LoggedUnits(const ReplayLog& r) {
  int n = 0;
  for (const std::string& m : r.queries()) n += (m[0] == 'S' || m[0] == 'Q') ? 1 : 0;
  return n;
}

constexpr absl::string_view kRestartError =
    "could not serialize access: corral proxy restarted the transaction before a statement on a contended row, "
    "and a result the client had already received changed (or the re-run conflicted again)";

}  // namespace

bool Proxy::Loop::RestartBeforeStatement(Client* c, Backend* b) {
  if (!c->pool->db->restart) return false;
  const ReplayLog& r = c->replay;
  // A block the proxy began (its BEGIN held, sent, logged), replayable,
  // its log whole units (each up to its Sync or Query), nothing of the
  // client's outstanding.
  if (!r.replayable() || r.begin().empty() || !c->held_begin.empty()) return false;
  if (!r.queries().empty() && r.queries().back()[0] != 'S' && r.queries().back()[0] != 'Q') return false;
  // (routed_ahead: a held statement going on after its restart.)
  if (!b->Idle() || b->status != 'T' || c->routed_ahead != 0) return false;
  // Its references join the transaction's now (Forward does not extract
  // them again: routed_ahead); those new to it are looked at.
  const size_t from = c->route.txn.refs.size();
  const Msg& m = c->pending.front();
  if (m.type == 'Q') {
    wire::Reader rd(m.body());
    const absl::string_view sql = rd.CString();
    if (ClassifyTxnControl(sql) != TxnControl::kOther) return false;
    RouterOf(c).AddQuery(sql, &c->route);
    c->routed_ahead = 1;
  } else {
    // An extended-protocol unit, whole (up to its Sync) and with a Bind.
    if (m.type != 'P' && m.type != 'B') return false;
    const size_t end = WholeUnitEnd(c->pending);
    if (end == std::string::npos ||
        std::none_of(c->pending.begin(), c->pending.begin() + static_cast<std::ptrdiff_t>(end),
                     [](const Msg& x) { return x.type == 'B'; })) {
      return false;
    }
    RouterOf(c).AddUnit(c->pending, end, c->stmts, &c->route);
    c->routed_ahead = end + 1;
  }
  const RefVec refs(c->route.txn.refs.begin() + static_cast<std::ptrdiff_t>(from), c->route.txn.refs.end());
  std::vector<uint64_t> hot;
  HotKeys(c, refs, &hot);
  const uint64_t ticket = KeyTicket(c);
  // Its template's gate (cycle_gates.h) goes back at the first later
  // statement that names no hot key the transaction lacks: its key set is
  // complete, another may grow.
  if (c->gate_key != 0 &&
      std::all_of(hot.begin(), hot.end(), [&](uint64_t k) { return locks()->Has(ticket, k); })) {
    GiveGateBack(c);
  }
  // Multi-proxy mode: references hot in the cluster whose advisory keys
  // the backend lacks. Taken now, they would come after the snapshot (a
  // row another proxy's transaction changed under such a key fails this
  // one with 40001 all the same): the transaction restarts and takes them
  // before its log runs again (RestartTxn).
  std::vector<int64_t> relock;
  if (const ClusterSync* cl = c->pool->db->cluster.get(); cl != nullptr && !refs.empty()) {
    ClusterKeysFor(*cl, c, refs, &relock);
    relock.erase(std::remove_if(relock.begin(), relock.end(), [&](int64_t k) { return HoldsClusterKey(b, k); }),
                 relock.end());
  }
  if ((hot.empty() && relock.empty()) || !SnapshotIsolation(r.begin(), c->sess)) return false;
  std::vector<uint64_t> need;
  bool grew = false;
  for (uint64_t k : hot) {
    if (locks()->Has(ticket, k)) continue;
    grew = true;
    // restart_after_release off: any release counts as before the snapshot.
    const uint64_t since = opt_.restart_after_release ? c->key_snap : UINT64_MAX;
    if (locks()->TakeIfFree(worker_, ticket, k, since) == KeyLocks::Take::kTaken) {
      stats_.restart_keys_taken++;
      c->keys = Client::Keys::kHeld;
    } else {
      need.push_back(k);
    }
  }
  // A gated transaction reports where its template grows, and gives the
  // gate back once its keys of the template's last growing statement are
  // taken (cycle_gates.h; restarted for them: RestartDone).
  if (grew && c->gate_key != 0) {
    const int ordinal = LoggedUnits(r);
    if (CycleGates* gates = c->pool->db->gates.get(); gates != nullptr && !c->route.trace.empty()) {
      gates->Grew(c->route.trace[0].shape, ordinal);
    }
    if (need.empty() && relock.empty()) GiveGateBackIfGrown(c, ordinal);
  }
  if (need.empty() && relock.empty()) return false;
  RestartTxn(c, b, std::move(need), std::move(relock));
  return true;
}

void Proxy::Loop::GiveGateBack(Client* c) {
  locks()->ReleaseKey(KeyTicket(c), c->gate_key);
  c->gate_key = 0;
  stats_.restart_gate_early++;
}

void Proxy::Loop::GiveGateBackIfGrown(Client* c, int ordinal) {
  // (gate_growth: its template's last growth as known when it took the
  // gate, 0 when unknown: then the first statement without a new key.)
  if (c->gate_key != 0 && c->gate_growth != 0 && ordinal >= c->gate_growth) GiveGateBack(c);
}

void Proxy::Loop::DropHeld(Client* c) {
  c->routed_ahead = 0;
  if (c->pending.empty()) return;
  if (c->pending.front().type == 'Q') {
    c->pending.pop_front();
    return;
  }
  while (!c->pending.empty()) {  // the unit, through its Sync
    const char t = c->pending.front().type;
    c->pending.pop_front();
    if (t == 'S') return;
  }
}

void Proxy::Loop::RestartTxn(Client* c, Backend* b, std::vector<uint64_t> need, std::vector<int64_t> relock) {
  ReplayLog& r = c->replay;
  stats_.restarts++;
  if (!relock.empty()) {
    stats_.restart_cluster_relocks++;
    const ClusterSync* cl = c->pool->db->cluster.get();
    if (cl != nullptr && cl->options().table_locks && !c->route.trace.empty()) {
      auto& growing = c->pool->db->cluster_growing;
      if (growing.size() >= 4096) growing.clear();  // (bounded; relearned)
      growing.insert(c->route.trace[0].shape);
    }
  }
  r.restart = true;
  r.MarkError();  // nothing after this is the client's yet
  r.original_error.clear();
  wire::AppendError(&r.original_error, "ERROR", "40001", kRestartError);
  r.original_state = "40001";
  r.original_status = 'T';
  r.attempts = 0;
  r.absorbed = 0;
  r.last_sent = false;
  r.conflict_again = false;
  r.set_phase(ReplayLog::Phase::kWaiting);
  // The conflict avoided keeps its references hot.
  RouterOf(c).RecordConflict(c->route);
  NoteAttempt(c, b, scheduler::Outcome::kConflictAbort);
  SendInternal(b, "ROLLBACK");
  b->table_keys.clear();  // (table locks: the ROLLBACK released them; the re-run takes them all after its BEGIN)
  ReplayHolderEnded(b);  // it holds nothing on the server now
  Loop* self = this;
  const uint64_t id = c->id;
  c->keys = Client::Keys::kHeld;
  bool requeued = false;
  const bool granted =
      locks()->AcquireMore(worker_, KeyTicket(c), std::move(need), [self, id](uint64_t) { self->KeysGranted(id); },
                           &requeued);
  if (requeued) {
    stats_.restart_requeues++;
    // A wait cycle: its template's transactions take its gate from now on.
    if (CycleGates* gates = c->pool->db->gates.get(); gates != nullptr && !c->route.trace.empty()) {
      gates->Cycle(c->route.trace[0].shape);
    }
  }
  if (!granted) {
    stats_.restart_key_waits++;
    if (RestartHold(c, b, relock)) return;
    RestartElsewhere(c, b, /*granted=*/false);
    return;
  }
  RestartWithKeys(c, b, std::move(relock));
}

void Proxy::Loop::RestartWithKeys(Client* c, Backend* b, std::vector<int64_t> relock) {
  // Re-run here, after the cluster keys it lacks. Waiting for keys that
  // sort after every key b holds closes no cycle between proxies (each
  // waits only for keys above those it holds); others are tried
  // (RestartTried): taken, the keys it held were never let go, so no other
  // proxy's transaction changed those rows meanwhile.
  // (Table locks: the re-run takes every stripe after its BEGIN; advisory
  // keys only for a template that grows, TakeClusterLocks.)
  const ClusterSync* cl = c->pool->db->cluster.get();
  if (!relock.empty() && cl != nullptr && (!cl->options().table_locks || !b->adv_locks.empty())) {
    if (b->adv_locks.empty() || relock.front() > b->adv_locks.back()) {
      LockMoreClusterKeys(b, relock);
    } else {
      TryClusterKeys(b, relock);
      return;
    }
  }
  SendReplay(c, b);
}

bool Proxy::Loop::RestartHold(Client* c, Backend* b, const std::vector<int64_t>& relock) {
  // Given back meanwhile, b's cluster keys would let another proxy's
  // transaction change a row this one read, and its re-run would differ.
  if (opt_.cluster_restart_hold_ms <= 0 || c->pool->db->cluster == nullptr || b->adv_locks.empty()) return false;
  // (A holder of the keys it waits for that itself waits on the server
  // for one of b's keys closes a cycle: rare, one row in a few; the bound
  // ends it.)
  // A backend of the pool left to others (the key's holder may need one).
  size_t held = 1;
  for (const auto& [id, w] : key_waiters_) held += w->restart_hold && w->pool == c->pool ? 1 : 0;
  if (held >= c->pool->backends.size()) return false;
  stats_.restart_held_waits++;
  const int64_t now = MonoNanos();
  c->restart_hold = true;
  c->restart_hold_until = now + int64_t{opt_.cluster_restart_hold_ms} * 1000000;
  c->restart_relock = relock;
  c->restart_since = now;
  c->wait_since = now;
  c->keys = Client::Keys::kWaiting;
  key_waiters_[c->id] = c;
  CapEnd(c, /*conflict=*/true);  // its template slot: the key's holder may wait for it
  return true;
}

void Proxy::Loop::RestartHoldTimers(int64_t now) {
  std::vector<Client*> late;
  for (const auto& [id, w] : key_waiters_) {
    if (w->restart_hold && !w->dead && w->backend != nullptr && now >= w->restart_hold_until) late.push_back(w);
  }
  for (Client* c : late) {
    stats_.restart_hold_timeouts++;
    c->restart_hold = false;
    c->restart_relock.clear();
    RestartElsewhere(c, c->backend, /*granted=*/false);  // still waiting, now without a backend
  }
}

void Proxy::Loop::RestartTried(Client* c, Backend* b) {
  const bool all = b->try_failed.empty();
  b->try_failed.clear();
  if (all) {
    SendReplay(c, b);
    return;
  }
  // One is held by another session: every key goes back, and the next
  // Attach takes them all in order.
  stats_.restart_cluster_retakes++;
  RestartElsewhere(c, b, /*granted=*/true);
}

void Proxy::Loop::RestartElsewhere(Client* c, Backend* b, bool granted) {
  c->restart_since = MonoNanos();
  if (LoadsOf(*c->pool) != nullptr) c->ready_since = c->restart_since;
  c->wait_since = c->restart_since;  // query_wait_timeout covers this wait too
  c->restart_queue = b->index;
  ReplayLog keep = std::move(c->replay);
  c->keys = Client::Keys::kNone;  // Detach must not release them
  Detach(b, c);
  c->replay = std::move(keep);
  ReleaseClusterLocks(b);  // behind its ROLLBACK
  Dispatch(b);
  if (granted) {
    c->keys = Client::Keys::kHeld;
    RestartResume(c);
    return;
  }
  c->keys = Client::Keys::kWaiting;
  key_waiters_[c->id] = c;
  CapEnd(c, /*conflict=*/true);  // its template slot: a key holder may wait for it
}

void Proxy::Loop::RestartResume(Client* c) {
  stats_.restart_wait_ns += MonoNanos() - c->restart_since;
  Pool& pool = *c->pool;
  const int n = static_cast<int>(pool.backends.size());
  int qi = c->restart_queue < n ? c->restart_queue : 0;
  if (!paused_ && !(pool.backends[qi]->Free() && pool.waitq[qi].empty())) {
    // Any idle backend re-runs it as well: its log is not tied to one.
    for (int i = 0; i < n; ++i) {
      if (pool.backends[i]->Free() && pool.waitq[i].empty()) {
        qi = i;
        break;
      }
    }
  }
  (void)AttachOrQueue(c, qi, /*blocked=*/false);  // attached: re-runs the log (SendReplay)
}

void Proxy::Loop::RestartDone(Client* c, Backend* b) {
  ReplayLog& r = c->replay;
  stats_.restart_matches++;
  r.set_phase(ReplayLog::Phase::kRecording);
  r.OnReady();
  r.attempts = 0;
  r.last_sent = false;
  r.restart = false;
  (void)b;
  GiveGateBackIfGrown(c, LoggedUnits(r));  // the held statement's keys may be its last new ones
  Pump(c);  // the held statement: its keys are held now
}

}  // namespace proxy
}  // namespace corral
