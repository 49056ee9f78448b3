// SqlRefs: a generated transaction's SQL statements -> its references, the
// way the runner's generating threads extract them (and what
// bench/extract:extract_bench times).
//
// A workload's constant templates (SqlStatement::static_tmpl) are prepared
// once per run (RefExtractor::Prepare, shared by all threads) and found
// again by their address in a small per-thread direct-mapped index, so a
// statement costs only its parameter values (RefExtractor::ExtractPrepared);
// other statements go through RefExtractor::Extract.
//
//   SqlRefs refs(extractor);
//   SqlRefs::Local local;                       // one per generating thread
//   int errors = refs.Extract(sql, policy, &local, &txn->refs, &txn->ref_mult);
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

namespace corral {
namespace bench {

class SqlRefs {
 public:
  // Per generating thread.
  struct Local {
    struct Slot {
      const char* data = nullptr;
      size_t size = 0;
      const RefExtractor::Prepared* prepared = nullptr;
    };
    static constexpr size_t kSlots = 128;
    Slot slots[kSlots];
    std::vector<ParamValue> params;
  };

  explicit SqlRefs(std::shared_ptr<RefExtractor> extractor) : ex_(std::move(extractor)) {}

  // Appends the references of `sql` to *ids (and their statement counts to
  // *mult, which may be null). Returns how many statements failed to extract
  // (syntax errors); the others still contribute.
  int Extract(const std::vector<workloads::SqlStatement>& sql, ExtractionPolicy policy, Local* local,
              RefVec* ids, RefMult* mult);

  RefExtractor& extractor() { return *ex_; }

 private:
  // The prepared form of a static template; null when it does not prepare.
  const RefExtractor::Prepared* Get(absl::string_view tmpl);

  std::shared_ptr<RefExtractor> ex_;
  std::mutex mu_;
  std::map<std::string, std::shared_ptr<const RefExtractor::Prepared>, std::less<>> by_text_;
};

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_SQL_REFS_H_
