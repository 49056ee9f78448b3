#include "bench/workloads/tatp.h"

#include <algorithm>
#include <utility>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace corral {
namespace workloads {

using engine::ConstRow;
using engine::KeyPacker;
using engine::Row;
using engine::Tx;

namespace {
// subscriber: s_id, sub_nbr, bit_1..10, hex_1..10, byte2_1..10, msc_location, vlr_location
enum SubCol { SUB_S_ID, SUB_NBR, SUB_BIT_1, SUB_HEX_1 = SUB_BIT_1 + 10,
              SUB_BYTE2_1 = SUB_HEX_1 + 10, SUB_MSC = SUB_BYTE2_1 + 10, SUB_VLR };
enum AiCol { AI_S_ID, AI_TYPE, AI_DATA1, AI_DATA2, AI_DATA3, AI_DATA4 };
enum SfCol { SF_S_ID, SF_TYPE, SF_IS_ACTIVE, SF_ERROR_CNTRL, SF_DATA_A, SF_DATA_B };
enum CfCol { CF_S_ID, CF_SF_TYPE, CF_START, CF_END, CF_NUMBERX };
enum AuditCol { AU_SLOT, AU_INSERTS, AU_DELETES };
constexpr int kAuditTotalRow = engine::kMaxWorkers;  // 63: loaded call_forwarding rows

BoundValue I(int64_t v) { return BoundValue::Int(v); }

std::string RandomDigits(Rng& rng, int n) {
  std::string s(n, '0');
  for (char& c : s) c = static_cast<char>('0' + rng.Uniform(0, 9));
  return s;
}
std::string RandomUpper(Rng& rng, int n) {
  std::string s(n, 'A');
  for (char& c : s) c = static_cast<char>('A' + rng.Uniform(0, 25));
  return s;
}
// k distinct values of 1..4 (k in 1..4), ascending.
std::vector<int> DistinctTypes(Rng& rng, int k) {
  std::vector<int> v = {1, 2, 3, 4};
  for (int i = 3; i > 0; --i) std::swap(v[i], v[rng.Uniform(0, i)]);
  v.resize(k);
  std::sort(v.begin(), v.end());
  return v;
}
}  // namespace

uint64_t TatpSfKey(int64_t s_id, int sf_type) {
  return KeyPacker().Add(s_id, 40).Add(sf_type, 8).key();
}
uint64_t TatpAiKey(int64_t s_id, int ai_type) {
  return KeyPacker().Add(s_id, 40).Add(ai_type, 8).key();
}
uint64_t TatpCfKey(int64_t s_id, int sf_type, int start_time) {
  return KeyPacker().Add(s_id, 40).Add(sf_type, 8).Add(start_time, 8).key();
}
std::string TatpSubNbr(int64_t s_id) { return absl::StrFormat("%015d", s_id); }

namespace tatp_sql {
const char* const kGetSubscriber = "SELECT * FROM subscriber WHERE s_id = $1";
const char* const kGetNewDestination =
    "SELECT cf.numberx FROM special_facility AS sf, call_forwarding AS cf WHERE sf.s_id = $1 "
    "AND sf.sf_type = $2 AND sf.is_active = 1 AND cf.s_id = sf.s_id AND cf.sf_type = "
    "sf.sf_type AND cf.start_time <= $3 AND cf.end_time > $4";
const char* const kGetAccessData =
    "SELECT data1, data2, data3, data4 FROM access_info WHERE s_id = $1 AND ai_type = $2";
const char* const kUpdateSubscriberBit = "UPDATE subscriber SET bit_1 = $1 WHERE s_id = $2";
const char* const kUpdateSpecialFacility =
    "UPDATE special_facility SET data_a = $1 WHERE s_id = $2 AND sf_type = $3";
const char* const kGetSubscriberId = "SELECT s_id FROM subscriber WHERE sub_nbr = $1";
const char* const kUpdateLocation = "UPDATE subscriber SET vlr_location = $1 WHERE s_id = $2";
const char* const kGetSpecialFacilityTypes =
    "SELECT sf_type FROM special_facility WHERE s_id = $1";
const char* const kInsertCallForwarding =
    "INSERT INTO call_forwarding (s_id, sf_type, start_time, end_time, numberx) VALUES ($1, "
    "$2, $3, $4, $5) ON CONFLICT DO NOTHING";
const char* const kDeleteCallForwarding =
    "DELETE FROM call_forwarding WHERE s_id = $1 AND sf_type = $2 AND start_time = $3";
}  // namespace tatp_sql

void TatpTxn::AppendBound(BoundSql* out) const {
  namespace q = tatp_sql;
  auto add = [out](const char* t, std::initializer_list<BoundValue> p) {
    out->Add(t);
    for (const BoundValue& v : p) out->Value(v);
  };
  switch (tatp_type_) {
    case kGetSubscriberData:
      add(q::kGetSubscriber, {I(s_id)});
      break;
    case kGetNewDestination:
      add(q::kGetNewDestination, {I(s_id), I(sf_type), I(start_time), I(end_time)});
      break;
    case kGetAccessData:
      add(q::kGetAccessData, {I(s_id), I(ai_type)});
      break;
    case kUpdateSubscriberData:
      add(q::kUpdateSubscriberBit, {I(bit_1), I(s_id)});
      add(q::kUpdateSpecialFacility, {I(data_a), I(s_id), I(sf_type)});
      break;
    case kUpdateLocation:
      add(q::kGetSubscriberId, {BoundValue::Text(sub_nbr)});
      add(q::kUpdateLocation, {I(vlr_location), I(s_id)});
      break;
    case kInsertCallForwarding:
      add(q::kGetSubscriberId, {BoundValue::Text(sub_nbr)});
      add(q::kGetSpecialFacilityTypes, {I(s_id)});
      add(q::kInsertCallForwarding,
          {I(s_id), I(sf_type), I(start_time), I(end_time), BoundValue::Text(numberx)});
      break;
    case kDeleteCallForwarding:
      add(q::kGetSubscriberId, {BoundValue::Text(sub_nbr)});
      add(q::kDeleteCallForwarding, {I(s_id), I(sf_type), I(start_time)});
      break;
  }
}

absl::Status TatpTxn::SubscriberByNbr(Tx& tx, int64_t* s_id_out) {
  int64_t id = 0;
  if (!absl::SimpleAtoi(sub_nbr, &id)) return engine::UserAbortError("bad sub_nbr");
  ConstRow s;
  absl::Status st = tx.Read(t_->subscriber, static_cast<uint64_t>(id), &s);
  if (absl::IsNotFound(st)) return engine::UserAbortError("no subscriber with this sub_nbr");
  ENGINE_RETURN_IF_ERROR(st);
  if (s.GetString(SUB_NBR) != sub_nbr) return engine::UserAbortError("sub_nbr mismatch");
  *s_id_out = id;
  return absl::OkStatus();
}

absl::Status TatpTxn::Audit(Tx& tx, int col) {
  Row a;
  ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->audit, tx.worker_id(), &a));
  a.AddInt(col, 1);
  return absl::OkStatus();
}

