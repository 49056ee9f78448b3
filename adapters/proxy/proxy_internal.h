// Internal to the proxy (adapters/proxy, not for other packages): the
// connection objects and the event loop, Proxy::Loop, whose methods are
// spread over files by concern:
//   loop.cc            listener, epoll loop, buffered I/O and back-pressure,
//                      timers, /metrics sockets, the admin console's view
//                      (AdminSource)
//   client_session.cc  client startup, authentication (admin rights,
//                      failed logins), framing, close, cancel requests
//   pump.cc            the transaction pump: units, routing (Router),
//                      FIFO wait queues and stealing, attach / detach
//                      (session parameters, session_params.h)
//   extended.cc        extended protocol: locally answered units, message
//                      forwarding with prepared-statement injection
//   backend.cc         backend connections: connect and authenticate to the
//                      server, backend input, failure and reconnect
//   databases.cc       [databases] entries and (database, user) pools:
//                      each Database its own Router / Scheduler / catalog
//   ops.cc             graceful operations: requests from other threads,
//                      PAUSE / RESUME, draining for shutdown
//   replay_loop.cc     transparent replay of a conflict-failed transaction
//                      (replay.h): rolled back, re-run, results compared
//   workers_loop.cc    workers > 1: the in-process keys of hot references
//                      (key_locks.h), the inbox other loops post to, the
//                      admin console's process-wide SHOW views, WORKERS
//   restart_loop.cc    restart on a hot key: a later statement whose hot
//                      key is taken restarts its transaction first
// TLS: Conn::Recv / SendSome are the I/O seam (plain socket or tls.h's
// Session); client_session.cc answers SSLRequest and drives the handshake
// from epoll, backend.cc negotiates TLS with the server before startup;
// tls.h holds the OpenSSL contexts and sessions.
// The pieces with their own seams live in their own files: net.h (sockets),
// prepared.h (statements, per-backend cache), router.h (scheduler seam),
// session_params.h (per-client session state), admin_console.h, metrics.h.
//
//   Proxy::Loop loop(&options, &stats, &scheduler);
//   CHECK_OK(loop.Init(&port, &metrics_port));
//   std::thread t([&] { loop.Run(); });
//   ...
//   loop.RequestStop(); t.join();
//
// Thread safety: everything here runs on the loop thread, except
// RequestStop() and MetricsText() (atomics only), Post(), KeysGranted() and
// ForwardCancel() (an atomic / the inbox mutex, then the eventfd), which any
// thread may call. workers > 1: each loop has its own thread and Options;
// what they share is thread-safe (WorkerGroup: KeyLocks, atomics, a mutex;
// the Schedulers; Stats' atomics).
#ifndef CORRAL_ADAPTERS_PROXY_PROXY_INTERNAL_H_
#define CORRAL_ADAPTERS_PROXY_PROXY_INTERNAL_H_

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <atomic>
#include <cstdint>
#include <cstdlib>
#include <deque>
#include <map>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/functional/function_ref.h"
#include "absl/strings/string_view.h"
#include "adapters/proxy/admin_console.h"
#include "adapters/proxy/auth.h"
#include "adapters/proxy/cluster.h"
#include "adapters/proxy/cycle_gates.h"
#include "adapters/proxy/key_locks.h"
#include "adapters/proxy/prepared.h"
#include "adapters/proxy/proxy.h"
#include "adapters/proxy/replay.h"
#include "adapters/proxy/retry_memory.h"
#include "adapters/proxy/router.h"
#include "adapters/proxy/session_params.h"
#include "adapters/proxy/steal.h"
#include "adapters/proxy/template_cap.h"
#include "adapters/proxy/tls.h"
#include "common/tsan_visible_mutex.h"

namespace corral {
namespace proxy {

// The server's connection string for libpq (catalog reads), with the
// server_tls_* settings as sslmode / sslrootcert / sslcert / sslkey: the
// server_* keys' database and user, or database entry `e` as `user`.
std::string ServerConninfo(const Options& o);
std::string ServerConninfo(const Options& o, const DatabaseEntry& e, const std::string& user,
                           const std::string& password);

// The conninfo the catalog of entry `e` is read with: its forced login,
// else server_user / server_password.
std::string CatalogConninfo(const Options& o, const DatabaseEntry& e);
// Entry e's catalog schema as the proxy names references with it: read
// with CatalogConninfo, every name table-qualified when cluster_name is set
// (LoadCatalogSchema's qualify_all).
absl::StatusOr<std::shared_ptr<const Schema>> LoadCatalogFor(const Options& o, const DatabaseEntry& e);

// A database's routing-only Scheduler options: its pool size as queues, and
// the configured policy (or auto), stealing and History aging.
scheduler::Scheduler::Options SchedulerOptionsFor(const Options& o, int pool_size);

// auth_query (with $1 = user) on a libpq connection: the password column
// (second) of its first row; NotFound when no row or NULL.
absl::StatusOr<std::string> LookupPassword(const std::string& conninfo, const std::string& query,
                                           const std::string& user);

// The TLS contexts of the two sides from client_tls_* / server_tls_*; null
// where that side's sslmode is disable. Errors name the key or file.
absl::Status MakeTlsContexts(const Options& o, std::unique_ptr<tls::Context>* clients,
                             std::unique_ptr<tls::Context>* server);

// Drops the consumed front [0, *off) of a connection buffer: all of it once
// consumed, or once more than 1 MiB of it is.
inline void CompactBuffer(std::string* buf, size_t* off) {
  if (*off == buf->size()) {
    buf->clear();
    *off = 0;
  } else if (*off > (1u << 20)) {
    buf->erase(0, *off);
    *off = 0;
  }
}

// A socket the loop polls, with its buffered input and output.
struct Conn {
  enum Kind { kListen, kClient, kBackend, kMetricsListen, kHttp, kWake };
  Kind kind;
  int fd = -1;
  std::string in;
  size_t in_off = 0;
  std::string out;
  size_t out_off = 0;
  bool epollout = false;
  bool read_paused = false;  // back-pressure: EPOLLIN dropped (backends)
  bool dirty = false;
  bool dead = false;
  // The I/O seam: a plain socket, or TLS over it (tls.h) once negotiated;
  // the loop reads and writes only through Recv / SendSome.
  std::unique_ptr<tls::Session> tls;
  bool handshaking = false;  // a client's TLS handshake is under way
  ssize_t Recv(char* buf, size_t n) { return tls ? tls->Read(buf, n) : ::recv(fd, buf, n, 0); }
  ssize_t SendSome(const char* p, size_t n) {
    return tls ? tls->Write(p, n) : ::send(fd, p, n, MSG_NOSIGNAL);
  }
  explicit Conn(Kind k) : kind(k) {}
  virtual ~Conn() = default;
};

struct Client;
struct Pool;

// One server connection = one run queue of its pool.
struct Backend : Conn {
  explicit Backend(size_t cache_size) : Conn(kBackend), cache(cache_size) {}
  Pool* pool = nullptr;
  int index = 0;  // in its pool
  Client* client = nullptr;
  RefVec held;  // the affine references of its running transaction (stealing on)
  bool alive = false;
  char status = 'I';
  int32_t pid = 0, secret = 0;
  std::deque<Batch> batches;  // back() is the open one
  StatementCache cache;
  int64_t reconnect_at = 0;
  int64_t txns = 0;
  std::string fatal;  // the server's FATAL message before it closed, if any
  std::string connect_sqlstate, connect_message;  // the server's refusal of the last connect
  ParamList connect_params;  // ParameterStatus at connect (its defaults)
  // Its default_transaction_isolation at connect is SERIALIZABLE: 1,
  // another: 0, not known: -1 (Options::free_reads).
  int8_t default_ser = -1;
  // It reported default_transaction_read_only on at connect: 1, else 0.
  int8_t default_ro = 0;
  BackendSession sess;       // its session parameters now (session_params.h)
  bool front_errored = false;  // an ErrorResponse of the front batch went to the client
  // The server's transaction state as of the last message read: the last
  // ReadyForQuery's status, moved by the BEGIN / COMMIT / ROLLBACK
  // completed since ('T' or 'E': a transaction block is open). What the
  // server's ReadyForQuery would have said after an error when it died
  // before sending it (FailBackend).
  char block = 'I';
  bool drop_describe_tail = false;  // the RowDescription / NoData after a dropped ParameterDescription
  std::string unnamed_key;          // PreparedDef::key of the unnamed statement a client parsed here
  // Its open transaction ran a statement that may change the catalog: its
  // Describe answers are not learned, and the DescribeCache is invalidated
  // again when the transaction ends (ReadyForQuery 'I').
  bool catalog_dirty = false;
  // A client's Describe-statement answer being learned: its
  // ParameterDescription (whole) until the RowDescription / NoData comes.
  std::string answer_t;
  std::string answer_key;  // "" when none
  uint64_t answer_gen = 0;
  // Checking a cached answer the client got (DescribeEntry::expect): the
  // expected bytes and the ParameterDescription received so far.
  std::string expect, expect_t;
  // The check failed: the rest of the front batch is not forwarded; its
  // ReadyForQuery becomes PostgreSQL's "cached plan must not change result
  // type" (0A000), and an open transaction is failed on the server.
  bool stale_batch = false;

