#include "adapters/proxy/prepared.h"

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "adapters/proxy/session_params.h"
#include "adapters/proxy/wire.h"

namespace corral {
namespace proxy {

PreparedDef PreparedDef::FromParse(absl::string_view parse_body, std::string* name) {
  wire::Reader r(parse_body);
  *name = std::string(r.CString());
  PreparedDef d;
  d.query = std::string(r.CString());
  d.types = std::string(r.rest());
  d.key = absl::StrCat(d.query, absl::string_view("\0", 1), d.types);
  d.may_change_session = StatementMayChangeSession(d.query);
  d.may_change_catalog = StatementMayChangeCatalog(d.query);
  const int16_t n = r.Int16();
  for (int16_t i = 0; i < n && r.ok(); ++i) d.oids.push_back(static_cast<uint32_t>(r.Int32()));
  if (!r.ok()) d.oids.clear();
  return d;
}

bool StatementMayChangeCatalog(absl::string_view sql) {
  static constexpr absl::string_view kWords[] = {"alter", "create", "drop",   "do",     "call",
                                                 "grant", "revoke", "import", "discard"};
  size_t i = 0;
  while (i < sql.size()) {
    // The start of a statement: skip blanks, parentheses and comments.
    while (i < sql.size()) {
      const char ch = sql[i];
      if (absl::ascii_isspace(static_cast<unsigned char>(ch)) || ch == '(' || ch == ';') {
        ++i;
      } else if (sql.substr(i, 2) == "--") {
        const size_t nl = sql.find('\n', i);
        i = nl == absl::string_view::npos ? sql.size() : nl + 1;
      } else if (sql.substr(i, 2) == "/*") {
        const size_t close = sql.find("*/", i + 2);
        i = close == absl::string_view::npos ? sql.size() : close + 2;
      } else {
        break;
      }
    }
    const absl::string_view word = LeadingWord(sql.substr(i));
    const size_t j = i + word.size();
    for (absl::string_view w : kWords) {
      if (absl::EqualsIgnoreCase(word, w)) return true;
    }
    // The next statement (a ';' inside a literal only makes this look at
    // more words than needed).
    const size_t semi = sql.find(';', j);
    if (semi == absl::string_view::npos) break;
    i = semi + 1;
  }
  return false;
}

void AppendStatementMessage(std::string* out, char type, absl::string_view name) {
  size_t at = wire::BeginMessage(out, type);
  out->push_back('S');
  out->append(name.data(), name.size());
  out->push_back('\0');
  wire::EndMessage(out, at);
}

std::string StatementCache::Ensure(const PreparedDef& d, bool client_parse, Batch* open, std::string* msgs) {
  auto it = cache_.find(d.key);
  if (it != cache_.end()) {
    lru_.splice(lru_.begin(), lru_, it->second.lru);
    if (!client_parse) return it->second.name;
    // The client parses again: close and re-parse so it gets its own
    // ParseComplete (and any error) in order.
    AppendStatementMessage(msgs, 'C', it->second.name);
    open->closes.push_back(true);
    it->second.confirmed = false;
  } else {
    if (cache_.size() >= capacity_ && !lru_.empty()) {
      auto v = cache_.find(lru_.back());
      AppendStatementMessage(msgs, 'C', v->second.name);
      open->closes.push_back(true);
      cache_.erase(v);
      lru_.pop_back();
    }
    lru_.push_front(d.key);
    Cached cached;
    cached.name = absl::StrCat("corral_s", next_name_++);
    cached.lru = lru_.begin();
    it = cache_.emplace(d.key, std::move(cached)).first;
  }
  wire::AppendParse(msgs, it->second.name, d.query, d.types);
  open->parses.push_back(ParseEntry{!client_parse, d.key});
  return it->second.name;
}

void StatementCache::Confirm(const std::string& key) {
  if (auto it = cache_.find(key); it != cache_.end()) it->second.confirmed = true;
}

void StatementCache::ForgetUnconfirmed(const SmallFifo<ParseEntry>& parses) {
  for (const ParseEntry& e : parses) {
    if (e.key.empty()) continue;
    auto it = cache_.find(e.key);
    if (it != cache_.end() && !it->second.confirmed) {
      lru_.erase(it->second.lru);
      cache_.erase(it);
    }
  }
}

void StatementCache::Clear() {
  cache_.clear();
  lru_.clear();
}

}  // namespace proxy
}  // namespace corral