bool TatpTxn::DeclareOwnAccesses(engine::AccessSet& set) const {
  int64_t id = 0;
  const bool by_nbr = tatp_type_ == kUpdateLocation || tatp_type_ == kInsertCallForwarding ||
                      tatp_type_ == kDeleteCallForwarding;
  // The subscriber a sub_nbr names is its number (SubscriberByNbr); a
  // malformed one touches nothing.
  if (by_nbr && !absl::SimpleAtoi(sub_nbr, &id)) return true;
  const uint64_t s = by_nbr ? static_cast<uint64_t>(id) : static_cast<uint64_t>(s_id);
  switch (tatp_type_) {
    case kGetSubscriberData:
      set.Read(t_->subscriber, s);
      break;
    case kGetNewDestination:
      set.Read(t_->special_facility, TatpSfKey(s, sf_type));
      for (int t : {0, 8, 16}) {
        if (t > start_time) break;
        set.Read(t_->call_forwarding, TatpCfKey(s, sf_type, t));
      }
      break;
    case kGetAccessData:
      set.Read(t_->access_info, TatpAiKey(s, ai_type));
      break;
    case kUpdateSubscriberData:
      set.Write(t_->subscriber, s);
      set.Write(t_->special_facility, TatpSfKey(s, sf_type));
      break;
    case kUpdateLocation:
      set.Write(t_->subscriber, s);
      break;
    case kInsertCallForwarding:
      set.Read(t_->subscriber, s);
      set.Read(t_->special_facility, TatpSfKey(s, sf_type));
      set.Write(t_->call_forwarding, TatpCfKey(s, sf_type, start_time));
      set.Write(t_->audit, set.worker_id());
      break;
    case kDeleteCallForwarding:
      set.Read(t_->subscriber, s);
      set.Write(t_->call_forwarding, TatpCfKey(s, sf_type, start_time));
      set.Write(t_->audit, set.worker_id());
      break;
  }
  return true;
}