  // Multi-proxy mode (cluster_loop.cc): the advisory-lock keys its
  // transaction took (held until the unlock batch completes), whether their
  // unlock is sent (folded behind the client's COMMIT / ROLLBACK, or after
  // it) and whether that unlock failed (sent again).
  std::vector<int64_t> adv_locks;
  // The names of the lock / unlock statements prepared on this connection
  // ("" = not yet; forgotten after DISCARD ALL / DEALLOCATE ALL or an
  // error in a lock batch, then prepared again under a new name).
  std::array<std::string, 3> cluster_stmts;  // by ClusterStmt
  int try_stmt_tries = 0;                    // cluster_relock_tries of cluster_stmts[kTry]
  void ForgetClusterStatements() {
    for (std::string& s : cluster_stmts) s.clear();
  }
  bool unlock_sent = false;
  bool unlock_failed = false;
  int unlock_retries = 0;  // of the current keys
  // A restarted transaction's keys tried while it holds others that sort
  // after them (restart_loop.cc; a batch with cluster_try): those sent, the
  // rows come so far, those found taken by another session.
  std::vector<int64_t> try_keys;
  size_t try_rows = 0;
  std::vector<int64_t> try_failed;
  // cluster_lock = table (TakeTableLocks): the LOCK TABLE of its stripes
  // that follows the held BEGIN when it goes (SendHeldBegin), or the
  // proxy's own BEGIN when the client has none held (SendTxnStart); and whether
  // the client's own BEGIN, behind the proxy's BEGIN and LOCK, will draw a
  // WARNING 25001 the client must not see (dropped once; cleared when the block ends and at Detach).
  std::string table_lock_sql;
  std::vector<int64_t> table_keys;  // the keys whose stripes its transaction holds (or asked for)
  bool drop_begin_warning = false;
  // The client's unit now being forwarded runs in the proxy's block: a
  // COMMIT follows its Sync / Query (WrapCommit).
  bool wrap_pending = false;
  // The stripes' LOCK failed (a lock_timeout, a permission revoked, a
  // deadlock): its ErrorResponse, whole, which the client gets in place
  // of the 25P02 ("current transaction is aborted") its own first
  // statement then draws. Cleared when the block ends or the client goes.
  std::string lock_error;
  bool Idle() const { return batches.size() == 1 && batches.front().msgs == 0; }
  // Nothing outstanding but the unlock of its ended transaction's keys.
  bool IdleButUnlock() const {
    return batches.size() == 2 && batches.front().cluster_unlock && batches.back().msgs == 0;
  }
  bool Free() const { return alive && client == nullptr && Idle() && status == 'I'; }
};

// One client connection and its session: its parameters (startup packet,
// SET / RESET ..., session_params.h) are applied on a backend in Attach.
struct Client : Conn {
  Client() : Conn(kClient) {}
  enum Phase { kStartup, kAuth, kReady };
  uint64_t id = 0;
  Phase phase = kStartup;
  bool admin = false;
  std::string user, database, salt;
  int32_t key_pid = 0, key_secret = 0;
  std::deque<Msg> pending;
  Backend* backend = nullptr;
  bool waiting = false;
  bool affinity = false;  // its current transaction was placed by learned affinity
  int wait_queue = -1;
  int64_t wait_since = 0;
  // Split on (LoadsOf): the queue its transaction's loads count on (where
  // it was routed; a stolen one runs on another backend), when its current
  // attempt began, and when it became ready to run (its first unit routed,
  // or a restart re-queued; 0 once attached): its wait for a backend
  // counts from there, including a wait for its hot references' keys or
  // its template's slot (MonoNanos).
  int load_queue = 0;
  int64_t attempt_since = 0;
  int64_t ready_since = 0;
  std::string held_begin;
  bool txn_lost = false;    // its backend died while it was idle in a transaction
  bool lost_answered = false;  // txn_lost's error was sent (a Flush); skipping to Sync
  // txn_lost after the server's own error in a transaction block: the
  // unit's ReadyForQuery says 'E', as the server's would have, and the
  // request after it gets the lost-transaction error.
  bool lost_failed = false;
  bool over_limit = false;  // accepted beyond max_client_conn: rejected at startup
  bool pause_wait = false;  // admin: its PAUSE is answered once no transaction runs
  std::string deferred;     // admin: that answer
  std::unique_ptr<auth::ScramServer> scram;  // during SCRAM authentication
  RoutedTxn route;
  // Its current transaction is a recognized retry (retry_memory.h), and
  // was placed behind the running holder of a remembered reference: it
  // waits for that backend and is not stolen (as a blocked affine one).
  bool retry = false;
  bool retry_pinned = false;
  bool predicted = false;  // route.predicted is this transaction's already (KeysAdmit)
  size_t routed_ahead = 0;  // pending messages whose references routing already took
  // Per-template concurrency cap (template_cap.h, tcap_loop.cc): its
  // transaction's template (first-statement shape), and whether it waits
  // for a slot (its first statement held) or holds one (admitted at
  // cap_since) until the transaction ends.
  enum class Cap { kNone, kWaiting, kRunning };
  Cap cap = Cap::kNone;
  // Workers (key_locks.h, workers_loop.cc): its transaction waits for, or
  // holds, the in-process keys of its hot references (taken before the
  // template cap's slot and routing, released when it ends or it leaves).
  enum class Keys { kNone, kWaiting, kHeld };
  Keys keys = Keys::kNone;
  // Restart on a hot key (restart_loop.cc): the keys' release epoch
  // (KeyLocks::Epoch) read before its transaction's snapshot; while its
  // restart waits for keys without a backend, since when, and the run
  // queue it goes back to.
  uint64_t key_snap = 0;
  int64_t restart_since = 0;
  int restart_queue = 0;
  // Multi-proxy mode: its restart waits for local keys keeping its backend
  // and cluster keys (RestartHold) until restart_hold_until (monotonic ns);
  // `restart_relock`: the cluster keys to take once they are granted.
  bool restart_hold = false;
  int64_t restart_hold_until = 0;
  std::vector<int64_t> restart_relock;
  // Cycle gates (cycle_gates.h): the gate key its transaction holds or
  // waits for (0: none), and the keys it takes once the gate is granted
  // (its wait for the gate alone sits in no row's queue); gate_growth: its
  // template's last growing statement (CycleGates::LastGrowth) when it
  // took the gate, where it gives the gate back (0: unknown).
  uint64_t gate_key = 0;
  int gate_growth = 0;
  std::vector<uint64_t> gate_then;
  std::string cap_key;
  int64_t cap_since = 0;
  StatementMap stmts;
  int64_t txns = 0;
  ClientSession sess{0};
  bool attaching = false;  // its backend runs AttachSql; its messages wait
  bool stats_only = false;  // admin database: a stats_users member (SHOW only)
  absl::flat_hash_map<std::string, std::string> portal_sql;  // portal -> statement text
  ReplayLog replay;  // its running transaction, for transparent replay (replay.h)

