// Internal to the `refs` library: the compiled per-shape plan that
// ref_compile.cc builds from libpg_query's tree and ref_extractor.cc caches
// and fills with values. Not for use outside policies/ref_*.cc.
// Thread-safety: a Plan is immutable once compiled and shared across threads.
#ifndef CORRAL_POLICIES_REF_PLAN_H_
#define CORRAL_POLICIES_REF_PLAN_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "common/ids.h"
#include "policies/ref_extractor.h"
#include "policies/schema.h"
#include "policies/sql_lexer.h"

namespace corral {

// Status payload key carrying a syntax error's byte position.
inline constexpr char kPositionPayload[] = "corral.position";

namespace ref_internal {

struct ValueSrc {
  enum class Kind : uint8_t { kSlot, kParam, kConst };
  Kind kind = Kind::kConst;
  bool negate = false;       // literal written as `- <number>`
  bool array = false;        // `= ANY(...)`: the value is an array (one reference per element)
  int index = -1;            // slot (0-based) or parameter number (1-based)
  TypeClass type = TypeClass::kUnknown;
  std::string tree_raw;      // value from the parse tree (kSlot, kConst)
};

struct Name {
  std::string text;
  uint64_t eq_state = 0;  // FNV state after text + "="
  int rank = 0;           // order of text + "=" among the plan's names
};

struct Pred {
  Name name[2];  // [RefNaming::kLiteral], [RefNaming::kCanonical]
  ValueSrc value;
};

struct Conj {
  std::vector<int> eqs;               // pred indices
  std::vector<std::vector<int>> ins;  // IN lists, pred indices
};

}  // namespace ref_internal

struct RefExtractor::Plan {
  std::string key;  // the shape key (sql_lexer.h) it was compiled for
  std::vector<ref_internal::Pred> preds;
  std::vector<ref_internal::Conj> conjs;
  bool cacheable = true;  // slot values verified against the tree
  // Every statement of the text is a plain read (StatementFacts::plain_read).
  bool plain_read = false;
};

// A prepared template (ref_extractor.h); its parts are read by
// template_refs.cc.
class RefExtractor::Prepared {
 public:
  std::string text;
  std::shared_ptr<const Plan> plan;  // null: not cacheable, extract uncached
  LexResult lex;                     // of `text`
};

namespace ref_internal {

// Counts the reference at `pos` of *ids (if mult is non-null) once for this
// statement: `stmt_begin` is the size of *ids when this statement started,
// `counted` the positions before it that this statement already counted.
inline void CountAgain(size_t pos, RefMult* mult, size_t stmt_begin, absl::InlinedVector<uint32_t, 8>* counted) {
  if (mult != nullptr && pos < stmt_begin && std::find(counted->begin(), counted->end(), pos) == counted->end()) {
    counted->push_back(static_cast<uint32_t>(pos));
    uint16_t& m = (*mult)[pos];
    if (m < 65535) ++m;
  }
}

// Appends `id` unless present (then CountAgain); returns its position in *ids.
inline size_t AddRefAt(RefId id, RefVec* ids, RefMult* mult, size_t stmt_begin,
                       absl::InlinedVector<uint32_t, 8>* counted) {
  const size_t pos = static_cast<size_t>(std::find(ids->begin(), ids->end(), id) - ids->begin());
  if (pos < ids->size()) {
    CountAgain(pos, mult, stmt_begin, counted);
    return pos;
  }
  ids->push_back(id);
  if (mult != nullptr) mult->push_back(1);
  return pos;
}

// AddRefAt; returns whether it was appended.
inline bool AddRef(RefId id, RefVec* ids, RefMult* mult, size_t stmt_begin,
                   absl::InlinedVector<uint32_t, 8>* counted) {
  const size_t n = ids->size();
  return AddRefAt(id, ids, mult, stmt_begin, counted) == n;
}

// Parses `sql` with libpg_query and compiles its tree into `plan`. `lex` is
// the lexer's output for the same text (literal slots). InvalidArgument on a
// syntax error (with kPositionPayload), a tree nested too deeply, or a chain
// of operator characters over kMaxOperatorRun (lex.longest_operator; refused
// before libpg_query, whose lexer is quadratic in an unbroken run and whose
// tree nests one level per prefix operator: a client's statement must not
// cost the proxy unbounded CPU).
absl::Status ParseAndCompile(const Schema& schema, absl::string_view sql, const LexResult& lex,
                             RefExtractor::Plan* plan);

}  // namespace ref_internal
}  // namespace corral

#endif  // CORRAL_POLICIES_REF_PLAN_H_
