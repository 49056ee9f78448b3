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
  // Per generating thread: a direct-mapped index by template address, and
  // the slots of the templates seen, packed contiguously (under one naming),
  // so a transaction's statements touch few cache lines.
  struct Local {
    struct Slot {
      const char* data = nullptr;
      const TemplateRefs* refs = nullptr;
      uint32_t size = 0;
      uint32_t begin = 0;  // packed slots arena[begin, begin + count)
      uint16_t count = 0;
      bool packed = false;
    };
    static constexpr size_t kSlots = 128;
    static constexpr size_t kMaxArena = 4096;  // then start over
    Slot slots[kSlots];
    std::vector<TemplateRefs::PackedSlot> arena;
    int naming = -1;  // the RefNaming the arena holds
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
