// A tiny workload for the runner's tests: N accounts with integer balances;
// "transfer" moves 1 between two accounts (the first from a small hot range,
// so transactions conflict), "bad_transfer" rolls back on purpose (a user
// abort). Check(): the balances sum to N * initial. SQL form against
// bench/runner/testdata/tiny.sql.
//
//   TinyWorkload w(/*accounts=*/64, /*hot=*/4);
//   CHECK_OK(w.Load(db.get()));
//
// Thread-safety: as workloads::Workload.
#ifndef CORRAL_BENCH_RUNNER_TINY_WORKLOAD_TESTING_H_
#define CORRAL_BENCH_RUNNER_TINY_WORKLOAD_TESTING_H_

#include <memory>
#include <string>
#include <vector>

#include "bench/workloads/workload.h"
#include "engine/engine.h"

namespace corral {
namespace bench {

class TinyWorkload : public workloads::Workload {
 public:
  TinyWorkload(int accounts, int hot, double user_abort_prob = 0.02)
      : accounts_(accounts), hot_(hot), user_abort_prob_(user_abort_prob) {}
  std::string name() const override { return "tiny"; }
  std::string schema_file() const override { return "bench/runner/testdata/tiny.sql"; }
  absl::Status Load(engine::Database* db) override;
  std::unique_ptr<workloads::WorkloadTxn> Next(workloads::Rng& rng) const override;
  const std::vector<std::string>& TxnTypeNames() const override { return names_; }
  absl::Status Check(const engine::Database& db) const override;

  static constexpr int64_t kInitial = 1000;

 private:
  const int accounts_, hot_;
  const double user_abort_prob_;
  engine::Table* table_ = nullptr;
  int balance_col_ = 0;
  const std::vector<std::string> names_ = {"transfer", "bad_transfer"};
};

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_RUNNER_TINY_WORKLOAD_TESTING_H_
