#include "bench/workloads/ycsb.h"

#include <utility>

#include "absl/strings/str_cat.h"

namespace corral {
namespace workloads {

using engine::ConstRow;
using engine::Row;
using engine::Tx;

namespace {
constexpr int kKeyCol = 0;       // then field0..field<n-1>, then counter
constexpr int kAuditSlots = engine::kMaxWorkers;

uint64_t Fnv1a64(uint64_t v) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (int i = 0; i < 8; ++i) {
    h ^= (v >> (8 * i)) & 0xff;
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string RandomValue(Rng& rng, int n) {
  std::string s(n, 'a');
  for (char& c : s) c = static_cast<char>('a' + rng.Uniform(0, 25));
  return s;
}
}  // namespace

namespace ycsb_sql {
const char* const kRead = "SELECT * FROM usertable WHERE ycsb_key = $1";
const char* const kReadForUpdate = "SELECT * FROM usertable WHERE ycsb_key = $1 FOR UPDATE";
std::string Update(int field) {
  return absl::StrCat("UPDATE usertable SET field", field,
                      " = $1, counter = counter + 1 WHERE ycsb_key = $2");
}
}  // namespace ycsb_sql

namespace {
// ycsb_sql::Update(f) for the first fields, built once: static text.
const char* UpdateStatic(int field) {
  constexpr int kFields = 32;
  static const std::vector<std::string>* const kTexts = [] {
    auto* v = new std::vector<std::string>;
    for (int f = 0; f < kFields; ++f) v->push_back(ycsb_sql::Update(f));
    return v;
  }();
  return field >= 0 && field < kFields ? (*kTexts)[field].c_str() : nullptr;
}
}  // namespace

void YcsbTxn::AppendBound(BoundSql* out) const {
  for (const YcsbOp& op : ops) {
    if (!op.rmw) {
      out->Add(ycsb_sql::kRead).Int(op.key);
    } else {
      out->Add(ycsb_sql::kReadForUpdate).Int(op.key);
      if (const char* t = UpdateStatic(op.field)) {
        out->Add(t);
      } else {
        out->AddOwned(ycsb_sql::Update(op.field));
      }
      out->Str(op.value).Int(op.key);
    }
  }
}

bool YcsbTxn::DeclareOwnAccesses(engine::AccessSet& set) const {
  bool rmw = false;
  for (const YcsbOp& op : ops) {
    set.Add(t_->usertable, op.key, op.rmw);
    rmw |= op.rmw;
  }
  if (rmw) set.Write(t_->audit, set.worker_id());
  return true;
}

absl::Status YcsbTxn::Run(Tx& tx) {
  int64_t rmw = 0;
  for (const YcsbOp& op : ops) {
    if (!op.rmw) {
      ConstRow r;
      ENGINE_RETURN_IF_ERROR(tx.Read(t_->usertable, op.key, &r));
    } else {
      Row r;
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->usertable, op.key, &r));
      r.SetString(1 + op.field, op.value);
      const int counter_col = static_cast<int>(r.schema().num_columns()) - 1;
      r.AddInt(counter_col, 1);
      ++rmw;
    }
  }
  if (rmw > 0) {
    Row a;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->audit, tx.worker_id(), &a));
    a.AddInt(1, rmw);
  }
  return absl::OkStatus();
}

YcsbWorkload::YcsbWorkload(YcsbParams params)
    : p_(std::move(params)), zipf_(static_cast<uint64_t>(p_.records), p_.theta) {}

const std::vector<std::string>& YcsbWorkload::TxnTypeNames() const {
  static const auto* names = new std::vector<std::string>{"Txn"};
  return *names;
}

void YcsbWorkload::OnPhases() {
  phase_zipf_.clear();
  for (const SkewPhase& ph : phases()) {
    phase_zipf_.push_back(
        ph.zipf_theta >= 0 ? std::make_unique<Zipf>(p_.records, ph.zipf_theta) : nullptr);
  }
}

int64_t YcsbWorkload::RandomKey(Rng& rng) const {
  const Zipf* z = &zipf_;
  const int ph = phase();
  if (ph >= 0 && phase_zipf_[ph] != nullptr) z = phase_zipf_[ph].get();
  uint64_t rank = z->Draw(rng);
  if (ph >= 0) {
    rank = static_cast<uint64_t>(ShiftKey(static_cast<int64_t>(rank) + 1, phases()[ph].hot_offset, p_.records) - 1);
  }
  if (p_.scrambled) rank = Fnv1a64(rank) % static_cast<uint64_t>(p_.records);
  return static_cast<int64_t>(rank);
}

int64_t YcsbWorkload::PartitionOf(int64_t key) const {
  const int64_t range = (p_.records + p_.partitions - 1) / p_.partitions;
  return key / (range < 1 ? 1 : range);
}