absl::Status TatpTxn::Run(Tx& tx) {
  switch (tatp_type_) {
    case kGetSubscriberData: {
      ConstRow s;
      return tx.Read(t_->subscriber, s_id, &s);
    }
    case kGetNewDestination: {
      ConstRow sf;
      absl::Status st = tx.Read(t_->special_facility, TatpSfKey(s_id, sf_type), &sf);
      if (absl::IsNotFound(st)) return absl::OkStatus();
      ENGINE_RETURN_IF_ERROR(st);
      if (sf.GetInt(SF_IS_ACTIVE) != 1) return absl::OkStatus();
      for (int t : {0, 8, 16}) {
        if (t > start_time) break;
        ConstRow cf;
        st = tx.Read(t_->call_forwarding, TatpCfKey(s_id, sf_type, t), &cf);
        if (absl::IsNotFound(st)) continue;
        ENGINE_RETURN_IF_ERROR(st);
        if (cf.GetInt(CF_END) > end_time) (void)cf.GetString(CF_NUMBERX);
      }
      return absl::OkStatus();
    }
    case kGetAccessData: {
      ConstRow ai;
      absl::Status st = tx.Read(t_->access_info, TatpAiKey(s_id, ai_type), &ai);
      return absl::IsNotFound(st) ? absl::OkStatus() : st;
    }
    case kUpdateSubscriberData: {
      Row s, sf;
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->subscriber, s_id, &s));
      s.SetInt(SUB_BIT_1, bit_1);
      absl::Status st = tx.ReadForUpdate(t_->special_facility, TatpSfKey(s_id, sf_type), &sf);
      if (absl::IsNotFound(st)) return engine::UserAbortError("no such special facility");
      ENGINE_RETURN_IF_ERROR(st);
      sf.SetInt(SF_DATA_A, data_a);
      return absl::OkStatus();
    }
    case kUpdateLocation: {
      int64_t id = 0;
      ENGINE_RETURN_IF_ERROR(SubscriberByNbr(tx, &id));
      Row s;
      ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->subscriber, id, &s));
      s.SetInt(SUB_VLR, vlr_location);
      return absl::OkStatus();
    }
    case kInsertCallForwarding: {
      int64_t id = 0;
      ENGINE_RETURN_IF_ERROR(SubscriberByNbr(tx, &id));
      ConstRow sf;
      absl::Status st = tx.Read(t_->special_facility, TatpSfKey(id, sf_type), &sf);
      if (absl::IsNotFound(st)) return engine::UserAbortError("no such special facility");
      ENGINE_RETURN_IF_ERROR(st);
      Row cf;
      st = tx.Insert(t_->call_forwarding, TatpCfKey(id, sf_type, start_time), &cf);
      if (absl::IsAlreadyExists(st)) return engine::UserAbortError("call_forwarding row exists");
      ENGINE_RETURN_IF_ERROR(st);
      cf.SetInt(CF_S_ID, id);
      cf.SetInt(CF_SF_TYPE, sf_type);
      cf.SetInt(CF_START, start_time);
      cf.SetInt(CF_END, end_time);
      cf.SetString(CF_NUMBERX, numberx);
      return Audit(tx, AU_INSERTS);
    }
    case kDeleteCallForwarding: {
      int64_t id = 0;
      ENGINE_RETURN_IF_ERROR(SubscriberByNbr(tx, &id));
      absl::Status st = tx.Delete(t_->call_forwarding, TatpCfKey(id, sf_type, start_time));
      if (absl::IsNotFound(st)) return engine::UserAbortError("no such call_forwarding row");
      ENGINE_RETURN_IF_ERROR(st);
      return Audit(tx, AU_DELETES);
    }
  }
  return absl::InternalError("unknown TATP type");
}

