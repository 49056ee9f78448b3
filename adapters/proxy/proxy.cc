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
  return absl::StrCat("host=", o.server_host, " port=", o.server_port, " user=", o.server_user,
                      " dbname=", o.server_dbname,
                      o.server_password.empty() ? "" : absl::StrCat(" password=", o.server_password));
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
  if (absl::Status st = loop_->Init(&port_, &metrics_port_); !st.ok()) {
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
