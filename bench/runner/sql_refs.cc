#include "bench/runner/sql_refs.h"

#include <cstdint>

namespace corral {
namespace bench {

const RefExtractor::Prepared* SqlRefs::Get(absl::string_view tmpl) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = by_text_.find(tmpl);
  if (it == by_text_.end()) {
    auto p = ex_->Prepare(tmpl);
    it = by_text_.emplace(std::string(tmpl), p.ok() ? *p : nullptr).first;
  }
  return it->second.get();
}

int SqlRefs::Extract(const std::vector<workloads::SqlStatement>& sql, ExtractionPolicy policy, Local* local,
                     RefVec* ids, RefMult* mult) {
  int errors = 0;
  for (const workloads::SqlStatement& s : sql) {
    local->params.clear();
    for (const auto& p : s.params) local->params.push_back(ParamValue{p.value(), p.is_null});
    const RefExtractor::Prepared* prep = nullptr;
    if (s.static_tmpl()) {
      const uintptr_t a = reinterpret_cast<uintptr_t>(s.tmpl.data());
      Local::Slot& slot = local->slots[((a >> 3) ^ (a >> 11)) % Local::kSlots];
      if (slot.data == s.tmpl.data() && slot.size == s.tmpl.size()) {
        prep = slot.prepared;
      } else if ((prep = Get(s.tmpl)) != nullptr) {
        slot.data = s.tmpl.data();
        slot.size = s.tmpl.size();
        slot.prepared = prep;
      }
    }
    const absl::Status st =
        prep != nullptr ? ex_->ExtractPrepared(*prep, policy, ParamSpan(local->params), ids, mult)
                        : ex_->Extract(s.tmpl, policy, ParamSpan(local->params), ids, mult);
    if (!st.ok()) ++errors;
  }
  return errors;
}

}  // namespace bench
}  // namespace corral