TatpWorkload::TatpWorkload(TatpParams params)
    : p_(std::move(params)), keys_(p_.subscribers, p_.hot_fraction, p_.hot_size) {
  double sum = 0;
  for (size_t i = 0; i < 7; ++i) {
    sum += i < p_.mix.size() ? p_.mix[i] : 0;
    cum_mix_.push_back(sum);
  }
}

const std::vector<std::string>& TatpWorkload::TxnTypeNames() const {
  static const auto* names = new std::vector<std::string>{
      "GetSubscriberData", "GetNewDestination",    "GetAccessData",       "UpdateSubscriberData",
      "UpdateLocation",    "InsertCallForwarding", "DeleteCallForwarding"};
  return *names;
}

void TatpWorkload::OnPhases() { keys_.SetPhases(phases()); }

int64_t TatpWorkload::RandomSubscriber(Rng& rng) const { return keys_.Draw(rng, phase()); }

std::unique_ptr<TatpTxn> TatpWorkload::Make(Rng& rng, TatpType type) const {
  auto t = std::make_unique<TatpTxn>(&t_, type);
  t->s_id = RandomSubscriber(rng);
  t->sub_nbr = TatpSubNbr(t->s_id);
  t->ai_type = static_cast<int>(rng.Uniform(1, 4));
  t->sf_type = static_cast<int>(rng.Uniform(1, 4));
  t->start_time = static_cast<int>(rng.Uniform(0, 2)) * 8;
  switch (type) {
    case kGetNewDestination:
      t->end_time = static_cast<int>(rng.Uniform(1, 24));
      break;
    case kUpdateSubscriberData:
      t->bit_1 = static_cast<int>(rng.Uniform(0, 1));
      t->data_a = static_cast<int>(rng.Uniform(0, 255));
      break;
    case kUpdateLocation:
      t->vlr_location = rng.Uniform(1, (int64_t{1} << 31) - 1);
      break;
    case kInsertCallForwarding:
      t->end_time = t->start_time + static_cast<int>(rng.Uniform(1, 8));
      t->numberx = RandomDigits(rng, 15);
      break;
    default:
      break;
  }
  t->type = TxnTypeId(type);
  t->partition_key = static_cast<uint64_t>(t->s_id);
  return t;
}

std::unique_ptr<WorkloadTxn> TatpWorkload::Next(Rng& rng) const {
  const double x = rng.Double() * cum_mix_.back();
  int k = 0;
  while (k < 6 && x >= cum_mix_[k]) ++k;
  return Make(rng, static_cast<TatpType>(k));
}

