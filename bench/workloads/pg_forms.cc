#include "bench/workloads/pg_forms.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "bench/workloads/smallbank.h"
#include "bench/workloads/tatp.h"
#include "bench/workloads/tpcc.h"
#include "bench/workloads/ycsb.h"
#include "common/hash.h"

namespace corral {
namespace workloads {

using adapters::PgParams;
using adapters::PgProcedure;
using adapters::PgResult;
using adapters::PgSession;

bool IsTimestampColumn(absl::string_view c) {
  return c == "c_since" || c == "o_entry_d" || c == "h_date" || c == "ol_delivery_d";
}

Int64Form ClassifyInt64(absl::string_view column, int64_t v) {
  const bool timestamp = IsTimestampColumn(column);
  if (v == 0 && (timestamp || column == "o_carrier_id")) return Int64Form::kNull;
  return timestamp ? Int64Form::kTimestamp : Int64Form::kInteger;
}

namespace {

absl::StatusOr<PgResult> X(PgSession& s, const std::string& sql, const PgParams& p) {
  return s.ExecTemplate({absl::StrCat("wl_", absl::Hex(Fingerprint64(sql))), sql}, p);
}

absl::optional<std::string> P(int64_t v) { return std::to_string(v); }
absl::optional<std::string> Pd(double v) { return std::string(SqlParam::Num(v).value()); }
absl::optional<std::string> Ps(const std::string& v) { return v; }

#define PG_EXEC(var, ...)                        \
  auto var##_or = X(__VA_ARGS__);                \
  if (!var##_or.ok()) return var##_or.status();  \
  const PgResult& var = *var##_or
#define PG_GET(var, expr)                        \
  auto var##_or = (expr);                        \
  if (!var##_or.ok()) return var##_or.status();  \
  auto var = *var##_or

absl::Status UserAbort(absl::string_view why) { return absl::AbortedError(why); }

// ------------------------------------------------------------ TPC-C

absl::Status CustomerByLastName(PgSession& s, int w, int d, const std::string& last, int* c_id) {
  PG_EXEC(r, s, tpcc_sql::kCustomerIdsByLastName, {P(w), P(d), Ps(last)});
  if (r.num_rows() == 0) return absl::NotFoundError(absl::StrCat("no customer named ", last));
  PG_GET(c, r.GetInt((r.num_rows() - 1) / 2, 0));  // position ceil(n/2)
  *c_id = static_cast<int>(c);
  return absl::OkStatus();
}

class TpccPg : public PgProcedure {
 public:
  explicit TpccPg(const TpccTxn& t)
      : type_(t.tpcc_type()), no_(t.new_order), pay_(t.payment), os_(t.order_status),
        dl_(t.delivery), sl_(t.stock_level) {}

  absl::Status Run(PgSession& s) override {
    switch (type_) {
      case kNewOrder: return NewOrder(s);
      case kPayment: return Payment(s);
      case kOrderStatus: return OrderStatus(s);
      case kDelivery: return Delivery(s);
      case kStockLevel: return StockLevel(s);
    }
    return absl::InternalError("unknown TPC-C type");
  }

 private:
  absl::Status NewOrder(PgSession& s) {
    using namespace tpcc_sql;  // NOLINT
    const NewOrderInput& in = no_;
    PG_EXEC(w, s, kNoGetWarehouse, {P(in.w_id)});
    PG_EXEC(d, s, kNoGetDistrict, {P(in.w_id), P(in.d_id)});
    if (d.num_rows() != 1) return absl::NotFoundError("NewOrder: no district");
    PG_GET(o_id, d.GetInt(0, 1));
    PG_EXEC(bump, s, kNoBumpDistrict, {P(in.w_id), P(in.d_id)});
    PG_EXEC(c, s, kNoGetCustomer, {P(in.w_id), P(in.d_id), P(in.c_id)});
    PG_EXEC(o, s, kNoInsertOrder,
            {P(o_id), P(in.d_id), P(in.w_id), P(in.c_id),
             P(static_cast<int64_t>(in.lines.size())), P(in.all_local ? 1 : 0)});
    PG_EXEC(no, s, kNoInsertNewOrder, {P(o_id), P(in.d_id), P(in.w_id)});
    int number = 0;
    for (const NewOrderLine& l : in.lines) {
      ++number;
      PG_EXEC(item, s, kNoGetItem, {P(l.i_id)});
      if (item.num_rows() == 0) return UserAbort("NewOrder: invalid item id");
      PG_GET(price, item.GetDouble(0, 0));
      PG_EXEC(st, s, NoGetStock(in.d_id), {P(l.i_id), P(l.supply_w_id)});
      if (st.num_rows() != 1) return absl::NotFoundError("NewOrder: no stock row");
      PG_GET(q, st.GetInt(0, 0));
      const std::string dist = st.Get(0, 2);
      q = q >= l.quantity + 10 ? q - l.quantity : q - l.quantity + 91;
      PG_EXEC(u, s, kNoUpdateStock,
              {P(q), P(l.quantity), P(l.supply_w_id != in.w_id ? 1 : 0), P(l.i_id),
               P(l.supply_w_id)});
      const double amount = std::round(l.quantity * price * 100) / 100;
      PG_EXEC(ol, s, kNoInsertOrderLine,
              {P(o_id), P(in.d_id), P(in.w_id), P(number), P(l.i_id), P(l.supply_w_id),
               P(l.quantity), Pd(amount), Ps(dist)});
    }
    return absl::OkStatus();
  }

  absl::Status Payment(PgSession& s) {
    using namespace tpcc_sql;  // NOLINT
    const PaymentInput& in = pay_;
    PG_EXEC(uw, s, kPayUpdateWarehouse, {Pd(in.h_amount), P(in.w_id)});
    PG_EXEC(w, s, kPayGetWarehouse, {P(in.w_id)});
    PG_EXEC(ud, s, kPayUpdateDistrict, {Pd(in.h_amount), P(in.w_id), P(in.d_id)});
    PG_EXEC(d, s, kPayGetDistrict, {P(in.w_id), P(in.d_id)});
    if (w.num_rows() != 1 || d.num_rows() != 1) return absl::NotFoundError("Payment: no w/d");
    int c_id = in.c_id;
    if (in.by_last_name) {
      absl::Status st = CustomerByLastName(s, in.c_w_id, in.c_d_id, in.c_last, &c_id);
      if (!st.ok()) return st;
    }
    PG_EXEC(c, s, kPayGetCustomer, {P(in.c_w_id), P(in.c_d_id), P(c_id)});
    if (c.num_rows() != 1) return absl::NotFoundError("Payment: no customer");
    PG_EXEC(uc, s, kPayUpdateCustomer, {Pd(in.h_amount), P(in.c_w_id), P(in.c_d_id), P(c_id)});
    if (c.Get(0, 10) == "BC") {
      std::string data = absl::StrCat(c_id, " ", in.c_d_id, " ", in.c_w_id, " ", in.d_id, " ",
                                      in.w_id, " ", in.h_amount, "|", c.Get(0, 14));
      if (data.size() > 500) data.resize(500);
      PG_EXEC(ucd, s, kPayUpdateCustomerData, {Ps(data), P(in.c_w_id), P(in.c_d_id), P(c_id)});
    }
    PG_EXEC(h, s, kPayInsertHistory,
            {P(c_id), P(in.c_d_id), P(in.c_w_id), P(in.d_id), P(in.w_id), Pd(in.h_amount),
             Ps(absl::StrCat(w.Get(0, 0), "    ", d.Get(0, 0)))});
    return absl::OkStatus();
  }

  absl::Status OrderStatus(PgSession& s) {
    using namespace tpcc_sql;  // NOLINT
    const OrderStatusInput& in = os_;
    int c_id = in.c_id;
    if (in.by_last_name) {
      absl::Status st = CustomerByLastName(s, in.w_id, in.d_id, in.c_last, &c_id);
      if (!st.ok()) return st;
    }
    PG_EXEC(c, s, kOsGetCustomer, {P(in.w_id), P(in.d_id), P(c_id)});
    PG_EXEC(o, s, kOsGetLastOrder, {P(in.w_id), P(in.d_id), P(c_id)});
    if (o.num_rows() == 0) return absl::OkStatus();
    PG_GET(o_id, o.GetInt(0, 0));
    PG_EXEC(ol, s, kOsGetOrderLines, {P(in.w_id), P(in.d_id), P(o_id)});
    return absl::OkStatus();
  }

  absl::Status Delivery(PgSession& s) {
    using namespace tpcc_sql;  // NOLINT
    const DeliveryInput& in = dl_;
    for (int d = 1; d <= in.districts; ++d) {
      PG_EXEC(no, s, kDlvGetNewOrder, {P(in.w_id), P(d)});
      if (no.num_rows() == 0) continue;
      PG_GET(o_id, no.GetInt(0, 0));
      PG_EXEC(del, s, kDlvDeleteNewOrder, {P(in.w_id), P(d), P(o_id)});
      PG_EXEC(o, s, kDlvGetOrder, {P(in.w_id), P(d), P(o_id)});
      if (o.num_rows() != 1) return absl::NotFoundError("Delivery: no order");
      PG_GET(c_id, o.GetInt(0, 0));
      PG_EXEC(uo, s, kDlvUpdateOrder, {P(in.o_carrier_id), P(in.w_id), P(d), P(o_id)});
      PG_EXEC(uol, s, kDlvUpdateOrderLines, {P(in.w_id), P(d), P(o_id)});
      PG_EXEC(sum, s, kDlvSumOrderLines, {P(in.w_id), P(d), P(o_id)});
      double total = 0;
      if (sum.num_rows() == 1 && !sum.IsNull(0, 0)) {
        PG_GET(t, sum.GetDouble(0, 0));
        total = t;
      }
      PG_EXEC(uc, s, kDlvUpdateCustomer, {Pd(total), P(in.w_id), P(d), P(c_id)});
    }
    return absl::OkStatus();
  }

  absl::Status StockLevel(PgSession& s) {
    using namespace tpcc_sql;  // NOLINT
    const StockLevelInput& in = sl_;
    PG_EXEC(d, s, kSlGetDistrict, {P(in.w_id), P(in.d_id)});
    if (d.num_rows() != 1) return absl::NotFoundError("StockLevel: no district");
    PG_GET(next, d.GetInt(0, 0));
    PG_EXEC(c, s, kSlCountLowStock,
            {P(in.w_id), P(in.d_id), P(next), P(next - in.orders), P(in.w_id), P(in.threshold)});
    return absl::OkStatus();
  }

  TpccType type_;
  NewOrderInput no_;
  PaymentInput pay_;
  OrderStatusInput os_;
  DeliveryInput dl_;
  StockLevelInput sl_;
};

// ------------------------------------------------------------ SmallBank

class SmallBankPg : public PgProcedure {
 public:
  explicit SmallBankPg(const SmallBankTxn& t)
      : type_(t.sb_type()), c1_(t.c1), c2_(t.c2), amount_(t.amount) {}

  absl::Status Run(PgSession& s) override {
    using namespace smallbank_sql;  // NOLINT
    PG_EXEC(a1, s, kGetAccount, {P(c1_)});
    if (a1.num_rows() == 0) return UserAbort("SmallBank: no such account");
    switch (type_) {
      case kAmalgamate: {
        PG_EXEC(a2, s, kGetAccount, {P(c2_)});
        if (a2.num_rows() == 0) return UserAbort("SmallBank: no such account");
        PG_EXEC(sv, s, kGetSavings, {P(c1_)});
        PG_EXEC(ck, s, kGetChecking, {P(c1_)});
        PG_GET(b1, sv.GetDouble(0, 0));
        PG_GET(b2, ck.GetDouble(0, 0));
        PG_EXEC(z1, s, kZeroSavings, {P(c1_)});
        PG_EXEC(z2, s, kZeroChecking, {P(c1_)});
        PG_EXEC(add, s, kAddChecking, {Pd(b1 + b2), P(c2_)});
        return absl::OkStatus();
      }
      case kBalance: {
        PG_EXEC(sv, s, kGetSavings, {P(c1_)});
        PG_EXEC(ck, s, kGetChecking, {P(c1_)});
        return absl::OkStatus();
      }
      case kDepositChecking: {
        PG_EXEC(add, s, kAddChecking, {P(amount_), P(c1_)});
        return absl::OkStatus();
      }
      case kTransactSavings: {
        PG_EXEC(sv, s, kGetSavings, {P(c1_)});
        PG_GET(b, sv.GetDouble(0, 0));
        if (b + amount_ < 0) return UserAbort("TransactSavings: insufficient savings");
        PG_EXEC(add, s, kAddSavings, {P(amount_), P(c1_)});
        return absl::OkStatus();
      }
      case kWriteCheck: {
        PG_EXEC(sv, s, kGetSavings, {P(c1_)});
        PG_EXEC(ck, s, kGetChecking, {P(c1_)});
        PG_GET(b1, sv.GetDouble(0, 0));
        PG_GET(b2, ck.GetDouble(0, 0));
        const int64_t debit = b1 + b2 < amount_ ? amount_ + 1 : amount_;
        PG_EXEC(sub, s, kSubChecking, {P(debit), P(c1_)});
        return absl::OkStatus();
      }
      case kSendPayment: {
        PG_EXEC(a2, s, kGetAccount, {P(c2_)});
        if (a2.num_rows() == 0) return UserAbort("SmallBank: no such account");
        PG_EXEC(ck, s, kGetChecking, {P(c1_)});
        PG_GET(b, ck.GetDouble(0, 0));
        if (b < amount_) return UserAbort("SendPayment: insufficient funds");
        PG_EXEC(sub, s, kSubChecking, {P(amount_), P(c1_)});
        PG_EXEC(add, s, kAddChecking, {P(amount_), P(c2_)});
        return absl::OkStatus();
      }
    }
    return absl::InternalError("unknown SmallBank type");
  }

 private:
  SmallBankType type_;
  int64_t c1_, c2_, amount_;
};

// ------------------------------------------------------------ TATP

class TatpPg : public PgProcedure {
 public:
  explicit TatpPg(const TatpTxn& t) : t_(t.tatp_type()), in_(t) {}

  absl::Status Run(PgSession& s) override {
    namespace q = tatp_sql;
    const TatpTxn& in = in_;
    switch (t_) {
      case kGetSubscriberData: {
        PG_EXEC(r, s, q::kGetSubscriber, {P(in.s_id)});
        return absl::OkStatus();
      }
      case kGetNewDestination: {
        PG_EXEC(r, s, q::kGetNewDestination,
                {P(in.s_id), P(in.sf_type), P(in.start_time), P(in.end_time)});
        return absl::OkStatus();
      }
      case kGetAccessData: {
        PG_EXEC(r, s, q::kGetAccessData, {P(in.s_id), P(in.ai_type)});
        return absl::OkStatus();
      }
      case kUpdateSubscriberData: {
        PG_EXEC(r1, s, q::kUpdateSubscriberBit, {P(in.bit_1), P(in.s_id)});
        PG_EXEC(r2, s, q::kUpdateSpecialFacility, {P(in.data_a), P(in.s_id), P(in.sf_type)});
        if (r2.affected_rows() == 0) return UserAbort("no such special facility");
        return absl::OkStatus();
      }
      default:
        break;
    }
    PG_EXEC(sub, s, q::kGetSubscriberId, {Ps(in.sub_nbr)});
    if (sub.num_rows() == 0) return UserAbort("no subscriber with this sub_nbr");
    PG_GET(s_id, sub.GetInt(0, 0));
    switch (t_) {
      case kUpdateLocation: {
        PG_EXEC(r, s, q::kUpdateLocation, {P(in.vlr_location), P(s_id)});
        return absl::OkStatus();
      }
      case kInsertCallForwarding: {
        PG_EXEC(sf, s, q::kGetSpecialFacilityTypes, {P(s_id)});
        bool found = false;
        for (int i = 0; i < sf.num_rows(); ++i) found |= sf.Get(i, 0) == std::to_string(in.sf_type);
        if (!found) return UserAbort("no such special facility");
        PG_EXEC(r, s, q::kInsertCallForwarding,
                {P(s_id), P(in.sf_type), P(in.start_time), P(in.end_time), Ps(in.numberx)});
        if (r.affected_rows() == 0) return UserAbort("call_forwarding row exists");
        return absl::OkStatus();
      }
      case kDeleteCallForwarding: {
        PG_EXEC(r, s, q::kDeleteCallForwarding, {P(s_id), P(in.sf_type), P(in.start_time)});
        if (r.affected_rows() == 0) return UserAbort("no such call_forwarding row");
        return absl::OkStatus();
      }
      default:
        return absl::InternalError("unknown TATP type");
    }
  }

 private:
  TatpType t_;
  TatpTxn in_;  // a copy of the inputs (table pointers unused here)
};

// ------------------------------------------------------------ YCSB

class YcsbPg : public PgProcedure {
 public:
  explicit YcsbPg(const YcsbTxn& t) : ops_(t.ops) {}
  absl::Status Run(PgSession& s) override {
    for (const YcsbOp& op : ops_) {
      if (!op.rmw) {
        PG_EXEC(r, s, ycsb_sql::kRead, {P(op.key)});
      } else {
        PG_EXEC(r, s, ycsb_sql::kReadForUpdate, {P(op.key)});
        PG_EXEC(u, s, ycsb_sql::Update(op.field), {Ps(op.value), P(op.key)});
      }
    }
    return absl::OkStatus();
  }

 private:
  std::vector<YcsbOp> ops_;
};

#undef PG_EXEC
#undef PG_GET

// ------------------------------------------------------------ loader

void AppendValue(const engine::Column& col, const engine::ConstRow& r, int i, std::string* out) {
  switch (col.type) {
    case engine::ColumnType::kInt64: {
      const int64_t v = r.GetInt(i);
      switch (ClassifyInt64(col.name, v)) {
        case Int64Form::kNull: *out += "NULL"; break;
        case Int64Form::kTimestamp: absl::StrAppend(out, "to_timestamp(", v, ")"); break;
        case Int64Form::kInteger: absl::StrAppend(out, v); break;
      }
      return;
    }
    case engine::ColumnType::kDouble:
      *out += std::string(SqlParam::Num(r.GetDouble(i)).value());
      return;
    case engine::ColumnType::kString: {
      *out += '\'';
      for (char ch : r.GetString(i)) {
        if (ch == '\'') *out += '\'';
        *out += ch;
      }
      *out += '\'';
      return;
    }
  }
}

}  // namespace

absl::StatusOr<std::unique_ptr<PgProcedure>> MakePgProcedure(const WorkloadTxn& t) {
  if (auto* x = dynamic_cast<const TpccTxn*>(&t)) return std::unique_ptr<PgProcedure>(new TpccPg(*x));
  if (auto* x = dynamic_cast<const SmallBankTxn*>(&t)) {
    return std::unique_ptr<PgProcedure>(new SmallBankPg(*x));
  }
  if (auto* x = dynamic_cast<const TatpTxn*>(&t)) return std::unique_ptr<PgProcedure>(new TatpPg(*x));
  if (auto* x = dynamic_cast<const YcsbTxn*>(&t)) return std::unique_ptr<PgProcedure>(new YcsbPg(*x));
  return absl::InvalidArgumentError("no PostgreSQL form for this transaction");
}

absl::StatusOr<std::unique_ptr<adapters::PgTxn>> MakePgTxn(const WorkloadTxn& t) {
  auto p = MakePgProcedure(t);
  if (!p.ok()) return p.status();
  auto txn = std::make_unique<adapters::PgTxn>(std::move(*p));
  txn->refs = t.refs;
  txn->partition_key = t.partition_key;
  txn->type = t.type;
  return txn;
}

absl::Status LoadPg(const Workload& w, const engine::Database& loaded,
                    adapters::PgConnection& conn, int batch_rows) {
  if (batch_rows < 1) batch_rows = 1;
  std::string sql;
  const engine::Table* current = nullptr;
  int rows = 0;
  auto flush = [&]() -> absl::Status {
    if (rows == 0) return absl::OkStatus();
    PgResult r = conn.Exec(sql);
    sql.clear();
    rows = 0;
    return r.ToStatus(absl::StrCat("INSERT INTO ", current->name()));
  };
  absl::Status st = w.ForEachRow(loaded, [&](const engine::Table& t,
                                             const engine::ConstRow& r) -> absl::Status {
    if (&t != current || rows >= batch_rows) {
      if (absl::Status f = flush(); !f.ok()) return f;
      current = &t;
    }
    const engine::Schema& s = t.schema();
    if (rows == 0) {
      absl::StrAppend(&sql, "INSERT INTO ", t.name(), " (");
      for (size_t i = 0; i < s.num_columns(); ++i) {
        absl::StrAppend(&sql, i > 0 ? ", " : "", s.column(static_cast<int>(i)).name);
      }
      sql += ") VALUES ";
    } else {
      sql += ", ";
    }
    sql += '(';
    for (size_t i = 0; i < s.num_columns(); ++i) {
      if (i > 0) sql += ", ";
      AppendValue(s.column(static_cast<int>(i)), r, static_cast<int>(i), &sql);
    }
    sql += ')';
    ++rows;
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return flush();
}

}  // namespace workloads
}  // namespace corral