  // Its database ([databases] entry, resolved at startup) and, once logged
  // in, its pool; the server login's credentials found while
  // authenticating (a password, md5 hash or SCRAM secret; SCRAM keys).
  DatabaseEntry entry;
  Pool* pool = nullptr;
  std::string secret;
  std::string scram_client_key, scram_server_key;

  uint64_t cancel_key() const { return (uint64_t(uint32_t(key_pid)) << 32) | uint32_t(key_secret); }
};

// One database the clients use (a [databases] entry, or one made from the
// "*" entry for a name): its own History and State (Scheduler), Router and
// catalog schema, shared by its pools.
struct Database {
  DatabaseEntry entry;
  bool fallback = false;  // made from "*"
  std::unique_ptr<scheduler::Scheduler> own_sched;  // null for the default database (Proxy's)
  // workers > 1: the group's Scheduler of this database (kept alive while
  // this loop uses it, also after the group forgets an unknown "*" name).
  std::shared_ptr<scheduler::Scheduler> shared_sched;
  scheduler::Scheduler* sched = nullptr;
  // workers > 1: mixed into the in-process keys of its references (a
  // reference of another database is another key); hash of entry.name.
  uint64_t key_salt = 0;
  std::unique_ptr<Router> router;
  int pools = 0;
  // Retry-aware routing (retry_memory.h): on for this database, and its
  // remembered conflict-failed transactions.
  bool retry_routing = false;
  std::unique_ptr<RetryMemory> retries;
  // Per-template concurrency cap (template_cap.h); null when off.
  std::unique_ptr<TemplateCap> tcap;
  bool replay = false;  // transparent replay (replay.h) on for this database
  bool restart = false;  // restart_on_hot_key on for this database (restart_loop.cc)
  std::unique_ptr<CycleGates> gates;  // restart_gate (cycle_gates.h); null when off
  // cluster_lock = table: templates (first shapes) whose transactions took
  // a key hot in the cluster at a later statement (a restart). Theirs take
  // advisory keys too, before BEGIN: a restart's rollback releases its
  // stripes, not those keys, so no other proxy's growing transaction
  // changes a row it read before it re-runs.
  absl::flat_hash_set<std::string> cluster_growing;
  // Multi-proxy mode (cluster.h); null when cluster_name is empty. Last:
  // stopped (joined) before the Scheduler it reads goes. workers > 1: one
  // for the process, shared by the loops' Databases of this name (the last
  // to drop it stops it; it holds the shared Scheduler it reads).
  std::shared_ptr<ClusterSync> cluster;
  uint64_t cluster_schema_version = 0;  // the cluster's catalog watch's schema adopted last
};

// workers > 1 (Options::workers, workers_loop.cc): what the event loops
// share. The Proxy owns it; it outlives the loops. `loops` is filled
// before any loop runs and fixed after. The Schedulers of databases other
// than the default one (whose Scheduler is the Proxy's) are made here on
// first use by whichever loop needs one, and shared.
struct WorkerGroup {
  explicit WorkerGroup(int n) : count(n), per(static_cast<size_t>(n)), views(static_cast<size_t>(n)) {}
  struct alignas(64) PerWorker {  // a cache line each: the loops write their own
    std::atomic<int64_t> accepted{0};
    std::atomic<int64_t> transactions{0};
    std::atomic<int64_t> clients{0};
    std::atomic<int64_t> key_waits{0};
    std::atomic<int64_t> cross_waits{0};
  };
  const int count;
  KeyLocks locks;
  std::vector<Proxy::Loop*> loops;
  std::vector<PerWorker> per;      // by worker index
  std::atomic<int64_t> clients{0};  // connected to any loop (max_client_conn)
  // What the last PAUSE / RESUME (admin console or Proxy::Pause / Resume)
  // asked of every loop: a loop applies this, not the order its kPause /
  // kResume bits came in (a RESUME then PAUSE may reach it in one turn).
  std::atomic<bool> want_paused{false};
  TsanVisibleMutex mu;
  // Each loop's rows of every per-loop SHOW view (by AdminView) as of its
  // last publish (every 200 ms).
  std::vector<std::array<AdminTable, kAdminViews>> views ABSL_GUARDED_BY(mu);
  std::map<std::string, std::shared_ptr<scheduler::Scheduler>> scheds ABSL_GUARDED_BY(mu);
  // Multi-proxy mode: the process's proxy id (generated once, when
  // cluster_proxy_id is empty) and each database's ClusterSync, which the
  // loops share (owned by their Databases: expired once none holds it; a
  // loop whose config differs, after RELOAD, makes the next one).
  std::string cluster_proxy_id ABSL_GUARDED_BY(mu);
  std::map<std::string, std::weak_ptr<ClusterSync>> syncs ABSL_GUARDED_BY(mu);
};

// The server connections of one (database, server login): its run queues
// (the database's Scheduler routes into [0, backends.size())), their FIFO
// wait queues and, stealing on, the references running transactions hold.
struct Pool {
  Database* db = nullptr;
  std::string user;        // the server login
  std::string secret;      // its password (or md5 hash / SCRAM secret)
  std::string scram_client_key, scram_server_key;  // SCRAM pass-through
  std::vector<std::unique_ptr<Backend>> backends;
  std::vector<std::deque<Client*>> waitq;
  absl::flat_hash_map<uint64_t, int> inflight;
  int clients = 0;
  // Every connected backend's default isolation is below SERIALIZABLE
  // (Backend::default_ser), and every one reported
  // default_transaction_read_only on: recomputed at each connect.
  bool server_not_ser = false;
  bool server_read_only = false;
  int next_free = 0;  // where the next free read starts looking for an idle backend
};

// Where hot-spot splitting's measurements go (scheduler/routed_loads.h;
// Options::split): the pool's database's Scheduler's, null when it does
// not split. Queue = backend index.
inline scheduler::RoutedLoads* LoadsOf(const Pool& p) { return p.db->sched->routed_loads(); }

class Proxy::Loop : private AdminSource {
 public:
  Loop(Options* options, Stats* stats, scheduler::Scheduler* sched);
  ~Loop() override;

