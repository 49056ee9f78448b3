#include "bench/workloads/smallbank.h"

#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace corral {
namespace workloads {

using engine::ConstRow;
using engine::Row;
using engine::Tx;

namespace {
enum AcctCol { A_CUSTID, A_NAME };
enum BalCol { B_CUSTID, B_BAL };
constexpr int kAuditTotalRow = engine::kMaxWorkers;  // 63: the loaded total

BoundValue I(int64_t v) { return BoundValue::Int(v); }
}  // namespace

namespace smallbank_sql {
const char* const kGetAccount = "SELECT custid, name FROM accounts WHERE custid = $1";
const char* const kGetSavings = "SELECT bal FROM savings WHERE custid = $1";
const char* const kGetChecking = "SELECT bal FROM checking WHERE custid = $1";
const char* const kZeroSavings = "UPDATE savings SET bal = 0 WHERE custid = $1";
const char* const kZeroChecking = "UPDATE checking SET bal = 0 WHERE custid = $1";
const char* const kAddChecking = "UPDATE checking SET bal = bal + $1 WHERE custid = $2";
const char* const kAddSavings = "UPDATE savings SET bal = bal + $1 WHERE custid = $2";
const char* const kSubChecking = "UPDATE checking SET bal = bal - $1 WHERE custid = $2";
}  // namespace smallbank_sql

void SmallBankTxn::AppendBound(BoundSql* out) const {
  using namespace smallbank_sql;  // NOLINT
  auto add = [out](const char* t, std::initializer_list<BoundValue> p) {
    out->Add(t);
    for (const BoundValue& v : p) out->Value(v);
  };
  switch (sb_type_) {
    case kAmalgamate:
      add(kGetAccount, {I(c1)});
      add(kGetAccount, {I(c2)});
      add(kGetSavings, {I(c1)});
      add(kGetChecking, {I(c1)});
      add(kZeroSavings, {I(c1)});
      add(kZeroChecking, {I(c1)});
      add(kAddChecking, {BoundValue::Null(), I(c2)});
      break;
    case kBalance:
      add(kGetAccount, {I(c1)});
      add(kGetSavings, {I(c1)});
      add(kGetChecking, {I(c1)});
      break;
    case kDepositChecking:
      add(kGetAccount, {I(c1)});
      add(kAddChecking, {I(amount), I(c1)});
      break;
    case kTransactSavings:
      add(kGetAccount, {I(c1)});
      add(kGetSavings, {I(c1)});
      add(kAddSavings, {I(amount), I(c1)});
      break;
    case kWriteCheck:
      add(kGetAccount, {I(c1)});
      add(kGetSavings, {I(c1)});
      add(kGetChecking, {I(c1)});
      add(kSubChecking, {BoundValue::Null(), I(c1)});
      break;
    case kSendPayment:
      add(kGetAccount, {I(c1)});
      add(kGetAccount, {I(c2)});
      add(kGetChecking, {I(c1)});
      add(kSubChecking, {I(amount), I(c1)});
      add(kAddChecking, {I(amount), I(c2)});
      break;
  }
}

absl::Status SmallBankTxn::Audit(Tx& tx, double delta) {
  Row a;
  ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->audit, tx.worker_id(), &a));
  a.AddDouble(B_BAL, delta);
  return absl::OkStatus();
}

bool SmallBankTxn::DeclareOwnAccesses(engine::AccessSet& set) const {
  set.Read(t_->accounts, c1);
  switch (sb_type_) {
    case kAmalgamate:
      set.Read(t_->accounts, c2);
      set.Write(t_->savings, c1);
      set.Write(t_->checking, c1);
      set.Write(t_->checking, c2);
      break;
    case kBalance:
      set.Read(t_->savings, c1);
      set.Read(t_->checking, c1);
      break;
    case kDepositChecking:
      set.Write(t_->checking, c1);
      set.Write(t_->audit, set.worker_id());
      break;
    case kTransactSavings:
      set.Write(t_->savings, c1);
      set.Write(t_->audit, set.worker_id());
      break;
    case kWriteCheck:
      set.Read(t_->savings, c1);
      set.Write(t_->checking, c1);
      set.Write(t_->audit, set.worker_id());
      break;
    case kSendPayment:
      set.Read(t_->accounts, c2);
      set.Write(t_->checking, c1);
      set.Write(t_->checking, c2);
      break;
  }
  return true;
}

