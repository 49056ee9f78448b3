#include "adapters/proxy/metrics.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace corral {
namespace proxy {
namespace metrics {

std::string MetricsText(const Stats& stats, int64_t clients) {
  std::string s;
  auto metric = [&](const char* type, const char* name, const char* help, int64_t v) {
    absl::StrAppend(&s, "# HELP ", name, " ", help, "\n# TYPE ", name, " ", type, "\n", name, " ", v, "\n");
  };
  auto counter = [&](const char* name, const char* help, int64_t v) { metric("counter", name, help, v); };
  auto gauge = [&](const char* name, const char* help, int64_t v) { metric("gauge", name, help, v); };
  counter("corral_transactions_total", "Transactions routed.", stats.transactions);
  counter("corral_commits_total", "Committed transactions.", stats.commits);
  absl::StrAppend(&s,
                  "# HELP corral_conflict_aborts_total Conflict aborts by SQLSTATE.\n"
                  "# TYPE corral_conflict_aborts_total counter\n"
                  "corral_conflict_aborts_total{sqlstate=\"40001\"} ",
                  stats.aborts_40001.load(), "\ncorral_conflict_aborts_total{sqlstate=\"40P01\"} ",
                  stats.aborts_40P01.load(), "\n");
  counter("corral_user_errors_total", "Transactions that ended with another error.", stats.user_errors);
  counter("corral_queue_waits_total", "Transactions that waited for their backend.", stats.queue_waits);
  counter("corral_steals_total", "Waiting transactions taken by another idle backend.", stats.steals);
  counter("corral_steals_affine_total",
          "Steals of transactions placed by learned affinity (stealing on: no running transaction held their "
          "references; affinity: waited past steal_after_ms).",
          stats.steals_affine);
  counter("corral_affine_transactions_total", "Transactions placed by learned affinity.",
          stats.affine_txns);
  counter("corral_free_reads_total",
          "Plain reads outside a transaction block at READ COMMITTED, run on any idle backend, not routed or learned.",
          stats.free_reads);
  counter("corral_wait_timeouts_total", "Clients closed by query_wait_timeout.", stats.wait_timeouts);
  counter("corral_protocol_errors_total", "Clients closed for protocol errors.", stats.protocol_errors);
  counter("corral_backend_failures_total", "Backend connections lost.", stats.backend_failures);
  counter("corral_cancels_total", "Cancel requests forwarded.", stats.cancels);
  counter("corral_failed_logins_total", "Logins refused (wrong password, unknown user, admin console not allowed).",
          stats.failed_logins);
  counter("corral_backpressure_pauses_total", "Times a backend's reading stopped for a slow client.",
          stats.backpressure_pauses);
  gauge("corral_client_output_peak_bytes", "Most unsent output buffered for one client.", stats.client_output_peak_bytes);
  counter("corral_undecodable_params_total",
          "Bind parameter values that yielded no reference: a binary value of a type the proxy does not decode.",
          stats.undecodable_params);
  counter("corral_tls_clients_total", "Clients that completed a TLS handshake.", stats.tls_clients);
  counter("corral_tls_handshake_failures_total", "Client TLS handshakes that failed.",
          stats.tls_handshake_failures);
  counter("corral_cluster_lock_transactions_total",
          "Transactions that took cross-proxy advisory locks (multi-proxy mode).", stats.cluster_lock_txns);
  counter("corral_cluster_locks_taken_total", "Cross-proxy advisory lock keys taken.", stats.cluster_locks_taken);
  counter("corral_cluster_lock_waits_total", "Cross-proxy advisory lock keys that waited for another session.",
          stats.cluster_lock_waits);
  counter("corral_cluster_unlock_retries_total", "Advisory unlocks sent again after an error.",
          stats.cluster_unlock_retries);
  counter("corral_cluster_unlocks_folded_total",
          "Advisory unlocks sent in the same write as the transaction's COMMIT / ROLLBACK.",
          stats.cluster_unlocks_folded);
  counter("corral_cluster_wrapped_units_total",
          "cluster_lock = table: implicit transactions run in a block of the proxy's to take their stripes.",
          stats.cluster_wrapped_units);
  counter("corral_cluster_growing_txns_total",
          "cluster_lock = table: blocks of a template that takes a later hot key, with advisory keys too.",
          stats.cluster_growing_txns);
  counter("corral_cluster_unlocked_units_total",
          "cluster_lock = table: units with shared-hot keys that took no lock (a shape not wrapped).",
          stats.cluster_unlocked_units);
  counter("corral_cluster_lock_errors_total",
          "cluster_lock = table: stripe LOCKs that failed (lock_timeout, permission); the client got their error.",
          stats.cluster_lock_errors);
  counter("corral_cluster_publishes_total", "Rounds that published to the shared table.", stats.cluster_publishes);
  counter("corral_cluster_sync_failures_total",
          "Rounds that could not reach the shared table (local learning only).", stats.cluster_sync_failures);
  gauge("corral_cluster_locks_held", "Cross-proxy advisory lock keys held now.", stats.cluster_locks_held);
  counter("corral_retries_remembered_total", "Transactions failed with 40001/40P01 remembered for their retry.",
          stats.retries_remembered);
  counter("corral_retries_routed_total", "Retries recognized and routed on their remembered references.",
          stats.retries_routed);
  counter("corral_retries_behind_holder_total", "Routed retries queued behind the running holder of a reference.",
          stats.retries_behind_holder);
  counter("corral_retries_clean_total", "Routed retries that committed.", stats.retries_clean);
  counter("corral_retry_memory_evictions_total", "Remembered transactions dropped for retry_memory_size.",
          stats.retry_memory_evictions);
  counter("corral_template_predictions_total", "First statements whose template predicted later references.",
          stats.template_predictions);
  counter("corral_template_predicted_refs_total", "References predicted by statement templates.",
          stats.template_predicted_refs);
  counter("corral_template_predicted_hits_total", "Predicted references the transaction then touched.",
          stats.template_predicted_hits);
  counter("corral_template_behind_holder_total",
          "Transactions queued behind the running holder of a predicted reference.", stats.template_behind_holder);
  counter("corral_template_mappings_dropped_total", "Learned template mappings that stopped holding.",
          stats.template_mappings_dropped);
  counter("corral_template_cap_waits_total", "Transactions that waited for a template concurrency slot.",
          stats.template_cap_waits);
  counter("corral_template_cap_wait_ms_total", "Time transactions waited for a template concurrency slot (ms).",
          stats.template_cap_wait_ms);
  counter("corral_template_cap_cancels_total", "Template slot waiters whose client left.", stats.template_cap_cancels);
  counter("corral_template_cap_shrinks_total", "Steps down of a template's concurrency cap.",
          stats.template_cap_shrinks);
  counter("corral_template_cap_grows_total", "Steps up of a template's concurrency cap.", stats.template_cap_grows);
  gauge("corral_template_cap_capped", "Templates whose concurrency is capped now.", stats.template_cap_capped);
  counter("corral_replays_total", "Re-runs of a transaction the server failed with 40001/40P01 (replay).",
          stats.replays);
  counter("corral_replay_matches_total", "Replays whose every result matched: the client went on.",
          stats.replay_matches);
  counter("corral_replay_mismatches_total", "Replays with a differing result: the client got the original error.",
          stats.replay_mismatches);
  counter("corral_replay_exhausted_total", "Replays that failed again replay_max_attempts times.",
          stats.replay_exhausted);
  counter("corral_replay_unreplayable_total", "Conflict errors in transactions replay cannot re-run.",
          stats.replay_unreplayable);
  counter("corral_replay_overflows_total", "Of them: transactions past replay_buffer_bytes.", stats.replay_overflows);
  counter("corral_replay_waits_total", "Replays that waited for the holder of a conflicting reference.",
          stats.replay_waits);
  counter("corral_replays_extended_total", "Of the replays: transactions that used the extended protocol.",
          stats.replays_extended);
  counter("corral_replays_implicit_total",
          "Of the replays: implicit (autocommit) transactions, the failed unit re-run alone.",
          stats.replays_implicit);
  counter("corral_replay_unreplayable_shape_total",
          "Of the unreplayable: units of a shape replay does not re-run.",
          stats.replay_unreplayable_shape);
  counter("corral_worker_key_txns_total", "Transactions that took in-process keys of hot references (workers > 1).",
          stats.worker_key_txns);
  counter("corral_worker_key_waits_total", "Transactions that waited for an in-process key (workers > 1).",
          stats.worker_key_waits);
  counter("corral_worker_key_cross_waits_total",
          "Key waits behind a transaction of another event loop (workers > 1).", stats.worker_key_cross_waits);
  counter("corral_key_grants_local_total",
          "Key grants made on the waiter's own event loop, applied in the same turn without a wake-up.",
          stats.key_grants_local);
  counter("corral_restart_key_txns_total", "Transactions that took keys of hot references before BEGIN (restart_on_hot_key).",
          stats.restart_key_txns);
  counter("corral_restart_keys_taken_total", "Hot keys a later statement took free (restart_on_hot_key).",
          stats.restart_keys_taken);
  counter("corral_restarts_total",
          "Transactions restarted before a later statement whose hot key was held or released since their snapshot.",
          stats.restarts);
  counter("corral_restart_matches_total", "Restarts whose re-run matched what the client saw: the statement went on.",
          stats.restart_matches);
  counter("corral_restart_mismatches_total", "Restarts whose re-run differed or failed again: the client got 40001.",
          stats.restart_mismatches);
  counter("corral_restart_key_waits_total", "Restarts that waited for their keys.", stats.restart_key_waits);
  counter("corral_restart_requeues_total",
          "Restart waits that would have closed a wait cycle: the keys held were given up and all requested again.",
          stats.restart_requeues);
  counter("corral_restart_wait_ms_total", "Time restarted transactions waited for their keys (ms).",
          stats.restart_wait_ns.load() / 1000000);
  counter("corral_restart_cluster_relocks_total",
          "Restarts for a reference hot across proxies whose advisory key the transaction lacked (multi-proxy mode).",
          stats.restart_cluster_relocks);
  counter("corral_restart_cluster_retakes_total",
          "Of them, those whose advisory keys all went back and were taken again in order (one was held elsewhere).",
          stats.restart_cluster_retakes);
  counter("corral_restart_held_waits_total",
          "Restarts that waited for local keys keeping their backend and advisory keys (multi-proxy mode).",
          stats.restart_held_waits);
  counter("corral_restart_hold_timeouts_total", "Of them, those whose wait ran past its bound and left the backend.",
          stats.restart_hold_timeouts);
  counter("corral_restart_gate_txns_total",
          "Transactions of a template whose restarts closed wait cycles, admitted through its gate (restart_gate).",
          stats.restart_gate_txns);
  counter("corral_restart_gate_waits_total", "Of them, those that waited for the gate.", stats.restart_gate_waits);
  counter("corral_restart_gate_early_total", "Gates given back before the transaction ended (its key set complete).",
          stats.restart_gate_early);
  gauge("corral_clients", "Connected clients.", clients);
  return s;
}

bool HttpRequestComplete(absl::string_view request, bool eof) {
  return eof || request.size() > 8192 || absl::StrContains(request, "\r\n\r\n");
}

std::string HttpResponse(absl::string_view request, const std::function<std::string()>& metrics) {
  if (absl::StartsWith(request, "GET /metrics")) {
    const std::string body = metrics();
    return absl::StrCat("HTTP/1.0 200 OK\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: ",
                        body.size(), "\r\nConnection: close\r\n\r\n", body);
  }
  return "HTTP/1.0 404 Not Found\r\nContent-Length: 10\r\nConnection: close\r\n\r\nnot found\n";
}

}  // namespace metrics
}  // namespace proxy
}  // namespace corral
