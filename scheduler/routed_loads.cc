#include "scheduler/routed_loads.h"

#include <algorithm>

namespace corral {
namespace scheduler {

RoutedLoads::RoutedLoads(int num_queues)
    : n_(std::max(num_queues, 0)), queues_(new Counters[static_cast<size_t>(std::max(num_queues, 1))]) {}

void RoutedLoads::Started(int q, int64_t wait_ns) {
  if (!Valid(q)) return;
  Counters& c = queues_[q];
  c.started.fetch_add(1, std::memory_order_relaxed);
  if (wait_ns > 0) c.wait_ns.fetch_add(wait_ns, std::memory_order_relaxed);
  c.running.fetch_add(1, std::memory_order_relaxed);
}

void RoutedLoads::Attempt(int q, int64_t exec_ns, Outcome o) {
  if (!Valid(q)) return;
  Counters& c = queues_[q];
  c.attempts.fetch_add(1, std::memory_order_relaxed);
  if (exec_ns > 0) c.exec_ns.fetch_add(exec_ns, std::memory_order_relaxed);
  if (o == Outcome::kCommitted) c.commits.fetch_add(1, std::memory_order_relaxed);
  if (o == Outcome::kConflictAbort) c.aborts.fetch_add(1, std::memory_order_relaxed);
}

QueueLoad RoutedLoads::Load(int q) const {
  QueueLoad l;
  if (!Valid(q)) return l;
  const Counters& c = queues_[q];
  constexpr auto kRelaxed = std::memory_order_relaxed;
  l.started = static_cast<uint64_t>(c.started.load(kRelaxed));
  l.wait_ns = static_cast<uint64_t>(c.wait_ns.load(kRelaxed));
  l.exec_ns = static_cast<uint64_t>(c.exec_ns.load(kRelaxed));
  l.attempts = static_cast<uint64_t>(c.attempts.load(kRelaxed));
  l.conflict_aborts = static_cast<uint64_t>(c.aborts.load(kRelaxed));
  l.commits = static_cast<uint64_t>(c.commits.load(kRelaxed));
  return l;
}

int64_t RoutedLoads::Length(int q) const {
  if (!Valid(q)) return 0;
  const Counters& c = queues_[q];
  return std::max<int64_t>(0, c.waiting.load(std::memory_order_relaxed)) +
         std::max<int64_t>(0, c.running.load(std::memory_order_relaxed));
}

}  // namespace scheduler
}  // namespace corral
