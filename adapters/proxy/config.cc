#include "adapters/proxy/config.h"

#include <fstream>
#include <set>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "adapters/proxy/net.h"
#include "adapters/proxy/tls.h"

namespace corral {
namespace proxy {
namespace {

absl::Status Int(absl::string_view key, absl::string_view v, int64_t lo, int64_t hi, int64_t* out) {
  int64_t x = 0;
  if (!absl::SimpleAtoi(v, &x) || x < lo || x > hi) {
    return absl::InvalidArgumentError(
        absl::StrCat(key, " must be an integer in [", lo, ", ", hi, "], not '", v, "'"));
  }
  *out = x;
  return absl::OkStatus();
}

absl::Status OnOff(absl::string_view key, absl::string_view value, bool* out) {
  const std::string v = absl::AsciiStrToLower(value);
  if (v == "1" || v == "on" || v == "true" || v == "yes") {
    *out = true;
  } else if (v == "0" || v == "off" || v == "false" || v == "no") {
    *out = false;
  } else {
    return absl::InvalidArgumentError(absl::StrCat(key, " must be on or off, not '", value, "'"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ParseEntryFields(absl::string_view what, absl::string_view value, DatabaseEntry* e) {
  int64_t n = 0;
  for (absl::string_view kv : absl::StrSplit(value, ' ', absl::SkipWhitespace())) {
    const size_t eq = kv.find('=');
    if (eq == absl::string_view::npos) {
      return absl::InvalidArgumentError(absl::StrCat(what, ": '", kv, "' is not key=value"));
    }
    absl::string_view k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "host" || k == "hostaddr") {
      e->host = std::string(v);
    } else if (k == "port") {
      if (auto st = Int("port", v, 1, 65535, &n); !st.ok()) return st;
      e->port = static_cast<int>(n);
    } else if (k == "user") {
      e->user = std::string(v);
    } else if (k == "dbname") {
      e->dbname = std::string(v);
    } else if (k == "password") {
      e->password = std::string(v);
    } else if (k == "pool_size") {
      if (auto st = Int("pool_size", v, 1, 1024, &n); !st.ok()) return st;
      e->pool_size = static_cast<int>(n);
    } else if (k == "auth_user") {
      e->auth_user = std::string(v);
    } else if (k == "retry_routing") {
      bool on = false;
      if (auto st = OnOff("retry_routing", v, &on); !st.ok()) return st;
      e->retry_routing = on ? 1 : 0;
    } else if (k == "templates") {
      bool on = false;
      if (auto st = OnOff("templates", v, &on); !st.ok()) return st;
      e->templates = on ? 1 : 0;
    } else if (k == "template_concurrency") {
      bool on = false;
      if (auto st = OnOff("template_concurrency", v, &on); !st.ok()) return st;
      e->template_concurrency = on ? 1 : 0;
    } else if (k == "replay") {
      bool on = false;
      if (auto st = OnOff("replay", v, &on); !st.ok()) return st;
      e->replay = on ? 1 : 0;
    } else if (k == "restart_on_hot_key") {
      bool on = false;
      if (auto st = OnOff("restart_on_hot_key", v, &on); !st.ok()) return st;
      e->restart_on_hot_key = on ? 1 : 0;
    }  // other libpq / PgBouncer keys (connect_timeout, pool_mode, ...) do not apply
  }
  return absl::OkStatus();
}

absl::Status ApplyDatabaseLine(absl::string_view name_in, absl::string_view value, Options* o) {
  const std::string name(absl::StripAsciiWhitespace(name_in));
  if (name.empty()) return absl::InvalidArgumentError("a [databases] entry needs a name");
  if (name == o->admin_dbname) {
    return absl::InvalidArgumentError(absl::StrCat("database '", name, "' is the admin console's (admin_dbname)"));
  }
  DatabaseEntry e;
  e.name = name;
  if (auto st = ParseEntryFields(absl::StrCat("database ", name), absl::StripAsciiWhitespace(value), &e);
      !st.ok()) {
    return st;
  }
  if (!e.password.empty() && e.user.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("database ", name, ": password= needs user="));
  }
  o->databases[name] = std::move(e);
  return absl::OkStatus();
}

absl::Status ApplyUserLine(absl::string_view name_in, absl::string_view value, Options* o) {
  const std::string name(absl::StripAsciiWhitespace(name_in));
  if (name.empty()) return absl::InvalidArgumentError("a [users] entry needs a name");
  int64_t n = 0;
  for (absl::string_view kv : absl::StrSplit(value, ' ', absl::SkipWhitespace())) {
    const size_t eq = kv.find('=');
    if (eq == absl::string_view::npos || kv.substr(0, eq) != "pool_size") {
      return absl::InvalidArgumentError(absl::StrCat("user ", name, ": only pool_size=N is known, not '", kv, "'"));
    }
    if (auto st = Int("pool_size", kv.substr(eq + 1), 1, 1024, &n); !st.ok()) return st;
    o->user_pool_size[name] = static_cast<int>(n);
  }
  return absl::OkStatus();
}

absl::StatusOr<DatabaseEntry> FindDatabase(const Options& o, const std::string& name) {
  DatabaseEntry e;
  if (o.databases.empty()) {
    if (name != o.server_dbname) {
      return absl::NotFoundError(absl::StrCat("database \"", name, "\" does not exist"));
    }
    e.name = name;
    e.user = o.server_user;
    e.password = o.server_password;
  } else {
    auto it = o.databases.find(name);
    if (it == o.databases.end()) it = o.databases.find("*");
    if (it == o.databases.end()) {
      return absl::NotFoundError(absl::StrCat("database \"", name, "\" does not exist"));
    }
    e = it->second;
    e.name = name;
  }
  if (e.host.empty()) e.host = o.server_host;
  if (e.port == 0) e.port = o.server_port;
  if (e.dbname.empty()) e.dbname = name;
  if (e.pool_size == 0) e.pool_size = o.pool_size;
  if (e.auth_user.empty()) e.auth_user = o.auth_user;
  return e;
}

std::string DefaultDatabase(const Options& o) {
  if (o.databases.empty()) return o.server_dbname;
  for (const auto& [name, e] : o.databases) {
    if (name != "*") return name;
  }
  return o.server_dbname;
}

absl::Status ApplyConfigLine(absl::string_view key_in, absl::string_view value_in, Options* o) {
  const std::string key = absl::AsciiStrToLower(absl::StripAsciiWhitespace(key_in));
  absl::string_view value = absl::StripAsciiWhitespace(value_in);
  if (value.size() >= 2 && (value.front() == '\'' || value.front() == '"') && value.back() == value.front()) {
    value = value.substr(1, value.size() - 2);
  }
  int64_t n = 0;
  if (key == "listen_addr") {
    o->listen_addr = std::string(value);
  } else if (key == "client_output_limit_bytes") {
    if (auto st = Int(key, value, 0, int64_t{1} << 40, &n); !st.ok()) return st;
    o->client_output_limit_bytes = static_cast<size_t>(n);
  } else if (key == "listen_port") {
    if (auto st = Int(key, value, 0, 65535, &n); !st.ok()) return st;
    o->listen_port = static_cast<int>(n);
  } else if (key == "pool_size" || key == "default_pool_size") {
    if (auto st = Int(key, value, 1, 1024, &n); !st.ok()) return st;
    o->pool_size = static_cast<int>(n);
  } else if (key == "workers") {
    if (auto st = Int(key, value, 1, 256, &n); !st.ok()) return st;
    o->workers = static_cast<int>(n);
  } else if (key == "worker_lock_threshold") {
    if (!absl::SimpleAtod(value, &o->worker_lock_threshold) || !(o->worker_lock_threshold > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("worker_lock_threshold must be a number > 0, not '", value, "'"));
    }
  } else if (key == "max_client_conn") {
    if (auto st = Int(key, value, 1, 1000000, &n); !st.ok()) return st;
    o->max_client_conn = static_cast<int>(n);
  } else if (key == "auth_type") {
    const std::string v = absl::AsciiStrToLower(value);
    if (v != "trust" && v != "md5" && v != "scram-sha-256") {
      return absl::InvalidArgumentError(
          absl::StrCat("auth_type must be trust, md5 or scram-sha-256, not '", value, "'"));
    }
    o->auth_type = v;
  } else if (key == "auth_file") {
    o->auth_file = std::string(value);
  } else if (key == "server_host") {
    o->server_host = std::string(value);
  } else if (key == "server_port") {
    if (auto st = Int(key, value, 1, 65535, &n); !st.ok()) return st;
    o->server_port = static_cast<int>(n);
  } else if (key == "server_user") {
    o->server_user = std::string(value);
  } else if (key == "server_password") {
    o->server_password = std::string(value);
  } else if (key == "server_dbname") {
    o->server_dbname = std::string(value);
  } else if (key == "server_conninfo") {
    DatabaseEntry e;
    if (auto st = ParseEntryFields(key, value, &e); !st.ok()) return st;
    if (!e.host.empty()) o->server_host = e.host;
    if (e.port != 0) o->server_port = e.port;
    if (!e.user.empty()) o->server_user = e.user;
    if (!e.dbname.empty()) o->server_dbname = e.dbname;
    if (!e.password.empty()) o->server_password = e.password;
  } else if (key == "auth_user") {
    o->auth_user = std::string(value);
  } else if (key == "auth_query") {
    o->auth_query = std::string(value);
  } else if (key == "max_fallback_databases") {
    if (auto st = Int(key, value, 1, 100000, &n); !st.ok()) return st;
    o->max_fallback_databases = static_cast<int>(n);
  } else if (key == "policy") {
    o->auto_policy = absl::AsciiStrToLower(value) == "auto";
    auto p = o->auto_policy ? absl::StatusOr<Policy>(scheduler::Scheduler::DefaultAutoArms()[0]) : ParsePolicy(value);
    if (!p.ok()) return p.status();
    o->policy = *p;
  } else if (key == "history_half_life_s") {
    if (!absl::SimpleAtod(value, &o->history_half_life_s) || o->history_half_life_s < 0) {
      return absl::InvalidArgumentError(absl::StrCat("history_half_life_s must be a number >= 0, not '", value, "'"));
    }
  } else if (key == "history_doorkeeper_log2_bits") {
    if (auto st = Int(key, value, 0, 30, &n); !st.ok()) return st;
    if (n > 0 && n < 10) return absl::InvalidArgumentError("history_doorkeeper_log2_bits must be 0 (off) or 10..30");
    o->history_doorkeeper_log2_bits = static_cast<int>(n);
  } else if (key == "split") {
    return OnOff(key, value, &o->split);
  } else if (key == "free_reads") {
    return OnOff(key, value, &o->free_reads);
  } else if (key == "split_max_k") {
    if (auto st = Int(key, value, 2, scheduler::HotSpots::kMaxSet, &n); !st.ok()) return st;
    o->split_max_k = static_cast<int>(n);
  } else if (key == "split_window_ms") {
    if (auto st = Int(key, value, 50, 60000, &n); !st.ok()) return st;
    o->split_window_ms = n;
  } else if (key == "stealing") {
    const std::string v = absl::AsciiStrToLower(value);
    o->steal_inflight = false;
    if (v == "on" || v == "1" || v == "true" || v == "yes") {
      o->stealing = true;
      o->steal_any = false;
      o->steal_inflight = true;
    } else if (v == "affinity") {
      o->stealing = true;
      o->steal_any = false;
    } else if (v == "any") {
      o->stealing = true;
      o->steal_any = true;
    } else if (v == "off" || v == "0" || v == "false" || v == "no") {
      o->stealing = false;
      o->steal_any = false;
    } else {
      return absl::InvalidArgumentError(
          absl::StrCat("stealing must be on, affinity, any or off, not '", value, "'"));
    }
  } else if (key == "cluster_name") {
    o->cluster_name = std::string(value);
  } else if (key == "cluster_proxy_id") {
    o->cluster_proxy_id = std::string(value);
  } else if (key == "cluster_publish_interval_ms") {
    if (auto st = Int(key, value, 50, 3600 * 1000, &n); !st.ok()) return st;
    o->cluster_publish_interval_ms = n;
  } else if (key == "cluster_relock_tries") {
    if (auto st = Int(key, value, 1, 100, &n); !st.ok()) return st;
    o->cluster_relock_tries = static_cast<int>(n);
  } else if (key == "cluster_restart_hold_ms") {
    if (auto st = Int(key, value, 0, 60000, &n); !st.ok()) return st;
    o->cluster_restart_hold_ms = static_cast<int>(n);
  } else if (key == "cluster_lock") {
    if (value == "advisory" || value == "table") {
      o->cluster_table_locks = value == "table";
    } else {
      return absl::InvalidArgumentError(absl::StrCat("cluster_lock must be advisory or table, not '", value, "'"));
    }
  } else if (key == "cluster_fold_unlock") {
    return OnOff(key, value, &o->cluster_fold_unlock);
  } else if (key == "cluster_hot_threshold") {
    if (!absl::SimpleAtod(value, &o->cluster_hot_threshold) || !(o->cluster_hot_threshold > 0)) {
      return absl::InvalidArgumentError(absl::StrCat("cluster_hot_threshold must be a number > 0, not '", value, "'"));
    }
  } else if (key == "steal_after_ms") {
    if (auto st = Int(key, value, 0, 86400 * 1000, &n); !st.ok()) return st;
    o->steal_after_ms = n;
  } else if (key == "query_wait_timeout") {
    if (auto st = Int(key, value, 0, 86400 * 365, &n); !st.ok()) return st;
    o->query_wait_timeout_ms = n * 1000;
  } else if (key == "metrics_port") {
    if (auto st = Int(key, value, -1, 65535, &n); !st.ok()) return st;
    o->metrics_port = static_cast<int>(n);
  } else if (key == "max_packet_size") {
    if (auto st = Int(key, value, 1024, int64_t{1} << 30, &n); !st.ok()) return st;
    o->max_message_bytes = static_cast<size_t>(n);
  } else if (key == "max_prepared_statements") {
    if (auto st = Int(key, value, 1, 1 << 20, &n); !st.ok()) return st;
    o->prepared_cache_size = static_cast<size_t>(n);
  } else if (key == "client_tls_sslmode" || key == "server_tls_sslmode") {
    auto m = tls::ParseMode(value);
    if (!m.ok()) return absl::InvalidArgumentError(absl::StrCat(key, " ", m.status().message()));
    (key == "client_tls_sslmode" ? o->client_tls_sslmode : o->server_tls_sslmode) = tls::ModeName(*m);
  } else if (key == "client_tls_cert_file") {
    o->client_tls_cert_file = std::string(value);
  } else if (key == "client_tls_key_file") {
    o->client_tls_key_file = std::string(value);
  } else if (key == "client_tls_ca_file") {
    o->client_tls_ca_file = std::string(value);
  } else if (key == "server_tls_ca_file") {
    o->server_tls_ca_file = std::string(value);
  } else if (key == "server_tls_cert_file") {
    o->server_tls_cert_file = std::string(value);
  } else if (key == "server_tls_key_file") {
    o->server_tls_key_file = std::string(value);
  } else if (key == "admin_dbname") {
    o->admin_dbname = std::string(value);
  } else if (key == "admin_users" || key == "stats_users") {
    std::set<std::string>& users = key == "admin_users" ? o->admin_users : o->stats_users;
    users.clear();
    for (absl::string_view u : absl::StrSplit(value, ',', absl::SkipWhitespace())) {
      users.insert(std::string(absl::StripAsciiWhitespace(u)));
    }
  } else if (key == "retry_routing") {
    if (auto st = OnOff(key, value, &o->retry_routing); !st.ok()) return st;
  } else if (key == "templates") {
    if (auto st = OnOff(key, value, &o->templates); !st.ok()) return st;
  } else if (key == "template_threshold") {
    double d = 0;
    if (!absl::SimpleAtod(value, &d) || d <= 0 || d > 1) {
      return absl::InvalidArgumentError(absl::StrCat("template_threshold must be in (0, 1], not '", value, "'"));
    }
    o->template_threshold = d;
  } else if (key == "template_concurrency") {
    if (auto st = OnOff(key, value, &o->template_concurrency); !st.ok()) return st;
  } else if (key == "template_cap_max_k") {
    if (auto st = Int(key, value, 1, 1024, &n); !st.ok()) return st;
    o->template_cap_max_k = static_cast<int>(n);
  } else if (key == "template_cap_window_ms") {
    if (auto st = Int(key, value, 1, 60000, &n); !st.ok()) return st;
    o->template_cap_window_ms = static_cast<int>(n);
  } else if (key == "template_cap_window_ends") {
    if (auto st = Int(key, value, 1, 1000000, &n); !st.ok()) return st;
    o->template_cap_window_ends = static_cast<int>(n);
  } else if (key == "template_max") {
    if (auto st = Int(key, value, 0, int64_t{1} << 20, &n); !st.ok()) return st;
    o->template_max = static_cast<size_t>(n);
  } else if (key == "replay") {
    if (auto st = OnOff(key, value, &o->replay); !st.ok()) return st;
  } else if (key == "restart_on_hot_key") {
    if (auto st = OnOff(key, value, &o->restart_on_hot_key); !st.ok()) return st;
  } else if (key == "restart_after_release") {
    if (auto st = OnOff(key, value, &o->restart_after_release); !st.ok()) return st;
  } else if (key == "restart_gate") {
    if (auto st = OnOff(key, value, &o->restart_gate); !st.ok()) return st;
  } else if (key == "replay_buffer_bytes") {
    if (auto st = Int(key, value, 0, int64_t{1} << 30, &n); !st.ok()) return st;
    o->replay_buffer_bytes = static_cast<size_t>(n);
  } else if (key == "replay_max_attempts") {
    if (auto st = Int(key, value, 1, 100, &n); !st.ok()) return st;
    o->replay_max_attempts = static_cast<int>(n);
  } else if (key == "retry_memory_size") {
    if (auto st = Int(key, value, 0, int64_t{1} << 24, &n); !st.ok()) return st;
    o->retry_memory_size = static_cast<size_t>(n);
  } else if (key == "allow_trust_on_network") {
    const std::string v = absl::AsciiStrToLower(value);
    if (v == "1" || v == "on" || v == "true" || v == "yes") {
      o->allow_trust_on_network = true;
    } else if (v == "0" || v == "off" || v == "false" || v == "no") {
      o->allow_trust_on_network = false;
    } else {
      return absl::InvalidArgumentError(absl::StrCat("allow_trust_on_network must be 0 or 1, not '", value, "'"));
    }
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown key '", key, "'"));
  }
  return absl::OkStatus();
}

AdminRole AdminRoleOf(const Options& o, const std::string& user) {
  if (o.admin_users.count(user) > 0) return AdminRole::kAdmin;
  if (o.stats_users.count(user) > 0) return AdminRole::kStats;
  if (o.admin_users.empty() && o.stats_users.empty() && user == o.server_user) return AdminRole::kAdmin;
  return AdminRole::kNone;
}

absl::Status CheckSafeDefaults(const Options& o) {
  if (o.auth_type == "trust" && !net::IsLoopbackAddress(o.listen_addr) && !o.allow_trust_on_network) {
    return absl::FailedPreconditionError(absl::StrCat(
        "refusing to start: auth_type = trust on listen_addr ", o.listen_addr,
        " lets anyone who can reach it log in without a password; use auth_type = scram-sha-256 "
        "(or md5), listen on 127.0.0.1, or set allow_trust_on_network = 1 to allow it"));
  }
  return absl::OkStatus();
}

absl::Status ParseConfigText(absl::string_view text, absl::string_view origin, Options* o) {
  int lineno = 0;
  enum { kMain, kDatabases, kUsers } section = kMain;
  o->databases.clear();  // a file describes them all (RELOAD reads it anew)
  o->user_pool_size.clear();
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++lineno;
    absl::string_view t = absl::StripAsciiWhitespace(line);
    if (t.empty() || t[0] == ';' || t[0] == '#') continue;
    if (t[0] == '[') {
      const std::string name = absl::AsciiStrToLower(t);
      section = name == "[databases]" ? kDatabases : name == "[users]" ? kUsers : kMain;
      continue;
    }
    const size_t eq = t.find('=');
    absl::Status st = eq == absl::string_view::npos ? absl::InvalidArgumentError("expected key = value")
                      : section == kDatabases       ? ApplyDatabaseLine(t.substr(0, eq), t.substr(eq + 1), o)
                      : section == kUsers           ? ApplyUserLine(t.substr(0, eq), t.substr(eq + 1), o)
                                                    : ApplyConfigLine(t.substr(0, eq), t.substr(eq + 1), o);
    if (!st.ok()) {
      return absl::InvalidArgumentError(absl::StrCat(origin, ":", lineno, ": ", st.message(), " (line: ", t, ")"));
    }
  }
  return absl::OkStatus();
}

absl::Status LoadConfigFile(const std::string& path, Options* o) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot read config file ", path));
  std::stringstream ss;
  ss << in.rdbuf();
  o->config_path = path;
  return ParseConfigText(ss.str(), path, o);
}

}  // namespace proxy
}  // namespace corral