  // workers > 1: this loop is worker `index` of `group` (before Init). Its
  // listener then binds with SO_REUSEPORT; only worker 0 serves /metrics.
  void SetWorker(int index, WorkerGroup* group) {
    worker_ = index;
    group_ = group;
  }
  // From any thread (workers_loop.cc): the keys of client `id`'s
  // transaction were granted (KeyLocks' wake); a cancel request another
  // loop received. Applied at this loop's next turn; a grant made on the
  // loop's own thread (a release by one of its transactions) before this
  // turn's output is flushed, with no wake-up.
  void KeysGranted(uint64_t client_id);
  void ForwardCancel(int32_t pid, int32_t secret);

  absl::Status Init(std::atomic<int>* port, std::atomic<int>* metrics_port);
  void Run();
  void RequestStop() {
    stop_.store(true);
    Wake();
  }
  std::string MetricsText() const;

  // Requests from any thread (ops.cc), applied by the loop at its next turn.
  enum Request : uint32_t { kDrain = 1, kPause = 2, kResume = 4, kReload = 8, kInbox = 16, kStop = 32 };
  void Post(Request r) {
    requests_.fetch_or(r);
    Wake();
  }
  bool pause_done() const { return pause_done_.load(); }
  bool finished() const { return finished_.load(); }

 private:
  void Wake() {
    uint64_t one = 1;
    (void)!::write(wake_.fd, &one, sizeof(one));
  }
  // --- graceful operations (ops.cc)
  void ApplyRequests();
  // Once a turn while paused or draining: answers PAUSE when no
  // transaction runs; draining, closes every client not in a transaction
  // (57P01) and stops the loop when none is left.
  void OpsTurn();
  bool Draining() const { return draining_; }
  // Draining: tells the client 57P01 admin_shutdown and closes it.
  void ShutdownClient(Client* c);
  // AdminSource (ops.cc); with workers > 1 the admin console's PAUSE,
  // RESUME, SHUTDOWN and RELOAD go to every loop (PAUSE is answered once
  // no loop runs a transaction: every loop's pause_done()).
  void Pause() override;
  void Resume() override;
  void Shutdown() override;
  // Posts `r` to every other loop (workers > 1; none else).
  void PostOthers(Request r);
  // workers > 1: every other loop is paused with no transaction running.
  bool OthersPaused() const;

  // --- workers (workers_loop.cc)
  // Before c's transaction is routed: true when it may run (no key to
  // take, or its keys are held); false when it waits for them (its first
  // statement held; KeysGranted resumes it).
  bool KeysAdmit(Client* c);
  // c's transaction ended or c left: its keys (held or waited for) go.
  void KeysRelease(Client* c);
  // The key table: the group's (workers > 1), else this loop's own.
  KeyLocks* locks() { return group_ != nullptr ? &group_->locks : &own_locks_; }
  // The keys of those of `refs` whose History abort count reaches
  // worker_lock_threshold (hot), appended to *keys.
  void HotKeys(const Client* c, const RefVec& refs, std::vector<uint64_t>* keys) const;

