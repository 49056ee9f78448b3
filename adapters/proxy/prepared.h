// Extended-protocol bookkeeping of the proxy: the frontend messages a client
// queued (Msg), the named statements it prepared (PreparedDef, kept per
// client so they can be prepared on whichever backend a transaction lands
// on), the per-backend statement cache (StatementCache: a bounded LRU of
// backend-side names corral_s<N> keyed by text and parameter types), and the
// per-batch record of which ParseComplete / CloseComplete the client must
// not see (Batch, ParseEntry).
//
//   PreparedDef d = PreparedDef::FromParse(parse_body, &name);
//   StatementCache cache(/*capacity=*/512);
//   Batch open;
//   std::string msgs;                       // Close (evicted) + Parse
//   std::string backend_name = cache.Ensure(d, /*client_parse=*/false, &open, &msgs);
//   ...                                     // on ParseComplete:
//   cache.Confirm(key);                     // on ReadyForQuery:
//   cache.ForgetUnconfirmed(open.parses);
//
// A Parse's declared parameter type OIDs are PreparedDef::oids (0 =
// unspecified); the types the server resolved for them (its
// ParameterDescription) are kept by statement in a ParamTypeCache, and a
// Batch records which Describe-statement answers the client must not see.
//
// DescribeCache keeps the server's whole answer to a Describe of a statement
// (ParameterDescription + RowDescription / NoData) by statement and session
// context, so a Parse/Describe unit of a known statement (asyncpg with
// statement_cache_size=0) can be answered without a backend:
//
//   DescribeCache answers(/*capacity=*/4096);
//   uint64_t gen = answers.generation();   // when the Describe is sent
//   answers.Learn(key, gen, t_and_T);      // its answer (dropped if DDL came between)
//   const std::string* a = answers.Find(key);
//   answers.Invalidate();                  // DDL seen (StatementMayChangeCatalog)
//
// Thread safety: not thread-safe; owned and used by the event loop thread.
#ifndef CORRAL_ADAPTERS_PROXY_PREPARED_H_
#define CORRAL_ADAPTERS_PROXY_PREPARED_H_

#include <cstddef>
#include <cstdint>
#include <deque>
#include <list>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"

namespace corral {
namespace proxy {

// One frontend message, whole (type byte and length included).
struct Msg {
  char type;
  std::string raw;
  absl::string_view body() const { return absl::string_view(raw).substr(5); }
};

// Where the extended-protocol unit at the front of `pending` ends: the
// index of its Sync, Flush or of a Query behind it, pending.size() when
// it has not all arrived.
inline size_t UnitEnd(const std::deque<Msg>& pending) {
  size_t end = 0;
  while (end < pending.size() && pending[end].type != 'S' && pending[end].type != 'H' && pending[end].type != 'Q') {
    ++end;
  }
  return end;
}

// The index of the Sync that ends the extended-protocol unit at the front
// of `pending` when the unit is whole (up to that Sync, no Flush or Query
// first) and has no FunctionCall or Terminate in it; npos otherwise.
inline size_t WholeUnitEnd(const std::deque<Msg>& pending) {
  const size_t end = UnitEnd(pending);
  if (end == pending.size() || pending[end].type != 'S') return std::string::npos;
  for (size_t i = 0; i < end; ++i) {
    if (pending[i].type == 'F' || pending[i].type == 'X') return std::string::npos;
  }
  return end;
}

// A statement as the client's Parse defined it.
struct PreparedDef {
  std::string query;
  std::string types;  // Parse's parameter-type section (count + oids), raw
  std::string key;    // query + '\0' + types
  std::vector<uint32_t> oids;  // the declared parameter types (0 = unspecified)
  // StatementMayChangeSession(query), worked out once per Parse rather than
  // per Bind; whoever replaces `query` sets it again.
  bool may_change_session = false;
  // StatementMayChangeCatalog(query): running it invalidates DescribeCache.
  bool may_change_catalog = false;
  // The router's memo of whether `query` is a plain read
  // (StatementFacts::plain_read): -1 not asked yet, 0 no, 1 yes.
  mutable int8_t plain_read = -1;
  // The DescribeCache answer the proxy gave the client for it ("" when the
  // server answered): checked where the statement is parsed for real.
  std::string answered;

