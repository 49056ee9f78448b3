// The proxy's config file: PgBouncer-style `key = value` lines (';' and '#'
// start comments; `[databases]` and `[users]` sections as below, other
// `[section]` headers are ignored), with PgBouncer's names where the concept
// is the same. A bad line gives an error naming the line.
//
//   listen_addr = 127.0.0.1        listen_port = 6432
//   pool_size = 8                  (alias default_pool_size)
//   max_client_conn = 100          query_wait_timeout = 120   (seconds, 0 = off)
//   auth_type = trust | md5        auth_file = userlist.txt
//   server_host / server_port / server_user / server_password / server_dbname
//   server_conninfo = host=... port=... user=... dbname=... password=...
//   policy = count-max-canonical-single | auto   stealing = on | affinity | any | off
//   history_half_life_s = 2        (aging of the learned counts; 0 = off)
//   history_doorkeeper_log2_bits = 20   (a reference's first commit is not counted; 0 = every commit)
//   split = off | on               split_max_k = 16 (at most pool_size)   split_window_ms = 250   (hot-spot splitting)
//   free_reads = on | off          (plain reads below SERIALIZABLE, READ ONLY blocks: not routed or learned)
//   cluster_name = shop            (multi-proxy mode, cluster.h; "" = off; reloadable)
//   cluster_publish_interval_ms = 1000  cluster_hot_threshold = 3  cluster_proxy_id = (host/pid/random)
//   cluster_lock = advisory | table  (table: LOCK TABLE of a stripe after BEGIN, released by COMMIT; reloadable)
//   cluster_fold_unlock = on       (off: the unlock after the COMMIT's reply; reloadable)
//   cluster_relock_tries = 10      (restart: tries of a key sorting before a held one, 1 ms apart; reloadable)
//   cluster_restart_hold_ms = 5    (restart: a wait for local keys keeps backend and advisory keys this long; reloadable)
//   steal_after_ms = 50            (affinity: affine transactions stealable after it; 0 never)
//   metrics_port = 9127 (-1 off)   max_packet_size = 67108864
//   max_prepared_statements = 512  admin_dbname = corral
//   admin_users = alice, bob       stats_users = monitor    (comma-separated)
//   allow_trust_on_network = 0     (auth_type = trust on a non-loopback listen_addr)
//   client_output_limit_bytes = 4194304   (back-pressure bound; 0 = off)
//   auth_user = pgbouncer   auth_query = SELECT usename, passwd FROM pg_shadow WHERE usename=$1
//   max_fallback_databases = 16
//   retry_routing = on | off       retry_memory_size = 4096   (retry_memory.h; per database)
//   templates = off | on           template_threshold = 0.9   template_max = 1024   (templates.h)
//   template_concurrency = off | on   template_cap_max_k = 8   template_cap_window_ms = 100
//                       template_cap_window_ends = 50   (template_cap.h; per database)
//   replay = off | on              replay_buffer_bytes = 65536   replay_max_attempts = 3   (replay.h)
//   [databases]  name = host=... port=... dbname=... user=... password=... pool_size=... auth_user=...
//                       retry_routing=on|off templates=on|off template_concurrency=on|off replay=on|off
//                * = host=...     (fallback: dbname = the client's database)
//   [users]      alice = pool_size=2
//   client_tls_sslmode = disable | allow | prefer | require | verify-ca | verify-full
//   client_tls_cert_file / client_tls_key_file / client_tls_ca_file
//   server_tls_sslmode = (same values)   server_tls_ca_file / _cert_file / _key_file
//
//   proxy::Options o;
//   CHECK_OK(proxy::LoadConfigFile("corral.ini", &o));
//   CHECK_OK(proxy::ApplyConfigLine("pool_size", "8", &o));  // flags override
//
// Thread-safety: stateless functions; thread-compatible on the Options.
#ifndef CORRAL_ADAPTERS_PROXY_CONFIG_H_
#define CORRAL_ADAPTERS_PROXY_CONFIG_H_

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapters/proxy/proxy.h"

namespace corral {
namespace proxy {

// Sets one key; InvalidArgument for an unknown key or a bad value.
absl::Status ApplyConfigLine(absl::string_view key, absl::string_view value, Options* o);
// One [databases] line (`name`, `host=... port=...`) / one [users] line.
absl::Status ApplyDatabaseLine(absl::string_view name, absl::string_view value, Options* o);
absl::Status ApplyUserLine(absl::string_view name, absl::string_view value, Options* o);
// libpq-style `k=v k=v` fields into *e (server_conninfo and [databases]).
absl::Status ParseEntryFields(absl::string_view what, absl::string_view value, DatabaseEntry* e);
// The entry a client's database name selects, defaults filled in (name: the
// client's; dbname; host / port; pool_size; auth_user). NotFound ("database
// \"x\" does not exist") when no entry and no "*" matches. Without
// [databases]: only server_dbname, as server_user.
absl::StatusOr<DatabaseEntry> FindDatabase(const Options& o, const std::string& name);
// The database Proxy::scheduler() and the catalog at Start belong to: the
// first named [databases] entry, else server_dbname.
std::string DefaultDatabase(const Options& o);
// Parses a whole file's text (sections [databases] and [users] as above,
// any other section's lines are settings); errors are "<origin>:<line>: ...".
absl::Status ParseConfigText(absl::string_view text, absl::string_view origin, Options* o);
absl::Status LoadConfigFile(const std::string& path, Options* o);

// What a user may do on the admin console: kAdmin everything, kStats SHOW
// only, kNone not even connect. With both lists empty, server_user is the
// one admin.
enum class AdminRole { kNone, kStats, kAdmin };
AdminRole AdminRoleOf(const Options& o, const std::string& user);

// Settings that must not start: auth_type = trust on a non-loopback
// listen_addr without allow_trust_on_network. The error names the key.
absl::Status CheckSafeDefaults(const Options& o);

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_CONFIG_H_
