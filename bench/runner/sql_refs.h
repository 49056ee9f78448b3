// SqlRefs: a generated transaction's bound statements -> its references, the
// way the runner's generating threads extract them (in phased and online
// mode alike; bench/extract:extract_bench times it).
//
// Each template is compiled once per run into its reference slots
// (policies/template_refs.h: the RefExtractor on the template's SQL, shared
// by all threads) and found again by its address in a small per-thread
// direct-mapped index, whose entries point into a per-thread contiguous
// copy of the slots; so a statement costs only hashing its typed
// parameters into RefIds: no SQL text is built or read per statement. A
// template the workload did not have as a constant (BoundSql::AddOwned) is
// found by its text under a lock (rare).
//
//   SqlRefs refs(extractor);
//   SqlRefs::Local local;                       // one per generating thread
//   workloads::BoundSql bound;
//   txn->AppendBound(&bound);
//   int errors = refs.Extract(bound, policy, &local, &txn->refs, &txn->ref_mult);
//
// Thread safety: Extract is thread-safe with one Local per thread.
#ifndef CORRAL_BENCH_RUNNER_SQL_REFS_H_
#define CORRAL_BENCH_RUNNER_SQL_REFS_H_

#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "bench/workloads/workload.h"
#include "common/ids.h"
#include "policies/policy.h"
#include "policies/ref_extractor.h"
#include "policies/template_refs.h"

namespace corral {
namespace bench {

class SqlRefs {
 public:
  // Per generating thread: an open-addressing index by template address
  // (linear probing, never evicting: a template once found is never looked
  // up by its text again), and the slots of the templates seen, packed
  // contiguously (under one naming), so a transaction's statements touch
  // few cache lines. Both fit in about 2 KB plus the arena; Prefetch loads
  // them in one burst before a transaction's statements are extracted (the
  // engine's work on the same thread evicts them between transactions).
  struct Local {
    struct Slot {  // 16 bytes
      const char* data = nullptr;  // null: empty
      uint32_t size = 0;
      uint16_t begin = 0;  // packed: arena[begin, begin + count)
      uint16_t count = kUnpacked;
    };
    static constexpr uint16_t kUnpacked = 0xffff;  // count of a template without packed slots
    static constexpr size_t kSlots = 128;          // a power of two
    static constexpr size_t kMaxUsed = kSlots * 3 / 4;  // then start over
    static constexpr size_t kMaxArena = 4096;           // then start over (begin fits 16 bits)
    Slot slots[kSlots];
    const TemplateRefs* refs[kSlots] = {};  // per slot: the compiled template (null: does not compile)
    size_t used = 0;
    std::vector<TemplateRefs::PackedSlot> arena;
    int naming = -1;  // the RefNaming the arena holds
    uint64_t text_lookups = 0;  // statements found by text (under SqlRefs' lock)

    // Issues prefetches for the index and the arena (no effect on results).
    void Prefetch() const;
    void Clear();
  };

  explicit SqlRefs(std::shared_ptr<RefExtractor> extractor) : ex_(std::move(extractor)) {}

  // Appends the references of `bound` to *ids (and their statement counts to
  // *mult, which may be null). Returns how many statements failed to extract
  // (templates with syntax errors); the others still contribute.
  int Extract(const workloads::BoundSql& bound, ExtractionPolicy policy, Local* local, RefVec* ids,
              RefMult* mult);

  RefExtractor& extractor() { return *ex_; }

 private:
  // The compiled form of a template; null when it does not compile.
  const TemplateRefs* Get(absl::string_view tmpl);

  std::shared_ptr<RefExtractor> ex_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const TemplateRefs>, std::less<>> by_text_;
};

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_SQL_REFS_H_