  // From a Parse message's body; the statement's name goes to *name.
  static PreparedDef FromParse(absl::string_view parse_body, std::string* name);
};

// A client's statements by name; "" is the unnamed statement it parsed last.
using StatementMap = absl::flat_hash_map<std::string, PreparedDef>;

// A bounded map whose oldest entry makes room once full (insertion order).
template <typename V>
class FifoCache {
 public:
  explicit FifoCache(size_t capacity) : capacity_(capacity) {}
  // Null when not known.
  const V* Find(absl::string_view key) const {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }
  void Put(const std::string& key, V value) {
    auto [it, added] = map_.insert_or_assign(key, std::move(value));
    if (!added) return;
    order_.push_back(key);
    while (map_.size() > capacity_ && !order_.empty()) {
      map_.erase(order_.front());
      order_.pop_front();
    }
  }
  void Clear() {
    map_.clear();
    order_.clear();
  }
  size_t size() const { return map_.size(); }

 private:
  size_t capacity_;
  absl::flat_hash_map<std::string, V> map_;
  std::deque<std::string> order_;  // insertion order, for eviction
};

// The parameter types the server resolved for statements (from its
// ParameterDescription), by PreparedDef::key.
using ParamTypeCache = FifoCache<std::vector<uint32_t>>;

// Whether running `sql` may change what a Describe of another statement
// answers (ALTER / CREATE / DROP / DO / CALL / GRANT / REVOKE / IMPORT /
// DISCARD at the start of any of its statements). Cheap, may say true needlessly; DDL
// hidden in a function a SELECT calls is not seen.
bool StatementMayChangeCatalog(absl::string_view sql);

// The server's answers to Describe-statement (ParameterDescription and
// RowDescription / NoData, whole messages), by PreparedDef::key plus what
// changes their meaning (see Proxy::Loop::DescribeKey). Invalidate() drops
// everything and starts a new generation: an answer to a Describe sent
// before it is not learned.
class DescribeCache {
 public:
  explicit DescribeCache(size_t capacity) : map_(capacity) {}
  const std::string* Find(const std::string& key) const { return map_.Find(key); }
  // `gen`: generation() when the Describe was sent.
  void Learn(const std::string& key, uint64_t gen, std::string answer) {
    if (gen == gen_) map_.Put(key, std::move(answer));
  }
  void Invalidate() {
    map_.Clear();
    ++gen_;
  }
  uint64_t generation() const { return gen_; }
  size_t size() const { return map_.size(); }

 private:
  FifoCache<std::string> map_;
  uint64_t gen_ = 0;
};

// A first-in first-out list that, unlike std::deque, allocates nothing until
// the first push_back (a Batch is made for every statement a client sends and
// has three of these, nearly always empty). Popped slots are reclaimed when
// the list drains or when they are most of it.
template <typename T>
class SmallFifo {
 public:
  bool empty() const { return head_ == items_.size(); }
  size_t size() const { return items_.size() - head_; }
  void push_back(T v) { items_.push_back(std::move(v)); }
  T& front() { return items_[head_]; }
  const T& front() const { return items_[head_]; }
  T& back() { return items_.back(); }
  const T& back() const { return items_.back(); }
  const T& operator[](size_t i) const { return items_[head_ + i]; }
  void pop_front() {
    if (++head_ == items_.size()) {
      items_.clear();
      head_ = 0;
    } else if (head_ >= 16 && 2 * head_ >= items_.size()) {
      items_.erase(items_.begin(), items_.begin() + static_cast<std::ptrdiff_t>(head_));
      head_ = 0;
    }
  }
  typename std::vector<T>::const_iterator begin() const {
    return items_.begin() + static_cast<std::ptrdiff_t>(head_);
  }
  typename std::vector<T>::const_iterator end() const { return items_.end(); }