  // --- restart on a hot key (restart_loop.cc)
  // Attached, before forwarding the simple Query or extended-protocol unit
  // at the front of c's messages: true when it is held because its
  // transaction restarts (a hot key it names is another's or was released
  // since the snapshot); free hot keys are taken.
  bool RestartBeforeStatement(Client* c, Backend* b);
  // The held Query / unit got the restart's error: dropped (it never ran).
  static void DropHeld(Client* c);
  // Cycle gates (cycle_gates.h): c gives its template's gate back (held:
  // gate_key); ...IfGrown: when its `ordinal`-th later statement reaches
  // its template's last growth as known when c took the gate
  // (Client::gate_growth).
  void GiveGateBack(Client* c);
  void GiveGateBackIfGrown(Client* c, int ordinal);
  // Rolls c's transaction back and waits for `need` (keeping its keys): on
  // b when granted at once, else without a backend (b goes to others).
  // `relock`: keys hot in the cluster that its new references need and b
  // does not hold (sorted).
  void RestartTxn(Client* c, Backend* b, std::vector<uint64_t> need, std::vector<int64_t> relock);
  // Its local keys held: the cluster keys it lacks (waited for when they
  // sort after those b holds, else tried), then its log runs again on b.
  void RestartWithKeys(Client* c, Backend* b, std::vector<int64_t> relock);
  // Multi-proxy mode, its local keys not granted at once: whether c waits
  // for them keeping b and b's cluster keys (so no other proxy changes
  // those rows meanwhile): when b holds cluster keys and another backend of
  // the pool is left to the key's holder. `relock`: kept for the grant.
  // The wait is bounded (cluster_restart_hold_ms; RestartHoldTimers): a holder that
  // needs a backend, or waits on the server for one of b's keys, is not
  // kept waiting long.
  bool RestartHold(Client* c, Backend* b, const std::vector<int64_t>& relock);
  // Holds past their bound: they leave their backends (RestartElsewhere).
  void RestartHoldTimers(int64_t now);
  // Its cluster keys tried on b (a cluster_try batch came back): all
  // taken, the log runs again here; else it leaves b (RestartElsewhere).
  void RestartTried(Client* c, Backend* b);
  // c, rolled back on b, leaves it (its cluster keys unlocked behind the
  // ROLLBACK); with its local keys granted it goes back to a run queue
  // (RestartResume: the next Attach takes every cluster key in order),
  // else it waits for them with no backend.
  void RestartElsewhere(Client* c, Backend* b, bool granted);
  // Its keys granted while it waited without a backend: back to its run
  // queue; Attach re-runs its log (SendReplay).
  void RestartResume(Client* c);
  // Every result of the re-run matched: the held statement goes on.
  void RestartDone(Client* c, Backend* b);
  uint64_t KeyTicket(const Client* c) const { return (uint64_t(uint32_t(worker_)) << 48) | c->id; }
  // Grants and forwarded cancels (kInbox).
  void ApplyInbox();
  // The grants made on this loop's thread (KeysGranted), until none is
  // left (resuming one may release keys and grant more).
  void ApplyLocalGrants();
  void ApplyGrants(const std::vector<uint64_t>& ids);
  // Every 200 ms: this loop's rows of every per-loop SHOW view (AdminView)
  // into the group, for the other loops' admin consoles.
  void PublishWorker(int64_t now);
  // This loop's view `v` (live) with a worker column first.
  AdminTable WorkerView(AdminView v) const;
  // SHOW QUEUES, CLIENTS, DATABASES, POOLS, USERS, TEMPLATES,
  // TEMPLATE_CAPS, CLUSTER: with workers > 1, this loop's rows (live) and
  // every other loop's as of its last publish (at most 200 ms old), each
  // with its loop's index in a worker column.
  AdminTable View(AdminView v) const override;
  AdminTable Workers() const override;

  // --- plumbing (loop.cc)
  void AddFd(Conn* c, uint32_t events);
  // Binds `c` as a listening socket on listen_addr:port, polled; the bound
  // port goes to *bound.
  absl::Status ListenOn(Conn* c, int port, std::atomic<int>* bound);
  void Send(Conn* c, absl::string_view bytes) {
    c->out.append(bytes.data(), bytes.size());
    MarkDirty(c);
  }
  void MarkDirty(Conn* c) {
    if (!c->dirty) {
      c->dirty = true;
      dirty_.push_back(c);
    }
  }
  void Flush(Conn* c);
  // (Re)registers c's epoll interest: EPOLLIN unless read_paused, EPOLLOUT
  // while output is pending.
  void SetInterest(Conn* c);
  // Back-pressure (loop.cc): after backend input went to c, stops reading b
  // when c's unsent output passes client_output_limit_bytes (true: stopped).
  bool PauseIfFull(Client* c, Backend* b);
  // Reading b again (its client drained or left); its buffered input is
  // handled at the end of the loop turn.
  void ResumeRead(Backend* b);
  bool ReadInto(Conn* c);  // false on EOF/error
  void OnEvent(Conn* c, uint32_t ev);
  void SetEpollOut(Conn* c, bool want);
  void Accept();
  void AcceptHttp();
  void OnHttp(Conn* c);
  void Timers();
  StealMode steal_mode() const {
    return !opt_.stealing         ? StealMode::kOff
           : opt_.steal_any       ? StealMode::kAny
           : opt_.steal_inflight  ? StealMode::kInFlight
                                  : StealMode::kAffinity;
  }
  // AdminSource (loop.cc)
  const Stats& stats() const override { return stats_; }
  int64_t clients_now() const override {
    return group_ != nullptr ? group_->clients.load() : static_cast<int64_t>(clients_.size());
  }
  std::vector<QueueRow> Queues() const override;
  std::vector<ClientRow> Clients() const override;
  std::vector<HistoryRow> TopByAborts(size_t k) const override;
  std::vector<SplitRow> Splits() const override;
  // Every database's Scheduler by name: this loop's (not owned by the
  // pointer) and, workers > 1, those only other loops opened.
  std::map<std::string, std::shared_ptr<scheduler::Scheduler>> AllSchedulers() const;
  LearnedSizes Learned() const override;
  std::string PolicyName() const override;
  std::string StealingName() const override;
  absl::Status SetPolicy(const std::string& name) override;
  absl::Status Reload() override;

  // --- clients (client_session.cc)
  void OnClientInput(Client* c);
  void HandleStartup(Client* c, absl::string_view body);
  void HandlePassword(Client* c, absl::string_view body);
  // SSLRequest: 'S' and a TLS session when client TLS is on, else 'N'.
  void StartClientTls(Client* c);
  void ContinueHandshake(Client* c);
  void FinishLogin(Client* c);
  void ProtocolError(Client* c, absl::string_view sqlstate, absl::string_view message);
  // Sends FATAL `message` (best effort) and closes the client (no counter).
  void CloseWithFatal(Client* c, absl::string_view sqlstate, absl::string_view message);
  // A refused login: logged (user, database, peer), counted, FATAL, closed.
  void LoginFailed(Client* c, absl::string_view sqlstate, absl::string_view message);
  void CloseClient(Client* c);
  void HandleCancel(int32_t pid, int32_t secret);

