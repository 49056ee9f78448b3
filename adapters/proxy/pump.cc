// Proxy::Loop, part 3 of 5 (see proxy_internal.h): the transaction pump.
// A detached client's next unit (a Query, or extended-protocol messages up
// to Sync) is answered locally or routed (Router: references in, queue
// out); the client waits FIFO for that backend (idle backends may steal,
// steal.h), runs there until ReadyForQuery 'I', and the outcome goes back
// to the Router.
#include <algorithm>
#include <cstdio>

#include "absl/algorithm/container.h"
#include "adapters/proxy/proxy_internal.h"
#include "adapters/proxy/wire.h"
#include "common/clock.h"

namespace corral {
namespace proxy {

void Proxy::Loop::Pump(Client* c) {
  while (!c->dead && !c->pending.empty()) {
    if (c->admin) {
      if (c->pause_wait) return;
      Msg m = std::move(c->pending.front());
      c->pending.pop_front();
      if (m.type == 'X') {
        CloseClient(c);
        return;
      }
      const size_t before = c->out.size();
      admin_current_ = c;
      console_.OnMessage(m.type, m.body(), &c->out, !c->stats_only);
      admin_current_ = nullptr;
      MarkDirty(c);
      if (c->pause_wait) {  // PAUSE: answered when no transaction runs (OpsTurn)
        c->deferred = c->out.substr(before);
        c->out.resize(before);
        return;
      }
      continue;
    }
    if (c->backend != nullptr) {
      if (c->attaching || ReplayHolds(c)) return;  // AttachDone / the replay goes on
      Msg& m = c->pending.front();
      if (m.type == 'X') {
        CloseClient(c);
        return;
      }
      Backend* b = c->backend;
      if (m.type == 'P' && AnswerAttachedFromCache(c, b)) continue;
      if (RestartBeforeStatement(c, b)) return;  // held: its transaction restarts first (restart_loop.cc)
      if (trace_) std::fprintf(stderr, "c%llu -> b%d %c\n", (unsigned long long)c->id, b->index, m.type);
      Forward(c, b, m.type, m.raw);
      c->pending.pop_front();
      continue;
    }
    if (c->waiting || c->cap == Client::Cap::kWaiting || c->keys == Client::Keys::kWaiting) return;
    if (!StartUnit(c)) return;
  }
}

bool Proxy::Loop::AnswerAttachedFromCache(Client* c, Backend* b) {
  // Only between the client's requests: nothing of it outstanding on b
  // (answers stay in order), its transaction not failed, no DDL of its own.
  if (!b->Idle() || b->status == 'E' || b->catalog_dirty || c->routed_ahead != 0) return false;
  size_t end = 0;
  while (end < c->pending.size() && c->pending[end].type != 'S' && c->pending[end].type != 'H') ++end;
  if (end == c->pending.size()) return false;
  return AnswerDescribeFromCache(c, end);
}

bool Proxy::Loop::AnswerLostTxn(Client* c, size_t end) {
  if (!c->txn_lost) return false;
  if (!c->lost_answered) {
    ClientError(c, "08006", "server connection lost: the transaction was rolled back");
  }
  bool synced = false;
  for (size_t i = 0; i <= end; ++i) {
    const char type = c->pending.front().type;
    if (type == 'S' || type == 'Q') {
      ClientReady(c, c->lost_failed ? 'E' : 'I');
      synced = true;
    }
    c->pending.pop_front();
  }
  // A unit that ended at a Flush: like the server after an error, skip the
  // rest up to the Sync, which gets the ReadyForQuery. After a failed
  // block's 'E' the next request hears of the loss.
  if (synced) {
    c->txn_lost = c->lost_failed;
    c->lost_answered = false;
    c->lost_failed = false;
  } else {
    c->lost_answered = true;
  }
  MarkDirty(c);
  return true;
}

void Proxy::Loop::EndHeldTxn(Client* c, TxnControl kind) {
  c->held_begin.clear();
  stats_.transactions++;
  if (kind == TxnControl::kCommit) stats_.commits++; else stats_.rollbacks++;
  const char* tag = kind == TxnControl::kCommit ? "COMMIT" : "ROLLBACK";
  wire::AppendCommandComplete(&c->out, tag);
  c->sess.OnCommandComplete(tag);
}

void Proxy::Loop::ClientReady(Client* c, char status) {
  wire::AppendReadyForQuery(&c->out, status);
  c->sess.OnReadyForQuery(status);
}

void Proxy::Loop::ClientError(Client* c, absl::string_view sqlstate, absl::string_view message) {
  wire::AppendError(&c->out, "ERROR", sqlstate, message);
  c->sess.OnError();
}

// Detached client: the unit at the front of its pending messages (a Query, or
// extended-protocol messages up to Sync/Flush) is answered locally (held
// BEGIN / COMMIT of an empty transaction) or routed.
bool Proxy::Loop::StartUnit(Client* c) {
  Msg& m = c->pending.front();
  if (m.type == 'X') {
    CloseClient(c);
    return false;
  }
  if (m.type == 'Q') {
    if (AnswerLostTxn(c, 0)) return true;
    wire::Reader r(m.body());
    absl::string_view sql = r.CString();
    const TxnControl tc = ClassifyTxnControl(sql);
    if (tc == TxnControl::kBegin) {
      if (c->held_begin.empty()) c->held_begin = std::string(sql);
      wire::AppendCommandComplete(&c->out, "BEGIN");
      ClientReady(c, 'T');
      MarkDirty(c);
      c->pending.pop_front();
      return true;
    }
    if ((tc == TxnControl::kCommit || tc == TxnControl::kRollback) && !c->held_begin.empty()) {
      EndHeldTxn(c, tc);
      ClientReady(c, 'I');
      MarkDirty(c);
      c->pending.pop_front();
      return true;
    }
    c->route.ClearRefs();
    RouteUnit(c, c->held_begin, 1, [&](bool free_reads) {
      Router& router = RouterOf(c);
      router.AddQuery(sql, &c->route, free_reads);
      if (router.keys_first() && !c->route.conflict_free) c->route.first_key = RetryStatementKey(sql);
    });
    return true;
  }
  // Extended protocol: find the unit's end.
  size_t end = UnitEnd(c->pending);
  if (end == c->pending.size()) return false;  // wait for the Sync
  if (c->pending[end].type == 'Q') --end;      // no Sync before a Query: route what is there
  if (AnswerLostTxn(c, end)) return true;
  if (AnswerHeldExtended(c, end)) return true;
  if (AnswerPrepareOnly(c, end)) return true;
  if (AnswerDescribeFromCache(c, end)) return true;
  // References: every Bind's statement text with its parameters.
  c->route.ClearRefs();
  Router& router = RouterOf(c);
  // The block's BEGIN: held, else (free reads on) bound first in this unit.
  std::string bound_begin;
  if (c->held_begin.empty() && opt_.free_reads) bound_begin = router.UnitBegin(c->pending, end, c->stmts);
  RouteUnit(c, c->held_begin.empty() ? bound_begin : c->held_begin, end + 1,
            [&](bool free_reads) { router.AddUnit(c->pending, end, c->stmts, &c->route, free_reads); });
  return true;
}

void Proxy::Loop::RouteUnit(Client* c, const std::string& begin, size_t unit_len,
                            absl::FunctionRef<void(bool)> add_refs) {
  const FreeMode free = FreeModeOf(c, begin);
  if (free == FreeMode::kBlock) {
    c->route.conflict_free = c->route.free_block = true;
  } else {
    add_refs(free == FreeMode::kPlainReads);
  }
  c->routed_ahead = unit_len;
  if (LoadsOf(*c->pool) != nullptr) c->ready_since = MonoNanos();
  StartTxn(c);
}

Proxy::Loop::FreeMode Proxy::Loop::FreeModeOf(const Client* c, const std::string& begin) const {
  if (!opt_.free_reads) return FreeMode::kNo;
  // The session's defaults: the client's own, else its backends'.
  const ParamMap& params = c->sess.current();
  auto it = params.find("default_transaction_isolation");
  bool ser = it != params.end() ? IsSerializableValue(it->second) : !c->pool->server_not_ser;
  it = params.find("default_transaction_read_only");
  bool ro = it != params.end() ? IsOnValue(it->second) : c->pool->server_read_only;
  it = params.find("default_transaction_deferrable");
  bool def = it != params.end() && IsOnValue(it->second);
  if (begin.empty()) return ReadsCannotConflict(ser, ro, def) ? FreeMode::kPlainReads : FreeMode::kNo;
  const BeginModes m = ParseBeginModes(begin);
  if (m.serializable != 0) ser = m.serializable > 0;
  if (m.read_only != 0) ro = m.read_only > 0;
  if (m.deferrable != 0) def = m.deferrable > 0;
  return ro && ReadsCannotConflict(ser, ro, def) ? FreeMode::kBlock : FreeMode::kNo;
}

void Proxy::Loop::StartTxn(Client* c) {
  if (draining_ && c->held_begin.empty()) {  // no new transactions
    ShutdownClient(c);
    return;
  }
  if (c->route.conflict_free) {  // reads that cannot conflict (FreeModeOf): any backend
    const int qi = AnyIdleQueue(c->pool);
    c->retry = false;
    c->retry_pinned = false;
    c->predicted = false;
    c->affinity = false;
    stats_.transactions++;
    stats_.free_reads++;
    if (group_ != nullptr) group_->per[worker_].transactions++;
    RunOrWait(c, qi);
    return;
  }
  if (!KeysAdmit(c)) return;  // workers > 1: waits for its hot references' keys (workers_loop.cc)
  if (!CapAdmit(c)) return;   // waits for a slot of its template (tcap_loop.cc)
  const StealMode mode = steal_mode();
  // Affinity only matters to the affinity-aware rule (it costs a Decide).
  const bool want = mode == StealMode::kAffinity || mode == StealMode::kInFlight;
  Pool& pool = *c->pool;
  // A retry of a transaction that failed with 40001 / 40P01: routed on
  // everything it touched, before its first statement takes its snapshot.
  RefVec remembered;
  c->retry = pool.db->retry_routing && !c->route.first_key.empty() &&
             pool.db->retries->Take(c->id, c->route.first_key, &remembered);
  c->retry_pinned = false;
  // Statement templates: the later references its first statement predicts.
  Router& router = *pool.db->router;
  const bool predicted = c->predicted;
  c->predicted = false;
  if (router.templates() != nullptr && (predicted ? c->route.predicted.size() : router.PredictRefs(&c->route)) > 0) {
    stats_.template_predictions++;
    stats_.template_predicted_refs += static_cast<int64_t>(c->route.predicted.size());
    for (RefId r : c->route.predicted) {
      if (std::find(remembered.begin(), remembered.end(), r) == remembered.end()) remembered.push_back(r);
    }
  }
  int qi = router.Route(&c->route, remembered, want, &c->affinity, static_cast<int>(pool.backends.size()));
  c->route.ahead = remembered;
  if (c->retry) stats_.retries_routed++;
  if (!remembered.empty()) {
    // Behind the running holder of a remembered or predicted reference.
    const int holder = RetryHolder(pool, c, remembered);
    if (holder >= 0) {
      qi = holder;
      c->retry_pinned = true;
      (c->retry ? stats_.retries_behind_holder : stats_.template_behind_holder)++;
    }
  }
  if (c->affinity) stats_.affine_txns++;
  stats_.transactions++;
  if (group_ != nullptr) group_->per[worker_].transactions++;
  RunOrWait(c, qi);
}

int Proxy::Loop::AnyIdleQueue(Pool* pool) {
  const int n = static_cast<int>(pool->backends.size());
  int qi = -1;
  for (int i = 0; i < n && qi < 0; ++i) {
    const int k = (pool->next_free + i) % n;
    if (pool->backends[k]->Free() && pool->waitq[k].empty()) qi = k;
  }
  if (qi < 0) {
    qi = pool->next_free % n;
    for (int k = 0; k < n; ++k) {
      if (pool->waitq[k].size() < pool->waitq[qi].size()) qi = k;
    }
  }
  pool->next_free = (qi + 1) % n;
  return qi;
}

bool Proxy::Loop::AttachOrQueue(Client* c, int qi, bool blocked) {
  Pool& pool = *c->pool;
  c->load_queue = qi;
  Backend* b = pool.backends[qi].get();
  if (!paused_ && b->Free() && pool.waitq[qi].empty() && !blocked) {
    Attach(c, b);
    return true;
  }
  c->waiting = true;
  c->wait_queue = qi;
  c->wait_since = MonoNanos();
  pool.waitq[qi].push_back(c);
  if (scheduler::RoutedLoads* loads = LoadsOf(pool)) loads->Enqueued(qi);
  return false;
}

void Proxy::Loop::RunOrWait(Client* c, int qi) {
  Pool& pool = *c->pool;
  const StealMode mode = steal_mode();
  const bool blocked = mode == StealMode::kInFlight && Blocked(c);
  if (AttachOrQueue(c, qi, blocked)) return;
  stats_.queue_waits++;
  if (!c->retry_pinned && MaySteal(mode, c->affinity, blocked, 0, opt_.steal_after_ms * 1000000LL)) {
    for (auto& other : pool.backends) {
      if (other->Free()) Dispatch(other.get());
      if (!c->waiting) break;
    }
  }
}

int Proxy::Loop::RetryHolder(const Pool& pool, const Client* c, const RefVec& remembered) const {
  // What running transactions touched so far, then what they were routed
  // on ahead of running it.
  std::vector<const RefVec*> touched(pool.backends.size(), nullptr), ahead(pool.backends.size(), nullptr);
  for (size_t i = 0; i < pool.backends.size(); ++i) {
    const Client* holder = pool.backends[i]->client;
    // (A transaction waiting to replay was rolled back: it holds nothing.)
    if (holder != nullptr && holder != c && holder->replay.phase() != ReplayLog::Phase::kWaiting) {
      touched[i] = &holder->route.txn.refs;
      ahead[i] = &holder->route.ahead;
    }
  }
  const int h = PickHolder(remembered, touched);
  return h >= 0 ? h : PickHolder(remembered, ahead);
}

void Proxy::Loop::Attach(Client* c, Backend* b) {
  if (scheduler::RoutedLoads* loads = LoadsOf(*b->pool)) {
    c->attempt_since = MonoNanos();
    loads->Started(c->load_queue, c->ready_since > 0 ? c->attempt_since - c->ready_since : 0);
    c->ready_since = 0;
  }
  b->client = c;
  c->backend = b;
  b->held.clear();
  if (c->affinity && steal_mode() == StealMode::kInFlight) {
    for (RefId r : c->route.txn.refs) {
      if (!absl::c_linear_search(b->held, r)) {
        b->held.push_back(r);
        c->pool->inflight[r.value()]++;
      }
    }
  }
  c->waiting = false;
  c->route.ClearOutcome();
  TakeClusterLocks(c, b);  // before anything of the transaction
  b->txns++;
  c->txns++;
  // (A restarted transaction keeps its log: it runs again here.)
  if (!c->replay.restart) {
    // Restart on a hot key needs the log of a block the proxy began.
    const bool log = !c->route.conflict_free &&
                     (c->pool->db->replay || (c->pool->db->restart && !c->held_begin.empty()));
    c->replay.Start(log, opt_.replay_buffer_bytes, c->held_begin);
    // A unit in the proxy's block (table locks): a conflict goes to the
    // client as the server reports it (a replay would run it outside).
    if (b->wrap_pending) c->replay.MarkUnreplayable();
  }
  // The client's session parameters on this backend first; its messages
  // wait for the result (AttachDone), so a failure runs none of them.
  const std::string sql = AttachSql(&c->sess, &b->sess);
  if (!sql.empty()) {
    SendInternal(b, sql);
    b->batches[b->batches.size() - 2].attach = true;
    c->attaching = true;
    return;
  }
  if (c->replay.restart) {
    SendReplay(c, b);  // restart_loop.cc: its BEGIN and log again
    return;
  }
  SendTxnStart(c, b);
}

void Proxy::Loop::AttachDone(Client* c, Backend* b, const std::string& error) {
  c->attaching = false;
  if (!error.empty()) {
    // Only a value the server never accepted from this client can fail
    // here (its startup packet's: PostgreSQL refuses such a connection
    // with FATAL); CloseClient returns the backend to its defaults.
    auto fields = wire::ParseErrorFields(absl::string_view(error).substr(5));
    CloseWithFatal(c, fields['C'], fields['M']);
    return;
  }
  if (c->replay.restart) {
    SendReplay(c, b);  // restart_loop.cc: its BEGIN and log again
  } else {
    SendTxnStart(c, b);
  }
  Pump(c);
}

void Proxy::Loop::Dispatch(Backend* b) {
  if (paused_ || !b->Free()) return;
  Client* pick = nullptr;
  const StealMode mode = steal_mode();
  const int64_t now = MonoNanos();
  const int64_t after = opt_.steal_after_ms * 1000000LL;
  auto blocked = [this](const Client* w) { return Blocked(w); };
  // A retry pinned behind its holder is, to the other backends, an affine
  // transaction whose reference is held.
  auto steal_blocked = [this](const Client* w) { return w->retry_pinned || Blocked(w); };
  auto since = [](const Client* w) { return w->wait_since; };
  auto& waitq = b->pool->waitq;
  auto& own = waitq[b->index];
  const int mine = PickOwn(own, mode, now, after, blocked, since);
  scheduler::RoutedLoads* loads = LoadsOf(*b->pool);
  if (mine >= 0) {
    pick = own[mine];
    own.erase(own.begin() + mine);
    if (loads != nullptr) loads->Dequeued(b->index);
  } else if (mode != StealMode::kOff) {
    const StealPick sp = PickSteal(
        waitq, b->index, mode, now, after, [](const Client* w) { return w->affinity || w->retry_pinned; },
        steal_blocked, since);
    if (sp.queue < 0) return;
    auto& wq = waitq[sp.queue];
    pick = wq[sp.pos];
    wq.erase(wq.begin() + sp.pos);
    if (loads != nullptr) loads->Dequeued(sp.queue);
    stats_.steals++;
    if (pick->affinity) stats_.steals_affine++;
  } else {
    return;
  }
  Attach(pick, b);
  Pump(pick);
}

void Proxy::Loop::EndTxn(Client* c, Backend* b) {
  const scheduler::Outcome o = c->route.outcome();
  switch (o) {
    case scheduler::Outcome::kConflictAbort:
      (c->route.conflict_state == "40001" ? stats_.aborts_40001 : stats_.aborts_40P01)++;
      break;
    case scheduler::Outcome::kFailed:
      stats_.user_errors++;
      break;
    case scheduler::Outcome::kUserAbort:
      stats_.rollbacks++;
      break;
    default:
      stats_.commits++;
      break;
  }
  Templates* templates = RouterOf(c).templates();
  const int64_t dropped = templates != nullptr ? templates->counters().mappings_dropped : 0;
  RouterOf(c).Finish(&c->route, o);
  NoteAttempt(c, b, o);
  ReleaseClusterLocks(b);  // the backend is not Free until they are released
  if (templates != nullptr) stats_.template_mappings_dropped += templates->counters().mappings_dropped - dropped;
  RememberForRetry(c, o);
  Detach(b, c);
  Dispatch(b);
  CapEnd(c, o == scheduler::Outcome::kConflictAbort);
  Pump(c);
}

void Proxy::Loop::NoteAttempt(Client* c, Backend* b, scheduler::Outcome o) {
  scheduler::RoutedLoads* loads = LoadsOf(*b->pool);
  if (loads == nullptr) return;
  const int64_t now = MonoNanos();
  loads->Attempt(c->load_queue, now - c->attempt_since, o);
  c->attempt_since = now;  // a retry on this backend is the next attempt
}

void Proxy::Loop::RememberForRetry(Client* c, scheduler::Outcome o) {
  Database& db = *c->pool->db;
  if (!c->route.predicted.empty()) {
    int64_t hits = 0;
    for (RefId r : c->route.predicted) {
      if (std::find(c->route.txn.refs.begin(), c->route.txn.refs.end(), r) != c->route.txn.refs.end()) ++hits;
    }
    stats_.template_predicted_hits += hits;
  }
  if (c->retry && o == scheduler::Outcome::kCommitted) stats_.retries_clean++;
  c->retry = false;
  c->retry_pinned = false;
  if (!db.retry_routing || o != scheduler::Outcome::kConflictAbort || c->route.first_key.empty()) return;
  const int64_t evicted = db.retries->evictions();
  db.retries->Remember(c->id, c->route.first_key, c->route.txn.refs);
  stats_.retries_remembered++;
  stats_.retry_memory_evictions += db.retries->evictions() - evicted;
}

void Proxy::Loop::Detach(Backend* b, Client* c) {
  KeysRelease(c);  // workers > 1: its transaction's keys
  c->replay.Clear();
  if (scheduler::RoutedLoads* loads = LoadsOf(*b->pool)) loads->Stopped(c->load_queue);
  b->client = nullptr;
  ReplayHolderEnded(b);
  c->backend = nullptr;
  DetachSession(&c->sess, &b->sess);
  c->portal_sql.clear();  // portals end with the transaction
  b->table_lock_sql.clear();
  b->table_keys.clear();
  b->drop_begin_warning = false;
  b->wrap_pending = false;
  b->lock_error.clear();
  ResumeRead(b);  // back-pressure was for this client
  if (b->held.empty()) return;
  auto& inflight = b->pool->inflight;
  for (RefId r : b->held) {
    auto it = inflight.find(r.value());
    if (it != inflight.end() && --it->second <= 0) inflight.erase(it);
  }
  b->held.clear();
  // Transactions waiting for these references may run now, on their own
  // (idle) backend or stolen.
  DispatchIdle(b->pool);
}

}  // namespace proxy
}  // namespace corral