absl::Status TatpWorkload::Load(engine::Database* db) {
  if (p_.subscribers < 1 || p_.subscribers >= (int64_t{1} << 40)) {
    return absl::InvalidArgumentError("TATP subscribers out of range");
  }
  engine::Schema sub, ai, sf, cf, audit;
  sub.AddInt64("s_id");
  sub.AddString("sub_nbr", 15);
  for (const char* prefix : {"bit_", "hex_", "byte2_"}) {
    for (int i = 1; i <= 10; ++i) sub.AddInt64(absl::StrCat(prefix, i));
  }
  sub.AddInt64("msc_location");
  sub.AddInt64("vlr_location");
  ai.AddInt64("s_id");
  ai.AddInt64("ai_type");
  ai.AddInt64("data1");
  ai.AddInt64("data2");
  ai.AddString("data3", 3);
  ai.AddString("data4", 5);
  sf.AddInt64("s_id");
  sf.AddInt64("sf_type");
  sf.AddInt64("is_active");
  sf.AddInt64("error_cntrl");
  sf.AddInt64("data_a");
  sf.AddString("data_b", 5);
  cf.AddInt64("s_id");
  cf.AddInt64("sf_type");
  cf.AddInt64("start_time");
  cf.AddInt64("end_time");
  cf.AddString("numberx", 15);
  audit.AddInt64("slot");
  audit.AddInt64("inserts");
  audit.AddInt64("deletes");
  const size_t n = static_cast<size_t>(p_.subscribers);
  auto mk = [&](const char* name, const engine::Schema& s,
                size_t rows) -> absl::StatusOr<engine::Table*> {
    engine::TableOptions o;
    o.expected_rows = rows;
    return db->CreateTable(name, s, o);
  };
  auto a = mk("subscriber", sub, n);
  if (!a.ok()) return a.status();
  auto b = mk("access_info", ai, n * 3);
  if (!b.ok()) return b.status();
  auto c = mk("special_facility", sf, n * 3);
  if (!c.ok()) return c.status();
  auto d = mk("call_forwarding", cf, n * 4);
  if (!d.ok()) return d.status();
  auto e = mk("tatp_audit", audit, 64);
  if (!e.ok()) return e.status();
  t_ = {*a, *b, *c, *d, *e};

  Rng rng(p_.load_seed);
  int64_t cf_rows = 0;
  for (int64_t s = 1; s <= p_.subscribers; ++s) {
    ENGINE_RETURN_IF_ERROR(db->Load(t_.subscriber, s, [&](const Row& r) {
      r.SetInt(SUB_S_ID, s);
      r.SetString(SUB_NBR, TatpSubNbr(s));
      for (int i = 0; i < 10; ++i) {
        r.SetInt(SUB_BIT_1 + i, rng.Uniform(0, 1));
        r.SetInt(SUB_HEX_1 + i, rng.Uniform(0, 15));
        r.SetInt(SUB_BYTE2_1 + i, rng.Uniform(0, 255));
      }
      r.SetInt(SUB_MSC, rng.Uniform(1, (int64_t{1} << 31) - 1));
      r.SetInt(SUB_VLR, rng.Uniform(1, (int64_t{1} << 31) - 1));
    }));
    for (int type : DistinctTypes(rng, static_cast<int>(rng.Uniform(1, 4)))) {
      ENGINE_RETURN_IF_ERROR(db->Load(t_.access_info, TatpAiKey(s, type), [&](const Row& r) {
        r.SetInt(AI_S_ID, s);
        r.SetInt(AI_TYPE, type);
        r.SetInt(AI_DATA1, rng.Uniform(0, 255));
        r.SetInt(AI_DATA2, rng.Uniform(0, 255));
        r.SetString(AI_DATA3, RandomUpper(rng, 3));
        r.SetString(AI_DATA4, RandomUpper(rng, 5));
      }));
    }
    for (int type : DistinctTypes(rng, static_cast<int>(rng.Uniform(1, 4)))) {
      ENGINE_RETURN_IF_ERROR(db->Load(t_.special_facility, TatpSfKey(s, type), [&](const Row& r) {
        r.SetInt(SF_S_ID, s);
        r.SetInt(SF_TYPE, type);
        r.SetInt(SF_IS_ACTIVE, rng.Chance(0.85) ? 1 : 0);
        r.SetInt(SF_ERROR_CNTRL, rng.Uniform(0, 255));
        r.SetInt(SF_DATA_A, rng.Uniform(0, 255));
        r.SetString(SF_DATA_B, RandomUpper(rng, 5));
      }));
      const int ncf = static_cast<int>(rng.Uniform(0, 3));
      std::vector<int> starts = {0, 8, 16};
      for (int i = 2; i > 0; --i) std::swap(starts[i], starts[rng.Uniform(0, i)]);
      for (int i = 0; i < ncf; ++i) {
        const int st = starts[i];
        ENGINE_RETURN_IF_ERROR(
            db->Load(t_.call_forwarding, TatpCfKey(s, type, st), [&](const Row& r) {
              r.SetInt(CF_S_ID, s);
              r.SetInt(CF_SF_TYPE, type);
              r.SetInt(CF_START, st);
              r.SetInt(CF_END, st + rng.Uniform(1, 8));
              r.SetString(CF_NUMBERX, RandomDigits(rng, 15));
            }));
        ++cf_rows;
      }
    }
  }
  for (int slot = 0; slot <= kAuditTotalRow; ++slot) {
    ENGINE_RETURN_IF_ERROR(db->Load(t_.audit, slot, [&](const Row& r) {
      r.SetInt(AU_SLOT, slot);
      r.SetInt(AU_INSERTS, slot == kAuditTotalRow ? cf_rows : 0);
    }));
  }
  return absl::OkStatus();
}

