#include "bench/runner/tiny_workload_testing.h"

#include "absl/strings/str_cat.h"

namespace corral {
namespace bench {
namespace {

class TransferTxn : public workloads::WorkloadTxn {
 public:
  TransferTxn(engine::Table* t, int col, int from, int to, bool fail)
      : table_(t), col_(col), from_(from), to_(to), fail_(fail) {}
  absl::Status Run(engine::Tx& tx) override {
    engine::Row a, b;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(table_, from_, &a));
    a.AddInt(col_, -1);
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(table_, to_, &b));
    b.AddInt(col_, 1);
    if (fail_) return engine::UserAbortError("bad transfer");
    return absl::OkStatus();
  }
  void AppendBound(workloads::BoundSql* out) const override {
    out->Add("UPDATE account SET balance = balance - 1 WHERE a_id = $1").Int(from_);
    out->Add("UPDATE account SET balance = balance + 1 WHERE a_id = $1").Int(to_);
  }

 private:
  engine::Table* table_;
  int col_, from_, to_;
  bool fail_;
};

}  // namespace

absl::Status TinyWorkload::Load(engine::Database* db) {
  engine::Schema s;
  balance_col_ = s.AddInt64("balance");
  auto t = db->CreateTable("account", s, {});
  if (!t.ok()) return t.status();
  table_ = *t;
  for (int k = 0; k < accounts_; ++k) {
    absl::Status st = db->Load(table_, k, [&](const engine::Row& r) { r.SetInt(balance_col_, kInitial); });
    if (!st.ok()) return st;
  }
  return absl::OkStatus();
}

std::unique_ptr<workloads::WorkloadTxn> TinyWorkload::Next(workloads::Rng& rng) const {
  int from = static_cast<int>(rng.Uniform(0, hot_ - 1));
  int to = static_cast<int>(rng.Uniform(0, accounts_ - 1));
  if (to == from) to = (to + 1) % accounts_;
  bool fail = rng.Chance(user_abort_prob_);
  auto t = std::make_unique<TransferTxn>(table_, balance_col_, from, to, fail);
  t->type = TxnTypeId(fail ? 1 : 0);
  t->partition_key = static_cast<uint64_t>(from);
  return t;
}

absl::Status TinyWorkload::Check(const engine::Database& db) const {
  int64_t sum = 0;
  for (int k = 0; k < accounts_; ++k) {
    engine::ConstRow r;
    absl::Status st = db.Peek(table_, k, &r);
    if (!st.ok()) return st;
    sum += r.GetInt(balance_col_);
  }
  if (sum != kInitial * accounts_) {
    return absl::FailedPreconditionError(absl::StrCat("balances sum to ", sum, ", want ", kInitial * accounts_));
  }
  return absl::OkStatus();
}

}  // namespace bench
}  // namespace corral
