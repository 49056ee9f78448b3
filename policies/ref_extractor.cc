// RefExtractor's public class, its shape cache (sharded shared cache plus
// per-thread front and raw-text caches) and the extraction fast path: filling
// a cached plan's values from the lexer / typed parameters into RefIds.
// Thread-safety: RefExtractor is safe for concurrent use (see ref_extractor.h).
#include "policies/ref_extractor.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "policies/pg_params.h"
#include "policies/ref_plan.h"
#include "policies/ref_value.h"
#include "policies/sql_lexer.h"

namespace corral {

absl::optional<int> SyntaxErrorPosition(const absl::Status& status) {
  absl::optional<absl::Cord> p = status.GetPayload(kPositionPayload);
  if (!p.has_value()) return absl::nullopt;
  int pos = 0;
  if (!absl::SimpleAtoi(std::string(*p), &pos)) return absl::nullopt;
  return pos;
}

// ------------------------------------------------------------------ emission

namespace {

using ref_internal::AddRef;
using ref_internal::Conj;
using ref_internal::Name;
using ref_internal::ParseAndCompile;
using ref_internal::Pred;
using ref_internal::ValueSrc;
using Plan = RefExtractor::Plan;

int Idx(RefNaming n) { return n == RefNaming::kLiteral ? 0 : 1; }

// Per-thread scratch: lexer output and rendered values. Reused, so the hit
// path allocates nothing once warm.
struct Scratch {
  LexResult lex;
  std::string arena;
  struct Value {
    absl::string_view view;  // valid after RenderValues
    uint32_t begin = 0, end = 0;
    bool present = false;
    bool in_arena = false;
    bool is_array = false;  // elements elems[elem_begin, elem_begin + elem_count)
    uint32_t elem_begin = 0, elem_count = 0;
  };
  std::vector<Value> values;
  // Rendered elements of array values (`= ANY(...)`), always in the arena.
  struct Elem {
    absl::string_view view;
    uint32_t begin = 0, end = 0;
  };
  std::vector<Elem> elems;
  std::string unescape;                     // ParseArrayLiteral's buffer
  std::vector<ArrayLiteralElement> lit_elems;
  // A small per-thread, lock-free front cache of plans (direct-mapped by the
  // key's hash), tagged with the owning extractor's id. Plans are immutable
  // and shared, so an entry stays valid after the shared cache evicts it.
  struct Front {
    uint64_t owner = 0;
    uint64_t hash = 0;
    std::shared_ptr<const Plan> plan;
  };
  static constexpr size_t kFront = 64;
  Front front[kFront];
  // In front of the lexer: statements seen before, byte for byte (prepared
  // templates, mostly), direct-mapped by a hash of the raw text. An entry
  // keeps the text (each hit is verified against it), the plan, and the
  // text's own lexed literals, so a hit needs no lexing at all. Only
  // statements likely to recur are entered: those with parameters or without
  // literals (literal SQL text rarely repeats byte for byte).
  struct Raw {
    uint64_t owner = 0;
    uint64_t hash = 0;
    std::string text;
    std::shared_ptr<const Plan> plan;
    LexResult lex;
  };
  static constexpr size_t kRaw = 256;
  std::unique_ptr<Raw[]> raw;  // allocated on first use
};

Scratch& LocalScratch() {
  thread_local Scratch s;
  return s;
}

// True if `raw` is already in canonical decimal form as an integer (the
// common case), so rendering would copy it unchanged.
inline bool IsPlainInteger(absl::string_view raw) {
  if (raw.empty() || raw.size() > 18 || (raw[0] == '0' && raw.size() > 1)) return false;
  for (char c : raw) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Renders one array value's elements into sc->arena / sc->elems: a typed
// array parameter's elements, or the elements of an array literal ('{1,2}'
// as a text parameter or a string constant). NULL elements yield nothing; a
// malformed literal yields no element.
void RenderArray(const ValueSrc& v, const ParamValue* param, absl::string_view literal, Scratch* sc,
                 Scratch::Value* out) {
  out->is_array = true;
  out->elem_begin = static_cast<uint32_t>(sc->elems.size());
  auto add = [&](absl::string_view raw) {
    Scratch::Elem e;
    e.begin = static_cast<uint32_t>(sc->arena.size());
    AppendRenderedValue(raw, v.type, &sc->arena);
    e.end = static_cast<uint32_t>(sc->arena.size());
    sc->elems.push_back(e);
  };
  if (param != nullptr && param->is_array) {
    for (uint32_t k = 0; k < param->num_elements; ++k) {
      if (!param->elements[k].is_null) add(param->elements[k].text);
    }
  } else if (ParseArrayLiteral(literal, &sc->unescape, &sc->lit_elems)) {
    for (const ArrayLiteralElement& e : sc->lit_elems) {
      if (!e.is_null) add(e.text);
    }
  }
  out->elem_count = static_cast<uint32_t>(sc->elems.size()) - out->elem_begin;
  out->present = out->elem_count > 0;
}

// Renders every pred's value into sc (from slots, parameters or the tree).
void RenderValues(const Plan& plan, absl::string_view sql, const LexResult* lex, bool from_tree,
                  ParamSpan params, Scratch* sc) {
  const size_t n = plan.preds.size();
  sc->arena.clear();
  sc->elems.clear();
  sc->values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const ValueSrc& v = plan.preds[i].value;
    Scratch::Value& out = sc->values[i];
    out.present = false;
    out.in_arena = false;
    out.is_array = false;
    absl::string_view raw;
    const ParamValue* param = nullptr;
    switch (v.kind) {
      case ValueSrc::Kind::kConst:
        raw = v.tree_raw;
        break;
      case ValueSrc::Kind::kParam:
        if (v.index > static_cast<int>(params.size()) || params[v.index - 1].is_null) continue;
        param = &params[v.index - 1];
        // An array bound where a scalar is compared: no reference.
        if (param->is_array && !v.array) continue;
        raw = param->text;
        break;
      case ValueSrc::Kind::kSlot:
        if (from_tree) {
          raw = v.tree_raw;
          break;
        }
        raw = lex->Value(lex->literals[v.index], sql);
        if (v.negate) {
          std::string neg = absl::StrCat("-", raw);  // rare path (negative literal)
          out.begin = static_cast<uint32_t>(sc->arena.size());
          AppendRenderedValue(neg, v.type, &sc->arena);
          out.end = static_cast<uint32_t>(sc->arena.size());
          out.present = out.in_arena = true;
          continue;
        }
        break;
    }
    if (v.array) {
      RenderArray(v, param, raw, sc, &out);
      continue;
    }
    out.present = true;
    if (v.type != TypeClass::kText && IsPlainInteger(raw)) {
      out.view = raw;  // already canonical: no copy
      continue;
    }
    out.in_arena = true;
    out.begin = static_cast<uint32_t>(sc->arena.size());
    AppendRenderedValue(raw, v.type, &sc->arena);
    out.end = static_cast<uint32_t>(sc->arena.size());
  }
  absl::string_view arena(sc->arena);
  for (size_t i = 0; i < n; ++i) {
    Scratch::Value& out = sc->values[i];
    if (out.in_arena) out.view = arena.substr(out.begin, out.end - out.begin);
  }
  for (Scratch::Elem& e : sc->elems) e.view = arena.substr(e.begin, e.end - e.begin);
}

// Calls fn(value) for each value of pred p: its one value, or each element
// of an array value.
template <typename Fn>
inline void ForEachValue(const Scratch& sc, int p, Fn fn) {
  const Scratch::Value& v = sc.values[p];
  if (!v.present) return;
  if (!v.is_array) {
    fn(v.view);
    return;
  }
  for (uint32_t k = 0; k < v.elem_count; ++k) fn(sc.elems[v.elem_begin + k].view);
}

void Emit(const Plan& plan, ExtractionPolicy policy, Scratch* sc, RefVec* ids, RefMult* mult,
          TextSink texts) {
  if (mult != nullptr && mult->size() < ids->size()) mult->resize(ids->size(), 1);
  const size_t stmt_begin = ids->size();
  absl::InlinedVector<uint32_t, 8> counted;
  const int ni = Idx(policy.naming);
  auto single = [&](int p) {
    const Name& name = plan.preds[p].name[ni];
    ForEachValue(*sc, p, [&](absl::string_view v) {
      RefId id(Mix64(Fnv1aAppend(name.eq_state, v.data(), v.size())));
      if (!AddRef(id, ids, mult, stmt_begin, &counted)) return;
      if (texts) texts.Add(name.text, v);
    });
  };
  if (policy.grouping == RefGrouping::kSingle) {
    for (const Conj& c : plan.conjs) {
      for (int p : c.eqs) single(p);
      for (const auto& in : c.ins) {
        for (int p : in) single(p);
      }
    }
    return;
  }
  // A conjunction's members: (pred, value); an array pred contributes one
  // member per element only as the IN-list element below.
  struct Member {
    int pred;
    absl::string_view value;
  };
  absl::InlinedVector<Member, 16> group;
  auto less = [&](const Member& a, const Member& b) {
    int ra = plan.preds[a.pred].name[ni].rank, rb = plan.preds[b.pred].name[ni].rank;
    if (ra != rb) return ra < rb;
    return a.value < b.value;
  };
  auto same = [&](const Member& a, const Member& b) {
    return plan.preds[a.pred].name[ni].rank == plan.preds[b.pred].name[ni].rank && a.value == b.value;
  };
  auto emit_group = [&]() {
    if (group.empty()) return;
    // Insertion sort: groups are small.
    for (size_t i = 1; i < group.size(); ++i) {
      Member x = group[i];
      size_t j = i;
      while (j > 0 && less(x, group[j - 1])) {
        group[j] = group[j - 1];
        --j;
      }
      group[j] = x;
    }
    size_t w = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      if (w > 0 && same(group[w - 1], group[i])) continue;
      group[w++] = group[i];
    }
    group.resize(w);
    uint64_t h = kFingerprintSeed;
    for (size_t i = 0; i < group.size(); ++i) {
      const Name& name = plan.preds[group[i].pred].name[ni];
      absl::string_view v = group[i].value;
      if (i > 0) h = Fnv1aAppend(h, " AND ", 5);
      h = Fnv1aAppend(h, name.text.data(), name.text.size());
      h = Fnv1aAppend(h, "=", 1);
      h = Fnv1aAppend(h, v.data(), v.size());
    }
    RefId id(Mix64(h));
    if (!AddRef(id, ids, mult, stmt_begin, &counted)) return;
    if (texts) {
      texts.Begin();
      for (size_t i = 0; i < group.size(); ++i) {
        if (i > 0) texts.Append(" AND ");
        texts.Append(plan.preds[group[i].pred].name[ni].text);
        texts.Append("=");
        texts.Append(group[i].value);
      }
      texts.End();
    }
  };
  // The conjunction's scalar equalities (arrays only appear in IN lists).
  auto add_eqs = [&](const Conj& c) {
    group.clear();
    for (int p : c.eqs) {
      if (sc->values[p].present && !sc->values[p].is_array) group.push_back(Member{p, sc->values[p].view});
    }
  };
  for (const Conj& c : plan.conjs) {
    if (c.ins.empty()) {
      add_eqs(c);
      emit_group();
      continue;
    }
    for (int e : c.ins[0]) {
      ForEachValue(*sc, e, [&](absl::string_view v) {
        add_eqs(c);
        group.push_back(Member{e, v});
        emit_group();
      });
    }
  }
}

}  // namespace

