// The proxy's counters (proxy::Stats, part of proxy.h's public API), in
// their own header so the admin console and the metrics endpoint can read
// them without depending on the whole proxy.
//
//   proxy::Stats s;
//   s.commits++;                       // the event loop counts
//   int64_t c = s.commits.load();      // anyone reads
//
// Thread safety: every counter is an atomic; the loop threads write (with
// workers > 1 every loop adds to the one Stats), any thread reads.
#ifndef CORRAL_ADAPTERS_PROXY_STATS_H_
#define CORRAL_ADAPTERS_PROXY_STATS_H_

#include <atomic>
#include <cstdint>

namespace corral {
namespace proxy {

// Counters; read from any thread.
struct Stats {
  std::atomic<int64_t> commits{0};
  std::atomic<int64_t> aborts_40001{0};
  std::atomic<int64_t> aborts_40P01{0};
  std::atomic<int64_t> user_errors{0};
  std::atomic<int64_t> rollbacks{0};
  std::atomic<int64_t> transactions{0};
  std::atomic<int64_t> queue_waits{0};
  std::atomic<int64_t> steals{0};
  std::atomic<int64_t> steals_affine{0};  // of them: placed by affinity, waited past steal_after
  std::atomic<int64_t> affine_txns{0};    // transactions placed by learned affinity
  std::atomic<int64_t> free_reads{0};     // of the transactions: plain reads not routed (Options::free_reads)
  std::atomic<int64_t> wait_timeouts{0};
  std::atomic<int64_t> clients_accepted{0};
  std::atomic<int64_t> clients_rejected{0};
  std::atomic<int64_t> protocol_errors{0};
  std::atomic<int64_t> backend_failures{0};
  std::atomic<int64_t> cancels{0};
  std::atomic<int64_t> parses_injected{0};
  std::atomic<int64_t> describes_injected{0};   // to learn a statement's parameter types
  std::atomic<int64_t> describes_answered{0};   // Parse/Describe units answered from the DescribeCache
  std::atomic<int64_t> describe_invalidations{0};  // DescribeCache dropped: a statement may change the catalog
  std::atomic<int64_t> describes_stale{0};  // a cached answer the server no longer gives (0A000 to the client)
  std::atomic<int64_t> undecodable_params{0};   // Bind values that yielded no reference (type unknown)
  std::atomic<int64_t> client_rollbacks{0};  // client left mid-transaction
  std::atomic<int64_t> failed_logins{0};     // wrong password, unknown user, not allowed
  // Back-pressure: times a backend's reading stopped for a slow client, and
  // the most unsent output any client has had buffered in the proxy.
  std::atomic<int64_t> backpressure_pauses{0};
  std::atomic<int64_t> client_output_peak_bytes{0};
  std::atomic<int64_t> tls_clients{0};             // clients that completed a TLS handshake
  std::atomic<int64_t> tls_handshake_failures{0};  // clients whose TLS handshake failed
  // Multi-proxy mode (cluster.h): transactions that took advisory locks,
  // keys taken, keys that had to wait for another session, keys held now
  // (a gauge), unlocks sent again after an error, rounds published, rounds
  // that could not reach the shared table (local learning only).
  std::atomic<int64_t> cluster_lock_txns{0};
  std::atomic<int64_t> cluster_locks_taken{0};
  std::atomic<int64_t> cluster_lock_waits{0};
  std::atomic<int64_t> cluster_locks_held{0};
  std::atomic<int64_t> cluster_unlock_retries{0};
  std::atomic<int64_t> cluster_unlocks_folded{0};  // sent in the COMMIT / ROLLBACK's write
  // cluster_lock = table: implicit transactions run in a block of the
  // proxy's to take their stripes; units with shared-hot keys that took
  // none (an implicit transaction of several statements, a unit with
  // transaction control, a FunctionCall, a Flush).
  std::atomic<int64_t> cluster_wrapped_units{0};
  std::atomic<int64_t> cluster_growing_txns{0};  // of a template that grows: advisory keys too
  std::atomic<int64_t> cluster_unlocked_units{0};
  std::atomic<int64_t> cluster_lock_errors{0};
  std::atomic<int64_t> cluster_publishes{0};
  std::atomic<int64_t> cluster_sync_failures{0};
  // Retry-aware routing (retry_memory.h): conflict-failed transactions
  // remembered; retries recognized and routed on their remembered
  // references; of them, placed behind a running holder; retries that
  // committed (clean); entries dropped for the memory bound.
  std::atomic<int64_t> retries_remembered{0};
  std::atomic<int64_t> retries_routed{0};
  std::atomic<int64_t> retries_behind_holder{0};
  std::atomic<int64_t> retries_clean{0};
  std::atomic<int64_t> retry_memory_evictions{0};
  // Statement templates (templates.h): first statements with a
  // prediction, references predicted, of them touched by the transaction,
  // transactions placed behind the running holder of a predicted reference,
  // learned mappings that stopped holding.
  std::atomic<int64_t> template_predictions{0};
  std::atomic<int64_t> template_predicted_refs{0};
  std::atomic<int64_t> template_predicted_hits{0};
  std::atomic<int64_t> template_behind_holder{0};
  std::atomic<int64_t> template_mappings_dropped{0};
  // Per-template concurrency cap (template_cap.h): transactions that
  // waited for a slot before their first statement, their total wait (ms),
  // waiters whose client left, steps of k down / up, templates capped now
  // (k below template_cap_max_k; a gauge).
  std::atomic<int64_t> template_cap_waits{0};
  std::atomic<int64_t> template_cap_wait_ms{0};
  std::atomic<int64_t> template_cap_cancels{0};
  std::atomic<int64_t> template_cap_shrinks{0};
  std::atomic<int64_t> template_cap_grows{0};
  std::atomic<int64_t> template_cap_capped{0};
  // Transparent replay (replay.h): re-runs of a conflict-failed
  // transaction; of the errors kept from the client, those whose replay
  // matched (the client went on), differed (original error), failed with
  // 40001 / 40P01 replay_max_attempts times (original error); errors not
  // replayed (unreplayable, of them past replay_buffer_bytes); replays that
  // waited for the holder of a conflicting reference.
  std::atomic<int64_t> replays{0};
  std::atomic<int64_t> replay_matches{0};
  std::atomic<int64_t> replay_mismatches{0};
  std::atomic<int64_t> replay_exhausted{0};
  std::atomic<int64_t> replay_unreplayable{0};
  std::atomic<int64_t> replay_overflows{0};
  std::atomic<int64_t> replay_waits{0};
  // Of the replays: of transactions that used the extended protocol; of
  // the unreplayable: extended-protocol units of a shape not replayed
  // (replay.h: rows of the failed Execute sent, a unit without its Sync,
  // more of the client's in flight behind the failed unit, ...).
  std::atomic<int64_t> replays_extended{0};
  // Of the replays: implicit (autocommit) transactions, the failed unit alone.
  std::atomic<int64_t> replays_implicit{0};
  std::atomic<int64_t> replay_unreplayable_shape{0};
  // Workers (workers > 1, key_locks.h): transactions that took keys of hot
  // references, of them those that waited, of the waits those behind a
  // transaction of another worker (loop).
  std::atomic<int64_t> worker_key_txns{0};
  std::atomic<int64_t> worker_key_waits{0};
  std::atomic<int64_t> worker_key_cross_waits{0};
  // Key grants (either use) made on the waiter's own loop thread, applied
  // in the same turn without a wake-up (Loop::ApplyLocalGrants).
  std::atomic<int64_t> key_grants_local{0};
  // Restart on a hot key (restart_on_hot_key): transactions that took keys
  // before their BEGIN (one loop; workers > 1 counts worker_key_txns);
  // later hot keys taken free; restarts (a later statement's key held by
  // another, or released since the snapshot), of them those whose re-run
  // matched (the statement went on) and those that differed or failed
  // again (the client got 40001); restarts that waited for their keys and
  // the total wait (ns).
  std::atomic<int64_t> restart_key_txns{0};
  std::atomic<int64_t> restart_keys_taken{0};
  std::atomic<int64_t> restarts{0};
  std::atomic<int64_t> restart_matches{0};
  std::atomic<int64_t> restart_mismatches{0};
  std::atomic<int64_t> restart_key_waits{0};
  std::atomic<int64_t> restart_requeues{0};  // waits that would have closed a cycle: keys given up, all requested again
  std::atomic<int64_t> restart_wait_ns{0};
  // Multi-proxy mode: restarts for keys hot in the cluster that the backend
  // lacked, and of them those whose keys were all given back and taken
  // again in order (one was held by another session).
  std::atomic<int64_t> restart_cluster_relocks{0};
  std::atomic<int64_t> restart_cluster_retakes{0};
  // Restarts that waited for local keys keeping their backend and cluster
  // keys, and of them those that left it when the wait ran past its bound.
  std::atomic<int64_t> restart_held_waits{0};
  std::atomic<int64_t> restart_hold_timeouts{0};
  // Cycle gates (cycle_gates.h): transactions admitted through their
  // template's gate, of them those that waited for it, and gates given
  // back before the transaction ended (its key set complete).
  std::atomic<int64_t> restart_gate_txns{0};
  std::atomic<int64_t> restart_gate_waits{0};
  std::atomic<int64_t> restart_gate_early{0};
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_STATS_H_
