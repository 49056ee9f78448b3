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
// Thread safety: not thread-safe; owned and used by the event loop thread.
#ifndef CORRAL_ADAPTERS_PROXY_PREPARED_H_
#define CORRAL_ADAPTERS_PROXY_PREPARED_H_

#include <cstdint>
#include <deque>
#include <list>
#include <string>
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

// A statement as the client's Parse defined it.
struct PreparedDef {
  std::string query;
  std::string types;  // Parse's parameter-type section (count + oids), raw
  std::string key;    // query + '\0' + types
  std::vector<uint32_t> oids;  // the declared parameter types (0 = unspecified)
  // StatementMayChangeSession(query), worked out once per Parse rather than
  // per Bind; whoever replaces `query` sets it again.
  bool may_change_session = false;

  // From a Parse message's body; the statement's name goes to *name.
  static PreparedDef FromParse(absl::string_view parse_body, std::string* name);
};

// A client's statements by name; "" is the unnamed statement it parsed last.
using StatementMap = absl::flat_hash_map<std::string, PreparedDef>;

// Statement `name`: parsed earlier in this unit (`local`) or known to the
// client (`stmts`); null when neither.
const PreparedDef* FindStatement(const StatementMap& local, const StatementMap& stmts, const std::string& name);

// The parameter types the server resolved for statements (from its
// ParameterDescription), by PreparedDef::key; bounded: once full, the oldest
// entry makes room.
class ParamTypeCache {
 public:
  explicit ParamTypeCache(size_t capacity) : capacity_(capacity) {}
  // Null when not known.
  const std::vector<uint32_t>* Find(const std::string& key) const {
    auto it = map_.find(key);
    return it == map_.end() ? nullptr : &it->second;
  }
  void Put(const std::string& key, std::vector<uint32_t> oids);
  void Clear() {
    map_.clear();
    order_.clear();
  }
  size_t size() const { return map_.size(); }

 private:
  size_t capacity_;
  absl::flat_hash_map<std::string, std::vector<uint32_t>> map_;
  std::deque<std::string> order_;  // insertion order, for eviction
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
};

// The messages sent to a backend up to one Sync/Query (one ReadyForQuery).
struct Batch {
  bool swallow = false;  // proxy-internal (held BEGIN, ROLLBACK of an orphan)
  bool attach = false;   // the session parameters' AttachSql (swallowed)
  std::string attach_error;  // its first ErrorResponse, whole
  int msgs = 0;
  std::deque<ParseEntry> parses;
  std::deque<bool> closes;  // true: drop the CloseComplete
  std::deque<DescribeEntry> describes;  // Describe-statement messages, in order
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
  void ForgetUnconfirmed(const std::deque<ParseEntry>& parses);
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
