// Retry-aware routing (issue 24): what a transaction that failed with
// 40001 / 40P01 touched, kept until its retry comes back. Applications,
// ORMs and `pgbench --max-tries` resend the same statements, so a retry is
// recognized by its client and its first statement (normalized text plus
// the Bind's parameter bytes: RetryStatementKey). The proxy then routes the
// retry on the whole remembered reference set before its first statement
// reaches the server (its snapshot is taken there), behind the running
// transaction that holds one of those references (PickHolder).
//
//   RetryMemory mem(/*capacity=*/4096);
//   mem.Remember(client_id, key, refs_touched);      // at the 40001
//   RefVec refs;
//   if (mem.Take(client_id, key, &refs)) { ... route on refs ... }
//   mem.Forget(client_id);                           // the client left
//
// Memory: at most `capacity` entries (one per client: a client's newer
// failure replaces its older one; past capacity the least recently
// remembered goes, counted in evictions()), each at most kMaxRefs
// references.
//
// Thread safety: not thread-safe; the proxy's event loop owns one per
// database.
#ifndef CORRAL_ADAPTERS_PROXY_RETRY_MEMORY_H_
#define CORRAL_ADAPTERS_PROXY_RETRY_MEMORY_H_

#include <cstddef>
#include <cstdint>
#include <list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "common/ids.h"

namespace corral {
namespace proxy {

// The key of a transaction's first statement: its text with surrounding
// whitespace and trailing ';' dropped, then (extended protocol) a NUL and
// the Bind's parameter part (formats and values, as sent).
std::string RetryStatementKey(absl::string_view text, absl::string_view params = absl::string_view());

class RetryMemory {
 public:
  static constexpr size_t kMaxRefs = 64;

  explicit RetryMemory(size_t capacity) : capacity_(capacity) {}

  // Client `client`'s transaction whose first statement had key `key`
  // failed having touched `refs` (the first kMaxRefs are kept). Replaces
  // that client's earlier entry. Nothing is kept with capacity 0.
  void Remember(uint64_t client, std::string key, const RefVec& refs);
  // The client's entry when its key is `key`: moves its references to
  // *refs, drops it and returns true. Otherwise false (an entry with
  // another key stays: the client may run something else between tries).
  bool Take(uint64_t client, absl::string_view key, RefVec* refs);
  void Forget(uint64_t client);

  size_t size() const { return by_client_.size(); }
  size_t capacity() const { return capacity_; }
  int64_t evictions() const { return evictions_; }

 private:
  struct Entry {
    std::string key;
    RefVec refs;
    std::list<uint64_t>::iterator lru;  // in order_
  };
  size_t capacity_;
  absl::flat_hash_map<uint64_t, Entry> by_client_;
  std::list<uint64_t> order_;  // least recently remembered first
  int64_t evictions_ = 0;
};

// The index in `running` (the references of each backend's running
// transaction; null where none runs) of the transaction holding one of
// `refs`, the earliest of `refs` first; -1 when none holds any.
int PickHolder(const RefVec& refs, const std::vector<const RefVec*>& running);

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_RETRY_MEMORY_H_