  // --- transactions (pump.cc)
  void Pump(Client* c);
  bool StartUnit(Client* c);  // detached: route the unit at the front; false: need more input
  // StartUnit's end for a unit of `unit_len` messages that opens a
  // transaction (`begin`: its held or bound BEGIN, "" when none): a READ ONLY
  // block that cannot conflict is free (FreeModeOf), else add_refs(plain
  // reads free) fills c->route; then the transaction starts.
  void RouteUnit(Client* c, const std::string& begin, size_t unit_len, absl::FunctionRef<void(bool)> add_refs);
  // Attached and between requests: a Parse/Describe unit at the front of
  // c's messages answered from describe_cache_ (AnswerDescribeFromCache),
  // saving the backend a round trip inside the transaction.
  bool AnswerAttachedFromCache(Client* c, Backend* b);
  // Answers pending[0..end] with "the transaction was rolled back" when the
  // client's backend died while it was idle in a transaction.
  bool AnswerLostTxn(Client* c, size_t end);
  void StartTxn(Client* c);
  // Options::free_reads: what of c's next unit runs unscheduled. kPlainReads:
  // outside a transaction block, below SERIALIZABLE (c's own
  // default_transaction_isolation, else its pool's backends'; or
  // SERIALIZABLE READ ONLY DEFERRABLE): the unit if it only reads.
  // kBlock: c's held BEGIN opens a READ ONLY block whose reads cannot
  // conflict (ReadsCannotConflict, the BEGIN's modes over the session's):
  // the whole block.
  // `begin`: the block's BEGIN (c->held_begin, or the one c's unit opens
  // with), "" outside a block.
  enum class FreeMode { kNo, kPlainReads, kBlock };
  FreeMode FreeModeOf(const Client* c, const std::string& begin) const;
  // c's transaction on backend qi when it is free and nobody waits there
  // (and, stealing on, none of its references is held), else in qi's
  // queue, where other idle backends may steal it.
  void RunOrWait(Client* c, int qi);
  // Attaches c to backend qi when it is free, its queue empty and c not
  // `blocked`; else c waits in that queue (false).
  bool AttachOrQueue(Client* c, int qi, bool blocked);
  // A conflict-free transaction's queue: the first idle backend with
  // nobody waiting, from a start that rotates, else the shortest queue.
  static int AnyIdleQueue(Pool* pool);
  void Attach(Client* c, Backend* b);
  // The attach SQL's ReadyForQuery: the client's messages go on, or, when
  // it failed (`error`: its ErrorResponse), the client is closed with it.
  void AttachDone(Client* c, Backend* b, const std::string& error);
  // ReadyForQuery / ErrorResponse the proxy makes up for a client, noted in
  // its session (c->sess) as the server's are.
  void ClientReady(Client* c, char status);
  void ClientError(Client* c, absl::string_view sqlstate, absl::string_view message);
  void EndTxn(Client* c, Backend* b);
  // Retry-aware routing (retry_memory.h), templates and replay: the
  // backend index of the running transaction (not c's, nor one waiting to
  // replay) that touched one of `remembered` (or else was routed on one
  // ahead), -1 when none; at the end of c's
  // transaction, counts predicted references it touched and a clean retry,
  // and remembers a conflict-failed one.
  int RetryHolder(const Pool& pool, const Client* c, const RefVec& remembered) const;
  void RememberForRetry(Client* c, scheduler::Outcome o);
  // Split on (LoadsOf): c's attempt on b ended with `o` (the end of its
  // transaction, a restart, a replay round); the next one starts now.
  void NoteAttempt(Client* c, Backend* b, scheduler::Outcome o);
  void Dispatch(Backend* b);
  // Ends the backend's association with its client; releases the client's
  // affine references (and, if any, lets idle backends look again).
  void Detach(Backend* b, Client* c);
  // The Router of a logged-in client's / a backend's database.
  static Router& RouterOf(const Client* c) { return *c->pool->db->router; }
  static Router& RouterOf(const Backend* b) { return *b->pool->db->router; }
  // Stealing on: a reference of c's transaction is held by a running one.
  bool Blocked(const Client* c) const {
    const auto& inflight = c->pool->inflight;
    if (!c->affinity || inflight.empty()) return false;
    for (RefId r : c->route.txn.refs) {
      auto it = inflight.find(r.value());
      if (it == inflight.end()) continue;
      // The split hot reference that placed c on one of its k queues
      // (Options::split): k of its transactions may run at once.
      if (SplitLead(c, r) ? it->second >= c->route.split_k : true) return true;
    }
    return false;
  }
  static bool SplitLead(const Client* c, RefId r) {
    return c->route.txn.placed_split && c->route.txn.placed_by == r;
  }
  void DispatchIdle(Pool* p) {
    for (auto& b : p->backends) {
      if (b->Free()) Dispatch(b.get());
    }
  }
  void DispatchIdleAll() {
    for (auto& [k, p] : pools_) DispatchIdle(p.get());
  }
  bool waiting_any() const {
    for (const auto& [k, p] : pools_) {
      for (const auto& q : p->waitq) {
        if (!q.empty()) return true;
      }
    }
    return false;
  }
  bool any_running() const {
    for (const auto& [k, p] : pools_) {
      for (const auto& b : p->backends) {
        if (b->client != nullptr) return true;
      }
    }
    return false;
  }
  // Counts and answers a transaction the proxy ends itself (a held BEGIN's
  // COMMIT / ROLLBACK): CommandComplete.
  void EndHeldTxn(Client* c, TxnControl kind);

  // --- per-template concurrency cap (tcap_loop.cc)
  // Before c's transaction is routed: true when it may run (admitted, or
  // its database has no cap, or it holds its slot already); false when it
  // waits (its first statement held until a slot frees).
  bool CapAdmit(Client* c);
  // c's transaction ended (`conflict`: with 40001 / 40P01) or its client
  // left: its slot frees and the waiters admitted in its place start; a
  // waiting client that left is removed. No-op when c holds nothing.
  void CapEnd(Client* c, bool conflict);
  // AdminSource: SHOW TEMPLATE_CAPS.
  AdminTable TemplateCapRows() const override;

  // --- extended protocol (extended.cc)
  bool AnswerHeldExtended(Client* c, size_t end);
  bool AnswerPrepareOnly(Client* c, size_t end);
  // A client's unit of Parses and Describe-statements (up to Flush or Sync;
  // detached, or attached between requests) whose every statement the server has described before in the
  // same context (describe_cache_) is answered from that cache: no backend
  // is taken, so a held BEGIN stays held until the Bind that carries the
  // transaction's references (asyncpg with statement_cache_size=0). The
  // statements are parsed for real where they run (EnsureUnnamed /
  // EnsurePrepared), their answers swallowed.
  bool AnswerDescribeFromCache(Client* c, size_t end);
  // The DescribeCache key of statement `d` for client c: its key plus what
  // changes a Describe's answer (user, database, search_path, role).
  std::string DescribeKey(const Client* c, const PreparedDef& d) const;
  // A statement that may change the catalog runs on b: forget every
  // Describe answer (and again when b's transaction ends).
  void CatalogChanged(Backend* b);
  // Parses the client's unnamed statement `d` on b unless b holds it (it
  // was parsed elsewhere or answered from describe_cache_); the
  // ParseComplete is swallowed.
  void EnsureUnnamed(Backend* b, const PreparedDef& d);
  // After the Parse of a statement whose description the client got from
  // describe_cache_: a Describe whose answer is compared with it, unseen
  // (a mismatch, DDL the proxy did not see, makes the batch stale_batch).
  void CheckAnswered(Backend* b, const PreparedDef& d, const std::string& backend_name);
  // The ReadyForQuery of a stale_batch: the client's error and status.
  void AnswerStale(Client* c, Backend* b);
  void Forward(Client* c, Backend* b, char type, absl::string_view raw);
  bool EndsBlock(const Client* c, char type, absl::string_view body) const;
  std::string EnsurePrepared(Backend* b, const PreparedDef& d, bool client_parse);
  // A statement the client prepares that must not run under transaction
  // pooling (session_params.h's Refusal) becomes the DO block raising it
  // (true then).
  bool RefuseInDef(Client* c, PreparedDef* d);
  // Forwards a Bind, mapped to the backend's statement name; its references
  // go to the transaction when `extract` (routing did not take them); notes
  // the portal's statement in c->portal_sql when it may change the session.
  void ForwardBind(Client* c, Backend* b, absl::string_view raw, bool extract);
  // Sends a Describe of statement `backend_name` whose answer teaches the
  // types of `key` and is not forwarded (none when the batch already
  // describes `key`).
  void DescribeForTypes(Backend* b, const std::string& key, const std::string& backend_name);

