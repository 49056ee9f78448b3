// Proxy: the public face (proxy.h). Creates the scheduler, reads the auth
// file and the catalog, and runs Proxy::Loop (proxy_internal.h) on its own
// thread.
#include "adapters/proxy/proxy.h"

#include <fstream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "adapters/proxy/auth.h"
#include "adapters/proxy/config.h"
#include "adapters/proxy/proxy_internal.h"

namespace corral {
namespace proxy {

std::string ServerConninfo(const Options& o) {
  std::string s = absl::StrCat("host=", o.server_host, " port=", o.server_port, " user=", o.server_user,
                               " dbname=", o.server_dbname,
                               o.server_password.empty() ? "" : absl::StrCat(" password=", o.server_password));
  // libpq's sslmode has the same names; "allow" is plain first here too.
  absl::StrAppend(&s, " sslmode=", o.server_tls_sslmode);
  if (!o.server_tls_ca_file.empty()) absl::StrAppend(&s, " sslrootcert=", o.server_tls_ca_file);
  if (!o.server_tls_cert_file.empty()) absl::StrAppend(&s, " sslcert=", o.server_tls_cert_file);
  if (!o.server_tls_key_file.empty()) absl::StrAppend(&s, " sslkey=", o.server_tls_key_file);
  return s;
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
  {  // bad TLS settings or files: refuse before anything connects
    std::unique_ptr<tls::Context> c, s;
    if (absl::Status st = MakeTlsContexts(options, &c, &s); !st.ok()) return st;
  }
  std::unique_ptr<Proxy> p(new Proxy(options));
  if (p->options_.auth_type != "trust" && p->options_.users.empty()) {
    if (p->options_.auth_file.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("auth_type ", p->options_.auth_type,
                                                     " needs auth_file (\"user\" \"password\" lines)"));
    }
    std::ifstream in(p->options_.auth_file);
    if (!in) return absl::NotFoundError(absl::StrCat("cannot read auth_file ", p->options_.auth_file));
    std::stringstream ss;
    ss << in.rdbuf();
    auto users = auth::ParseUserList(ss.str());
    if (!users.ok()) return users.status();
    p->options_.users = *users;
  }
  scheduler::Scheduler::Options so;
  so.num_queues = options.pool_size;
  so.policy = options.policy;
  so.autopolicy.enabled = options.auto_policy;
  so.history.half_life_ns = static_cast<int64_t>(options.history_half_life_s * 1e9);
  so.stealing = options.stealing;
  auto s = scheduler::Scheduler::Create(so, {});
  if (!s.ok()) return s.status();
  p->scheduler_ = std::move(*s);
  return p;
}

absl::Status Proxy::Start() {
  if (loop_ != nullptr) return absl::FailedPreconditionError("already started");
  if (options_.schema == nullptr) {
    auto schema = LoadCatalogSchema(ServerConninfo(options_));
    if (!schema.ok()) {
      return absl::Status(schema.status().code(),
                          absl::StrCat("reading the catalog schema: ", schema.status().message()));
    }
    options_.schema = *schema;
  }
  loop_ = std::make_unique<Loop>(&options_, &stats_, scheduler_.get());
  absl::Status init;
  {
    tls::SigpipeBlock no_sigpipe;  // backends' TLS handshakes on this thread
    init = loop_->Init(&port_, &metrics_port_);
  }
  if (absl::Status st = init; !st.ok()) {
    loop_.reset();
    return st;
  }
  thread_ = std::thread([this] { loop_->Run(); });
  return absl::OkStatus();
}

void Proxy::Stop() {
  if (loop_ == nullptr) return;
  loop_->RequestStop();
  if (thread_.joinable()) thread_.join();
  loop_.reset();
}

void Proxy::Drain() {
  if (loop_) loop_->Post(Loop::kDrain);
}
void Proxy::Pause() {
  if (loop_) loop_->Post(Loop::kPause);
}
void Proxy::Resume() {
  if (loop_) loop_->Post(Loop::kResume);
}
void Proxy::Reload() {
  if (loop_) loop_->Post(Loop::kReload);
}
bool Proxy::paused() const { return loop_ && loop_->pause_done(); }
bool Proxy::finished() const { return loop_ == nullptr || loop_->finished(); }

std::string Proxy::MetricsText() const { return loop_ ? loop_->MetricsText() : std::string(); }

}  // namespace proxy
}  // namespace corral
