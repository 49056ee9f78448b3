#include "engine/cc.h"

#include <chrono>
#include <cstdlib>
#include <new>
#include <thread>

#include "absl/strings/str_cat.h"

namespace corral {
namespace engine {

absl::Status UserAbortError(absl::string_view why) {
  return absl::AbortedError(why.empty() ? absl::string_view("user abort") : why);
}
bool IsUserAbort(const absl::Status& s) { return s.code() == absl::StatusCode::kAborted; }
bool IsConflict(const absl::Status& s) { return s.code() == absl::StatusCode::kUnavailable; }

ScratchArena::~ScratchArena() {
  for (auto& c : chunks_) std::free(c.first);
}

char* ScratchArena::Allocate(size_t n) {
  n = (n + 7) & ~size_t{7};
  while (chunk_ < chunks_.size()) {
    auto& c = chunks_[chunk_];
    if (used_ + n <= c.second) {
      char* p = c.first + used_;
      used_ += n;
      return p;
    }
    ++chunk_;
    used_ = 0;
  }
  size_t sz = n > (size_t{64} << 10) ? n : (size_t{64} << 10);
  char* p = static_cast<char*>(std::malloc(sz));
  if (p == nullptr) throw std::bad_alloc();
  chunks_.push_back({p, sz});
  chunk_ = chunks_.size() - 1;
  used_ = n;
  return p;
}

void Waiter::Wait() {
  ++rounds_;
  if (rounds_ < 32) {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#endif
  } else if (rounds_ < 256) {
    std::this_thread::yield();
  } else {
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void TxImpl::WaitForObstacle(int64_t deadline_ns) {
  const Record* rec = obstacle_;
  obstacle_ = nullptr;
  if (rec == nullptr) return;
  Waiter waiter;
  for (;;) {
    bool clear;
    if (obstacle_custom_) {
      clear = ObstacleCleared(rec);
    } else if (obstacle_in_flight_) {
      clear = !(rec->tid.load(std::memory_order_acquire) & kTidAbsentBit) ||
              rec->table->Find(rec->key) != rec;
    } else if (obstacle_occ_) {
      clear = !(rec->tid.load(std::memory_order_acquire) & kTidLockBit);
    } else {
      uint64_t w = rec->lock.load(std::memory_order_acquire);
      clear = (obstacle_exclusive_ ? w == 0 : !(w & kLockExclusive)) &&
              rec->oldest_waiter.load(std::memory_order_acquire) == 0;
    }
    if (clear) return;
    if ((waiter.rounds() & 15) == 15 &&
        std::chrono::steady_clock::now().time_since_epoch().count() > deadline_ns) {
      return;
    }
    waiter.Wait();
  }
}

absl::StatusOr<std::unique_ptr<CcProtocol>> CcProtocol::Create(absl::string_view name,
                                                              const DatabaseOptions& options) {
  if (name == "occ") return NewOccProtocol();
  if (name == "2pl-nowait") return NewTwoPlProtocol(1);
  if (name == "2pl-waitdie") return NewTwoPlProtocol(2);
  if (name == "2pl-dldetect") return NewTwoPlProtocol(3);
  if (name == "timestamp") return NewTimestampProtocol(false);
  if (name == "mvcc") return NewTimestampProtocol(true);
  if (name == "maat") return NewMaatProtocol();
  if (name == "calvin") {
    if (options.calvin_batch_txns < 0 || options.calvin_batch_ns <= 0) {
      return absl::InvalidArgumentError(absl::StrCat(
          "calvin batching needs calvin_batch_txns >= 0 and calvin_batch_ns > 0, got ",
          options.calvin_batch_txns, " and ", options.calvin_batch_ns));
    }
    return NewCalvinProtocol(options.calvin_batch_txns, options.calvin_batch_ns);
  }
  if (name == "qstore") {
    if (options.qstore_batch_txns < 0 || options.qstore_batch_ns <= 0 ||
        options.qstore_queues < 1 || options.qstore_planners < 1 || options.qstore_planners > 64) {
      return absl::InvalidArgumentError(absl::StrCat(
          "qstore needs qstore_batch_txns >= 0, qstore_batch_ns > 0, qstore_queues >= 1 and "
          "1 <= qstore_planners <= 64, got ",
          options.qstore_batch_txns, ", ", options.qstore_batch_ns, ", ", options.qstore_queues,
          ", ", options.qstore_planners));
    }
    auto placement = ParseQueuePlacement(options.qstore_placement);
    if (!placement.ok()) return placement.status();
    if (options.qstore_learn_txns < 1) {
      return absl::InvalidArgumentError(
          absl::StrCat("qstore needs qstore_learn_txns >= 1, got ", options.qstore_learn_txns));
    }
    if (options.qstore_execution != "conservative" && options.qstore_execution != "speculative") {
      return absl::InvalidArgumentError(absl::StrCat(
          "qstore_execution must be conservative or speculative, got '", options.qstore_execution, "'"));
    }
    return NewQStoreProtocol(options.qstore_batch_txns, options.qstore_batch_ns,
                             options.qstore_queues, options.qstore_planners, *placement,
                             options.qstore_learn_txns, options.qstore_execution == "speculative");
  }
  if (name == "planned") return NewPlannedLockingProtocol();
  if (name == "orthrus") {
    if (options.orthrus_cc_threads < 1 || options.orthrus_cc_threads > kMaxOrthrusCcThreads) {
      return absl::InvalidArgumentError(absl::StrCat("orthrus needs 1 to ", kMaxOrthrusCcThreads,
                                                     " CC threads, got ",
                                                     options.orthrus_cc_threads));
    }
    return NewOrthrusProtocol(options.orthrus_cc_threads);
  }
  if (name == "none") return NewTwoPlProtocol(0);
  return absl::InvalidArgumentError(absl::StrCat(
      "unknown concurrency-control protocol '", name,
      "' (expected occ, 2pl-nowait, 2pl-waitdie, 2pl-dldetect, timestamp, mvcc, maat, calvin, qstore, planned, orthrus or none)"));
}

}  // namespace engine
}  // namespace corral