  // --- transparent replay (replay_loop.cc, replay.h)
  // Forwarding client message `type` of c's transaction: kept for replay.
  void NoteReplayMessage(Client* c, char type, absl::string_view raw);
  // A 40001 / 40P01 ErrorResponse of c's own batch: true when the replay
  // takes it over (it is not forwarded).
  bool ReplayOnConflict(Client* c, Backend* b, absl::string_view raw, absl::string_view state);
  // A backend message while c's replay runs (not its ReadyForQuery):
  // whether it goes to the client. `batch_replay`: its batch's Batch::replay.
  bool ReplayMessage(Client* c, Backend* b, int batch_replay, char type, absl::string_view raw);
  // After the loop's own decision to forward a message of a running
  // replay (it drops injected ParseComplete / CloseComplete / Describe
  // answers): whether it goes to the client (compared first).
  bool ReplayVisible(Client* c, int batch_replay, char type, absl::string_view raw);
  // A ReadyForQuery (its batch popped) while c's replay runs: true when the
  // replay consumed it (the caller neither forwards it nor ends the
  // transaction).
  bool ReplayOnReady(Client* c, Backend* b, int batch_replay);
  // c's messages wait: its replay runs.
  static bool ReplayHolds(const Client* c) {
    const ReplayLog::Phase p = c->replay.phase();
    return p != ReplayLog::Phase::kOff && p != ReplayLog::Phase::kRecording;
  }
  // b's transaction ended (or was rolled back): replays waiting for it go on.
  void ReplayHolderEnded(Backend* b);
  // b (c's) failed mid-replay with no request of c's outstanding there:
  // answers c's request; true then, with the status sent in *status.
  bool ReplayBackendLost(Client* c, Backend* b, char* status);
  // Rolls back c's failed attempt and runs it again (after the holder).
  void ReplayRound(Client* c, Backend* b);
  // Waits for the next running holder of one of c's references, or replays.
  void ReplayWhenFree(Client* c, Backend* b);
  void SendReplay(Client* c, Backend* b);
  // The failed Query, or the extended unit's failed Execute and the rest
  // of the unit: their results go to the client.
  void SendReplayLast(Client* c, Backend* b);
  // One simple Query message (whole) / SQL text sent in a batch of
  // Batch::replay `kind` (3: a wrapped implicit replay's COMMIT).
  void SendReplayRaw(Backend* b, absl::string_view query_msg, int kind);
  void SendReplayQuery(Backend* b, absl::string_view sql, int kind);
  // Re-sends the log's client messages [from, to) through Forward, in
  // batches of Batch::replay `kind`.
  void ReplayForward(Client* c, Backend* b, size_t from, size_t to, int kind);
  // The replay did not work out: the client gets the original error, the
  // server the state the client believes it is in.
  void ReplayGiveUp(Client* c, Backend* b);

  // --- databases and pools (databases.cc)
  // The Database of entry `e` (made, with its Scheduler, Router and
  // catalog, on first use); ResourceExhausted past max_fallback_databases.
  absl::StatusOr<Database*> DatabaseFor(const DatabaseEntry& e);
  // Finds or makes (connecting its backends: blocking, as at Start) the
  // pool of c's database and server login; an error is the server's
  // refusal (its message, its SQLSTATE in *sqlstate; "" when not the server's).
  absl::StatusOr<Pool*> PoolFor(Client* c, std::string* sqlstate);
  // As PoolFor, for entry `e` and the login in creds (user, secret, keys).
  absl::StatusOr<Pool*> PoolOf(const DatabaseEntry& e, const Pool& creds, std::string* sqlstate);
  // The password for c's user (auth_file, else auth_query); NotFound when
  // neither knows it.
  absl::StatusOr<std::string> PasswordOf(Client* c);
  // AdminSource (databases.cc)
  AdminTable Databases() const override;
  // SHOW POOLS: this loop's pools (View adds the other loops').
  AdminTable Pools() const override;
  AdminTable Users() const override;
  AdminTable TemplateRows() const override;

