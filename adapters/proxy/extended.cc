// Proxy::Loop, part 4 of 5 (see proxy_internal.h): the extended protocol.
// Units the proxy answers itself (a held BEGIN and its COMMIT / ROLLBACK;
// PQprepare-style Parse+Sync outside a transaction), and forwarding to the
// backend with the client's named statements mapped to backend names,
// prepared on demand (StatementCache, prepared.h).
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/proxy_internal.h"
#include "adapters/proxy/wire.h"

namespace corral {
namespace proxy {

// A unit that only runs BEGIN (or COMMIT/ROLLBACK of a held BEGIN) is
// answered by the proxy with the responses the server would send. Each
// Parse is decoded once: the check keeps them for the answer.
bool Proxy::Loop::AnswerHeldExtended(Client* c, size_t end) {
  std::vector<std::pair<std::string, PreparedDef>> parsed;  // the unit's Parses, in order
  absl::flat_hash_map<std::string, size_t> local;          // name -> its latest in `parsed`
  TxnControl kind = TxnControl::kOther;
  int executes = 0;
  std::string text;       // the statement last parsed or bound
  std::string exec_text;  // the one the Execute runs
  for (size_t i = 0; i <= end; ++i) {
    const Msg& u = c->pending[i];
    if (u.type == 'P') {
      std::string name;
      PreparedDef d = PreparedDef::FromParse(u.body(), &name);
      text = d.query;
      local[name] = parsed.size();
      parsed.emplace_back(std::move(name), std::move(d));
    } else if (u.type == 'B') {
      wire::Reader r(u.body());
      r.CString();
      const std::string stmt(r.CString());
      const PreparedDef* d = nullptr;
      if (auto it = local.find(stmt); it != local.end()) {
        d = &parsed[it->second].second;
      } else if (auto jt = c->stmts.find(stmt); jt != c->stmts.end()) {
        d = &jt->second;
      }
      if (d == nullptr) return false;
      const TxnControl k = ClassifyTxnControl(d->query);
      if (k == TxnControl::kOther || (kind != TxnControl::kOther && k != kind)) return false;
      kind = k;
      text = d->query;
    } else if (u.type == 'E') {
      ++executes;
      exec_text = text;
    } else if (u.type == 'D' || u.type == 'S' || u.type == 'H') {
      // answerable
    } else {
      return false;
    }
  }
  if (executes != 1 || kind == TxnControl::kOther) return false;
  if (kind != TxnControl::kBegin && c->held_begin.empty()) return false;
  size_t next_parse = 0;
  for (size_t i = 0; i <= end; ++i) {
    Msg u = std::move(c->pending.front());
    c->pending.pop_front();
    switch (u.type) {
      case 'P': {
        auto& [name, d] = parsed[next_parse++];
        if (!name.empty()) c->stmts[name] = std::move(d);
        wire::AppendEmpty(&c->out, '1');
        break;
      }
      case 'B':
        wire::AppendEmpty(&c->out, '2');
        break;
      case 'D': {
        if (wire::Reader(u.body()).Byte() == 'S') {
          std::string pd;
          size_t at = wire::BeginMessage(&pd, 't');
          wire::PutInt16(&pd, 0);
          wire::EndMessage(&pd, at);
          c->out.append(pd);
        }
        wire::AppendEmpty(&c->out, 'n');
        break;
      }
      case 'E':
        if (kind == TxnControl::kBegin) {
          if (c->held_begin.empty()) c->held_begin = exec_text;
          wire::AppendCommandComplete(&c->out, "BEGIN");
        } else {
          EndHeldTxn(c, kind);
        }
        break;
      case 'S':
        ClientReady(c, c->held_begin.empty() ? 'I' : 'T');
        break;
      default:
        break;
    }
  }
  MarkDirty(c);
  return true;
}

std::string Proxy::Loop::DescribeKey(const Client* c, const PreparedDef& d) const {
  const ParamMap& params = c->sess.current();
  auto param = [&params](absl::string_view name) -> absl::string_view {
    auto it = params.find(name);
    return it == params.end() ? absl::string_view("\001default") : absl::string_view(it->second);
  };
  const absl::string_view nul("\0", 1);
  return absl::StrCat(d.key, nul, c->user, nul, c->database, nul, param("search_path"), nul, param("role"), nul,
                      param("session_authorization"));
}

void Proxy::Loop::CatalogChanged(Backend* b) {
  describe_cache_.Invalidate();
  stats_.describe_invalidations++;
  b->catalog_dirty = true;
  b->answer_key.clear();
}

bool Proxy::Loop::AnswerDescribeFromCache(Client* c, size_t end) {
  const char last = c->pending[end].type;
  if (end == 0 || (last != 'H' && last != 'S')) return false;
  // Check first: every Parse and Describe-statement must be answerable.
  std::vector<std::pair<std::string, PreparedDef>> parsed;
  std::vector<const std::string*> answers;  // per Parse and per Describe, in order
  for (size_t i = 0; i < end; ++i) {
    const Msg& u = c->pending[i];
    if (u.type == 'P') {
      std::string name;
      PreparedDef d = PreparedDef::FromParse(u.body(), &name);
      // A named statement that exists already is the server's error to give.
      if (d.may_change_session || (!name.empty() && c->stmts.contains(name))) return false;
      for (const auto& p : parsed) {
        if (!name.empty() && p.first == name) return false;
      }
      const std::string* a = describe_cache_.Find(DescribeKey(c, d));
      if (a == nullptr) return false;
      answers.push_back(a);
      parsed.emplace_back(std::move(name), std::move(d));
    } else if (u.type == 'D') {
      wire::Reader r(u.body());
      if (r.Byte() != 'S') return false;
      const std::string name(r.CString());
      const PreparedDef* d = nullptr;
      for (const auto& p : parsed) {
        if (p.first == name) d = &p.second;  // the latest Parse of that name
      }
      if (d == nullptr) {
        auto it = c->stmts.find(name);
        if (it == c->stmts.end() || it->second.may_change_session) return false;
        d = &it->second;
      }
      const std::string* a = describe_cache_.Find(DescribeKey(c, *d));
      if (a == nullptr) return false;
      answers.push_back(a);
    } else {
      return false;
    }
  }
  size_t next_parse = 0, next_answer = 0;
  for (size_t i = 0; i <= end; ++i) {
    Msg u = std::move(c->pending.front());
    c->pending.pop_front();
    if (u.type == 'P') {
      auto& [name, d] = parsed[next_parse++];
      const std::string* a = answers[next_answer++];
      // The Router needs the types to read the Bind's binary values.
      if (RouterOf(c).param_types().Find(d.key) == nullptr) {
        wire::Frame f;
        size_t used = 0;
        if (wire::NextFrame(*a, a->size(), &f, &used).ok() && used > 0 && f.type == 't') {
          RouterOf(c).LearnParamTypes(d.key, f.body);
        }
      }
      d.answered = *a;
      c->stmts[name] = std::move(d);
      wire::AppendEmpty(&c->out, '1');
    } else if (u.type == 'D') {
      c->out.append(*answers[next_answer++]);
    } else if (u.type == 'S') {
      const char status = c->backend != nullptr ? c->backend->status : c->held_begin.empty() ? 'I' : 'T';
      ClientReady(c, status);
    }
  }
  stats_.describes_answered++;
  MarkDirty(c);
  return true;
}

// A unit of named Parses and a Sync only (libpq's PQprepare) outside a
// transaction needs no backend: the statements are recorded for the client
// and prepared on demand where its transactions land. A syntax error is
// reported here (libpg_query); other errors (a missing table) come with the
// first execution. Answering locally also keeps synchronous PQprepare calls
// of a single-threaded client from waiting behind its own open transactions.
bool Proxy::Loop::AnswerPrepareOnly(Client* c, size_t end) {
  if (c->pending[end].type != 'S') return false;
  for (size_t i = 0; i < end; ++i) {
    const Msg& u = c->pending[i];
    if (u.type != 'P') return false;
    wire::Reader r(u.body());
    if (r.CString().empty()) return false;
  }
  if (end == 0) return false;
  bool failed = false;
  for (size_t i = 0; i <= end; ++i) {
    Msg u = std::move(c->pending.front());
    c->pending.pop_front();
    if (u.type == 'S') {
      ClientReady(c, c->held_begin.empty() ? 'I' : (failed ? 'E' : 'T'));
      break;
    }
    if (failed) continue;
    std::string name;
    PreparedDef d = PreparedDef::FromParse(u.body(), &name);
    if (absl::Status st = RouterOf(c).CheckSyntax(d.query); !st.ok()) {
      ClientError(c, "42601", st.message());
      failed = true;
      continue;
    }
    RefuseInDef(c, &d);
    c->stmts[name] = std::move(d);
    wire::AppendEmpty(&c->out, '1');
  }
  MarkDirty(c);
  return true;
}

std::string Proxy::Loop::EnsurePrepared(Backend* b, const PreparedDef& d, bool client_parse) {
  std::string msgs;
  std::string name = b->cache.Ensure(d, client_parse, &b->batches.back(), &msgs);
  if (!msgs.empty()) {
    if (!client_parse) stats_.parses_injected++;
    Send(b, msgs);
    if (!client_parse) CheckAnswered(b, d, name);
  }
  return name;
}

bool Proxy::Loop::RefuseInDef(Client* c, PreparedDef* d) {
  if (!d->may_change_session) return false;
  absl::optional<Refusal> refusal = c->sess.RefusalFor(d->query);  // Parse runs nothing: only ask
  if (!refusal) return false;
  d->query = refusal->AsSql();
  d->plain_read = -1;
  d->key = absl::StrCat(d->query, absl::string_view("\0", 1), d->types);
  d->may_change_session = StatementMayChangeSession(d->query);
  d->may_change_catalog = StatementMayChangeCatalog(d->query);
  return true;
}

void Proxy::Loop::DescribeForTypes(Backend* b, const std::string& key, const std::string& backend_name) {
  Batch& open = b->batches.back();
  for (const DescribeEntry& e : open.describes) {
    if (e.key == key) return;  // asked in this batch already (by the proxy or the client)
  }
  std::string msg;
  AppendStatementMessage(&msg, 'D', backend_name);
  Send(b, msg);
  open.describes.push_back(DescribeEntry{true, key});
  stats_.describes_injected++;
}

void Proxy::Loop::EnsureUnnamed(Backend* b, const PreparedDef& d) {
  if (b->unnamed_key == d.key) return;
  b->batches.back().parses.push_back(ParseEntry{true, ""});
  std::string msg;
  wire::AppendParse(&msg, "", d.query, d.types);
  Send(b, msg);
  b->unnamed_key = d.key;
  stats_.parses_injected++;
  CheckAnswered(b, d, "");
}

void Proxy::Loop::CheckAnswered(Backend* b, const PreparedDef& d, const std::string& backend_name) {
  if (d.answered.empty()) return;
  std::string msg;
  AppendStatementMessage(&msg, 'D', backend_name);
  Send(b, msg);
  DescribeEntry e;
  e.drop = true;
  e.key = d.key;
  e.expect = d.answered;
  b->batches.back().describes.push_back(std::move(e));
}

void Proxy::Loop::AnswerStale(Client* c, Backend* b) {
  // What PostgreSQL says of a prepared statement whose result type changed
  // (asyncpg re-prepares and retries it outside a transaction).
  wire::AppendError(&c->out, "ERROR", "0A000", "cached plan must not change result type", "",
                    "RevalidateCachedQuery");
  c->sess.OnError();
  c->route.had_error = true;
  char status = b->status;
  if (status == 'T') {  // the statement ran: fail the transaction, as the server would have
    SendInternal(b, "DO $$BEGIN RAISE EXCEPTION 'corral: a cached statement description went stale'; END$$");
    status = 'E';
  }
  ClientReady(c, status);
  MarkDirty(c);
}

void Proxy::Loop::ForwardBind(Client* c, Backend* b, absl::string_view raw, bool extract) {
  const absl::string_view body = raw.substr(5);
  wire::Reader r(body);
  absl::string_view portal = r.CString();
  std::string stmt(r.CString());
  auto it = c->stmts.find(stmt);  // "" is the client's last unnamed statement
  // Remember the portal's statement when running it may change the session.
  if (it != c->stmts.end() && it->second.may_change_session) {
    c->portal_sql[std::string(portal)] = it->second.query;
  } else if (!c->portal_sql.empty()) {
    c->portal_sql.erase(std::string(portal));
  }
  if (it == c->stmts.end()) {
    Send(b, raw);
    return;
  }
  const PreparedDef& d = it->second;
  if (d.may_change_catalog) CatalogChanged(b);
  if (stmt.empty()) {
    EnsureUnnamed(b, d);
    if (RouterOf(c).NeedsParamTypes(d, body)) DescribeForTypes(b, d.key, "");
    if (extract) RouterOf(c).AddBind(d, body, &c->route);
    Send(b, raw);
    return;
  }
  const std::string bname = EnsurePrepared(b, d, false);
  if (RouterOf(c).NeedsParamTypes(d, body)) DescribeForTypes(b, d.key, bname);
  if (extract) RouterOf(c).AddBind(d, body, &c->route);
  std::string msg;
  wire::AppendBind(&msg, portal, bname, r.rest());
  Send(b, msg);
}

// Whether message `type` (body `body`) is a COMMIT or ROLLBACK that ends
// the client's transaction block: a simple Query's, or a Bind of a statement
// whose text is one.
bool Proxy::Loop::EndsBlock(const Client* c, char type, absl::string_view body) const {
  wire::Reader r(body);
  absl::string_view sql;
  if (type == 'Q') {
    sql = r.CString();
  } else if (type == 'B') {
    r.CString();  // the portal
    const auto it = c->stmts.find(r.CString());
    if (it == c->stmts.end()) return false;
    sql = it->second.query;
  } else {
    return false;
  }
  const TxnControl tc = ClassifyTxnControl(sql);
  return tc == TxnControl::kCommit || tc == TxnControl::kRollback;
}

// Every statement of a transaction adds its references (for the History at
// its outcome); those of the unit that routed it were taken then.
void Proxy::Loop::Forward(Client* c, Backend* b, char type, absl::string_view raw) {
  const absl::string_view body = raw.substr(5);
  NoteReplayMessage(c, type, raw);
  bool extract = c->routed_ahead == 0;
  if (!extract) --c->routed_ahead;
  if (c->route.free_block) {
    // A READ ONLY block's statements: nothing to learn, up to its end (a
    // COMMIT or ROLLBACK by simple Query or, as pgjdbc sends it, bound; in
    // the unit that routed the block or later): what is pipelined behind
    // it is learned.
    extract = false;
    if (EndsBlock(c, type, body)) c->route.free_block = false;
  } else if (extract) {
    // A message beyond a free read's unit (pipelined before its
    // ReadyForQuery): what runs now is learned as any transaction's.
    c->route.conflict_free = false;
  }
  Batch& open = b->batches.back();
  open.msgs++;
  wire::Reader r(body);
  switch (type) {
    case 'Q': {
      // Session state (session_params.h): SET ... noted, refused statements
      // replaced by the DO block that raises the refusal on the server.
      const absl::string_view sql = r.CString();
      b->unnamed_key.clear();  // a simple Query drops the unnamed statement
      if (StatementMayChangeCatalog(sql)) CatalogChanged(b);
      if (extract) RouterOf(c).AddQuery(sql, &c->route);
      const absl::optional<Refusal> refusal = c->sess.OnStatement(sql);  // pre-filters itself
      if (refusal) {
        std::string q;
        wire::AppendQuery(&q, refusal->AsSql());
        Send(b, q);
      } else {
        Send(b, raw);
      }
      EndBatch(b);
      if (b->wrap_pending) WrapCommit(b);
      FoldClusterUnlock(b, sql, c->pool->db->replay);
      return;
    }
    case 'S':
    case 'F':
      Send(b, raw);
      EndBatch(b);
      if (b->wrap_pending) WrapCommit(b);
      return;
    case 'P': {
      std::string name;
      PreparedDef d = PreparedDef::FromParse(body, &name);
      // A statement that must not run under transaction pooling becomes the
      // DO block that raises its refusal (session_params.h).
      const bool refused = RefuseInDef(c, &d);
      if (name.empty()) {  // the unnamed statement: as it is, unless refused
        open.parses.push_back(ParseEntry{false, ""});
        if (!refused) {
          Send(b, raw);
        } else {
          std::string msg;
          wire::AppendParse(&msg, "", d.query, d.types);
          Send(b, msg);
        }
        b->unnamed_key = d.key;
      } else {
        EnsurePrepared(b, d, /*client_parse=*/true);
      }
      c->stmts[name] = std::move(d);
      return;
    }
    case 'E': {
      // The statement behind the portal runs now: its session effects.
      if (!c->portal_sql.empty()) {
        auto it = c->portal_sql.find(r.CString());
        if (it != c->portal_sql.end()) c->sess.OnStatement(it->second);
      }
      Send(b, raw);
      return;
    }
    case 'B':
      ForwardBind(c, b, raw, extract);
      return;
    case 'D':
    case 'C': {
      const uint8_t what = r.Byte();
      std::string name(r.CString());
      if (type == 'C') open.closes.push_back(false);
      auto it = what == 'S' ? c->stmts.find(name) : c->stmts.end();
      if (type == 'D' && what == 'S') {
        if (name.empty() && it != c->stmts.end()) EnsureUnnamed(b, it->second);
        // Its ParameterDescription teaches the statement's types, and the
        // whole answer goes to the DescribeCache.
        DescribeEntry e;
        if (it != c->stmts.end()) {
          e.key = it->second.key;
          if (!it->second.may_change_session) {
            e.answer_key = DescribeKey(c, it->second);
            e.gen = describe_cache_.generation();
          }
        }
        open.describes.push_back(std::move(e));
      }
      if (what != 'S' || name.empty()) {
        Send(b, raw);
        return;
      }
      std::string bname;
      if (type == 'C') {
        c->stmts.erase(name);
        bname = "corral_closed";  // closing a missing statement is not an error
      } else {
        if (it == c->stmts.end()) {
          Send(b, raw);
          return;
        }
        bname = EnsurePrepared(b, it->second, false);
      }
      std::string msg;
      AppendStatementMessage(&msg, type, bname);
      Send(b, msg);
      return;
    }
    default:
      Send(b, raw);
      return;
  }
}

}  // namespace proxy
}  // namespace corral
