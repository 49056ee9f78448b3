// TemplateRefs: a constant statement template's reference *slots*, found
// once with the RefExtractor on the template's SQL (placeholders $n), so that
// each execution only hashes its typed parameter values (BoundValue) into
// RefIds, with no SQL text built or read per statement.
//
// Compile prepares the template (RefExtractor::Prepare: libpg_query once,
// the extractor's plan) and lays its references out in emission order: each
// `name = $k` a slot fed by parameter k, each `name = <constant>` of the
// template a ready RefId. Extract then gives exactly the RefIds (and
// statement counts) that RefExtractor::Extract gives for the same template
// with the parameters' texts (AppendText): same names, same value
// normalization (policies/ref_value.h), same order, same de-duplication.
// Statements whose plan holds array values (`= ANY(...)`), grouping kAll
// (conjunctions hash their members sorted by value), and templates the
// extractor cannot cache take the prepared text path
// (RefExtractor::ExtractPrepared) with the parameters' texts, so every
// template gives the text path's references.
//
//   RefExtractor ex(schema);
//   auto t = TemplateRefs::Compile(ex, "SELECT w_tax FROM warehouse WHERE w_id = $1").value();
//   BoundValue p[] = {BoundValue::Int(5)};
//   RefVec ids;
//   t->Extract({RefNaming::kCanonical, RefGrouping::kSingle}, p, &ids);   // w_id=5
//
// Thread-safety: a TemplateRefs is immutable after Compile; Extract is
// thread-safe. The RefExtractor it was compiled with must outlive it.
#ifndef CORRAL_POLICIES_TEMPLATE_REFS_H_
#define CORRAL_POLICIES_TEMPLATE_REFS_H_

#include <algorithm>
#include <cstdint>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "common/ids.h"
#include "policies/bound_value.h"
#include "policies/policy.h"
#include "policies/ref_extractor.h"
#include "policies/ref_value.h"

namespace corral {

class TemplateRefs {
 public:
  // A syntax error returns InvalidArgument as RefExtractor::Extract does.
  static absl::StatusOr<std::shared_ptr<const TemplateRefs>> Compile(RefExtractor& extractor,
                                                                    absl::string_view sql);

  // Appends the statement's references to *ids (skipping ids already there)
  // and counts them in *mult (may be null) as RefExtractor::Extract does.
  void Extract(ExtractionPolicy policy, BoundSpan params, RefVec* ids, RefMult* mult = nullptr) const;

  // Whether kSingle extraction takes the slot path (no text at all).
  bool slotted() const { return slotted_; }
  absl::string_view sql() const;

  // One reference slot under one naming (16 bytes, so a caller can keep a
  // workload's slots in a few contiguous cache lines: SqlRefs).
  struct PackedSlot {
    uint64_t h = 0;   // param > 0: the FNV state after "name="; 0: the constant's RefId
    int32_t param = 0;  // 1-based parameter; 0: a constant
    TypeClass type = TypeClass::kUnknown;
  };
  // The slots under `naming`, in emission order; meaningful when slotted().
  const std::vector<PackedSlot>& slots(RefNaming naming) const {
    return slots_[naming == RefNaming::kLiteral ? 0 : 1];
  }
  // Remembers, for one transaction's statements (one *ids), which (slot
  // name, integer value) pairs were filled and where their RefId sits in
  // *ids, so a repeat (w_id in every statement) costs no hashing or search.
  // Start a fresh one (or Reset) for every new *ids.
  class Memo {
   public:
    Memo() { Reset(); }
    void Reset() { std::fill(used_, used_ + kSize, false); }

   private:
    friend class TemplateRefs;
    static constexpr int kSize = 64;
    uint64_t h_[kSize];
    int64_t v_[kSize];
    uint32_t pos_[kSize];
    bool used_[kSize];
  };
  // Appends the kSingle references of `slots` filled from `params` to *ids
  // (counting them in *mult, may be null) as Extract does: what Extract runs
  // for a slotted template under kSingle. `memo` (may be null) belongs to *ids.
  static void FillSlots(absl::Span<const PackedSlot> slots, BoundSpan params, RefVec* ids, RefMult* mult,
                        Memo* memo = nullptr);

 private:
  TemplateRefs() = default;
  void ExtractText(ExtractionPolicy policy, BoundSpan params, RefVec* ids, RefMult* mult) const;

  const RefExtractor* ex_ = nullptr;
  std::shared_ptr<const RefExtractor::Prepared> prepared_;
  std::vector<PackedSlot> slots_[2];  // per RefNaming (kLiteral, kCanonical)
  bool slotted_ = false;
};

}  // namespace corral

#endif  // CORRAL_POLICIES_TEMPLATE_REFS_H_