  // --- multi-proxy mode (cluster_loop.cc)
  // Makes and starts db's ClusterSync when cluster_name is set (workers >
  // 1: shares the group's for db's name when its options are the same).
  void StartCluster(Database* db);
  // RELOAD: when a cluster_* key changed, every database's ClusterSync is
  // stopped (joined: at most one round) and made anew from `fresh`
  // (cluster_name "" turns sharing off). Keys that backends hold now are
  // released as before (they are the backends').
  void ReloadCluster(const Options& fresh);
  // Timers: each clustered database adopts the schema its catalog watch
  // re-read (a pointer swap in its Router; cluster_loop.cc).
  void AdoptClusterSchemas();
  // db's router names by `schema` from now on (RELOAD, DDL seen by the
  // cluster sync, a fallback database's first pool), and its clients'
  // statements forget their plain-read memos (a function the catalog now
  // knows as the database's own ends a plain read).
  void AdoptSchema(Database* db, std::shared_ptr<const Schema> schema);
  // Attach: locks the keys of c's shared-hot references on b first.
  void TakeClusterLocks(Client* c, Backend* b);
  // cluster_lock = table: the LOCK of `keys`' stripes after the held BEGIN
  // (SendHeldBegin), or behind a BEGIN of the proxy's sent now when the
  // client's first unit opens the block itself (its BEGIN's WARNING
  // dropped); an implicit transaction's unit runs in a block of the proxy's
  // (BEGIN and LOCK before it, a COMMIT after it, TableWrapCommit).
  void TakeTableLocks(Client* c, Backend* b, const std::vector<int64_t>& keys);
  // The held BEGIN (or a replay's `begin`), with the table lock that waits
  // for it, as one swallowed Query.
  void SendHeldBegin(Backend* b, const std::string& begin);
  // What goes before the client's first unit, after the session's attach
  // SQL (which must not run inside the block): its held BEGIN (with its
  // table lock), or the proxy's BEGIN and table lock (TakeTableLocks).
  void SendTxnStart(Client* c, Backend* b);
  // Table mode: the stripes of every key c's transaction needs now (a
  // restart or replay re-running its log after BEGIN) to go with the next
  // held BEGIN sent on b (false: not table mode, or no key).
  bool PrepareTableLock(const Client* c, Backend* b);
  // Whether b's transaction holds key k's lock (advisory, or its stripe).
  static bool HoldsClusterKey(const Backend* b, int64_t k);
  // Whether the client's first pending unit opens a block with its own
  // BEGIN (a simple Query's first statement, a unit's first Bind); whether
  // it is an implicit transaction the proxy may run in a block of its own
  // (one statement of a simple Query, or a whole extended unit up to its
  // Sync, with no transaction control and no FunctionCall).
  bool FirstUnitBegins(const Client* c);
  bool FirstUnitWrappable(const Client* c);
  // After the wrapped unit's Sync / Query: the proxy's COMMIT.
  void WrapCommit(Backend* b);
  // The advisory keys of those of `refs` hot in the cluster (ClusterSync::
  // KeysFor), leaving out a reference split here (split = on: its k
  // backends run it at once; a key would serialize it again).
  static void ClusterKeysFor(const ClusterSync& cl, const Client* c, const RefVec& refs, std::vector<int64_t>* keys);
  // The transaction on b ended (or was rolled back): unlock its keys
  // (nothing when the unlock is already sent).
  void ReleaseClusterLocks(Backend* b);
  // Forward: the client's simple Query `sql` just sent to b ends the
  // transaction (COMMIT / ROLLBACK): its unlock goes in the same write, so
  // a coordinated transaction costs no round trip more than another.
  // `replay`: the client's database replays conflict-failed transactions
  // (a COMMIT's unlock is then not folded).
  void FoldClusterUnlock(Backend* b, absl::string_view sql, bool replay);
  // b's session ended: its locks went with it.
  void DropClusterLocks(Backend* b);
  // Sends the lock (unlock, try) of `keys` on b as one swallowed batch of
  // prepared statements (ClusterStatementSql, prepared on first use): one
  // Bind / Execute per key, in order, then Sync. The server parses and
  // plans them once per connection, not once per transaction.
  void SendClusterStatement(Backend* b, ClusterStmt kind, const std::vector<int64_t>& keys);
  // A restarted transaction rolled back on b takes `more` (sorted, none
  // held): LockMoreClusterKeys waits for them (every key b holds sorts
  // before them, so the wait closes no cycle between proxies);
  // TryClusterKeys takes those free (a cluster_try batch; RestartTried).
  void LockMoreClusterKeys(Backend* b, const std::vector<int64_t>& more);
  // b has a lock (or try) batch outstanding: its transaction waits for keys.
  static bool AwaitsClusterLocks(const Backend& b) {
    for (const Batch& x : b.batches) {
      if (x.cluster_lock || x.cluster_try) return true;
    }
    return false;
  }
  void TryClusterKeys(Backend* b, const std::vector<int64_t>& more);
  // A message of b's front batch (lock rows, unlock errors) / its end.
  void OnClusterMessage(Backend* b, const Batch& front, char type, absl::string_view body);
  void ClusterBatchDone(Backend* b, const Batch& front);
  AdminTable Cluster() const override;

  // --- backends (backend.cc)
  absl::Status ConnectBackend(Backend* b);
  void OnBackendInput(Backend* b);
  void FailBackend(Backend* b, absl::string_view why);
  void SendInternal(Backend* b, absl::string_view sql);  // swallowed simple query
  void SendCancel(Backend* b);
  void EndBatch(Backend* b) { b->batches.push_back(Batch()); }

  Options& opt_;
  Stats& stats_;
  scheduler::Scheduler& sched_;  // the default database's
  // By the name clients use; pools by (database name, server login).
  std::map<std::string, std::unique_ptr<Database>> dbs_;
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Pool>> pools_;
  int fallback_dbs_ = 0;
  AdminConsole console_{this};
  std::mt19937_64 rng_;
  int epfd_ = -1;
  Conn listen_{Conn::kListen};
  Conn metrics_listen_{Conn::kMetricsListen};
  Conn wake_{Conn::kWake};
  std::atomic<bool> stop_{false};
  std::atomic<uint32_t> requests_{0};  // Request bits
  std::atomic<bool> pause_done_{false};
  std::atomic<bool> finished_{false};
  bool paused_ = false;    // no backend is handed out
  bool draining_ = false;  // SIGTERM: finishing in-flight transactions, then stop
  bool stop_after_turn_ = false;  // SHUTDOWN: stop once this turn's output is flushed
  Client* admin_current_ = nullptr;  // the admin client whose statement runs
  absl::flat_hash_map<Client*, std::unique_ptr<Client>> clients_;
  std::vector<std::unique_ptr<Conn>> http_;
  absl::flat_hash_map<uint64_t, Client*> keys_;  // by Client::cancel_key()
  std::vector<Conn*> dirty_;
  std::vector<Backend*> resumed_;  // ResumeRead: buffered input to handle
  std::unique_ptr<tls::Context> client_tls_, server_tls_;  // null: TLS off that side
  // TLS connections with decrypted input OpenSSL holds (no epoll event comes).
  std::vector<Conn*> tls_pending_;
  std::unique_ptr<char[]> read_buf_;  // ReadInto's scratch (kReadChunk bytes)
  int64_t timers_at_ = 0;             // Timers' last full pass
  std::vector<std::unique_ptr<Conn>> graveyard_;
  std::vector<std::pair<std::string, std::string>> server_params_;
  DescribeCache describe_cache_{4096};  // the server's Describe-statement answers
  uint64_t next_client_id_ = 1;
  absl::flat_hash_map<uint64_t, Client*> cap_waiters_;  // clients waiting for a template slot, by id
  std::string cluster_proxy_id_;  // multi-proxy mode: this proxy's row key
  int64_t cluster_stmt_seq_ = 0;  // names of the lock / unlock statements (never reused)
  std::atomic<int64_t> clients_now_{0};
  // workers > 1: this loop's index and the group (null with one loop), the
  // clients waiting for their keys (by id), the inbox other threads fill.
  int worker_ = 0;
  WorkerGroup* group_ = nullptr;
  absl::flat_hash_map<uint64_t, Client*> key_waiters_;
  KeyLocks own_locks_;  // one loop: restart_on_hot_key's key table
  int64_t published_at_ = 0;
  TsanVisibleMutex inbox_mu_;
  std::vector<uint64_t> inbox_grants_ ABSL_GUARDED_BY(inbox_mu_);
  std::vector<std::pair<int32_t, int32_t>> inbox_cancels_ ABSL_GUARDED_BY(inbox_mu_);
  // The thread Run() runs on (read by any thread's KeysGranted), and the
  // grants made on it (loop thread only).
  std::atomic<std::thread::id> loop_thread_{};
  std::vector<uint64_t> local_grants_;
  const bool trace_ = std::getenv("CORRAL_PROXY_TRACE") != nullptr;  // message trace on stderr
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_PROXY_INTERNAL_H_