 private:
  std::vector<T> items_;
  size_t head_ = 0;
};

struct ParseEntry {
  bool drop = false;  // injected by the proxy: the client must not see its ParseComplete
  std::string key;    // cache key to confirm, "" for the unnamed statement
};

// A Describe of a statement sent to the backend: its ParameterDescription
// teaches the statement's types (key: PreparedDef::key, "" if unknown).
struct DescribeEntry {
  bool drop = false;  // injected by the proxy: the client must not see the answer
  std::string key;
  std::string answer_key;  // DescribeCache key to learn the answer under, "" none
  uint64_t gen = 0;        // DescribeCache::generation() when sent
  std::string expect;      // the answer the client was given from the cache ("" none)
};

// The messages sent to a backend up to one Sync/Query (one ReadyForQuery).
struct Batch {
  bool swallow = false;  // proxy-internal (held BEGIN, ROLLBACK of an orphan)
  bool attach = false;   // the session parameters' AttachSql (swallowed)
  std::string attach_error;  // its first ErrorResponse, whole
  int msgs = 0;
  SmallFifo<ParseEntry> parses;
  SmallFifo<uint8_t> closes;  // 1: drop the CloseComplete
  SmallFifo<DescribeEntry> describes;  // Describe-statement messages, in order
  bool cluster_lock = false;    // multi-proxy mode: advisory locks taken (swallowed)
  bool cluster_unlock = false;  // multi-proxy mode: their release (swallowed)
  bool cluster_try = false;     // multi-proxy mode: keys taken when free (swallowed; Backend::try_keys)
  bool table_lock = false;      // cluster_lock = table: BEGIN and the stripes' LOCK (swallowed; Backend::lock_error)
  // cluster_lock = table, an implicit transaction's unit run in a block of
  // the proxy's (Proxy::Loop::TakeTableLocks): the unit's batch, whose
  // ReadyForQuery ('T' or 'E') the client does not get, and the proxy's
  // COMMIT behind it, whose CommandComplete it does not get (its error,
  // a commit-time 40001, and its ReadyForQuery 'I' it does).
  bool wrap_unit = false;
  bool wrap_commit = false;
  // Transparent replay (replay.h): 1 a re-run statement whose results are
  // compared with what the client got (swallowed), 2 the failed statement
  // run again (its results go to the client), 3 the COMMIT of a replayed
  // implicit unit the proxy ran in a block (its error goes to the client),
  // 4 a unit the client had in flight behind the failed one, re-sent after
  // it (swallowed until the failed unit's replay succeeded).
  int replay = 0;
};

// Appends a Close (or Describe: type 'D') of the statement `name`.
void AppendStatementMessage(std::string* out, char type, absl::string_view name);

// The statements prepared on one backend connection.
class StatementCache {
 public:
  explicit StatementCache(size_t capacity) : capacity_(capacity) {}

  // The backend name of `d`, appending to *msgs what the backend needs first
  // (a Close of an evicted statement, the Parse) and recording in `open`
  // which responses the client must not see. A client's own Parse
  // (client_parse) is always sent again (closed first when cached) so it
  // gets its ParseComplete, or error, in order.
  std::string Ensure(const PreparedDef& d, bool client_parse, Batch* open, std::string* msgs);
  // ParseComplete arrived for `key`.
  void Confirm(const std::string& key);
  // At ReadyForQuery: parses skipped after an error never happened.
  void ForgetUnconfirmed(const SmallFifo<ParseEntry>& parses);
  void Clear();
  size_t size() const { return cache_.size(); }

 private:
  struct Cached {
    std::string name;
    std::list<std::string>::iterator lru;
    bool confirmed = false;
  };
  size_t capacity_;
  absl::flat_hash_map<std::string, Cached> cache_;
  std::list<std::string> lru_;  // front = most recently used
  uint64_t next_name_ = 0;
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_PREPARED_H_
