// Proxy::Loop (see proxy_internal.h): databases and pools. A client's
// database name selects a [databases] entry (config.h's FindDatabase) at
// startup; after authentication it joins the pool of (database, server
// login), made with its backends on first use. Each Database has its own
// Scheduler (History, State), Router and catalog schema; "*" makes one per
// name asked for, at most max_fallback_databases. Also the admin console's
// SHOW DATABASES / POOLS / USERS.
#include <sys/epoll.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <map>
#include <set>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/config.h"
#include "adapters/proxy/proxy_internal.h"

namespace corral {
namespace proxy {

absl::StatusOr<Database*> Proxy::Loop::DatabaseFor(const DatabaseEntry& e) {
  auto it = dbs_.find(e.name);
  if (it != dbs_.end()) return it->second.get();
  const bool fallback = opt_.databases.count(e.name) == 0 && !opt_.databases.empty();
  if (fallback && fallback_dbs_ >= opt_.max_fallback_databases) {
    return absl::ResourceExhaustedError(absl::StrCat("no more databases from the \"*\" entry (max_fallback_databases = ",
                                                     opt_.max_fallback_databases, ")"));
  }
  auto db = std::make_unique<Database>();
  db->entry = e;
  db->fallback = fallback;
  db->key_salt = std::hash<std::string>()(e.name);
  std::shared_ptr<const Schema> schema;
  if (e.name == DefaultDatabase(opt_)) {
    db->sched = &sched_;  // Proxy::scheduler(); its catalog was read at Start
    schema = opt_.schema;
  } else {
    if (group_ != nullptr) {  // workers > 1: one Scheduler per database for every loop
      TsanVisibleMutexLock l(&group_->mu);
      std::shared_ptr<scheduler::Scheduler>& shared = group_->scheds[e.name];
      if (shared == nullptr) {
        auto s = scheduler::Scheduler::Create(SchedulerOptionsFor(opt_, e.pool_size), {});
        if (!s.ok()) return s.status();
        shared = std::move(*s);
      }
      db->shared_sched = shared;
      db->sched = shared.get();
    } else {
      auto s = scheduler::Scheduler::Create(SchedulerOptionsFor(opt_, e.pool_size), {});
      if (!s.ok()) return s.status();
      db->own_sched = std::move(*s);
      db->sched = db->own_sched.get();
    }
    // A "*" database's catalog once its first pool connected (PoolOf: the
    // name may be one the server does not know).
    if (!fallback) {
      auto read = LoadCatalogFor(opt_, e);
      if (read.ok()) {
        schema = *read;
      } else {  // routing still works on the statements' own text
        std::fprintf(stderr, "corral proxy: database \"%s\": reading the catalog: %s\n", e.name.c_str(),
                     std::string(read.status().message()).c_str());
      }
    }
    if (schema == nullptr) {
      auto empty = SchemaBuilder().Build();
      if (!empty.ok()) return empty.status();
      schema = *empty;
    }
  }
  db->router = std::make_unique<Router>(db->sched, schema, &stats_.undecodable_params);
  db->retry_routing = e.retry_routing < 0 ? opt_.retry_routing : e.retry_routing > 0;
  db->router->SetKeyFirst(db->retry_routing);  // the key serves retry routing only
  db->retries = std::make_unique<RetryMemory>(opt_.retry_memory_size);
  db->replay = e.replay < 0 ? opt_.replay : e.replay > 0;
  db->restart = e.restart_on_hot_key < 0 ? opt_.restart_on_hot_key : e.restart_on_hot_key > 0;
  if (db->restart && opt_.restart_gate) {
    db->gates = std::make_unique<CycleGates>(CycleGates::Options{});
    db->router->SetTraceFirst(true);  // its first statement's shape names the gate
  }
  if (e.templates < 0 ? opt_.templates : e.templates > 0) {
    Templates::Options to;
    to.threshold = opt_.template_threshold;
    to.max_templates = opt_.template_max;
    db->router->SetTemplates(std::make_unique<Templates>(to));
  }
  if (e.template_concurrency < 0 ? opt_.template_concurrency : e.template_concurrency > 0) {
    TemplateCap::Options co;
    co.rule.max_k = opt_.template_cap_max_k;
    co.window_ns = int64_t{opt_.template_cap_window_ms} * 1000000;
    co.min_window_ends = opt_.template_cap_window_ends;
    co.max_templates = opt_.template_max;
    db->tcap = std::make_unique<TemplateCap>(co);
    db->router->SetTraceFirst(true);  // its first statement's shape is the key
  }
  if (fallback) ++fallback_dbs_;
  StartCluster(db.get());
  Database* raw = db.get();
  dbs_[e.name] = std::move(db);
  return raw;
}

AdminTable Proxy::Loop::TemplateRows() const {
  AdminTable t;
  t.columns = {"database", "first_statement", "observations", "position", "statement", "parameters", "reliable"};
  for (const auto& [name, db] : dbs_) {
    const Templates* tp = db->router->templates();
    if (tp == nullptr) continue;
    for (std::vector<std::string>& r : tp->Rows()) {
      r.insert(r.begin(), name);
      t.rows.push_back(std::move(r));
    }
  }
  return t;
}

absl::StatusOr<std::string> Proxy::Loop::PasswordOf(Client* c) {
  auto it = opt_.users.find(c->user);
  if (it != opt_.users.end()) return it->second;
  if (c->admin || c->entry.auth_user.empty() || opt_.auth_query.empty()) {
    return absl::NotFoundError(absl::StrCat("no password for user \"", c->user, "\""));
  }
  auto au = opt_.users.find(c->entry.auth_user);
  return LookupPassword(ServerConninfo(opt_, c->entry, c->entry.auth_user, au == opt_.users.end() ? "" : au->second),
                        opt_.auth_query, c->user);
}

absl::StatusOr<Pool*> Proxy::Loop::PoolFor(Client* c, std::string* sqlstate) {
  const bool forced = !c->entry.user.empty();
  Pool creds;
  creds.user = forced ? c->entry.user : c->user;
  if (forced) {
    creds.secret = c->entry.password;
  } else {
    creds.secret = c->secret;
    creds.scram_client_key = c->scram_client_key;
    creds.scram_server_key = c->scram_server_key;
  }
  return PoolOf(c->entry, creds, sqlstate);
}

absl::StatusOr<Pool*> Proxy::Loop::PoolOf(const DatabaseEntry& e, const Pool& creds, std::string* sqlstate) {
  auto db = DatabaseFor(e);
  if (!db.ok()) return db.status();
  const auto key = std::make_pair(e.name, creds.user);
  auto it = pools_.find(key);
  if (it != pools_.end()) return it->second.get();
  auto p = std::make_unique<Pool>();
  p->db = *db;
  p->user = creds.user;
  p->secret = creds.secret;
  p->scram_client_key = creds.scram_client_key;
  p->scram_server_key = creds.scram_server_key;
  int n = e.pool_size;
  if (auto u = opt_.user_pool_size.find(creds.user); u != opt_.user_pool_size.end()) n = std::min(n, u->second);
  // workers > 1: this loop's share of the pool (the first n % workers
  // loops one more), at least one backend.
  if (group_ != nullptr) n = std::max(1, n / group_->count + (worker_ < n % group_->count ? 1 : 0));
  p->waitq.resize(n);
  for (int i = 0; i < n; ++i) {
    auto b = std::make_unique<Backend>(opt_.prepared_cache_size);
    b->pool = p.get();
    b->index = i;
    if (absl::Status st = ConnectBackend(b.get()); !st.ok()) {
      // The server's refusal (no such database, no such role, password)
      // is the client's answer; nothing of this pool stays.
      *sqlstate = b->connect_sqlstate;
      if (!b->connect_message.empty()) st = absl::UnavailableError(b->connect_message);
      for (auto& done : p->backends) {
        epoll_ctl(epfd_, EPOLL_CTL_DEL, done->fd, nullptr);
        ::close(done->fd);
        tls_pending_.erase(std::remove(tls_pending_.begin(), tls_pending_.end(), done.get()), tls_pending_.end());
      }
      if ((*db)->pools == 0 && (*db)->fallback) {  // a name the server does not know: not kept
        if (group_ != nullptr) {  // nor its shared Scheduler (other loops keep theirs alive)
          TsanVisibleMutexLock l(&group_->mu);
          auto s = group_->scheds.find(e.name);
          if (s != group_->scheds.end() && s->second == (*db)->shared_sched) group_->scheds.erase(s);
        }
        dbs_.erase(e.name);
        --fallback_dbs_;
      }
      return st;
    }
    p->backends.push_back(std::move(b));
  }
  if ((*db)->pools++ == 0 && (*db)->fallback) {
    auto schema = LoadCatalogFor(opt_, e);
    if (schema.ok()) AdoptSchema(*db, *schema);
  }
  Pool* raw = p.get();
  pools_[key] = std::move(p);
  return raw;
}

namespace {
std::string Str(int64_t v) { return std::to_string(v); }
}  // namespace

AdminTable Proxy::Loop::Databases() const {
  AdminTable t;
  t.columns = {"name", "host", "port", "database", "force_user", "pool_size", "pools", "fallback", "in_use"};
  std::set<std::string> seen;
  for (const auto& [name, db] : dbs_) {
    const DatabaseEntry& e = db->entry;
    t.rows.push_back({name, e.host, Str(e.port), e.dbname, e.user, Str(e.pool_size), Str(db->pools),
                      db->fallback ? "yes" : "no", "yes"});
    seen.insert(name);
  }
  std::vector<std::string> names;
  if (opt_.databases.empty()) names.push_back(opt_.server_dbname);
  for (const auto& [name, e] : opt_.databases) names.push_back(name);
  for (const std::string& name : names) {
    if (seen.count(name) > 0) continue;
    auto e = FindDatabase(opt_, name);
    if (!e.ok()) continue;
    t.rows.push_back({name, e->host, Str(e->port), name == "*" ? "" : e->dbname, e->user, Str(e->pool_size), "0",
                      name == "*" ? "entry" : "no", "no"});
  }
  return t;
}

AdminTable Proxy::Loop::Pools() const {
  AdminTable t;
  t.columns = {"database", "user", "cl_active", "cl_waiting", "cl_idle", "sv_active", "sv_idle", "sv_down",
               "transactions"};
  for (const auto& [key, p] : pools_) {
    int64_t cl_active = 0, cl_waiting = 0, sv_active = 0, sv_idle = 0, sv_down = 0, txns = 0;
    for (const auto& b : p->backends) {
      if (!b->alive) {
        ++sv_down;
      } else if (b->client != nullptr) {
        ++sv_active;
        ++cl_active;
      } else {
        ++sv_idle;
      }
      txns += b->txns;
    }
    for (const auto& q : p->waitq) cl_waiting += static_cast<int64_t>(q.size());
    t.rows.push_back({key.first, key.second, Str(cl_active), Str(cl_waiting),
                      Str(p->clients - cl_active - cl_waiting), Str(sv_active), Str(sv_idle), Str(sv_down),
                      Str(txns)});
  }
  return t;
}

AdminTable Proxy::Loop::Users() const {
  AdminTable t;
  t.columns = {"name", "pool_size", "clients", "pools"};
  std::map<std::string, std::pair<int64_t, int64_t>> users;  // clients, pools
  for (const auto& [name, n] : opt_.user_pool_size) users[name];
  for (const auto& [p, c] : clients_) {
    if (c->phase == Client::kReady && !c->admin) users[c->user].first++;
  }
  for (const auto& [key, p] : pools_) users[key.second].second++;
  for (const auto& [name, v] : users) {
    auto ps = opt_.user_pool_size.find(name);
    t.rows.push_back({name, ps == opt_.user_pool_size.end() ? "" : Str(ps->second), Str(v.first), Str(v.second)});
  }
  return t;
}

}  // namespace proxy
}  // namespace corral