absl::Status TatpWorkload::ForEachRow(const engine::Database& db, const RowFn& fn) const {
  if (t_.subscriber == nullptr) return absl::FailedPreconditionError("TATP not loaded");
  auto visit = [&](const engine::Table* t, uint64_t key) -> absl::Status {
    ConstRow r;
    if (!db.Peek(t, key, &r).ok()) return absl::OkStatus();
    return fn(*t, r);
  };
  for (int64_t s = 1; s <= p_.subscribers; ++s) ENGINE_RETURN_IF_ERROR(visit(t_.subscriber, s));
  for (int64_t s = 1; s <= p_.subscribers; ++s) {
    for (int t = 1; t <= 4; ++t) ENGINE_RETURN_IF_ERROR(visit(t_.access_info, TatpAiKey(s, t)));
  }
  for (int64_t s = 1; s <= p_.subscribers; ++s) {
    for (int t = 1; t <= 4; ++t) {
      ENGINE_RETURN_IF_ERROR(visit(t_.special_facility, TatpSfKey(s, t)));
    }
  }
  for (int64_t s = 1; s <= p_.subscribers; ++s) {
    for (int t = 1; t <= 4; ++t) {
      for (int st : {0, 8, 16}) {
        ENGINE_RETURN_IF_ERROR(visit(t_.call_forwarding, TatpCfKey(s, t, st)));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status TatpWorkload::Check(const engine::Database& db) const {
  if (t_.subscriber == nullptr) return absl::FailedPreconditionError("TATP not loaded");
  int64_t cf_rows = 0;
  for (int64_t s = 1; s <= p_.subscribers; ++s) {
    ConstRow r;
    ENGINE_RETURN_IF_ERROR(db.Peek(t_.subscriber, s, &r));
    if (r.GetString(SUB_NBR) != TatpSubNbr(s)) {
      return absl::DataLossError(absl::StrCat("TATP: subscriber ", s, " has the wrong sub_nbr"));
    }
    int n_ai = 0, n_sf = 0;
    for (int type = 1; type <= 4; ++type) {
      if (db.Peek(t_.access_info, TatpAiKey(s, type), &r).ok()) ++n_ai;
      const bool has_sf = db.Peek(t_.special_facility, TatpSfKey(s, type), &r).ok();
      if (has_sf) ++n_sf;
      for (int st : {0, 8, 16}) {
        if (!db.Peek(t_.call_forwarding, TatpCfKey(s, type, st), &r).ok()) continue;
        ++cf_rows;
        if (!has_sf) {
          return absl::DataLossError(absl::StrCat(
              "TATP: call_forwarding row (", s, ", ", type, ", ", st,
              ") has no special_facility (foreign key violated)"));
        }
        const int64_t end = r.GetInt(CF_END);
        if (r.GetInt(CF_START) != st || end <= st || end > st + 8) {
          return absl::DataLossError(absl::StrCat("TATP: call_forwarding row (", s, ", ", type,
                                                  ", ", st, ") has a bad time range"));
        }
      }
    }
    if (n_ai < 1 || n_ai > 4 || n_sf < 1 || n_sf > 4) {
      return absl::DataLossError(absl::StrCat("TATP: subscriber ", s, " has ", n_ai,
                                              " access_info and ", n_sf,
                                              " special_facility rows (want 1-4 each)"));
    }
  }
  int64_t expected = 0;
  for (int slot = 0; slot <= kAuditTotalRow; ++slot) {
    ConstRow r;
    ENGINE_RETURN_IF_ERROR(db.Peek(t_.audit, slot, &r));
    expected += r.GetInt(AU_INSERTS) - r.GetInt(AU_DELETES);
  }
  if (expected != cf_rows) {
    return absl::DataLossError(absl::StrCat(
        "TATP: call_forwarding has ", cf_rows, " rows but loaded + inserted - deleted = ",
        expected));
  }
  return absl::OkStatus();
}

}  // namespace workloads
}  // namespace corral
