#include "bench/runner/sql_refs.h"

#include <cstdint>

namespace corral {
namespace bench {

const TemplateRefs* SqlRefs::Get(absl::string_view tmpl) {
  std::lock_guard<std::mutex> l(mu_);
  auto it = by_text_.find(tmpl);
  if (it == by_text_.end()) {
    auto t = TemplateRefs::Compile(*ex_, tmpl);
    it = by_text_.emplace(std::string(tmpl), t.ok() ? *t : nullptr).first;
  }
  return it->second.get();
}

int SqlRefs::Extract(const workloads::BoundSql& bound, ExtractionPolicy policy, Local* local, RefVec* ids,
                     RefMult* mult) {
  const bool single = policy.grouping == RefGrouping::kSingle;
  const int naming = static_cast<int>(policy.naming);
  if (single && (local->naming != naming || local->arena.size() > Local::kMaxArena)) {
    // Packed slots are per naming; start over on a change (or when full).
    for (Local::Slot& slot : local->slots) slot = Local::Slot();
    local->arena.clear();
    local->naming = naming;
  }
  int errors = 0;
  TemplateRefs::Memo memo;  // this transaction's filled slots
  for (const workloads::BoundSql::Statement& s : bound.statements()) {
    const Local::Slot* found = nullptr;
    const TemplateRefs* refs = nullptr;
    if (s.static_tmpl()) {
      const uintptr_t a = reinterpret_cast<uintptr_t>(s.tmpl.data());
      Local::Slot& slot = local->slots[((a >> 3) ^ (a >> 11)) % Local::kSlots];
      if (slot.data == s.tmpl.data() && slot.size == s.tmpl.size()) {
        found = &slot;
      } else if ((refs = Get(s.tmpl)) != nullptr) {
        slot.data = s.tmpl.data();
        slot.size = static_cast<uint32_t>(s.tmpl.size());
        slot.refs = refs;
        slot.packed = single && refs->slotted();
        if (slot.packed) {
          const auto& packed = refs->slots(policy.naming);
          slot.begin = static_cast<uint32_t>(local->arena.size());
          slot.count = static_cast<uint16_t>(packed.size());
          local->arena.insert(local->arena.end(), packed.begin(), packed.end());
        }
        found = &slot;
      }
    } else {
      refs = Get(s.tmpl);
    }
    if (found != nullptr && found->packed && single) {
      TemplateRefs::FillSlots(absl::Span<const TemplateRefs::PackedSlot>(local->arena.data() + found->begin,
                                                                          found->count),
                              bound.params(s), ids, mult, &memo);
      continue;
    }
    if (found != nullptr) refs = found->refs;
    if (refs == nullptr) {
      ++errors;
      continue;
    }
    refs->Extract(policy, bound.params(s), ids, mult);
  }
  return errors;
}

}  // namespace bench
}  // namespace corral