// ------------------------------------------------------------------ the cache

// Sharded, bounded plan cache with clock eviction. Lookups take the shard's
// reader lock (concurrent readers do not exclude each other) and set the
// entry's clock bit with a relaxed atomic; inserts take the writer lock.
//
// The lock is std::shared_mutex rather than absl::Mutex on purpose: Debian's
// Abseil is not built with ThreadSanitizer annotations, so TSan cannot see
// absl::Mutex's happens-before edges and reports false races, while it does
// intercept the pthread rwlock behind std::shared_mutex.
class RefExtractor::Cache {
 public:
  enum class Found { kMiss, kHit, kUncacheable };

  Cache(size_t max_entries, int shards) {
    if (shards < 1) shards = 1;
    size_t per = std::max<size_t>(1, (max_entries + shards - 1) / shards);
    for (int i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>(per));
  }

  // The plan cached for `key`, or null.
  std::shared_ptr<const Plan> Lookup(uint64_t hash, absl::string_view key) {
    Shard& s = *shards_[Mix64(hash) % shards_.size()];
    std::shared_lock<std::shared_mutex> l(s.mu);
    auto it = s.index.find(hash);
    if (it == s.index.end()) return nullptr;
    Entry& e = s.slots[it->second];
    if (e.plan->key != key) return nullptr;
    if (!e.referenced.load(std::memory_order_relaxed)) e.referenced.store(true, std::memory_order_relaxed);
    return e.plan;
  }

