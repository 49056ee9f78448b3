#include "adapters/proxy/admin_console.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "adapters/proxy/wire.h"

namespace corral {
namespace proxy {

AdminTable LocalAdminView(const AdminSource& s, AdminView v) {
  switch (v) {
    case AdminView::kQueues: {
      AdminTable t;
      t.columns = {"queue", "server_pid", "state", "client", "waiting", "transactions", "prepared", "database", "user"};
      for (const AdminSource::QueueRow& q : s.Queues()) {
        t.rows.push_back({std::to_string(q.index), std::to_string(q.server_pid), q.state, q.client,
                          std::to_string(q.waiting), std::to_string(q.transactions), std::to_string(q.prepared),
                          q.database, q.user});
      }
      return t;
    }
    case AdminView::kClients: {
      AdminTable t;
      t.columns = {"id", "user", "database", "state", "queue", "transactions"};
      for (const AdminSource::ClientRow& c : s.Clients()) {
        t.rows.push_back({std::to_string(c.id), c.user, c.database, c.state, c.queue, std::to_string(c.transactions)});
      }
      return t;
    }
    case AdminView::kDatabases:
      return s.Databases();
    case AdminView::kPools:
      return s.Pools();
    case AdminView::kUsers:
      return s.Users();
    case AdminView::kTemplates:
      return s.TemplateRows();
    case AdminView::kTemplateCaps:
      return s.TemplateCapRows();
    case AdminView::kCluster:
      return s.Cluster();
  }
  return {};
}

void AdminConsole::OnMessage(char type, absl::string_view body, std::string* out, bool may_change) {
  if (type != 'Q') {
    wire::AppendError(out, "ERROR", "0A000", "the admin console speaks the simple query protocol only");
    if (type == 'S') wire::AppendReadyForQuery(out, 'I');
    return;
  }
  wire::Reader r(body);
  Query(r.CString(), out, may_change);
}

void AdminConsole::Query(absl::string_view sql_in, std::string* out, bool may_change) {
  std::string sql = absl::AsciiStrToLower(absl::StripAsciiWhitespace(sql_in));
  while (!sql.empty() && (sql.back() == ';' || absl::ascii_isspace(sql.back()))) sql.pop_back();
  std::vector<std::string> words = absl::StrSplit(sql, ' ', absl::SkipEmpty());
  auto is = [&](const char* a, const char* b) { return words.size() == 2 && words[0] == a && words[1] == b; };
  auto done = [&]() { wire::AppendReadyForQuery(out, 'I'); };
  if (!may_change && !words.empty() && words[0] != "show") {
    wire::AppendError(out, "ERROR", "42501",
                      absl::StrCat("permission denied: '", sql_in,
                                   "' needs a user in admin_users (stats_users may only SHOW)"));
    return done();
  }
  if (is("show", "stats")) {
    const Stats& s = source_.stats();
    std::vector<std::vector<std::string>> rows;
    auto row = [&](const char* k, int64_t v) { rows.push_back({k, std::to_string(v)}); };
    row("transactions", s.transactions);
    row("commits", s.commits);
    row("conflict_aborts_40001", s.aborts_40001);
    row("conflict_aborts_40P01", s.aborts_40P01);
    row("user_errors", s.user_errors);
    row("rollbacks", s.rollbacks);
    row("queue_waits", s.queue_waits);
    row("steals", s.steals);
    row("steals_affine", s.steals_affine);
    row("affine_transactions", s.affine_txns);
    row("free_reads", s.free_reads);
    row("wait_timeouts", s.wait_timeouts);
    row("clients", source_.clients_now());
    row("clients_accepted", s.clients_accepted);
    row("clients_rejected", s.clients_rejected);
    row("client_rollbacks", s.client_rollbacks);
    row("failed_logins", s.failed_logins);
    row("protocol_errors", s.protocol_errors);
    row("backend_failures", s.backend_failures);
    row("cancels", s.cancels);
    row("parses_injected", s.parses_injected);
    row("backpressure_pauses", s.backpressure_pauses);
    row("client_output_peak_bytes", s.client_output_peak_bytes);
    row("describes_injected", s.describes_injected);
    row("describes_answered", s.describes_answered);
    row("describe_invalidations", s.describe_invalidations);
    row("describes_stale", s.describes_stale);
    row("undecodable_params", s.undecodable_params);
    row("tls_clients", s.tls_clients);
    row("tls_handshake_failures", s.tls_handshake_failures);
    row("cluster_lock_txns", s.cluster_lock_txns);
    row("cluster_locks_taken", s.cluster_locks_taken);
    row("cluster_lock_waits", s.cluster_lock_waits);
    row("cluster_locks_held", s.cluster_locks_held);
    row("cluster_unlock_retries", s.cluster_unlock_retries);
    row("cluster_unlocks_folded", s.cluster_unlocks_folded);
    row("cluster_wrapped_units", s.cluster_wrapped_units);
    row("cluster_growing_txns", s.cluster_growing_txns);
    row("cluster_unlocked_units", s.cluster_unlocked_units);
    row("cluster_lock_errors", s.cluster_lock_errors);
    row("cluster_publishes", s.cluster_publishes);
    row("cluster_sync_failures", s.cluster_sync_failures);
    row("retries_remembered", s.retries_remembered);
    row("retries_routed", s.retries_routed);
    row("retries_behind_holder", s.retries_behind_holder);
    row("retries_clean", s.retries_clean);
    row("retry_memory_evictions", s.retry_memory_evictions);
    row("template_predictions", s.template_predictions);
    row("template_predicted_refs", s.template_predicted_refs);
    row("template_predicted_hits", s.template_predicted_hits);
    row("template_behind_holder", s.template_behind_holder);
    row("template_mappings_dropped", s.template_mappings_dropped);
    row("template_cap_waits", s.template_cap_waits);
    row("template_cap_wait_ms", s.template_cap_wait_ms);
    row("template_cap_cancels", s.template_cap_cancels);
    row("template_cap_shrinks", s.template_cap_shrinks);
    row("template_cap_grows", s.template_cap_grows);
    row("template_cap_capped", s.template_cap_capped);
    row("replays", s.replays);
    row("replay_matches", s.replay_matches);
    row("replay_mismatches", s.replay_mismatches);
    row("replay_exhausted", s.replay_exhausted);
    row("replay_unreplayable", s.replay_unreplayable);
    row("replay_overflows", s.replay_overflows);
    row("replay_waits", s.replay_waits);
    row("replays_extended", s.replays_extended);
    row("replays_implicit", s.replays_implicit);
    row("replay_unreplayable_shape", s.replay_unreplayable_shape);
    row("worker_key_txns", s.worker_key_txns);
    row("worker_key_waits", s.worker_key_waits);
    row("worker_key_cross_waits", s.worker_key_cross_waits);
    row("key_grants_local", s.key_grants_local);
    row("restart_key_txns", s.restart_key_txns);
    row("restart_keys_taken", s.restart_keys_taken);
    row("restarts", s.restarts);
    row("restart_matches", s.restart_matches);
    row("restart_mismatches", s.restart_mismatches);
    row("restart_key_waits", s.restart_key_waits);
    row("restart_requeues", s.restart_requeues);
    row("restart_wait_ms", s.restart_wait_ns / 1000000);
    row("restart_cluster_relocks", s.restart_cluster_relocks);
    row("restart_cluster_retakes", s.restart_cluster_retakes);
    row("restart_held_waits", s.restart_held_waits);
    row("restart_hold_timeouts", s.restart_hold_timeouts);
    row("restart_gate_txns", s.restart_gate_txns);
    row("restart_gate_waits", s.restart_gate_waits);
    row("restart_gate_early", s.restart_gate_early);
    const AdminSource::LearnedSizes l = source_.Learned();
    row("history_entries", l.history_entries);
    row("history_max_entries", l.history_max_entries);
    row("history_dropped_full", l.history_dropped_full);
    row("history_unadmitted_commits", l.history_unadmitted_commits);
    row("state_entries", l.state_entries);
    row("state_max_entries", l.state_max_entries);
    row("state_evictions", l.state_evictions);
    row("split_references", l.split_references);
    row("split_max_k", l.split_max_k);
    wire::AppendTextResult(out, {"stat", "value"}, rows);
    return done();
  }
  if (words.size() == 2 && words[0] == "show") {
    static const std::pair<const char*, AdminView> kViews[] = {
        {"queues", AdminView::kQueues},       {"clients", AdminView::kClients},
        {"databases", AdminView::kDatabases}, {"pools", AdminView::kPools},
        {"users", AdminView::kUsers},         {"templates", AdminView::kTemplates},
        {"template_caps", AdminView::kTemplateCaps}, {"cluster", AdminView::kCluster}};
    for (const auto& [name, v] : kViews) {
      if (words[1] != name) continue;
      const AdminTable t = source_.View(v);
      wire::AppendTextResult(out, t.columns, t.rows);
      return done();
    }
  }
  if (is("show", "workers")) {
    const AdminTable t = source_.Workers();
    wire::AppendTextResult(out, t.columns, t.rows);
    return done();
  }
  if (is("show", "history")) {
    std::vector<std::vector<std::string>> rows;
    for (const AdminSource::HistoryRow& e : source_.TopByAborts(20)) {
      rows.push_back({e.reference, std::to_string(e.aborts), std::to_string(e.commits)});
    }
    wire::AppendTextResult(out, {"reference", "aborts", "commits"}, rows);
    return done();
  }
  if (is("show", "splits")) {
    std::vector<std::vector<std::string>> rows;
    for (const AdminSource::SplitRow& e : source_.Splits()) {
      rows.push_back({e.database, e.reference, std::to_string(e.k), e.queues});
    }
    wire::AppendTextResult(out, {"database", "reference", "k", "backends"}, rows);
    return done();
  }
  if (is("show", "policy")) {
    wire::AppendTextResult(out, {"policy", "stealing"}, {{source_.PolicyName(), source_.StealingName()}});
    return done();
  }
  if (words.size() == 3 && words[0] == "set" && words[1] == "policy") {
    std::string name = words[2];
    name.erase(std::remove(name.begin(), name.end(), '\''), name.end());
    if (absl::Status st = source_.SetPolicy(name); !st.ok()) {
      wire::AppendError(out, "ERROR", "22023", st.message());
    } else {
      wire::AppendCommandComplete(out, "SET");
    }
    return done();
  }
  if (words.size() == 1 && (words[0] == "pause" || words[0] == "resume" || words[0] == "shutdown")) {
    if (words[0] == "pause") source_.Pause();
    if (words[0] == "resume") source_.Resume();
    if (words[0] == "shutdown") source_.Shutdown();
    wire::AppendCommandComplete(out, absl::AsciiStrToUpper(words[0]));
    return done();
  }
  if (words.size() == 1 && words[0] == "reload") {
    if (absl::Status st = source_.Reload(); !st.ok()) {
      wire::AppendError(out, "ERROR", "F0000", absl::StrCat("RELOAD failed: ", st.message()));
    } else {
      wire::AppendCommandComplete(out, "RELOAD");
    }
    return done();
  }
  wire::AppendError(out, "ERROR", "42601",
                    absl::StrCat("unknown admin command '", sql_in,
                                 "'; try SHOW STATS | QUEUES | CLIENTS | HISTORY | POLICY | DATABASES | POOLS | USERS | CLUSTER | WORKERS | "
                                 "TEMPLATES | TEMPLATE_CAPS, "
                                 "SET POLICY <name>, RELOAD, PAUSE, RESUME, SHUTDOWN"));
  done();
}

}  // namespace proxy
}  // namespace corral
