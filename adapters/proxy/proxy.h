// `corral proxy`: a conflict-aware PostgreSQL wire-protocol (v3) proxy with
// transaction pooling. One event-loop thread (epoll, non-blocking sockets)
// serves the clients, the pools of backend connections (= run queues; one
// pool per database and server login, `pool_size` each), the admin console
// (database "corral") and the Prometheus endpoint. A client's database
// selects a [databases] entry (DatabaseEntry; without any, server_dbname);
// it logs in to the server as itself unless the entry forces a user. Each
// database has its own Scheduler (History, State) and catalog schema.
//
// A client's transaction is routed when it starts: its references come from
// its first unit (RefExtractor, the policy's extraction half; for Parse/Bind,
// the statement text plus the parameters, text or binary, decoded with the
// statement's types: declared in Parse, else the server's
// ParameterDescription), the Scheduler picks the queue, and every later
// statement adds its references for the History update at the outcome. The
// client waits FIFO for that backend (an idle
// backend steals the oldest waiting transaction of another queue), and the
// transaction stays on the backend until ReadyForQuery says 'I'. BEGIN is
// answered by the proxy and sent to the backend with the next statement.
// Backend bytes (rows, notices, errors with every field) are forwarded as
// the server sent them. Named prepared statements are kept per client and
// prepared on demand on whichever backend a transaction lands on, under
// per-backend names corral_s<N> (a bounded cache keyed by text and types).
//
//   proxy::Options o;
//   o.server_host = "127.0.0.1"; o.server_port = 5432;
//   o.listen_port = 0;   // ephemeral
//   auto p = proxy::Proxy::Create(o).value();
//   CHECK_OK(p->Start());          // connects the backends, spawns the loop
//   int port = p->port();
//   ...
//   p->Stop();
//
// Code map: proxy_internal.h lists the event loop's files (loop, client
// session, pump, extended protocol, backend) and the pieces with their own
// seams (net, tls, prepared, router, admin_console, metrics, stats).
//
// Workers (Options::workers > 1): N event loops on N threads, each with its
// own SO_REUSEPORT listener on the port, its clients and a share of each
// pool; they share the Stats, each database's Scheduler and an in-process
// key table serializing hot references across loops (workers_loop.cc).
// Drain / Pause / Resume / Reload / Stop go to every loop.
//
// Thread safety: Create/Start/Stop from one controlling thread; port(),
// stats(), worker_stats(), scheduler() and the admin helpers may be called
// from any thread while the loops run.
#ifndef CORRAL_ADAPTERS_PROXY_PROXY_H_
#define CORRAL_ADAPTERS_PROXY_PROXY_H_

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "adapters/proxy/stats.h"
#include "policies/policy.h"
#include "policies/schema.h"
#include "scheduler/scheduler.h"

