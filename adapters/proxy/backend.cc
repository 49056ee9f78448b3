// Proxy::Loop, part 5 of 5 (see proxy_internal.h): backend connections.
// Connecting and authenticating to the server (trust, cleartext, md5,
// SCRAM-SHA-256), reading backend messages (forwarding to the attached
// client, dropping the proxy's own responses, noting the outcome),
// failure and reconnect, proxy-internal statements and cancels.
// A ParameterDescription ('t') teaches the Router a statement's parameter
// types; the answer to a Describe the proxy injected is not forwarded.
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/net.h"
#include "adapters/proxy/proxy_internal.h"
#include "adapters/proxy/wire.h"
#include "common/clock.h"

namespace corral {
namespace proxy {

absl::Status Proxy::Loop::ConnectBackend(Backend* b) {
  const Pool& pool = *b->pool;
  const DatabaseEntry& entry = pool.db->entry;
  b->connect_sqlstate.clear();
  auto fd_or = net::ConnectTcp(entry.host, entry.port);
  if (!fd_or.ok()) return fd_or.status();
  const int fd = *fd_or;
  timeval tv{5, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
  std::unique_ptr<tls::Session> tls;  // server_tls_sslmode: the startup runs over it
  if (server_tls_ != nullptr) {
    if (absl::Status st = net::NegotiateServerTls(fd, *server_tls_, &tls); !st.ok()) {
      ::close(fd);
      return st;
    }
  }
  std::string pkt;
  size_t at = wire::BeginMessage(&pkt, 0);
  wire::PutInt32(&pkt, wire::kProtocol3);
  for (const auto& [k, v] : {std::pair<std::string, std::string>{"user", pool.user},
                             {"database", entry.dbname},
                             {"application_name", "corral-proxy"}}) {
    pkt.append(k);
    pkt.push_back('\0');
    pkt.append(v);
    pkt.push_back('\0');
  }
  pkt.push_back('\0');
  wire::EndMessage(&pkt, at);
  auto fail = [&](absl::Status st) {
    ::close(fd);
    return st;
  };
  if (!net::WriteAll(fd, pkt, tls.get())) return fail(absl::UnavailableError("cannot send the startup packet"));
  std::string buf;
  std::vector<std::pair<std::string, std::string>> params;
  std::unique_ptr<auth::ScramClient> scram;
  // A stored hash answers md5 (its inner hash) but not cleartext; SCRAM
  // needs the password or the client's keys (pass-through).
  const bool scram_keys = !pool.scram_client_key.empty();
  const bool plain = !auth::IsStoredSecret(pool.secret);
  auto cannot = [&](absl::string_view method) {
    return absl::UnavailableError(absl::StrCat("the server asks for ", method, " authentication of user \"",
                                               pool.user, "\" and the proxy has no password for it"));
  };
  while (true) {
    char type = 0;
    std::string body;
    if (absl::Status st = net::ReadMessage(fd, &buf, &type, &body, tls.get()); !st.ok()) return fail(st);
    wire::Reader r(body);
    if (type == 'R') {
      const int32_t code = r.Int32();
      if (code == 0) continue;
      if (code == 10 || code == 11 || code == 12) {  // SASL: SCRAM-SHA-256
        std::string reply;
        size_t m = wire::BeginMessage(&reply, 'p');
        if (code == 10) {
          if (!scram_keys && !plain) return fail(cannot("SCRAM-SHA-256"));
          scram = std::make_unique<auth::ScramClient>(
              scram_keys ? auth::ScramClient::WithKeys(pool.scram_client_key, pool.scram_server_key)
                         : auth::ScramClient(pool.secret));
          const std::string first = scram->FirstMessage();
          reply.append("SCRAM-SHA-256");
          reply.push_back('\0');
          wire::PutInt32(&reply, static_cast<int32_t>(first.size()));
          reply.append(first);
        } else if (scram == nullptr) {
          return fail(absl::UnavailableError("server sent a SASL message out of order"));
        } else if (code == 11) {
          auto final_msg = scram->FinalMessage(r.rest());
          if (!final_msg.ok()) return fail(final_msg.status());
          reply.append(*final_msg);
        } else {
          if (absl::Status st = scram->VerifyServerFinal(r.rest()); !st.ok()) return fail(st);
          continue;
        }
        wire::EndMessage(&reply, m);
        if (!net::WriteAll(fd, reply, tls.get())) {
          return fail(absl::UnavailableError("cannot send the SASL response"));
        }
        continue;
      }
      std::string reply;
      size_t m = wire::BeginMessage(&reply, 'p');
      if (code == 3) {
        if (!plain) return fail(cannot("cleartext password"));
        reply.append(pool.secret);
      } else if (code == 5) {
        if (absl::StartsWith(pool.secret, "SCRAM-SHA-256$")) return fail(cannot("md5"));
        reply.append(auth::Md5Response(pool.user, pool.secret, r.Bytes(4)));
      } else {
        return fail(absl::UnimplementedError(
            absl::StrCat("the server asks for authentication method ", code,
                         " (the proxy speaks trust, password, md5 and SCRAM-SHA-256)")));
      }
      reply.push_back('\0');
      wire::EndMessage(&reply, m);
      if (!net::WriteAll(fd, reply, tls.get())) return fail(absl::UnavailableError("cannot send the password"));
    } else if (type == 'S') {
      std::string k(r.CString());
      std::string v(r.CString());
      params.emplace_back(std::move(k), std::move(v));
    } else if (type == 'K') {
      b->pid = r.Int32();
      b->secret = r.Int32();
    } else if (type == 'E') {
      auto f = wire::ParseErrorFields(body);
      b->connect_sqlstate = f['C'];
      b->connect_message = f['M'];
      return fail(absl::UnavailableError(
          absl::StrCat("server refused the connection: ", f['C'], " ", f['M'])));
    } else if (type == 'Z') {
      break;
    }
  }
  // Its default isolation (not a reported parameter; the role's and the
  // database's settings apply): whether plain reads may pass unscheduled
  // (Options::free_reads) for clients that do not set their own.
  b->default_ser = -1;
  b->default_ro = 0;
  for (const auto& [k, v] : params) {
    if (absl::EqualsIgnoreCase(k, "default_transaction_read_only")) b->default_ro = IsOnValue(v) ? 1 : 0;
  }
  if (opt_.free_reads) {
    std::string show;
    size_t q = wire::BeginMessage(&show, 'Q');
    show.append("SHOW default_transaction_isolation");
    show.push_back('\0');
    wire::EndMessage(&show, q);
    if (!net::WriteAll(fd, show, tls.get())) return fail(absl::UnavailableError("cannot send to the server"));
    while (true) {
      char type = 0;
      std::string body;
      if (absl::Status st = net::ReadMessage(fd, &buf, &type, &body, tls.get()); !st.ok()) return fail(st);
      if (type == 'D') {
        wire::Reader r(body);
        if (r.Int16() == 1) {
          const int32_t n = r.Int32();
          if (n >= 0) b->default_ser = IsSerializableValue(r.Bytes(n)) ? 1 : 0;
        }
      } else if (type == 'Z') {
        break;
      }
    }
  }
  timeval zero{0, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &zero, sizeof(zero));
  net::SetNonBlocking(fd);
  if (server_params_.empty()) server_params_ = params;
  b->sess = BackendSession(params);
  b->connect_params = std::move(params);
  b->fd = fd;
  b->tls = std::move(tls);
  b->in = std::move(buf);
  b->in_off = 0;
  b->out.clear();
  b->out_off = 0;
  b->epollout = false;
  b->read_paused = false;
  b->alive = true;
  b->status = 'I';
  b->block = 'I';
  b->batches.clear();
  b->batches.push_back(Batch());
  b->cache.Clear();
  b->ForgetClusterStatements();  // statements are the connection's
  b->drop_describe_tail = false;
  b->unnamed_key.clear();
  b->catalog_dirty = false;
  b->answer_key.clear();
  b->expect.clear();
  b->stale_batch = false;
  AddFd(b, EPOLLIN);
  if (b->tls != nullptr && b->tls->Pending()) tls_pending_.push_back(b);
  // (b may not be in its pool's list yet: PoolOf adds it after this.)
  bool not_ser = true, read_only = true;
  auto note = [&](const Backend& o) {
    if (!o.alive) return;
    not_ser = not_ser && o.default_ser == 0;
    read_only = read_only && o.default_ro == 1;
  };
  note(*b);
  for (const auto& o : b->pool->backends) {
    if (o.get() != b) note(*o);
  }
  b->pool->server_not_ser = not_ser;
  b->pool->server_read_only = read_only;
  return absl::OkStatus();
}

void Proxy::Loop::OnBackendInput(Backend* b) {
  while (b->alive && !b->read_paused) {
    absl::string_view buf = absl::string_view(b->in).substr(b->in_off);
    wire::Frame f;
    size_t used = 0;
    if (absl::Status st = wire::NextFrame(buf, 1u << 30, &f, &used); !st.ok()) {
      FailBackend(b, st.message());
      return;
    }
    if (used == 0) break;
    b->in_off += used;
    std::string lock_error;  // (f's bytes when a LOCK's error stands in for them)
    Client* c = b->client;
    Batch& front = b->batches.front();
    bool forward = !front.swallow && !b->stale_batch;
    if (trace_) {
      std::fprintf(stderr, "b%d -> c%lld %c%s\n", b->index, c ? (long long)c->id : -1LL, f.type,
                   f.type == 'Z' ? std::string(f.body).c_str() : "");
    }
    if (front.cluster_lock || front.cluster_unlock || front.cluster_try) OnClusterMessage(b, front, f.type, f.body);
    const bool replaying = c != nullptr && c->backend == b && ReplayHolds(c);
    if (replaying) forward = ReplayMessage(c, b, front.replay, f.type, f.raw);
    switch (f.type) {
      case '1':
        if (!front.parses.empty()) {
          ParseEntry e = std::move(front.parses.front());
          front.parses.pop_front();
          if (!e.key.empty()) b->cache.Confirm(e.key);
          if (e.drop) forward = false;
        }
        break;
      case '3':
        if (!front.closes.empty()) {
          if (front.closes.front()) forward = false;
          front.closes.pop_front();
        }
        break;
      case 'E': {
        absl::string_view state = wire::ErrorSqlState(f.body);
        if (absl::StartsWith(state, "57P") || absl::StartsWith(state, "08")) {
          auto fields = wire::ParseErrorFields(f.body);
          if (fields['S'] == "FATAL" || fields['S'] == "PANIC") {
            // The server is closing this connection; the client's connection
            // (to the proxy) survives: FailBackend reports 08006 instead.
            b->fatal = fields['M'];
            forward = false;
            break;
          }
        }
        if (front.attach && front.attach_error.empty()) front.attach_error = std::string(f.raw);
        if (front.table_lock) b->lock_error = std::string(f.raw);
        bool from_lock = false;
        if (forward && state == "25P02" && !b->lock_error.empty()) {
          // The block failed at the proxy's LOCK: the client hears why.
          lock_error = std::move(b->lock_error);
          b->lock_error.clear();
          f.raw = lock_error;
          f.body = absl::string_view(lock_error).substr(5);
          state = wire::ErrorSqlState(f.body);
          from_lock = true;
          stats_.cluster_lock_errors++;
        }
        if (forward && c != nullptr && !from_lock && (state == "40001" || state == "40P01") &&
            ReplayOnConflict(c, b, f.raw, state)) {
          forward = false;  // kept from the client: the transaction is replayed (replay_loop.cc)
          break;
        }
        if (forward && c != nullptr) {
          c->sess.OnError();
          b->front_errored = true;
          if (state == "40001" || state == "40P01") {
            c->route.conflict_state = std::string(state);
          } else {
            c->route.had_error = true;
          }
        }
        break;
      }
      case 'N':
        // The client's BEGIN behind the proxy's (table locks): "there is
        // already a transaction in progress" is the proxy's doing.
        if (b->drop_begin_warning && wire::ErrorSqlState(f.body) == "25001") {
          b->drop_begin_warning = false;
          forward = false;
        }
        break;
      case 'C':
        if (front.wrap_commit) forward = false;  // the proxy's COMMIT's tag
        if (absl::StartsWith(f.body, "DISCARD ALL") || absl::StartsWith(f.body, "DEALLOCATE ALL")) {
          // Every prepared statement of this connection is gone: the
          // proxy's corral_s<N> (prepared again on next use; names are not
          // reused) and, as the client sees it, its own.
          b->cache.Clear();
          b->unnamed_key.clear();
          b->ForgetClusterStatements();
          if (forward && c != nullptr) c->stmts.clear();
        }
        if (absl::StartsWith(f.body, "BEGIN") || absl::StartsWith(f.body, "START TRANSACTION")) {
          if (b->block == 'I') b->block = 'T';
        } else if (absl::StartsWith(f.body, "COMMIT") || absl::StartsWith(f.body, "ROLLBACK") ||
                   absl::StartsWith(f.body, "PREPARE TRANSACTION")) {
          b->block = 'I';  // (ROLLBACK TO SAVEPOINT and ... AND CHAIN have these tags too)
        }
        if (forward && c != nullptr) {
          if (absl::StartsWith(f.body, "ROLLBACK")) c->route.rolled_back = true;
          c->sess.OnCommandComplete(wire::Reader(f.body).CString());
        }
        break;
      case 't':
        if (!front.describes.empty()) {
          DescribeEntry e = std::move(front.describes.front());
          front.describes.pop_front();
          if (!e.key.empty()) RouterOf(b).LearnParamTypes(e.key, f.body);
          b->answer_key.clear();
          if (!e.expect.empty()) {
            b->expect = std::move(e.expect);
            b->expect_t = std::string(f.raw);
          }
          if (!e.answer_key.empty() && !b->catalog_dirty) {
            b->answer_t = std::string(f.raw);
            b->answer_key = std::move(e.answer_key);
            b->answer_gen = e.gen;
          }
          if (e.drop) {
            forward = false;
            b->drop_describe_tail = true;
          }
        }
        break;
      case 'T':
      case 'n':
        if (!b->answer_key.empty()) {  // the tail of a client's Describe-statement
          describe_cache_.Learn(b->answer_key, b->answer_gen, absl::StrCat(b->answer_t, f.raw));
          b->answer_key.clear();
        }
        if (!b->expect.empty()) {  // the tail of a check of a cached answer
          if (b->expect.size() != b->expect_t.size() + f.raw.size() ||
              absl::string_view(b->expect).substr(0, b->expect_t.size()) != b->expect_t ||
              absl::string_view(b->expect).substr(b->expect_t.size()) != f.raw) {
            stats_.describes_stale++;
            describe_cache_.Invalidate();
            b->stale_batch = true;
          }
          b->expect.clear();
        }
        if (b->drop_describe_tail) {
          b->drop_describe_tail = false;
          forward = false;
        }
        break;
      case 'S': {
        wire::Reader r(f.body);
        std::string k(r.CString());
        std::string v(r.CString());
        for (auto& [pk, pv] : server_params_) {
          if (pk == k && b->index == 0 && c == nullptr) pv = v;
        }
        b->sess.OnParameterStatus(k, v);
        // Also from the proxy's own attach SQL: the client hears of changes.
        forward = c != nullptr && c->sess.OnParameterStatus(k, v);
        break;
      }
      case 'Z': {
        b->status = f.body.empty() ? 'I' : f.body[0];
        if (b->status == 'I') {  // the proxy's block (table locks) is over
          b->lock_error.clear();
          b->drop_begin_warning = false;  // (its LOCK failed: the client's BEGIN drew an error, no warning)
        }
        b->block = b->status;
        b->front_errored = false;
        b->drop_describe_tail = false;
        b->answer_key.clear();
        b->expect.clear();
        const bool stale = b->stale_batch;
        b->stale_batch = false;
        if (b->status == 'I' && b->catalog_dirty) {
          // Its DDL committed (or rolled back) only now: answers learned
          // meanwhile may describe either catalog.
          b->catalog_dirty = false;
          describe_cache_.Invalidate();
        }
        // Parses skipped after an error never happened: forget them.
        b->cache.ForgetUnconfirmed(front.parses);
        ClusterBatchDone(b, front);
        const bool attach = front.attach;
        const std::string attach_error = std::move(front.attach_error);
        const int batch_replay = front.replay;
        const bool tried = front.cluster_try;
        const bool wrapped = front.wrap_unit;
        if (b->batches.size() > 1) b->batches.pop_front();
        if (stale && c != nullptr) AnswerStale(c, b);
        if (tried && c != nullptr && c->backend == b && c->replay.restart) {
          RestartTried(c, b);  // restart_loop.cc
          continue;
        }
        // An attach batch (the proxy's session SQL before the client's
        // messages) is never the replay's: a restart waiting to re-run
        // (Phase::kWaiting) would take its ReadyForQuery for its own, and
        // the attach would never finish.
        // A wrapped unit's: the client gets the COMMIT's behind it.
        if (wrapped) continue;
        if (!attach && c != nullptr && c->backend == b && ReplayOnReady(c, b, batch_replay)) continue;
        if (forward && c != nullptr) {
          Send(c, f.raw);
          c->sess.OnReadyForQuery(b->status);
        }
        if (attach && c != nullptr && c->backend == b) {
          AttachDone(c, b, attach_error);
          continue;
        }
        if (c != nullptr && b->status == 'I' && b->IdleButUnlock()) {
          EndTxn(c, b);  // its unlock follows (FoldClusterUnlock); b is not Free until it came
        } else if (b->Idle()) {
          if (c != nullptr && b->status == 'I') {
            EndTxn(c, b);
          } else if (c == nullptr) {
            if (b->status != 'I') {
              SendInternal(b, "ROLLBACK");
            } else {
              Dispatch(b);
            }
          }
        }
        continue;
      }
      default:
        break;
    }
    if (forward && c != nullptr) {
      if (replaying && !ReplayVisible(c, front.replay, f.type, f.raw)) continue;
      c->replay.OnForwarded(f.type, f.raw);
      Send(c, f.raw);
      if (PauseIfFull(c, b)) break;  // back-pressure: the rest waits in b->in
    }
  }
  CompactBuffer(&b->in, &b->in_off);
}

void Proxy::Loop::FailBackend(Backend* b, absl::string_view why) {
  stats_.backend_failures++;
  epoll_ctl(epfd_, EPOLL_CTL_DEL, b->fd, nullptr);
  ::close(b->fd);
  b->fd = -1;
  b->tls.reset();
  b->alive = false;
  if (Client* c = b->client; c != nullptr) {
    // Exactly one result per request: each request the server had not
    // answered yet (a Query, or messages up to a Sync) gets an error and
    // ReadyForQuery here. Nothing is sent unasked: a client idle in its
    // transaction, or with a unit forwarded only in part (no Sync yet),
    // gets the error as the answer to its next request (AnswerLostTxn).
    // (An unsolicited error here plus that answer made psycopg 3 report
    // "received 2 results from command 'COMMIT'".)
    const std::string lost = absl::StrCat("server connection lost (backend ", b->index, ": ",
                                          b->fatal.empty() ? std::string(why) : b->fatal,
                                          "): the transaction on it was rolled back");
    // The server may have sent the front batch's error and died before
    // its ReadyForQuery: that error is the answer, and the ReadyForQuery
    // says what the server's would have: 'E' when the error failed a
    // transaction block (the client rolls back, or runs into the lost
    // transaction's error at its next request; 'I' would let its next
    // statements run outside the transaction it believes failed).
    const char errored_status = b->block == 'I' ? 'I' : 'E';
    int outstanding = 0;
    char last = 0;
    // A replay between its statements: its request answered there.
    if (ReplayBackendLost(c, b, &last)) outstanding = 1;
    for (size_t i = 0; i + 1 < b->batches.size(); ++i) {
      if (b->batches[i].swallow) continue;
      const bool errored = i == 0 && b->front_errored;
      if (!errored) ClientError(c, "08006", lost);
      last = errored ? errored_status : 'I';
      ClientReady(c, last);
      ++outstanding;
    }
    c->sess.OnError();  // the transaction is gone, with any SET it made
    // A client still waiting for its attach SQL sent nothing: routed anew.
    if (!c->attaching) {
      if (outstanding == 0 && b->front_errored) {
        // A unit forwarded in part (no Sync yet) whose error the client
        // has: as after an error, the rest up to the Sync is skipped.
        c->txn_lost = true;
        c->lost_answered = true;
        c->lost_failed = errored_status == 'E';
      } else if (outstanding == 0 || b->batches.back().msgs > 0 || last == 'E') {
        c->txn_lost = true;
      }
    }
    c->attaching = false;
    MarkDirty(c);
    RouterOf(c).Finish(&c->route, scheduler::Outcome::kFailed);
    Detach(b, c);
    CapEnd(c, /*conflict=*/false);
    // Anything the client sent after the failed batch is routed anew.
  }
  DropClusterLocks(b);  // the server ended the session, and its locks
  b->batches.clear();
  b->batches.push_back(Batch());
  b->fatal.clear();
  b->front_errored = false;
  if (absl::Status st = ConnectBackend(b); !st.ok()) {
    b->reconnect_at = MonoNanos() + 1000000000LL;
  } else {
    Dispatch(b);
  }
}

void Proxy::Loop::SendInternal(Backend* b, absl::string_view sql) {
  std::string q;
  wire::AppendQuery(&q, sql);
  Send(b, q);
  b->unnamed_key.clear();  // a simple Query drops the unnamed statement
  b->batches.back().swallow = true;
  b->batches.back().msgs++;
  EndBatch(b);
}

void Proxy::Loop::SendCancel(Backend* b) {
  net::SendCancelRequest(b->pool->db->entry.host, b->pool->db->entry.port, b->pid, b->secret);
}

}  // namespace proxy
}  // namespace corral