std::unique_ptr<WorkloadTxn> YcsbWorkload::Next(Rng& rng) const {
  auto t = std::make_unique<YcsbTxn>(&t_);
  const int n = static_cast<int>(std::min<int64_t>(p_.ops_per_txn, p_.records));
  t->ops.resize(n);
  // Deneva's per-transaction mix: which positions are read-modify-writes.
  std::vector<bool> rmw_at;
  if (p_.update_txn_fraction >= 0) {
    rmw_at.assign(n, false);
    if (rng.Chance(p_.update_txn_fraction)) {
      for (int i = 0; i < n / 2; ++i) rmw_at[i] = true;
      for (int i = n - 1; i > 0; --i) {  // Fisher-Yates: random positions
        const int j = static_cast<int>(rng.Uniform(0, i));
        const bool tmp = rmw_at[i];
        rmw_at[i] = rmw_at[j];
        rmw_at[j] = tmp;
      }
    }
  }
  for (int i = 0; i < n; ++i) {
    YcsbOp& op = t->ops[i];
    bool dup;
    do {
      if (p_.hot_records > 0) {
        op.key = i < p_.hot_ops ? rng.Uniform(0, p_.hot_records - 1)
                                : rng.Uniform(p_.hot_records, p_.records - 1);
      } else {
        op.key = RandomKey(rng);
      }
      dup = false;
      for (int j = 0; j < i; ++j) dup |= t->ops[j].key == op.key;
    } while (dup);
    op.rmw = p_.hot_records > 0 || (rmw_at.empty() ? !rng.Chance(p_.read_fraction) : rmw_at[i]);
    if (op.rmw) {
      op.field = static_cast<int>(rng.Uniform(0, p_.fields - 1));
      op.value = RandomValue(rng, p_.field_size);
    }
  }
  t->type = TxnTypeId(0);
  t->partition_key = static_cast<uint64_t>(PartitionOf(t->ops.empty() ? 0 : t->ops[0].key));
  return t;
}

absl::Status YcsbWorkload::Load(engine::Database* db) {
  if (p_.records < 1 || p_.fields < 1 || p_.field_size < 1 || p_.partitions < 1) {
    return absl::InvalidArgumentError("YCSB parameters out of range");
  }
  if (p_.hot_records < 0 || (p_.hot_records > 0 && (p_.hot_ops < 0 || p_.hot_ops > p_.hot_records ||
                                                     p_.ops_per_txn - p_.hot_ops >
                                                         p_.records - p_.hot_records))) {
    return absl::InvalidArgumentError(absl::StrCat("YCSB hot set: ", p_.hot_records,
                                                   " hot of ", p_.records, " records, ",
                                                   p_.hot_ops, " hot operations"));
  }
  engine::Schema s, audit;
  s.AddInt64("ycsb_key");
  for (int f = 0; f < p_.fields; ++f) s.AddString(absl::StrCat("field", f), p_.field_size);
  s.AddInt64("counter");
  audit.AddInt64("slot");
  audit.AddInt64("rmw_ops");
  engine::TableOptions o;
  o.expected_rows = static_cast<size_t>(p_.records);
  auto u = db->CreateTable("usertable", s, o);
  if (!u.ok()) return u.status();
  auto a = db->CreateTable("ycsb_audit", audit, {});
  if (!a.ok()) return a.status();
  t_ = {*u, *a};
  Rng rng(p_.load_seed);
  for (int64_t k = 0; k < p_.records; ++k) {
    ENGINE_RETURN_IF_ERROR(db->Load(t_.usertable, k, [&](const Row& r) {
      r.SetInt(kKeyCol, k);
      for (int f = 0; f < p_.fields; ++f) r.SetString(1 + f, RandomValue(rng, p_.field_size));
    }));
  }
  for (int slot = 0; slot < kAuditSlots; ++slot) {
    ENGINE_RETURN_IF_ERROR(db->Load(t_.audit, slot, [&](const Row& r) { r.SetInt(0, slot); }));
  }
  return absl::OkStatus();
}

absl::Status YcsbWorkload::ForEachRow(const engine::Database& db, const RowFn& fn) const {
  if (t_.usertable == nullptr) return absl::FailedPreconditionError("YCSB not loaded");
  for (int64_t k = 0; k < p_.records; ++k) {
    ConstRow r;
    if (db.Peek(t_.usertable, k, &r).ok()) ENGINE_RETURN_IF_ERROR(fn(*t_.usertable, r));
  }
  return absl::OkStatus();
}

absl::Status YcsbWorkload::Check(const engine::Database& db) const {
  if (t_.usertable == nullptr) return absl::FailedPreconditionError("YCSB not loaded");
  int64_t sum = 0;
  const int counter_col = 1 + p_.fields;
  for (int64_t k = 0; k < p_.records; ++k) {
    ConstRow r;
    ENGINE_RETURN_IF_ERROR(db.Peek(t_.usertable, k, &r));
    sum += r.GetInt(counter_col);
  }
  int64_t expected = 0;
  for (int slot = 0; slot < kAuditSlots; ++slot) {
    ConstRow r;
    ENGINE_RETURN_IF_ERROR(db.Peek(t_.audit, slot, &r));
    expected += r.GetInt(1);
  }
  if (sum != expected) {
    return absl::DataLossError(absl::StrCat("YCSB: sum(counter) = ", sum,
                                            " but committed read-modify-write operations = ",
                                            expected));
  }
  return absl::OkStatus();
}

}  // namespace workloads
}  // namespace corral