  void Insert(uint64_t hash, std::shared_ptr<const Plan> plan) {
    Shard& s = *shards_[Mix64(hash) % shards_.size()];
    std::unique_lock<std::shared_mutex> l(s.mu);
    s.misses.fetch_add(1, std::memory_order_relaxed);
    auto it = s.index.find(hash);
    size_t slot;
    if (it != s.index.end()) {
      slot = it->second;  // same shape raced in, or a hash collision: replace
    } else if (s.used < s.capacity) {
      slot = s.used++;
    } else {
      while (s.slots[s.hand].referenced.load(std::memory_order_relaxed)) {
        s.slots[s.hand].referenced.store(false, std::memory_order_relaxed);
        s.hand = (s.hand + 1) % s.capacity;
      }
      slot = s.hand;
      s.hand = (s.hand + 1) % s.capacity;
      s.index.erase(s.slots[slot].hash);
    }
    Entry& e = s.slots[slot];
    e.hash = hash;
    e.plan = std::move(plan);
    e.referenced.store(true, std::memory_order_relaxed);
    s.index[hash] = slot;
  }

  void AddStats(Stats* st) const {
    for (const auto& s : shards_) {
      std::shared_lock<std::shared_mutex> l(s->mu);
      st->misses += s->misses.load(std::memory_order_relaxed);
      st->entries += s->index.size();
    }
  }