namespace corral {
namespace proxy {

// One `[databases]` line (PgBouncer's): `name = host=... port=... dbname=...
// user=... password=... pool_size=... auth_user=...`. Empty / 0 fields take
// the defaults: host and port from server_host / server_port, dbname the
// name (for the `*` fallback entry: the database the client asked for),
// pool_size the global pool_size. With `user` the entry forces that server
// login (password `password`); without, the server login is the client's
// own user.
struct DatabaseEntry {
  std::string name;
  std::string host;
  int port = 0;
  std::string dbname;
  std::string user, password;
  int pool_size = 0;
  std::string auth_user;  // for auth_query; "" = the global auth_user
  int retry_routing = -1;  // retry_routing=on|off for this database; -1 = the global key
  int templates = -1;      // templates=on|off for this database; -1 = the global key
  int template_concurrency = -1;  // template_concurrency=on|off for this database; -1 = the global key
  int replay = -1;         // replay=on|off for this database; -1 = the global key
  int restart_on_hot_key = -1;  // restart_on_hot_key=on|off for this database; -1 = the global key
};

struct Options {
  std::string listen_addr = "127.0.0.1";
  int listen_port = 6432;  // 0 = ephemeral
  int pool_size = 4;       // backend connections = run queues
  int max_client_conn = 100;
  // Event loops (threads) serving clients (README "Workers"): 1 = one loop,
  // as always. N > 1: N loops, each with its own SO_REUSEPORT listener on
  // the same port (the kernel spreads connections), its clients and a share
  // of every pool (pool_size split, at least one backend each); the loops
  // share each database's Scheduler (History, State) and serialize
  // transactions on hot references through an in-process key table
  // (key_locks.h): a reference whose History abort count reaches
  // worker_lock_threshold takes its key before the transaction is routed.
  // With cluster_name, the loops share one ClusterSync per database and one
  // proxy id (the advisory locks serialize across processes).
  int workers = 1;
  double worker_lock_threshold = 1;
  std::string auth_type = "trust";  // trust | md5 | scram-sha-256
  std::string auth_file;            // userlist.txt ("user" "password"), for md5 / scram
  std::map<std::string, std::string> users;  // filled from auth_file when empty
  // The server. Password used for cleartext/md5/SCRAM-SHA-256 server auth if asked.
  std::string server_host = "127.0.0.1";
  int server_port = 5432;
  std::string server_user = "postgres";
  std::string server_password;
  std::string server_dbname = "postgres";
  // [databases]: by name, "*" the fallback. Empty: the server_* keys are
  // the one entry, named server_dbname, with user = server_user (as before).
  std::map<std::string, DatabaseEntry> databases;
  // [users]: `name = pool_size=N` caps that user's pools below the
  // database's pool_size.
  std::map<std::string, int> user_pool_size;
  // Passwords of users not in auth_file: auth_query run on the client's
  // database as auth_user (the entry's, else this; "" = no auth_query).
  std::string auth_user;
  std::string auth_query = "SELECT usename, passwd FROM pg_shadow WHERE usename=$1";
  // Databases made from the "*" entry at most (each has its own History,
  // State and catalog); more are refused with FATAL 53300.
  int max_fallback_databases = 16;
  std::string admin_dbname = "corral";
  // Admin console rights (PgBouncer's keys): admin_users may run every
  // command, stats_users only SHOW; others are refused at login (FATAL
  // 28000 "not allowed"). Both empty: server_user alone is an admin user.
  std::set<std::string> admin_users;
  std::set<std::string> stats_users;
  // auth_type = trust on a listen_addr other than loopback is refused
  // unless this is set.
  bool allow_trust_on_network = false;
  Policy policy;                       // default count-max-canonical-single
  // `policy = auto` (scheduler.h: a bandit over Scheduler::DefaultAutoArms by
  // committed throughput); `policy` then holds auto's starting arm.
  bool auto_policy = false;
  // History/State aging half-life (history/aging.h), seconds; 0 = off.
  double history_half_life_s = 2;
  // History commit admission (history/doorkeeper.h): a reference's first
  // commit only marks it, its second adds it; log2 of the doorkeeper's bits,
  // 0 = every commit counts.
  int history_doorkeeper_log2_bits = 20;
  // Hot-spot splitting (scheduler/hot_spots.h, the engine's rule): a learned
  // reference whose backend's queue waits longer than an attempt and its
  // retries cost may run on up to split_max_k backends at once; the rule
  // measures, per split_window_ms, each backend's client wait, attempt
  // time and 40001 / 40P01 per commit, and takes a step back when the
  // retries it added cost more than the wait it saved. Off by default.
  // split_max_k: at most this many (and at most the pool size).
  bool split = false;
  int split_max_k = 16;
  int64_t split_window_ms = 250;
  // Reads that cannot conflict pass unscheduled: (a) a simple Query or an
  // extended-protocol unit (up to its Sync) outside a transaction block,
  // every statement a plain read (policies/ref_extractor.h StatementFacts:
  // a SELECT with no FOR UPDATE / SHARE, INTO, data-modifying WITH or call
  // of a function that may write), run below SERIALIZABLE (the client's
  // default_transaction_isolation, else the server's, which each backend
  // is asked at connect); (b) a transaction block whose BEGIN (held, or
  // bound first in its first unit, as pgjdbc sends it; or the session's
  // default_transaction_read_only) makes it READ ONLY, below
  // SERIALIZABLE or SERIALIZABLE READ ONLY DEFERRABLE, whatever its
  // statements. PostgreSQL takes no row lock and no predicate lock for
  // these, so they can neither fail with nor cause a serialization
  // failure: each goes to the first idle backend (else waits, stealable),
  // teaches the History nothing, and is neither traced for templates nor
  // logged for replay. Counted in SHOW STATS `free_reads`. Off: every
  // statement is routed and learned.
  bool free_reads = true;
  // Idle backends take waiting transactions of other queues (steal.h):
  // stealing on = affinity- and in-flight-aware (steal_inflight: only
  // transactions placed without learned affinity, or whose references no
  // running transaction holds); `stealing = affinity`: only those placed
  // without learned affinity, or waiting longer than steal_after_ms (0 =
  // never; steal_inflight false); steal_any = plain stealing (`stealing =
  // any`); off = none.
  bool stealing = true;
  bool steal_any = false;
  bool steal_inflight = true;
  int64_t steal_after_ms = 50;
  // Multi-proxy mode (cluster.h, README "Several proxies"): proxies with
  // the same cluster_name in front of one database share their hottest
  // references through corral.hot_refs every cluster_publish_interval_ms;
  // a transaction with a reference whose merged abort count reaches
  // cluster_hot_threshold takes a session-level advisory lock per such
  // reference before its BEGIN. "" = off. cluster_proxy_id: this proxy's
  // row key ("" = host/pid/random). These four are reloadable (RELOAD
  // restarts the sync threads when one changed).
  std::string cluster_name;
  std::string cluster_proxy_id;
  int64_t cluster_publish_interval_ms = 1000;
  double cluster_hot_threshold = 3;
  // cluster_lock = table: a hot key's lock is a LOCK TABLE of its stripe
  // right after BEGIN, released by COMMIT / ROLLBACK (cluster.h
  // StripeLockSql; about half the server's CPU of the advisory pair), not a
  // session advisory lock before BEGIN and an unlock after the COMMIT. All
  // proxies of a cluster must agree (else they take no locks until they
  // do). Reloadable.
  bool cluster_table_locks = false;
  // The unlock rides in the write of the client's COMMIT / ROLLBACK (off:
  // sent once its ReadyForQuery came, one round trip more; for comparison).
  bool cluster_fold_unlock = true;
  // Restart on a hot key in multi-proxy mode (restart_loop.cc): a
  // restarted transaction tries a key it lacks that sorts before one it
  // holds this many times, a 1 ms sleep apart, before it gives every key
  // back to take them all in order (1 = once, no wait). Reloadable. 10:
  // measured on two-row at 4 proxies, retries 1 / 3 / 10 tries: 638 / 322 /
  // 134 per 8 s at the same tps; 30 tries lost tps (RESULTS.md [Y22]).
  int cluster_relock_tries = 10;
  // Multi-proxy mode with restart_on_hot_key: a restarted transaction whose
  // local keys are not free waits for them up to this long keeping its
  // backend and advisory keys (no other proxy changes the rows it read),
  // then without them (0 = never keeps them). Reloadable. 5: about one hot
  // transaction's run; two-row at 4 proxies retried 55-142 vs 163-242 per 8 s
  // without (RESULTS.md [Y22]).
  int cluster_restart_hold_ms = 5;
  int64_t query_wait_timeout_ms = 120000;  // 0 = none
  size_t max_message_bytes = 64u << 20;    // larger client messages are rejected
  // Back-pressure: when a client's unsent output passes this, the proxy
  // stops reading that client's backend until the output drains below half
  // (0 = unbounded).
  size_t client_output_limit_bytes = 4u << 20;
  size_t prepared_cache_size = 512;        // statements per backend
  int metrics_port = -1;                   // -1 off, 0 ephemeral
  // Schema for canonical references; null: read from the server's catalog.
  std::shared_ptr<const Schema> schema;
  // Set by Start: `schema` was read from the catalog (with cluster_name the
  // catalog is then watched for DDL, cluster.h).
  bool schema_from_catalog = false;
  // TLS (tls.h), PgBouncer's keys and sslmode values: towards the clients
  // (client_tls_*) and towards the server (server_tls_*; the catalog reads
  // through libpq get the same sslmode and files).
  std::string client_tls_sslmode = "disable";
  std::string client_tls_cert_file, client_tls_key_file, client_tls_ca_file;
  std::string server_tls_sslmode = "disable";
  std::string server_tls_ca_file, server_tls_cert_file, server_tls_key_file;
  // Retry-aware routing (retry_memory.h): a transaction that failed with
  // 40001 / 40P01 is remembered (references touched, by client and first
  // statement) and its retry routed on them, behind their running holder.
  // retry_memory_size: remembered transactions per database at most.
  bool retry_routing = true;
  size_t retry_memory_size = 4096;
  // Statement templates (templates.h): learn which statements follow a
  // first one and how their parameters relate; route on the references
  // they predict once a mapping holds in template_threshold of its window.
  // template_max: first-statement shapes per database at most.
  bool templates = false;
  double template_threshold = 0.9;
  size_t template_max = 1024;
  // Per-template concurrency cap (template_cap.h): at most k transactions
  // of one first-statement shape run at once, k chosen online per template
  // (template_cap_max_k = uncapped); the others wait before their first
  // statement. Windows of template_cap_window_ms and at least
  // template_cap_window_ends ends.
  bool template_concurrency = false;
  int template_cap_max_k = 8;
  int template_cap_window_ms = 100;
  int template_cap_window_ends = 50;
  // Transparent replay (replay.h): a transaction the server fails with
  // 40001 / 40P01 is rolled back and run again; the client continues when
  // every result matches what it received. replay_buffer_bytes: what one
  // transaction may keep (past it, it is not replayable);
  // replay_max_attempts: re-runs for one error.
  bool replay = false;
  size_t replay_buffer_bytes = 65536;
  int replay_max_attempts = 3;
  // Restart on a hot key (replay.h, replay_loop.cc, key_locks.h): the
  // hot references (worker_lock_threshold) of a transaction's first unit,
  // and those a reliable template predicts, take in-process keys before its
  // BEGIN goes to the server (also with one loop). A later statement of an
  // open SERIALIZABLE / REPEATABLE READ block that names a hot reference
  // whose key another transaction holds, or released since this one's
  // snapshot, is held: the transaction is rolled back, waits for its keys,
  // is re-run from its log (every result compared with what the client
  // saw) and only then gets the statement; a difference is a 40001 for
  // that statement. Simple-protocol statements.
  bool restart_on_hot_key = false;
  // Off: a later hot key that is free is taken even when a holder released
  // it after this transaction's snapshot (restart only when it is held).
  bool restart_after_release = true;
  // With restart_on_hot_key: a template whose restarts closed wait cycles
  // (two of its transactions each holding the key the other wants next)
  // lets one transaction at a time grow its key set (cycle_gates.h).
  bool restart_gate = true;
  std::string config_path;  // for RELOAD (empty: RELOAD re-reads the catalog only)
};

struct WorkerGroup;  // proxy_internal.h

class Proxy {
 public:
  static absl::StatusOr<std::unique_ptr<Proxy>> Create(const Options& options);
  ~Proxy();

