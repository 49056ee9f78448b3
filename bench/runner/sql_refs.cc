#include "bench/runner/sql_refs.h"

#include <algorithm>
#include <cstdint>
#include <iterator>

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

void SqlRefs::Local::Clear() {
  for (Slot& slot : slots) slot = Slot();
  std::fill(std::begin(refs), std::end(refs), nullptr);
  used = 0;
  arena.clear();
}

void SqlRefs::Local::Prefetch() const {
  constexpr size_t kLine = 64;
  const char* p = reinterpret_cast<const char*>(slots);
  for (size_t off = 0; off < sizeof(slots); off += kLine) __builtin_prefetch(p + off);
  // The arena's first lines (a workload's templates fit in a few dozen).
  const char* a = reinterpret_cast<const char*>(arena.data());
  const size_t bytes = std::min<size_t>(arena.size() * sizeof(TemplateRefs::PackedSlot), 64 * kLine);
  for (size_t off = 0; off < bytes; off += kLine) __builtin_prefetch(a + off);
}

int SqlRefs::Extract(const workloads::BoundSql& bound, ExtractionPolicy policy, Local* local, RefVec* ids,
                     RefMult* mult) {
  const bool single = policy.grouping == RefGrouping::kSingle;
  const int naming = static_cast<int>(policy.naming);
  if (single && (local->naming != naming || local->arena.size() > Local::kMaxArena)) {
    // Packed slots are per naming; start over on a change (or when full).
    local->Clear();
    local->naming = naming;
  }
  int errors = 0;
  TemplateRefs::Memo memo;  // this transaction's filled slots
  constexpr size_t kMask = Local::kSlots - 1;
  for (const workloads::BoundSql::Statement& s : bound.statements()) {
    const TemplateRefs* refs = nullptr;
    if (s.static_tmpl()) {
      const uintptr_t a = reinterpret_cast<uintptr_t>(s.tmpl.data());
      size_t i = static_cast<size_t>((a * 0x9e3779b97f4a7c15ULL) >> 32) & kMask;
      while (local->slots[i].data != nullptr &&
             (local->slots[i].data != s.tmpl.data() || local->slots[i].size != s.tmpl.size())) {
        i = (i + 1) & kMask;
      }
      Local::Slot* slot = &local->slots[i];
      if (slot->data == nullptr) {
        // First sight of this template on this thread: compile (or find) it
        // by its text, and keep it here for good.
        ++local->text_lookups;
        refs = Get(s.tmpl);
        if (local->used >= Local::kMaxUsed) {
          const int keep = local->naming;
          local->Clear();
          local->naming = keep;
          i = static_cast<size_t>((a * 0x9e3779b97f4a7c15ULL) >> 32) & kMask;
          slot = &local->slots[i];
        }
        ++local->used;
        slot->data = s.tmpl.data();
        slot->size = static_cast<uint32_t>(s.tmpl.size());
        slot->count = Local::kUnpacked;
        local->refs[i] = refs;
        if (refs != nullptr && single && refs->slotted()) {
          const auto& packed = refs->slots(policy.naming);
          if (packed.size() < Local::kUnpacked && local->arena.size() + packed.size() <= 0xffff) {
            slot->begin = static_cast<uint16_t>(local->arena.size());
            slot->count = static_cast<uint16_t>(packed.size());
            local->arena.insert(local->arena.end(), packed.begin(), packed.end());
          }
        }
      }
      if (slot->count != Local::kUnpacked && single) {
        TemplateRefs::FillSlots(
            absl::Span<const TemplateRefs::PackedSlot>(local->arena.data() + slot->begin, slot->count),
            bound.params(s), ids, mult, &memo);
        continue;
      }
      refs = local->refs[i];
    } else {
      ++local->text_lookups;
      refs = Get(s.tmpl);
    }
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