 private:
  struct Entry {
    uint64_t hash = 0;
    std::shared_ptr<const Plan> plan;
    std::atomic<bool> referenced{false};
  };
  struct Shard {
    explicit Shard(size_t cap) : capacity(cap), slots(new Entry[cap]) {}
    mutable std::shared_mutex mu;
    const size_t capacity;
    // Guarded by mu: entries are written under the writer lock; `referenced`
    // is also set under the reader lock (it is atomic).
    std::unique_ptr<Entry[]> slots;
    absl::flat_hash_map<uint64_t, size_t> index;  // guarded by mu
    size_t used = 0;                              // guarded by mu
    size_t hand = 0;                              // guarded by mu
    std::atomic<uint64_t> misses{0};
  };
  std::vector<std::unique_ptr<Shard>> shards_;
};

// ------------------------------------------------------------------ RefExtractor

namespace {
uint64_t NextExtractorId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

RefExtractor::RefExtractor(std::shared_ptr<const Schema> schema) : RefExtractor(std::move(schema), Options()) {}

RefExtractor::RefExtractor(std::shared_ptr<const Schema> schema, Options options)
    : id_(NextExtractorId()),
      text_hash_(options.text_hash_for_testing),
      schema_(schema != nullptr ? std::move(schema) : *SchemaBuilder().Build()),
      cache_(std::make_unique<Cache>(options.max_shapes, options.shards)) {}

RefExtractor::~RefExtractor() = default;

namespace {
// Whether a statement is worth an entry in the per-thread raw-text cache.
inline bool RawCacheable(ParamSpan params, const LexResult& lex) {
  return lex.cacheable && (!params.empty() || lex.literals.empty());
}
// Tells `facts` (may be null) about `plan`; whether its references are to
// be skipped.
inline bool SkipsPlainRead(const RefExtractor::Plan& plan, StatementFacts* facts) {
  if (facts == nullptr) return false;
  facts->plain_read = plan.plain_read;
  return facts->skip_plain_read && plan.plain_read;
}
}  // namespace

uint64_t RefExtractor::TextHash(absl::string_view sql) const {
  if (text_hash_ != nullptr) return text_hash_(sql);
  return absl::Hash<absl::string_view>{}(sql);
}

absl::Status RefExtractor::Extract(absl::string_view sql, ExtractionPolicy policy, ParamSpan params, RefVec* ids,
                                   RefMult* mult, TextSink texts, StatementFacts* facts) {
  Scratch& sc = LocalScratch();
  // 1. The exact text seen before on this thread: no lexing.
  if (sc.raw == nullptr) sc.raw.reset(new Scratch::Raw[Scratch::kRaw]);
  const uint64_t text_hash = TextHash(sql);
  Scratch::Raw& r = sc.raw[Mix64(text_hash) % Scratch::kRaw];
  if (r.owner == id_ && r.hash == text_hash && absl::string_view(r.text) == sql) {
    const Plan& plan = *r.plan;
    if (!plan.cacheable) return ExtractUncached(sql, policy, params, ids, mult, texts, facts);
    if (SkipsPlainRead(plan, facts)) return absl::OkStatus();
    RenderValues(plan, r.text, &r.lex, /*from_tree=*/false, params, &sc);
    Emit(plan, policy, &sc, ids, mult, texts);
    return absl::OkStatus();
  }
  // 2. The shape seen before: lex, then the front cache or the shared one.
  LexSql(sql, &sc.lex);
  uint64_t hash = 0;
  std::shared_ptr<const Plan> found;
  if (sc.lex.cacheable) {
    // Process-local hash (fast); the stable Fingerprint64 is for RefIds only.
    hash = absl::Hash<absl::string_view>{}(absl::string_view(sc.lex.key));
    Scratch::Front& f = sc.front[hash % Scratch::kFront];
    if (f.owner == id_ && f.hash == hash && f.plan->key == sc.lex.key) {
      found = f.plan;
    } else if (std::shared_ptr<const Plan> p = cache_->Lookup(hash, sc.lex.key)) {
      f.owner = id_;
      f.hash = hash;
      f.plan = p;
      found = std::move(p);
    }
  }
  if (found == nullptr) {
    // 3. A new shape: libpg_query, compile, and share the plan.
    auto plan = std::make_shared<Plan>();
    absl::Status st = ParseAndCompile(*schema_, sql, sc.lex, plan.get());
    if (!st.ok()) return st;
    RenderValues(*plan, sql, &sc.lex, /*from_tree=*/true, params, &sc);
    if (!SkipsPlainRead(*plan, facts)) Emit(*plan, policy, &sc, ids, mult, texts);
    if (!sc.lex.cacheable) return absl::OkStatus();
    plan->key = sc.lex.key;
    found = plan;
    cache_->Insert(hash, std::move(plan));
  } else if (!found->cacheable) {
    absl::Status st = ExtractUncached(sql, policy, params, ids, mult, texts, facts);
    if (!st.ok()) return st;
  } else if (!SkipsPlainRead(*found, facts)) {
    RenderValues(*found, sql, &sc.lex, /*from_tree=*/false, params, &sc);
    Emit(*found, policy, &sc, ids, mult, texts);
  }
  if (RawCacheable(params, sc.lex)) {
    // Copy-assignments reuse the entry's capacity: no allocation once warm.
    r.owner = id_;
    r.hash = text_hash;
    r.text.assign(sql.data(), sql.size());
    r.plan = std::move(found);
    r.lex = sc.lex;
  }
  return absl::OkStatus();
}

absl::Status RefExtractor::ExtractUncached(absl::string_view sql, ExtractionPolicy policy, ParamSpan params,
                                           RefVec* ids, RefMult* mult, TextSink texts,
                                           StatementFacts* facts) const {
  Scratch& sc = LocalScratch();
  LexSql(sql, &sc.lex);
  Plan plan;
  absl::Status st = ParseAndCompile(*schema_, sql, sc.lex, &plan);
  if (!st.ok()) return st;
  if (SkipsPlainRead(plan, facts)) return absl::OkStatus();
  RenderValues(plan, sql, &sc.lex, /*from_tree=*/true, params, &sc);
  Emit(plan, policy, &sc, ids, mult, texts);
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const RefExtractor::Prepared>> RefExtractor::Prepare(absl::string_view sql) {
  auto p = std::make_shared<Prepared>();
  p->text.assign(sql.data(), sql.size());
  LexSql(p->text, &p->lex);
  std::shared_ptr<const Plan> found;
  uint64_t hash = 0;
  if (p->lex.cacheable) {
    hash = absl::Hash<absl::string_view>{}(absl::string_view(p->lex.key));
    found = cache_->Lookup(hash, p->lex.key);
  }
  if (found == nullptr) {
    auto plan = std::make_shared<Plan>();
    absl::Status st = ParseAndCompile(*schema_, p->text, p->lex, plan.get());
    if (!st.ok()) return st;
    if (p->lex.cacheable) {
      plan->key = p->lex.key;
      cache_->Insert(hash, plan);
    }
    found = std::move(plan);
  }
  // A shape whose slot values cannot be trusted from the lexer, or a text
  // the lexer could not key, takes the uncached path every time (as Extract).
  if (found->cacheable && p->lex.cacheable) p->plan = std::move(found);
  return std::shared_ptr<const Prepared>(std::move(p));
}

absl::Status RefExtractor::ExtractPrepared(const Prepared& prepared, ExtractionPolicy policy, ParamSpan params,
                                           RefVec* ids, RefMult* mult, TextSink texts,
                                           StatementFacts* facts) const {
  if (prepared.plan == nullptr) return ExtractUncached(prepared.text, policy, params, ids, mult, texts, facts);
  if (SkipsPlainRead(*prepared.plan, facts)) return absl::OkStatus();
  Scratch& sc = LocalScratch();
  RenderValues(*prepared.plan, prepared.text, &prepared.lex, /*from_tree=*/false, params, &sc);
  Emit(*prepared.plan, policy, &sc, ids, mult, texts);
  return absl::OkStatus();
}

RefExtractor::Stats RefExtractor::stats() const {
  Stats st;
  cache_->AddStats(&st);
  return st;
}

}  // namespace corral
