// TemplateRefs: compile a template's reference slots once from the
// extractor's plan; fill them from typed parameters per execution.
// Thread-safety: see template_refs.h.
#include "policies/template_refs.h"

#include <charconv>
#include <string>

#include "absl/container/inlined_vector.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "policies/ref_plan.h"

namespace corral {
namespace {

using ref_internal::Pred;
using ref_internal::ValueSrc;

// Per-thread buffers for the text-rendered parameters (decimals, texts, and
// the fallback's ParamValues), reused so that steady state allocates nothing.
struct TextScratch {
  std::string raw, rendered, arena;
  std::vector<uint32_t> ends;
  std::vector<ParamValue> params;
};

TextScratch& LocalTextScratch() {
  thread_local TextScratch s;
  return s;
}

}  // namespace

absl::string_view TemplateRefs::sql() const { return prepared_->text; }

absl::StatusOr<std::shared_ptr<const TemplateRefs>> TemplateRefs::Compile(RefExtractor& extractor,
                                                                         absl::string_view sql) {
  auto prepared = extractor.Prepare(sql);
  if (!prepared.ok()) return prepared.status();
  std::shared_ptr<TemplateRefs> t(new TemplateRefs());
  t->ex_ = &extractor;
  t->prepared_ = *prepared;
  const RefExtractor::Prepared& p = **prepared;
  if (p.plan == nullptr) return std::shared_ptr<const TemplateRefs>(std::move(t));
  const RefExtractor::Plan& plan = *p.plan;
  // The emission order of RefExtractor's kSingle grouping: per conjunction,
  // its equalities, then its IN lists' elements.
  std::vector<int> order;
  for (const ref_internal::Conj& c : plan.conjs) {
    order.insert(order.end(), c.eqs.begin(), c.eqs.end());
    for (const auto& in : c.ins) order.insert(order.end(), in.begin(), in.end());
  }
  std::string raw, rendered;
  for (int i : order) {
    const Pred& pred = plan.preds[i];
    const ValueSrc& v = pred.value;
    if (v.array) return std::shared_ptr<const TemplateRefs>(std::move(t));  // element lists: text path
    PackedSlot s[2];
    if (v.kind == ValueSrc::Kind::kParam) {
      for (int n = 0; n < 2; ++n) {
        s[n].h = pred.name[n].eq_state;
        s[n].param = v.index;
        s[n].type = v.type;
      }
    } else {
      // A constant of the template: its value is fixed, so is its RefId.
      if (v.kind == ValueSrc::Kind::kConst) {
        raw.assign(v.tree_raw);
      } else {
        raw.assign(v.negate ? "-" : "");
        const absl::string_view lit = p.lex.Value(p.lex.literals[v.index], p.text);
        raw.append(lit.data(), lit.size());
      }
      rendered.clear();
      AppendRenderedValue(raw, v.type, &rendered);
      for (int n = 0; n < 2; ++n) {
        s[n].h = Mix64(Fnv1aAppend(pred.name[n].eq_state, rendered.data(), rendered.size()));
      }
    }
    for (int n = 0; n < 2; ++n) t->slots_[n].push_back(s[n]);
  }
  t->slotted_ = true;
  return std::shared_ptr<const TemplateRefs>(std::move(t));
}

void TemplateRefs::Extract(ExtractionPolicy policy, BoundSpan params, RefVec* ids, RefMult* mult) const {
  if (!slotted_ || policy.grouping != RefGrouping::kSingle) {
    ExtractText(policy, params, ids, mult);
    return;
  }
  FillSlots(slots(policy.naming), params, ids, mult);
}

void TemplateRefs::FillSlots(absl::Span<const PackedSlot> slots, BoundSpan params, RefVec* ids, RefMult* mult,
                             Memo* memo) {
  if (mult != nullptr && mult->size() < ids->size()) mult->resize(ids->size(), 1);
  const size_t stmt_begin = ids->size();
  absl::InlinedVector<uint32_t, 8> counted;
  for (const PackedSlot& s : slots) {
    RefId id;
    int memo_at = -1;
    if (s.param == 0) {
      id = RefId(s.h);
    } else {
      if (s.param > static_cast<int>(params.size())) continue;
      const BoundValue& b = params[s.param - 1];
      if (b.kind() == BoundValue::Kind::kNull) continue;
      uint64_t h = s.h;
      if (b.kind() == BoundValue::Kind::kInt) {
        const int64_t v = b.int_value();
        if (memo != nullptr) {
          memo_at = static_cast<int>(((s.h ^ static_cast<uint64_t>(v)) * 0x9e3779b97f4a7c15ULL) >> 58);
          if (memo->used_[memo_at] && memo->h_[memo_at] == s.h && memo->v_[memo_at] == v) {
            ref_internal::CountAgain(memo->pos_[memo_at], mult, stmt_begin, &counted);
            continue;
          }
        }
        // An integer's digits are its canonical number; a text column quotes them.
        char buf[24];
        const char* end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
        if (s.type == TypeClass::kText) {
          h = Fnv1aAppend(Fnv1aAppend(Fnv1aAppend(h, "'", 1), buf, end - buf), "'", 1);
        } else {
          h = Fnv1aAppend(h, buf, end - buf);
        }
      } else {
        TextScratch& sc = LocalTextScratch();
        sc.raw.clear();
        AppendText(b, &sc.raw);
        sc.rendered.clear();
        AppendRenderedValue(sc.raw, s.type, &sc.rendered);
        h = Fnv1aAppend(h, sc.rendered.data(), sc.rendered.size());
      }
      id = RefId(Mix64(h));
    }
    const size_t pos = ref_internal::AddRefAt(id, ids, mult, stmt_begin, &counted);
    if (memo_at >= 0) {
      memo->used_[memo_at] = true;
      memo->h_[memo_at] = s.h;
      memo->v_[memo_at] = params[s.param - 1].int_value();
      memo->pos_[memo_at] = static_cast<uint32_t>(pos);
    }
  }
}

void TemplateRefs::ExtractText(ExtractionPolicy policy, BoundSpan params, RefVec* ids, RefMult* mult) const {
  TextScratch& sc = LocalTextScratch();
  sc.arena.clear();
  sc.ends.clear();
  for (const BoundValue& b : params) {
    AppendText(b, &sc.arena);
    sc.ends.push_back(static_cast<uint32_t>(sc.arena.size()));
  }
  sc.params.clear();
  const absl::string_view arena(sc.arena);
  uint32_t begin = 0;
  for (size_t i = 0; i < params.size(); ++i) {
    sc.params.push_back(ParamValue{arena.substr(begin, sc.ends[i] - begin), params[i].is_null()});
    begin = sc.ends[i];
  }
  // A prepared template extracts without error (Prepare parsed it).
  ex_->ExtractPrepared(*prepared_, policy, ParamSpan(sc.params), ids, mult).IgnoreError();
}

}  // namespace corral
