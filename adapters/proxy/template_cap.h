// Per-template concurrency cap (issue 24): when the transactions of one
// statement template (keyed by their first statement's shape, templates.h's
// Stmt::shape) keep failing each other with 40001 / 40P01 on references no
// router can predict, at most k of them run at once; the others wait, FIFO,
// before their first statement is sent, and the next one is admitted when a
// running one ends (commit, rollback, error, client gone).
//
// Choosing k (CapRule), per window of the template's ends (at least
// `window_ns` long and `min_window_ends` ends):
//   C = client time per good end: (sum of cap waits + sum of attempt times,
//       admission to end, aborted attempts included) / non-conflict ends.
//       A conflict abort costs its attempt and the wait of its retry; a cap
//       costs wait. In a closed loop C = clients / goodput, so lower C is
//       both fewer lost attempts and more commits.
//   r = conflict ends per good end.
// The rule remembers C and r per k (a measurement expires after
// memory_windows):
//   shrink (k - 1) when r >= min_abort_rate and C at k - 1 is not known to
//          be worse (by more than `tolerance`): aborts cost, try less
//          concurrency; this walks toward 1 while aborts keep costing
//          (k / 2 while r >= heavy_abort_rate and nothing below is known);
//   grow   (k + 1) when C at k + 1 is known and better (grow_windows
//          windows in a row; C at the k stayed at is the mean of its last
//          two windows); or when conflicts
//          stopped (r < min_abort_rate / 2 for grow_windows windows in a
//          row; at k = 1, where the template's own conflicts cannot show:
//          when k = 2 was measured that calm) and k + 1 is not known to be
//          worse; or, with k + 1 not measured (expired), after
//          probe_windows windows at k (the probe that tells k = 1 its
//          conflicts stopped).
// k = max_k means uncapped (nothing waits).
//
// Why not scheduler/hot_spots.h's SplitRule (grow when the excess queue wait
// W > (1 + r) A, shrink when the retries a step added cost more than the wait
// it saved): there W is what a transaction saves by running on another,
// less loaded queue. The cap's wait is not of that kind: with more clients
// than slots a closed loop waits somewhere (Little's law: wait = waiting /
// throughput), so raising k moves most of the wait into running (and
// conflicting) attempts; SplitRule's saved wait S then looks like a saving
// even at equal throughput, and k would only shrink above about one retry
// per commit. Comparing the whole client time per good end at neighbouring
// k measures the trade itself.
//
//   TemplateCap cap(TemplateCap::Options{});
//   if (cap.Arrive("SELECT ... WHERE aid = \x01", id, now)) { ... run it ... }
//   else { ... hold its first statement ... }
//   std::vector<uint64_t> admitted;
//   cap.Finish(key, TemplateCap::End::kConflict, started, now, &admitted);  // run them
//   cap.Cancel(key, id);  // a waiter whose client left
//
// Memory: at most max_templates templates (an idle one, least recently
// seen, makes room; when none is idle a new template is not capped).
//
// Thread safety: not thread-safe; the proxy's event loop owns one per
// database. Time is passed in (monotonic ns), so tests run on a fake clock.
#ifndef CORRAL_ADAPTERS_PROXY_TEMPLATE_CAP_H_
#define CORRAL_ADAPTERS_PROXY_TEMPLATE_CAP_H_

#include <cstdint>
#include <deque>
#include <list>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"

namespace corral {
namespace proxy {

// The k rule's knobs and one template's state under it.
struct CapRule {
  int max_k = 8;                  // k = max_k: uncapped
  double min_abort_rate = 0.05;   // conflicts per good end from which k shrinks
  double heavy_abort_rate = 0.5;  // from which it halves (nothing below measured)
  double tolerance = 0.1;         // C differences within this fraction are ties
  int grow_windows = 2;
  int probe_windows = 10;
  int memory_windows = 20;

  struct Window {
    int64_t good = 0;       // ends that were not conflict aborts
    int64_t conflicts = 0;  // 40001 / 40P01 ends
    double wait_ns = 0;     // cap waits of the attempts admitted
    double attempt_ns = 0;  // admission-to-end times of the ends
  };
  struct Measured {
    double cost = 0;      // C
    double aborts = 0;    // r
    int64_t window = -1;  // when (-1: never)
  };
  struct State {
    int k = 0;  // 0 = not started: max_k
    int64_t windows = 0;
    int since_change = 0;
    int calm_streak = 0;
    int better_streak = 0;     // windows in a row k + 1 was measured better
    std::vector<Measured> at;  // per k
  };
  // Steps `st` by one window; returns the new k.
  int Step(State* st, const Window& w) const;
};

class TemplateCap {
 public:
  enum class End { kGood, kConflict };
  struct Options {
    CapRule rule;
    int64_t window_ns = 100 * 1000 * 1000;
    int64_t min_window_ends = 50;
    size_t max_templates = 1024;
  };
  struct Counters {
    int64_t waits = 0;     // arrivals that waited
    int64_t wait_ns = 0;   // their total wait until admitted
    int64_t cancels = 0;   // waiters gone before admission
    int64_t shrinks = 0;
    int64_t grows = 0;
    int64_t untracked = 0; // arrivals not capped: the table was full of busy templates
  };
  struct Row {
    std::string key;
    int k = 0;
    int running = 0;
    size_t waiting = 0;
    int64_t ends = 0, conflicts = 0;
  };

  explicit TemplateCap(const Options& o);

  // A transaction of template `key` arrives (client `id`) at `now`: true =
  // admitted (it runs; Finish it once), false = it waits (FIFO) until a
  // Finish admits it or Cancel removes it.
  bool Arrive(const std::string& key, uint64_t id, int64_t now);
  // An admitted transaction of `key` (admitted at `started`) ended with
  // `e` at `now`; the waiters admitted in its place are appended to
  // *admitted (each runs; Finish each).
  void Finish(const std::string& key, End e, int64_t started, int64_t now, std::vector<uint64_t>* admitted);
  // Waiter `id` of `key` is gone: removed (true), or it was not waiting.
  bool Cancel(const std::string& key, uint64_t id);

  int k(const std::string& key) const;  // max_k for an unknown template
  int max_k() const { return opt_.rule.max_k; }
  // Templates capped now (k < max_k).
  int64_t capped() const { return capped_; }
  const Counters& counters() const { return counters_; }
  std::vector<Row> Rows() const;

 private:
  struct Waiter {
    uint64_t id;
    int64_t since;
  };
  struct Tpl {
    CapRule::State st;
    int running = 0;
    std::deque<Waiter> waiters;
    int64_t window_start = -1;
    CapRule::Window w;
    int64_t ends = 0, conflicts = 0;
    std::list<std::string>::iterator lru;
  };
  Tpl* Find(const std::string& key, int64_t now);  // makes it; null when full of busy ones
  void Admit(Tpl* t, int64_t now, std::vector<uint64_t>* admitted);
  void SetK(Tpl* t, int k);

  Options opt_;
  Counters counters_;
  int64_t capped_ = 0;
  absl::flat_hash_map<std::string, Tpl> by_key_;
  std::list<std::string> order_;  // least recently seen first
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_TEMPLATE_CAP_H_
