// Cycle gates (restart_on_hot_key, issue 24): which statement templates'
// transactions take their template's gate before their keys.
//
// Restart on a hot key (restart_loop.cc) lets a transaction that holds one
// hot key take another later. Two transactions of one template that each
// hold one key and then want the other's close a wait cycle: one of them
// gives its keys up and re-runs (KeyLocks::AcquireMore's requeue), and its
// re-run reads a row the other changed meanwhile, so its client gets
// 40001. No key order can prevent it: the client chooses the second row
// after it has seen the first. What prevents it is that only one
// transaction of the template is *growing* (holding keys and still taking
// new ones) at a time: a gated template's transaction first takes the
// template's gate key (alone, so a gate waiter sits in no row's queue),
// then its keys; it gives the gate back at its first later statement that
// names no hot reference it did not already hold (two-row: at its first
// UPDATE, after both SELECTs took their keys), or when it ends. The others
// hold complete key sets while it grows, so its waits close no cycle.
// Sooner, once the template's growth is known: each gated transaction
// reports the ordinal of every later statement at which it took a new key
// (Grew); a transaction that has taken the keys of the template's last
// growing statement as known when it took the gate (LastGrowth; unknown:
// the rule above) gives the gate back right there (two-row: at its second
// SELECT, one round trip earlier). A transaction that grows later than any
// before it does so without the gate (a wait cycle then is resolved as
// without gates: requeued) and moves LastGrowth for the next ones.
//
// A template is gated once its restarts closed cycles: a score per
// template (first-statement shape) gains 1 per cycle and decays by
// `decay` per admitted transaction of the template; gated from `on_score`,
// ungated below `off_score` (hysteresis: a gated template has no cycles to
// count, so it is ungated after about ln(on/off) / (1 - decay)
// transactions and gated again by the next cycles, which keeps the gate
// only where the cycles come back).
//
//   CycleGates gates(CycleGates::Options{});
//   gates.Cycle(shape);                   // a restart's wait closed a cycle
//   if (gates.Admit(shape)) { ... take the gate key first ... }
//   const int at = gates.LastGrowth(shape);  // as it takes the gate
//   gates.Grew(shape, 1);                 // it took a new key at its 1st later statement
//   if (at > 0 && 1 >= at) { ... give the gate back ... }
//
// Memory: at most max_templates scores (one with the lowest score goes).
// Thread safety: not thread-safe; one event loop owns one per database.
#ifndef CORRAL_ADAPTERS_PROXY_CYCLE_GATES_H_
#define CORRAL_ADAPTERS_PROXY_CYCLE_GATES_H_

#include <cstddef>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"

namespace corral {
namespace proxy {

class CycleGates {
 public:
  struct Options {
    double decay = 0.9995;  // per admitted transaction of the template
    double on_score = 1.5;  // two cycles within ~ln(2) / (1 - decay) admissions
    double off_score = 0.5;
    size_t max_templates = 1024;
  };

  explicit CycleGates(const Options& o) : opt_(o) {}

  // A transaction of template `shape` with hot keys is admitted: its score
  // decays; true when it takes the gate.
  bool Admit(const std::string& shape);
  // A restart of a transaction of `shape` closed a wait cycle.
  void Cycle(const std::string& shape);
  // Whether `shape` is gated now (nothing changes).
  bool Gated(const std::string& shape) const;
  // A gated transaction of `shape` took a new key at its `ordinal`-th
  // later statement (1: the first after the one that routed it).
  void Grew(const std::string& shape, int ordinal);
  // The highest ordinal Grew reported for `shape`; 0 when none (unknown).
  int LastGrowth(const std::string& shape) const;
  // The key of `shape`'s gate in the key table, given the database's salt
  // (a data key is a RefId ^ salt; the tag keeps the two apart).
  static uint64_t Key(const std::string& shape, uint64_t salt);
  size_t size() const { return by_shape_.size(); }
  size_t gated() const;

 private:
  struct Score {
    double score = 0;
    bool gated = false;
    int last_growth = 0;
  };
  Options opt_;
  absl::flat_hash_map<std::string, Score> by_shape_;
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_CYCLE_GATES_H_
