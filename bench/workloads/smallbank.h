// SmallBank on the embedded engine, with its SQL form (schemas/smallbank.sql)
// and the paper's hot spot (Table 6: 90% of accesses to accounts 1..50).
//
//   SmallBankWorkload w(SmallBankParams{});    // or MakeWorkload("smallbank")
//   CHECK_OK(w.Load(db));
//   auto t = w.Next(rng);
//
// Transactions (type ids): 0 Amalgamate (4%), 1 Balance (24%), 2
// DepositChecking (24%), 3 TransactSavings (24%), 4 WriteCheck (24%), 5
// SendPayment (0% by default; set mix[5] to use it). Accounts are custid
// 1..accounts; an account is drawn from the hot range 1..hot_size with
// probability hot_fraction, else uniformly from the rest; the two accounts
// of Amalgamate / SendPayment differ. Partition key: the first account.
//
// Money is kept in whole units (balances, amounts and the WriteCheck penalty
// are integers held in doubles), so sums are exact. Amalgamate and
// SendPayment conserve the total; DepositChecking, TransactSavings and
// WriteCheck change it, and each of those adds its change, in the same
// transaction, to an engine-only audit row of its worker slot (table
// smallbank_audit: one row per slot 0..62, plus row 63 = the loaded total;
// the row is private to the slot, so it adds no conflicts). Check():
// sum(savings.bal) + sum(checking.bal) = loaded total + sum of the audit
// rows. The audit table is not part of the SQL form (on PostgreSQL the
// total is not audited).
//
// SQL parameters unknown at generation: Amalgamate's amount moved,
// WriteCheck's debit (it depends on the balances).
//
// Thread-safety: as Workload.
#ifndef CORRAL_BENCH_WORKLOADS_SMALLBANK_H_
#define CORRAL_BENCH_WORKLOADS_SMALLBANK_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/workloads/workload.h"

namespace corral {
namespace workloads {

struct SmallBankParams {
  int64_t accounts = 10000;
  double hot_fraction = 0.90;
  int64_t hot_size = 50;
  // Amalgamate, Balance, DepositChecking, TransactSavings, WriteCheck, SendPayment.
  std::vector<double> mix = {4, 24, 24, 24, 24, 0};
  int64_t min_balance = 10000, max_balance = 50000;  // initial, per account and kind
  int64_t max_amount = 100;                           // deposits, checks, payments: 1..max
  uint64_t load_seed = 1;
};

enum SmallBankType : int {
  kAmalgamate = 0, kBalance, kDepositChecking, kTransactSavings, kWriteCheck, kSendPayment
};

struct SmallBankTables {
  engine::Table *accounts = nullptr, *savings = nullptr, *checking = nullptr, *audit = nullptr;
};

namespace smallbank_sql {
extern const char* const kGetAccount;
extern const char* const kGetSavings;
extern const char* const kGetChecking;
extern const char* const kZeroSavings;
extern const char* const kZeroChecking;
extern const char* const kAddChecking;
extern const char* const kAddSavings;
extern const char* const kSubChecking;
}  // namespace smallbank_sql

class SmallBankTxn : public WorkloadTxn {
 public:
  SmallBankTxn(const SmallBankTables* t, SmallBankType type) : t_(t), sb_type_(type) {}
  absl::Status Run(engine::Tx& tx) override;
  // Complete from the parameters (planned protocols).
  bool DeclareOwnAccesses(engine::AccessSet& set) const override;
  void AppendBound(BoundSql* out) const override;
  SmallBankType sb_type() const { return sb_type_; }

  int64_t c1 = 0, c2 = 0;  // c2 for Amalgamate and SendPayment
  int64_t amount = 0;

 private:
  absl::Status Audit(engine::Tx& tx, double delta);
  const SmallBankTables* t_;
  SmallBankType sb_type_;
};

class SmallBankWorkload : public Workload {
 public:
  explicit SmallBankWorkload(SmallBankParams params);
  std::string name() const override { return "smallbank"; }
  std::string schema_file() const override { return "schemas/smallbank.sql"; }
  absl::Status Load(engine::Database* db) override;
  std::unique_ptr<WorkloadTxn> Next(Rng& rng) const override;
  const std::vector<std::string>& TxnTypeNames() const override;
  absl::Status Check(const engine::Database& db) const override;
  absl::Status ForEachRow(const engine::Database& db, const RowFn& fn) const override;

  const SmallBankParams& params() const { return p_; }
  const SmallBankTables& tables() const { return t_; }
  std::unique_ptr<SmallBankTxn> Make(Rng& rng, SmallBankType type) const;
  int64_t RandomAccount(Rng& rng) const;
  static std::string AccountName(int64_t custid);

 protected:
  void OnPhases() override;

 private:
  SmallBankParams p_;
  std::vector<double> cum_mix_;
  SmallBankTables t_;
  HotSpotKeys keys_;  // after p_: built from it
};

}  // namespace workloads
}  // namespace corral

#endif  // CORRAL_BENCH_WORKLOADS_SMALLBANK_H_
