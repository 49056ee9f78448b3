// Proxy: the public face (proxy.h). Creates the scheduler, reads the auth
// file and the catalog, and runs Proxy::Loop (proxy_internal.h) on its own
// thread.
#include "adapters/proxy/proxy.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "adapters/proxy/auth.h"
#include "adapters/proxy/config.h"
#include "adapters/proxy/proxy_internal.h"

namespace corral {
namespace proxy {

std::string ServerConninfo(const Options& o) {
  DatabaseEntry e;
  e.host = o.server_host;
  e.port = o.server_port;
  e.dbname = o.server_dbname;
  return ServerConninfo(o, e, o.server_user, o.server_password);
}

std::string ServerConninfo(const Options& o, const DatabaseEntry& e, const std::string& user,
                           const std::string& password) {
  // A stored hash is no password for libpq.
  const bool plain = !password.empty() && !auth::IsStoredSecret(password);
  std::string s = absl::StrCat("host=", e.host, " port=", e.port, " user=", user, " dbname=", e.dbname,
                               plain ? absl::StrCat(" password=", password) : "");
  // libpq's sslmode has the same names; "allow" is plain first here too.
  absl::StrAppend(&s, " sslmode=", o.server_tls_sslmode);
  if (!o.server_tls_ca_file.empty()) absl::StrAppend(&s, " sslrootcert=", o.server_tls_ca_file);
  if (!o.server_tls_cert_file.empty()) absl::StrAppend(&s, " sslcert=", o.server_tls_cert_file);
  if (!o.server_tls_key_file.empty()) absl::StrAppend(&s, " sslkey=", o.server_tls_key_file);
  return s;
}

scheduler::Scheduler::Options SchedulerOptionsFor(const Options& o, int pool_size) {
  scheduler::Scheduler::Options so;
  so.num_queues = pool_size;
  so.policy = o.policy;
  so.autopolicy.enabled = o.auto_policy;
  // A PostgreSQL transaction takes milliseconds: auto's windows stay at
  // 300 ms (hundreds of commits each), longer than the engine's.
  so.autopolicy.window_ns = 300000000;
  so.autopolicy.settle_ns = 60000000;
  so.history.half_life_ns = static_cast<int64_t>(o.history_half_life_s * 1e9);
  so.history.commit_doorkeeper_log2_bits = o.history_doorkeeper_log2_bits;
  so.stealing = o.stealing;
  so.split.enabled = o.split;
  // Names the split lead of a transaction it places (Txn::placed_by): the
  // lead's conflicts are its own (Router::RecordConflict) and in-flight
  // stealing does not serialize the split (Loop::SplitLead). The proxy
  // records other conflicts on every reference as before (Router::Finish).
  so.schedule.lead_attributed_aborts = o.split;
  so.split.rule.max_k = std::min(o.split_max_k, pool_size);
  so.split.window_ns = o.split_window_ms * 1000000;
  // A window holds hundreds of PostgreSQL transactions, not thousands:
  // a backend counts from 10 starts.
  so.split.min_started = 10;
  // Closed-loop clients: a step must also raise the commits (require_gain).
  so.split.rule.require_gain = true;
  // No rebalancing: in-flight stealing already lets an idle backend take a
  // waiting transaction whose references no running one holds, so two busy
  // references on one backend's queue do not wait for each other.
  so.split.rebalance = false;
  return so;
}

std::string CatalogConninfo(const Options& o, const DatabaseEntry& e) {
  const bool forced = !e.user.empty();
  return ServerConninfo(o, e, forced ? e.user : o.server_user, forced ? e.password : o.server_password);
}

absl::StatusOr<std::shared_ptr<const Schema>> LoadCatalogFor(const Options& o, const DatabaseEntry& e) {
  return LoadCatalogSchema(CatalogConninfo(o, e), !o.cluster_name.empty());
}

absl::Status MakeTlsContexts(const Options& o, std::unique_ptr<tls::Context>* clients,
                             std::unique_ptr<tls::Context>* server) {
  auto cmode = tls::ParseMode(o.client_tls_sslmode);
  if (!cmode.ok()) return absl::InvalidArgumentError(absl::StrCat("client_tls_sslmode ", cmode.status().message()));
  auto smode = tls::ParseMode(o.server_tls_sslmode);
  if (!smode.ok()) return absl::InvalidArgumentError(absl::StrCat("server_tls_sslmode ", smode.status().message()));
  clients->reset();
  server->reset();
  if (*cmode != tls::Mode::kDisable) {
    auto c = tls::Context::ForClients(o.client_tls_cert_file, o.client_tls_key_file, o.client_tls_ca_file, *cmode);
    if (!c.ok()) return c.status();
    *clients = std::move(*c);
  }
  if (*smode != tls::Mode::kDisable && *smode != tls::Mode::kAllow) {
    auto s = tls::Context::ForServer(*smode, o.server_tls_ca_file, o.server_tls_cert_file, o.server_tls_key_file,
                                     o.server_host);
    if (!s.ok()) return s.status();
    *server = std::move(*s);
  }
  return absl::OkStatus();
}

Proxy::Proxy(const Options& options) : options_(options) {}

Proxy::~Proxy() { Stop(); }

absl::StatusOr<std::unique_ptr<Proxy>> Proxy::Create(const Options& options) {
  if (options.pool_size < 1) return absl::InvalidArgumentError("pool_size must be at least 1");
  if (options.auth_type != "trust" && options.auth_type != "md5" && options.auth_type != "scram-sha-256") {
    return absl::InvalidArgumentError(
        absl::StrCat("auth_type must be trust, md5 or scram-sha-256, not '", options.auth_type, "'"));
  }
  if (absl::Status st = CheckSafeDefaults(options); !st.ok()) return st;
  if (options.workers < 1) return absl::InvalidArgumentError("workers must be at least 1");
  {  // bad TLS settings or files: refuse before anything connects
    std::unique_ptr<tls::Context> c, s;
    if (absl::Status st = MakeTlsContexts(options, &c, &s); !st.ok()) return st;
  }
  std::unique_ptr<Proxy> p(new Proxy(options));
  const bool auth_query = !options.auth_user.empty() ||
                          std::any_of(options.databases.begin(), options.databases.end(),
                                      [](const auto& d) { return !d.second.auth_user.empty(); });
  if (p->options_.users.empty() && p->options_.auth_file.empty() && p->options_.auth_type != "trust" &&
      !auth_query) {
    return absl::InvalidArgumentError(absl::StrCat("auth_type ", p->options_.auth_type,
                                                   " needs auth_file (\"user\" \"password\" lines) or auth_user"));
  }
  if (p->options_.users.empty() && !p->options_.auth_file.empty()) {
    std::ifstream in(p->options_.auth_file);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read auth_file ", p->options_.auth_file));
    std::stringstream ss;
    ss << in.rdbuf();
    auto users = auth::ParseUserList(ss.str());
    if (!users.ok()) return users.status();
    p->options_.users = *users;
  }
  auto def = FindDatabase(options, DefaultDatabase(options));
  if (!def.ok()) return def.status();
  auto s = scheduler::Scheduler::Create(SchedulerOptionsFor(options, def->pool_size), {});
  if (!s.ok()) return s.status();
  p->scheduler_ = std::move(*s);
  return p;
}

absl::Status Proxy::Start() {
  if (!loops_.empty()) return absl::FailedPreconditionError("already started");
  if (options_.schema == nullptr) {
    auto def = FindDatabase(options_, DefaultDatabase(options_));
    if (!def.ok()) return def.status();
    auto schema = LoadCatalogFor(options_, *def);
    if (!schema.ok()) {
      return absl::Status(schema.status().code(),
                          absl::StrCat("reading the catalog schema: ", schema.status().message()));
    }
    options_.schema = *schema;
    options_.schema_from_catalog = true;
  }
  const int n = options_.workers;
  if (n > 1) group_ = std::make_unique<WorkerGroup>(n);
  // Loop 0 binds the port (an ephemeral one when listen_port is 0); the
  // others bind the same one (SO_REUSEPORT). Each loop owns its Options
  // (RELOAD changes them on its own thread).
  for (int i = 0; i < n; ++i) {
    Options* o = &options_;
    if (i > 0) {
      worker_options_.push_back(std::make_unique<Options>(options_));
      o = worker_options_.back().get();
    }
    loops_.push_back(std::make_unique<Loop>(o, &stats_, scheduler_.get()));
    if (group_ != nullptr) {
      loops_.back()->SetWorker(i, group_.get());
      group_->loops.push_back(loops_.back().get());
    }
  }
  for (int i = 0; i < n; ++i) {
    absl::Status init;
    {
      tls::SigpipeBlock no_sigpipe;  // backends' TLS handshakes on this thread
      std::atomic<int> bound{0};
      if (i > 0) worker_options_[i - 1]->listen_port = port_.load();  // the port loop 0 bound
      init = loops_[i]->Init(i == 0 ? &port_ : &bound, &metrics_port_);
    }
    if (!init.ok()) {
      loops_.clear();
      worker_options_.clear();
      group_.reset();
      return init;
    }
  }
  for (int i = 0; i < n; ++i) {
    Loop* l = loops_[i].get();
    threads_.emplace_back([l] { l->Run(); });
  }
  return absl::OkStatus();
}

void Proxy::Stop() {
  if (loops_.empty()) return;
  for (auto& l : loops_) l->RequestStop();
  for (auto& t : threads_) {
    if (t.joinable()) t.join();
  }
  threads_.clear();
  loops_.clear();  // before the group they share
  worker_options_.clear();
  group_.reset();
}

void Proxy::Drain() {
  for (auto& l : loops_) l->Post(Loop::kDrain);
}
void Proxy::Pause() {
  if (group_ != nullptr) group_->want_paused.store(true);
  for (auto& l : loops_) l->Post(Loop::kPause);
}
void Proxy::Resume() {
  if (group_ != nullptr) group_->want_paused.store(false);
  for (auto& l : loops_) l->Post(Loop::kResume);
}
void Proxy::Reload() {
  for (auto& l : loops_) l->Post(Loop::kReload);
}
bool Proxy::paused() const {
  if (loops_.empty()) return false;
  for (const auto& l : loops_) {
    if (!l->pause_done()) return false;
  }
  return true;
}
bool Proxy::finished() const {
  for (const auto& l : loops_) {
    if (!l->finished()) return false;
  }
  return true;
}

std::string Proxy::MetricsText() const { return loops_.empty() ? std::string() : loops_[0]->MetricsText(); }

std::vector<Proxy::WorkerStats> Proxy::worker_stats() const {
  std::vector<WorkerStats> out;
  if (group_ == nullptr) return out;
  for (const WorkerGroup::PerWorker& p : group_->per) {
    out.push_back({p.clients.load(), p.accepted.load(), p.transactions.load(), p.key_waits.load(),
                   p.cross_waits.load()});
  }
  return out;
}

}  // namespace proxy
}  // namespace corral