absl::Status SmallBankTxn::Run(Tx& tx) {
  ConstRow acct;
  ENGINE_RETURN_IF_ERROR(tx.Read(t_->accounts, c1, &acct));
  switch (sb_type_) {
    case kAmalgamate: {
      ENGINE_RETURN_IF_ERROR(tx.Read(t_->accounts, c2, &acct));
      Row s1, k1, k2;
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->savings, c1, &s1));
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->checking, c1, &k1));
      const double total = s1.GetDouble(B_BAL) + k1.GetDouble(B_BAL);
      s1.SetDouble(B_BAL, 0);
      k1.SetDouble(B_BAL, 0);
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->checking, c2, &k2));
      k2.AddDouble(B_BAL, total);
      return absl::OkStatus();
    }
    case kBalance: {
      ConstRow s, k;
      ENGINE_RETURN_IF_ERROR(tx.Read(t_->savings, c1, &s));
      ENGINE_RETURN_IF_ERROR(tx.Read(t_->checking, c1, &k));
      (void)(s.GetDouble(B_BAL) + k.GetDouble(B_BAL));
      return absl::OkStatus();
    }
    case kDepositChecking: {
      Row k;
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->checking, c1, &k));
      k.AddDouble(B_BAL, static_cast<double>(amount));
      return Audit(tx, static_cast<double>(amount));
    }
    case kTransactSavings: {
      Row s;
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->savings, c1, &s));
      if (s.GetDouble(B_BAL) + amount < 0) {
        return engine::UserAbortError("TransactSavings: insufficient savings");
      }
      s.AddDouble(B_BAL, static_cast<double>(amount));
      return Audit(tx, static_cast<double>(amount));
    }
    case kWriteCheck: {
      ConstRow s;
      Row k;
      ENGINE_RETURN_IF_ERROR(tx.Read(t_->savings, c1, &s));
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->checking, c1, &k));
      const double total = s.GetDouble(B_BAL) + k.GetDouble(B_BAL);
      const double debit = total < amount ? amount + 1 : amount;  // overdraft penalty 1
      k.AddDouble(B_BAL, -debit);
      return Audit(tx, -debit);
    }
    case kSendPayment: {
      ENGINE_RETURN_IF_ERROR(tx.Read(t_->accounts, c2, &acct));
      Row k1, k2;
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->checking, c1, &k1));
      if (k1.GetDouble(B_BAL) < amount) {
        return engine::UserAbortError("SendPayment: insufficient funds");
      }
      // Done with c1 before c2 (qstore's speculative execution hands c1's
      // row to the next transaction once the program moves on).
      k1.AddDouble(B_BAL, -static_cast<double>(amount));
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->checking, c2, &k2));
      k2.AddDouble(B_BAL, static_cast<double>(amount));
      return absl::OkStatus();
    }
  }
  return absl::InternalError("unknown SmallBank type");
}

SmallBankWorkload::SmallBankWorkload(SmallBankParams params)
    : p_(std::move(params)), keys_(p_.accounts, p_.hot_fraction, p_.hot_size) {
  double sum = 0;
  for (size_t i = 0; i < 6; ++i) {
    sum += i < p_.mix.size() ? p_.mix[i] : 0;
    cum_mix_.push_back(sum);
  }
}

const std::vector<std::string>& SmallBankWorkload::TxnTypeNames() const {
  static const auto* names =
      new std::vector<std::string>{"Amalgamate",      "Balance",    "DepositChecking",
                                   "TransactSavings", "WriteCheck", "SendPayment"};
  return *names;
}

std::string SmallBankWorkload::AccountName(int64_t custid) {
  return absl::StrFormat("cust%010d", custid);
}

void SmallBankWorkload::OnPhases() { keys_.SetPhases(phases()); }

int64_t SmallBankWorkload::RandomAccount(Rng& rng) const { return keys_.Draw(rng, phase()); }

std::unique_ptr<SmallBankTxn> SmallBankWorkload::Make(Rng& rng, SmallBankType type) const {
  auto t = std::make_unique<SmallBankTxn>(&t_, type);
  t->c1 = RandomAccount(rng);
  if (type == kAmalgamate || type == kSendPayment) {
    do {
      t->c2 = RandomAccount(rng);
    } while (t->c2 == t->c1 && p_.accounts > 1);
  }
  if (type == kTransactSavings) {
    t->amount = rng.Uniform(-p_.max_amount, p_.max_amount);
  } else if (type != kAmalgamate && type != kBalance) {
    t->amount = rng.Uniform(1, p_.max_amount);
  }
  t->type = TxnTypeId(type);
  t->partition_key = static_cast<uint64_t>(t->c1);
  return t;
}