  // Connects the backends, reads the catalog schema (when none was given),
  // binds the listen socket and starts the loop thread.
  absl::Status Start();
  // Stops at once (SIGINT): open transactions are rolled back by the server.
  void Stop();

  // Graceful operations, from any thread after Start (asynchronous: the loop
  // applies them at its next turn). Drain (SIGTERM): stop accepting
  // clients, refuse new transactions (FATAL 57P01 admin_shutdown), let
  // running ones finish, then the loop ends (finished()). Pause (PgBouncer's
  // PAUSE): hand out no backend; paused() once no transaction runs.
  // Resume undoes Pause. Reload (SIGHUP): as the admin console's RELOAD.
  void Drain();
  void Pause();
  void Resume();
  void Reload();
  bool paused() const;
  // True once the loop has ended (Drain done, or the admin SHUTDOWN).
  bool finished() const;

  int port() const { return port_.load(); }
  int metrics_port() const { return metrics_port_.load(); }
  const Stats& stats() const { return stats_; }  // every loop's (summed)
  // workers > 1: per loop, what it accepted and ran, and its key waits
  // (of them behind another loop's transaction); empty with one loop.
  struct WorkerStats {
    int64_t clients = 0, accepted = 0, transactions = 0, key_waits = 0, cross_waits = 0;
  };
  std::vector<WorkerStats> worker_stats() const;
  int workers() const { return options_.workers; }
  // The default database's (config.h's DefaultDatabase): server_dbname, or
  // the first named [databases] entry. Other databases have their own.
  scheduler::Scheduler& scheduler() { return *scheduler_; }
  // The Prometheus text exposition of the counters.
  std::string MetricsText() const;

