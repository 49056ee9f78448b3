// The proxy's admin console: the SQL a client connected to the admin
// database ("corral") may send (SHOW STATS | QUEUES | CLIENTS | HISTORY |
// POLICY | DATABASES | POOLS | USERS | CLUSTER | TEMPLATES | TEMPLATE_CAPS |
// WORKERS, SET POLICY <name>, RELOAD, PAUSE,
// RESUME, SHUTDOWN), answered as
// protocol bytes. It works
// against AdminSource, a narrow view of the proxy (counters, queues, clients,
// history, the policy setter and reload), so it is testable without sockets.
//
//   class Fake : public proxy::AdminSource { ... };
//   Fake src;
//   proxy::AdminConsole console(&src);
//   std::string out;
//   console.OnMessage('Q', query_body, &out);   // RowDescription..ReadyForQuery
//
// Thread safety: not thread-safe; the event loop owns the console and calls
// it (and through it the source) on its thread only.
#ifndef CORRAL_ADAPTERS_PROXY_ADMIN_CONSOLE_H_
#define CORRAL_ADAPTERS_PROXY_ADMIN_CONSOLE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "adapters/proxy/stats.h"

namespace corral {
namespace proxy {

// A result with column names (SHOW DATABASES / POOLS / USERS).
struct AdminTable {
  std::vector<std::string> columns;
  std::vector<std::vector<std::string>> rows;
};

// The SHOW views whose rows belong to one event loop (its pools, backends,
// clients, ...): a proxy with workers > 1 answers each with every loop's
// rows (AdminSource::View).
enum class AdminView { kQueues, kClients, kDatabases, kPools, kUsers, kTemplates, kTemplateCaps, kCluster };
constexpr int kAdminViews = 8;

class AdminSource;
// View `v` of `s` itself as the console shows it (columns and rows).
AdminTable LocalAdminView(const AdminSource& s, AdminView v);

// What the console reads and changes; the proxy's event loop implements it.
class AdminSource {
 public:
  struct QueueRow {
    int index = 0;
    int32_t server_pid = 0;
    std::string state;   // down | active | idle
    std::string client;  // the attached client's id, "" when none
    size_t waiting = 0;
    int64_t transactions = 0;
    size_t prepared = 0;
    std::string database, user;  // its pool's
  };
  struct ClientRow {
    uint64_t id = 0;
    std::string user, database;
    std::string state;  // admin | active | waiting | idle
    std::string queue;  // its backend's or wait queue's index, "" when none
    int64_t transactions = 0;
  };
  // SHOW SPLITS: a hot reference split over several backends
  // (Options::split): its database, text, k and backends.
  struct SplitRow {
    std::string database, reference;
    int k = 0;
    std::string queues;  // "0,3,5": the order added, home first
  };
  struct HistoryRow {
    std::string reference;  // display text (or the hex id)
    int64_t aborts = 0, commits = 0;
  };
  // How full the learned tables are (SHOW STATS): whether the History has
  // stopped taking new references, or the State evicts rows.
  struct LearnedSizes {
    int64_t history_entries = 0;
    int64_t history_max_entries = 0;   // 0 = unbounded
    int64_t history_dropped_full = 0;  // new references not added: full
    int64_t history_unadmitted_commits = 0;  // first commits the doorkeeper kept out
    int64_t state_entries = 0;
    int64_t state_max_entries = 0;     // 0 = unbounded
    int64_t state_evictions = 0;
    int64_t split_references = 0;  // hot references split over backends now (SHOW SPLITS)
    int64_t split_max_k = 0;       // the most backends one of them runs on (1: none split)
  };

  virtual ~AdminSource() = default;
  virtual const Stats& stats() const = 0;
  virtual int64_t clients_now() const = 0;
  virtual std::vector<QueueRow> Queues() const = 0;
  virtual std::vector<ClientRow> Clients() const = 0;
  virtual std::vector<HistoryRow> TopByAborts(size_t k) const = 0;
  virtual std::vector<SplitRow> Splits() const { return {}; }
  virtual LearnedSizes Learned() const = 0;
  // SHOW DATABASES (entries and databases in use), POOLS (per database and
  // server login), USERS (per client user).
  virtual AdminTable Databases() const = 0;
  // SHOW CLUSTER (multi-proxy mode, cluster.h): per database in a cluster,
  // peers seen, shared references, last publish, locks held and waited.
  virtual AdminTable Cluster() const { return {}; }
  virtual AdminTable Pools() const = 0;
  // SHOW WORKERS (workers > 1): per event loop, its clients, accepted
  // connections, transactions and key waits; empty with one loop.
  virtual AdminTable Workers() const { return {}; }
  virtual AdminTable Users() const = 0;
  // SHOW TEMPLATES: the learned statement templates (templates.h) of every
  // database with templates on.
  virtual AdminTable TemplateRows() const { return {}; }
  // SHOW TEMPLATE_CAPS: the per-template concurrency cap (template_cap.h)
  // of every database with template_concurrency on: k, running, waiting.
  virtual AdminTable TemplateCapRows() const { return {}; }
  virtual std::string PolicyName() const = 0;
  virtual std::string StealingName() const = 0;
  // The policy by name (ParsePolicy's names); an error for an unknown one.
  virtual absl::Status SetPolicy(const std::string& name) = 0;
  // Re-reads the config file's online keys and the catalog.
  virtual absl::Status Reload() = 0;
  // PAUSE: stop handing out backends (the source may hold the answer until
  // no transaction runs); RESUME: hand them out again; SHUTDOWN: stop now.
  virtual void Pause() = 0;
  virtual void Resume() = 0;
  virtual void Shutdown() = 0;
  // What the console shows for a per-loop view: LocalAdminView(*this, v);
  // a proxy with several loops adds the other loops' rows (and a worker
  // column).
  virtual AdminTable View(AdminView v) const { return LocalAdminView(*this, v); }
};

class AdminConsole {
 public:
  explicit AdminConsole(AdminSource* source) : source_(*source) {}

  // One frontend message of an admin client (not 'X', which closes it):
  // a Query is answered; other messages get "simple query protocol only"
  // (and a ReadyForQuery for a Sync). `may_change`: the client is one of
  // admin_users; without it only SHOW runs (stats_users), anything else
  // gets ERROR 42501.
  void OnMessage(char type, absl::string_view body, std::string* out, bool may_change = true);
  // One admin statement; appends its result and ReadyForQuery to out.
  void Query(absl::string_view sql, std::string* out, bool may_change = true);

 private:
  AdminSource& source_;
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_ADMIN_CONSOLE_H_