std::unique_ptr<WorkloadTxn> SmallBankWorkload::Next(Rng& rng) const {
  const double x = rng.Double() * cum_mix_.back();
  int k = 0;
  while (k < 5 && x >= cum_mix_[k]) ++k;
  return Make(rng, static_cast<SmallBankType>(k));
}

absl::Status SmallBankWorkload::Load(engine::Database* db) {
  if (p_.accounts < 2) return absl::InvalidArgumentError("SmallBank needs at least 2 accounts");
  engine::Schema acct, bal, audit;
  acct.AddInt64("custid");
  acct.AddString("name", 64);
  bal.AddInt64("custid");
  bal.AddDouble("bal");
  audit.AddInt64("slot");
  audit.AddDouble("delta");
  engine::TableOptions opt;
  opt.expected_rows = static_cast<size_t>(p_.accounts);
  auto a = db->CreateTable("accounts", acct, opt);
  if (!a.ok()) return a.status();
  auto s = db->CreateTable("savings", bal, opt);
  if (!s.ok()) return s.status();
  auto c = db->CreateTable("checking", bal, opt);
  if (!c.ok()) return c.status();
  auto au = db->CreateTable("smallbank_audit", audit, {});
  if (!au.ok()) return au.status();
  t_ = {*a, *s, *c, *au};
  Rng rng(p_.load_seed);
  double total = 0;
  for (int64_t id = 1; id <= p_.accounts; ++id) {
    ENGINE_RETURN_IF_ERROR(db->Load(t_.accounts, id, [&](const Row& r) {
      r.SetInt(A_CUSTID, id);
      r.SetString(A_NAME, AccountName(id));
    }));
    for (engine::Table* t : {t_.savings, t_.checking}) {
      const double b = static_cast<double>(rng.Uniform(p_.min_balance, p_.max_balance));
      total += b;
      ENGINE_RETURN_IF_ERROR(db->Load(t, id, [&](const Row& r) {
        r.SetInt(B_CUSTID, id);
        r.SetDouble(B_BAL, b);
      }));
    }
  }
  for (int slot = 0; slot <= kAuditTotalRow; ++slot) {
    ENGINE_RETURN_IF_ERROR(db->Load(t_.audit, slot, [&](const Row& r) {
      r.SetInt(0, slot);
      r.SetDouble(1, slot == kAuditTotalRow ? total : 0.0);
    }));
  }
  return absl::OkStatus();
}

absl::Status SmallBankWorkload::ForEachRow(const engine::Database& db, const RowFn& fn) const {
  if (t_.accounts == nullptr) return absl::FailedPreconditionError("SmallBank not loaded");
  for (const engine::Table* t : {t_.accounts, t_.savings, t_.checking}) {
    for (int64_t id = 1; id <= p_.accounts; ++id) {
      ConstRow r;
      if (db.Peek(t, id, &r).ok()) ENGINE_RETURN_IF_ERROR(fn(*t, r));
    }
  }
  return absl::OkStatus();
}

absl::Status SmallBankWorkload::Check(const engine::Database& db) const {
  if (t_.accounts == nullptr) return absl::FailedPreconditionError("SmallBank not loaded");
  double total = 0;
  for (int64_t id = 1; id <= p_.accounts; ++id) {
    ConstRow a, s, c;
    ENGINE_RETURN_IF_ERROR(db.Peek(t_.accounts, id, &a));
    ENGINE_RETURN_IF_ERROR(db.Peek(t_.savings, id, &s));
    ENGINE_RETURN_IF_ERROR(db.Peek(t_.checking, id, &c));
    total += s.GetDouble(B_BAL) + c.GetDouble(B_BAL);
  }
  double expected = 0;
  for (int slot = 0; slot <= kAuditTotalRow; ++slot) {
    ConstRow r;
    ENGINE_RETURN_IF_ERROR(db.Peek(t_.audit, slot, &r));
    expected += r.GetDouble(1);
  }
  if (total != expected) {
    return absl::DataLossError(absl::StrCat(
        "SmallBank money conservation violated: sum(savings.bal) + sum(checking.bal) = ", total,
        " but loaded total + audited deposits/withdrawals = ", expected));
  }
  return absl::OkStatus();
}

}  // namespace workloads
}  // namespace corral