  class Loop;  // the event loop (proxy_internal.h)

 private:
  explicit Proxy(const Options& options);
  Options options_;
  Stats stats_;
  std::unique_ptr<scheduler::Scheduler> scheduler_;
  // workers > 1: what the loops share (proxy_internal.h); null with one.
  // Declared before the loops: destroyed after them.
  std::unique_ptr<WorkerGroup> group_;
  // Loop i runs on threads_[i]; loop 0 uses options_, the others copies.
  std::vector<std::unique_ptr<Options>> worker_options_;
  std::vector<std::unique_ptr<Loop>> loops_;
  std::vector<std::thread> threads_;
  std::atomic<int> port_{0};
  std::atomic<int> metrics_port_{0};
};

// Reads tables, columns, primary and foreign keys (pg_constraint /
// pg_attribute) and function parameter names (pg_proc) of the non-system
// schemas into a Schema. `qualify_all` (SchemaBuilder::SetQualifyAll): every
// name table-qualified, so names do not depend on which other tables exist
// when it is read; the proxy asks for it with cluster_name set (proxies of
// one cluster read the catalog at different times and must agree).
absl::StatusOr<std::shared_ptr<const Schema>> LoadCatalogSchema(const std::string& conninfo,
                                                                bool qualify_all = false);

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_PROXY_H_
