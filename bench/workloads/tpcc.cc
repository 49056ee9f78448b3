#include "bench/workloads/tpcc.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace corral {
namespace workloads {

using engine::ConstRow;
using engine::KeyPacker;
using engine::Row;
using engine::ScanSpec;
using engine::Schema;
using engine::Tx;

namespace {

// Column indexes: each schema adds its columns in exactly this order.
enum WCol { W_ID, W_NAME, W_STREET_1, W_STREET_2, W_CITY, W_STATE, W_ZIP, W_TAX, W_YTD };
enum DCol {
  D_ID, D_W_ID, D_NAME, D_STREET_1, D_STREET_2, D_CITY, D_STATE, D_ZIP, D_TAX, D_YTD,
  D_NEXT_O_ID
};
enum CCol {
  C_ID, C_D_ID, C_W_ID, C_FIRST, C_MIDDLE, C_LAST, C_STREET_1, C_STREET_2, C_CITY, C_STATE,
  C_ZIP, C_PHONE, C_SINCE, C_CREDIT, C_CREDIT_LIM, C_DISCOUNT, C_BALANCE, C_YTD_PAYMENT,
  C_PAYMENT_CNT, C_DELIVERY_CNT, C_DATA
};
enum HCol { H_C_ID, H_C_D_ID, H_C_W_ID, H_D_ID, H_W_ID, H_DATE, H_AMOUNT, H_DATA };
enum OCol { O_ID, O_D_ID, O_W_ID, O_C_ID, O_ENTRY_D, O_CARRIER_ID, O_OL_CNT, O_ALL_LOCAL };
enum NoCol { NO_O_ID, NO_D_ID, NO_W_ID };
enum ICol { I_ID, I_IM_ID, I_NAME, I_PRICE, I_DATA };
enum SCol {
  S_I_ID, S_W_ID, S_QUANTITY, S_DIST_01, S_DIST_10 = S_DIST_01 + 9, S_YTD, S_ORDER_CNT,
  S_REMOTE_CNT, S_DATA
};
enum OlCol {
  OL_O_ID, OL_D_ID, OL_W_ID, OL_NUMBER, OL_I_ID, OL_SUPPLY_W_ID, OL_DELIVERY_D, OL_QUANTITY,
  OL_AMOUNT, OL_DIST_INFO
};

struct ColDef {
  const char* name;
  char type;  // 'i' int64, 'd' double, 's' string
  int cap;
};

Schema MakeSchema(std::initializer_list<ColDef> cols) {
  Schema s;
  for (const ColDef& c : cols) {
    if (c.type == 'i') s.AddInt64(c.name);
    else if (c.type == 'd') s.AddDouble(c.name);
    else s.AddString(c.name, c.cap);
  }
  return s;
}

const char* const kSyllables[] = {"BAR", "OUGHT", "ABLE",  "PRI",   "PRES",
                                  "ESE", "ANTI",  "CALLY", "ATION", "EING"};

// The number of a last name built by TpccLastName, or 1023 if none.
int LastNameNumber(absl::string_view s) {
  int num = 0;
  for (int part = 0; part < 3; ++part) {
    int found = -1;
    for (int k = 0; k < 10; ++k) {
      absl::string_view syl(kSyllables[k]);
      if (s.substr(0, syl.size()) == syl) {
        found = k;
        s.remove_prefix(syl.size());
        break;
      }
    }
    if (found < 0) return 1023;
    num = num * 10 + found;
  }
  return s.empty() ? num : 1023;
}

uint64_t CustomerNameKey(int w, int d, int name_num) {
  return KeyPacker().Add(w, 16).Add(d, 8).Add(name_num, 10).key();
}
uint64_t OrderByCustomerKey(int w, int d, int c, int o) {
  return KeyPacker().Add(w, 16).Add(d, 8).Add(c, 16).Add(o, 24).key();
}
uint64_t HistoryKey(int slot, uint64_t seq) {
  return KeyPacker().Add(slot, 8).Add(seq, 56).key();
}

std::string RandomAString(Rng& rng, int min_len, int max_len) {
  static const char kChars[] =
      "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
  int n = static_cast<int>(rng.Uniform(min_len, max_len));
  std::string s(n, ' ');
  for (char& c : s) c = kChars[rng.Uniform(0, 61)];
  return s;
}
std::string RandomNString(Rng& rng, int len) {
  std::string s(len, '0');
  for (char& c : s) c = static_cast<char>('0' + rng.Uniform(0, 9));
  return s;
}
std::string Zip(Rng& rng) { return RandomNString(rng, 4) + "11111"; }
std::string DataWithOriginal(Rng& rng, int min_len, int max_len) {
  std::string s = RandomAString(rng, min_len, max_len);
  if (rng.Chance(0.10)) {
    size_t pos = static_cast<size_t>(rng.Uniform(0, static_cast<int64_t>(s.size()) - 8));
    s.replace(pos, 8, "ORIGINAL");
  }
  return s;
}
double Cents(int64_t c) { return static_cast<double>(c) / 100.0; }
int64_t NowSeconds() { return static_cast<int64_t>(MonoNanos() / 1000000000); }

int ScaleA(int a, int full, int n) {
  if (n >= full) return a;
  int64_t v = static_cast<int64_t>(a) * n / full;
  int64_t p = 1;
  while (p < v + 1) p <<= 1;
  return static_cast<int>(p - 1);
}


constexpr uint64_t kAll = std::numeric_limits<uint64_t>::max();

}  // namespace

uint64_t TpccDistrictKey(int w, int d) { return KeyPacker().Add(w, 16).Add(d, 8).key(); }
uint64_t TpccCustomerKey(int w, int d, int c) {
  return KeyPacker().Add(w, 16).Add(d, 8).Add(c, 24).key();
}
uint64_t TpccStockKey(int w, int i) { return KeyPacker().Add(w, 16).Add(i, 24).key(); }
uint64_t TpccOrderKey(int w, int d, int o) {
  return KeyPacker().Add(w, 16).Add(d, 8).Add(o, 32).key();
}
uint64_t TpccOrderLineKey(int w, int d, int o, int n) {
  return KeyPacker().Add(w, 16).Add(d, 8).Add(o, 24).Add(n, 8).key();
}
uint64_t TpccHistorySlotKey(int worker_id) { return HistoryKey(worker_id + 1, 0); }
std::string TpccLastName(int num) {
  return absl::StrCat(kSyllables[(num / 100) % 10], kSyllables[(num / 10) % 10],
                      kSyllables[num % 10]);
}

// ---------------------------------------------------------------- SQL form

namespace tpcc_sql {
constexpr const char* kNoGetWarehouse = "SELECT w_tax FROM warehouse WHERE w_id = $1";
constexpr const char* kNoGetDistrict =
    "SELECT d_tax, d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2 FOR UPDATE";
constexpr const char* kNoBumpDistrict =
    "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2";
constexpr const char* kNoGetCustomer =
    "SELECT c_discount, c_last, c_credit FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND "
    "c_id = $3";
constexpr const char* kNoInsertOrder =
    "INSERT INTO orders (o_id, o_d_id, o_w_id, o_c_id, o_entry_d, o_carrier_id, o_ol_cnt, "
    "o_all_local) VALUES ($1, $2, $3, $4, CURRENT_TIMESTAMP, NULL, $5, $6)";
constexpr const char* kNoInsertNewOrder =
    "INSERT INTO new_order (no_o_id, no_d_id, no_w_id) VALUES ($1, $2, $3)";
constexpr const char* kNoGetItem = "SELECT i_price, i_name, i_data FROM item WHERE i_id = $1";
constexpr const char* kNoUpdateStock =
    "UPDATE stock SET s_quantity = $1, s_ytd = s_ytd + $2, s_order_cnt = s_order_cnt + 1, "
    "s_remote_cnt = s_remote_cnt + $3 WHERE s_i_id = $4 AND s_w_id = $5";
constexpr const char* kNoInsertOrderLine =
    "INSERT INTO order_line (ol_o_id, ol_d_id, ol_w_id, ol_number, ol_i_id, ol_supply_w_id, "
    "ol_delivery_d, ol_quantity, ol_amount, ol_dist_info) VALUES ($1, $2, $3, $4, $5, $6, NULL, "
    "$7, $8, $9)";
constexpr const char* kPayUpdateWarehouse = "UPDATE warehouse SET w_ytd = w_ytd + $1 WHERE w_id = $2";
constexpr const char* kPayGetWarehouse =
    "SELECT w_name, w_street_1, w_street_2, w_city, w_state, w_zip FROM warehouse WHERE "
    "w_id = $1";
constexpr const char* kPayUpdateDistrict =
    "UPDATE district SET d_ytd = d_ytd + $1 WHERE d_w_id = $2 AND d_id = $3";
constexpr const char* kPayGetDistrict =
    "SELECT d_name, d_street_1, d_street_2, d_city, d_state, d_zip FROM district WHERE "
    "d_w_id = $1 AND d_id = $2";
constexpr const char* kCustomerIdsByLastName =
    "SELECT c_id FROM customer WHERE c_w_id = $1 AND c_d_id = $2 AND c_last = $3 ORDER BY "
    "c_first";
constexpr const char* kPayGetCustomer =
    "SELECT c_first, c_middle, c_last, c_street_1, c_street_2, c_city, c_state, c_zip, "
    "c_phone, c_since, c_credit, c_credit_lim, c_discount, c_balance, c_data FROM customer "
    "WHERE c_w_id = $1 AND c_d_id = $2 AND c_id = $3 FOR UPDATE";
constexpr const char* kPayUpdateCustomer =
    "UPDATE customer SET c_balance = c_balance - $1, c_ytd_payment = c_ytd_payment + $1, "
    "c_payment_cnt = c_payment_cnt + 1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4";
constexpr const char* kPayUpdateCustomerData =
    "UPDATE customer SET c_data = $1 WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4";
constexpr const char* kPayInsertHistory =
    "INSERT INTO history (h_c_id, h_c_d_id, h_c_w_id, h_d_id, h_w_id, h_date, h_amount, "
    "h_data) VALUES ($1, $2, $3, $4, $5, CURRENT_TIMESTAMP, $6, $7)";
constexpr const char* kOsGetCustomer =
    "SELECT c_balance, c_first, c_middle, c_last FROM customer WHERE c_w_id = $1 AND "
    "c_d_id = $2 AND c_id = $3";
constexpr const char* kOsGetLastOrder =
    "SELECT o_id, o_carrier_id, o_entry_d FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND "
    "o_c_id = $3 ORDER BY o_id DESC LIMIT 1";
constexpr const char* kOsGetOrderLines =
    "SELECT ol_i_id, ol_supply_w_id, ol_quantity, ol_amount, ol_delivery_d FROM order_line "
    "WHERE ol_w_id = $1 AND ol_d_id = $2 AND ol_o_id = $3";
constexpr const char* kDlvGetNewOrder =
    "SELECT no_o_id FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 ORDER BY no_o_id "
    "LIMIT 1 FOR UPDATE";
constexpr const char* kDlvDeleteNewOrder =
    "DELETE FROM new_order WHERE no_w_id = $1 AND no_d_id = $2 AND no_o_id = $3";
constexpr const char* kDlvGetOrder =
    "SELECT o_c_id FROM orders WHERE o_w_id = $1 AND o_d_id = $2 AND o_id = $3";
constexpr const char* kDlvUpdateOrder =
    "UPDATE orders SET o_carrier_id = $1 WHERE o_w_id = $2 AND o_d_id = $3 AND o_id = $4";
constexpr const char* kDlvUpdateOrderLines =
    "UPDATE order_line SET ol_delivery_d = CURRENT_TIMESTAMP WHERE ol_w_id = $1 AND "
    "ol_d_id = $2 AND ol_o_id = $3";
constexpr const char* kDlvSumOrderLines =
    "SELECT SUM(ol_amount) FROM order_line WHERE ol_w_id = $1 AND ol_d_id = $2 AND "
    "ol_o_id = $3";
constexpr const char* kDlvUpdateCustomer =
    "UPDATE customer SET c_balance = c_balance + $1, c_delivery_cnt = c_delivery_cnt + 1 "
    "WHERE c_w_id = $2 AND c_d_id = $3 AND c_id = $4";
constexpr const char* kSlGetDistrict =
    "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2";
constexpr const char* kSlCountLowStock =
    "SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = $1 AND ol_d_id = $2 "
    "AND ol_o_id < $3 AND ol_o_id >= $4 AND s_w_id = $5 AND s_i_id = ol_i_id AND "
    "s_quantity < $6";

std::string NoGetStock(int d_id) {
  return absl::StrFormat(
      "SELECT s_quantity, s_data, s_dist_%02d FROM stock WHERE s_i_id = $1 AND s_w_id = $2 "
      "FOR UPDATE",
      d_id);
}
}  // namespace tpcc_sql

namespace {

// NoGetStock(d) for d in 1..10, built once: static text for SqlStatement.
absl::string_view NoGetStockStatic(int d_id) {
  static const std::vector<std::string>* const kTexts = [] {
    auto* v = new std::vector<std::string>;
    for (int d = 0; d <= 10; ++d) v->push_back(tpcc_sql::NoGetStock(d));
    return v;
  }();
  return d_id >= 0 && d_id <= 10 ? absl::string_view((*kTexts)[d_id]) : absl::string_view();
}

constexpr absl::string_view V(const char* s) { return absl::string_view(s); }

}  // namespace

// The statements are bound in place (Add + parameter builders): into a
// reused BoundSql this allocates nothing per statement.
void AppendNewOrderSql(const NewOrderInput& in, BoundSql* out) {
  using namespace tpcc_sql;  // NOLINT
  out->Add(V(kNoGetWarehouse)).Int(in.w_id);
  out->Add(V(kNoGetDistrict)).Int(in.w_id).Int(in.d_id);
  out->Add(V(kNoBumpDistrict)).Int(in.w_id).Int(in.d_id);
  out->Add(V(kNoGetCustomer)).Int(in.w_id).Int(in.d_id).Int(in.c_id);
  out->Add(V(kNoInsertOrder))
      .Null()
      .Int(in.d_id)
      .Int(in.w_id)
      .Int(in.c_id)
      .Int(static_cast<int64_t>(in.lines.size()))
      .Int(in.all_local ? 1 : 0);
  out->Add(V(kNoInsertNewOrder)).Null().Int(in.d_id).Int(in.w_id);
  const absl::string_view get_stock = NoGetStockStatic(in.d_id);
  int number = 0;
  for (const NewOrderLine& l : in.lines) {
    ++number;
    out->Add(V(kNoGetItem)).Int(l.i_id);
    if (!get_stock.empty()) {
      out->Add(get_stock);
    } else {
      out->AddOwned(NoGetStock(in.d_id));
    }
    out->Int(l.i_id).Int(l.supply_w_id);
    out->Add(V(kNoUpdateStock))
        .Null()
        .Int(l.quantity)
        .Int(l.supply_w_id != in.w_id ? 1 : 0)
        .Int(l.i_id)
        .Int(l.supply_w_id);
    out->Add(V(kNoInsertOrderLine))
        .Null()
        .Int(in.d_id)
        .Int(in.w_id)
        .Int(number)
        .Int(l.i_id)
        .Int(l.supply_w_id)
        .Int(l.quantity)
        .Null()
        .Null();
  }
}

void AppendPaymentSql(const PaymentInput& in, BoundSql* out) {
  using namespace tpcc_sql;  // NOLINT
  const BoundValue amount = BoundValue::Num(in.h_amount);
  out->Add(V(kPayUpdateWarehouse)).Value(amount).Int(in.w_id);
  out->Add(V(kPayGetWarehouse)).Int(in.w_id);
  out->Add(V(kPayUpdateDistrict)).Value(amount).Int(in.w_id).Int(in.d_id);
  out->Add(V(kPayGetDistrict)).Int(in.w_id).Int(in.d_id);
  const BoundValue c = in.by_last_name ? BoundValue::Null() : BoundValue::Int(in.c_id);
  if (in.by_last_name) {
    out->Add(V(kCustomerIdsByLastName)).Int(in.c_w_id).Int(in.c_d_id).Str(in.c_last);
  }
  out->Add(V(kPayGetCustomer)).Int(in.c_w_id).Int(in.c_d_id).Value(c);
  out->Add(V(kPayUpdateCustomer)).Value(amount).Int(in.c_w_id).Int(in.c_d_id).Value(c);
  out->Add(V(kPayInsertHistory))
      .Value(c)
      .Int(in.c_d_id)
      .Int(in.c_w_id)
      .Int(in.d_id)
      .Int(in.w_id)
      .Value(amount)
      .Null();
}

void AppendOrderStatusSql(const OrderStatusInput& in, BoundSql* out) {
  using namespace tpcc_sql;  // NOLINT
  const BoundValue c = in.by_last_name ? BoundValue::Null() : BoundValue::Int(in.c_id);
  if (in.by_last_name) {
    out->Add(V(kCustomerIdsByLastName)).Int(in.w_id).Int(in.d_id).Str(in.c_last);
  }
  out->Add(V(kOsGetCustomer)).Int(in.w_id).Int(in.d_id).Value(c);
  out->Add(V(kOsGetLastOrder)).Int(in.w_id).Int(in.d_id).Value(c);
  out->Add(V(kOsGetOrderLines)).Int(in.w_id).Int(in.d_id).Null();
}

void AppendDeliverySql(const DeliveryInput& in, BoundSql* out) {
  using namespace tpcc_sql;  // NOLINT
  for (int d = 1; d <= in.districts; ++d) {
    out->Add(V(kDlvGetNewOrder)).Int(in.w_id).Int(d);
    out->Add(V(kDlvDeleteNewOrder)).Int(in.w_id).Int(d).Null();
    out->Add(V(kDlvGetOrder)).Int(in.w_id).Int(d).Null();
    out->Add(V(kDlvUpdateOrder)).Int(in.o_carrier_id).Int(in.w_id).Int(d).Null();
    out->Add(V(kDlvUpdateOrderLines)).Int(in.w_id).Int(d).Null();
    out->Add(V(kDlvSumOrderLines)).Int(in.w_id).Int(d).Null();
    out->Add(V(kDlvUpdateCustomer)).Null().Int(in.w_id).Int(d).Null();
  }
}

void AppendStockLevelSql(const StockLevelInput& in, BoundSql* out) {
  using namespace tpcc_sql;  // NOLINT
  out->Add(V(kSlGetDistrict)).Int(in.w_id).Int(in.d_id);
  out->Add(V(kSlCountLowStock))
      .Int(in.w_id)
      .Int(in.d_id)
      .Null()
      .Null()
      .Int(in.w_id)
      .Int(in.threshold);
}

void TpccTxn::AppendBound(BoundSql* out) const {
  switch (tpcc_type_) {
    case kNewOrder: return AppendNewOrderSql(new_order, out);
    case kPayment: return AppendPaymentSql(payment, out);
    case kOrderStatus: return AppendOrderStatusSql(order_status, out);
    case kDelivery: return AppendDeliverySql(delivery, out);
    case kStockLevel: return AppendStockLevelSql(stock_level, out);
  }
}

// ------------------------------------------------------------ procedures

absl::Status TpccTxn::Run(Tx& tx) {
  switch (tpcc_type_) {
    case kNewOrder: return RunNewOrder(tx);
    case kPayment: return RunPayment(tx);
    case kOrderStatus: return RunOrderStatus(tx);
    case kDelivery: return RunDelivery(tx);
    case kStockLevel: return RunStockLevel(tx);
  }
  return absl::InternalError("unknown TPC-C type");
}

// Declared in the procedures' program order (qstore's speculative execution
// gives a queue up once the program has moved past its declared rows).
bool TpccTxn::DeclareOwnAccesses(engine::AccessSet& set) const {
  switch (tpcc_type_) {
    case kNewOrder: {
      const NewOrderInput& in = new_order;
      set.Read(t_->warehouse, in.w_id);
      set.Write(t_->district, TpccDistrictKey(in.w_id, in.d_id));
      set.Read(t_->customer, TpccCustomerKey(in.w_id, in.d_id, in.c_id));
      set.Write(t_->orders, TpccOrderKey(in.w_id, in.d_id, 0));      // the (w, d) granule
      set.Write(t_->new_order, TpccOrderKey(in.w_id, in.d_id, 0));
      for (const NewOrderLine& l : in.lines) {
        set.Read(t_->item, l.i_id);
        set.Write(t_->stock, TpccStockKey(l.supply_w_id, l.i_id));
        set.Write(t_->order_line, TpccOrderLineKey(in.w_id, in.d_id, 0, 0));  // each line's insert
      }
      return true;
    }
    case kPayment: {
      const PaymentInput& in = payment;
      set.Write(t_->warehouse, in.w_id);
      set.Write(t_->district, TpccDistrictKey(in.w_id, in.d_id));
      if (in.by_last_name) {
        set.Write(t_->history, TpccHistorySlotKey(set.worker_id()));  // the slot's granule
        return false;
      }
      set.Write(t_->customer, TpccCustomerKey(in.c_w_id, in.c_d_id, in.c_id));
      set.Write(t_->history, TpccHistorySlotKey(set.worker_id()));
      return true;
    }
    case kOrderStatus: {
      const OrderStatusInput& in = order_status;
      if (!in.by_last_name) set.Read(t_->customer, TpccCustomerKey(in.w_id, in.d_id, in.c_id));
      set.Read(t_->orders, TpccOrderKey(in.w_id, in.d_id, 0));
      set.Read(t_->order_line, TpccOrderLineKey(in.w_id, in.d_id, 0, 0));
      return !in.by_last_name;
    }
    case kDelivery: {
      const DeliveryInput& in = delivery;
      for (int d = 1; d <= in.districts; ++d) {
        set.Write(t_->new_order, TpccOrderKey(in.w_id, d, 0));
        set.Write(t_->orders, TpccOrderKey(in.w_id, d, 0));
        set.Write(t_->order_line, TpccOrderLineKey(in.w_id, d, 0, 0));
      }
      return false;  // the customers of the oldest orders
    }
    case kStockLevel: {
      const StockLevelInput& in = stock_level;
      set.Read(t_->district, TpccDistrictKey(in.w_id, in.d_id));
      set.Read(t_->order_line, TpccOrderLineKey(in.w_id, in.d_id, 0, 0));
      return false;  // the stock rows of the last orders' items
    }
  }
  return false;
}

absl::Status TpccTxn::RunNewOrder(Tx& tx) {
  const NewOrderInput& in = new_order;
  ConstRow w;
  ENGINE_RETURN_IF_ERROR(tx.Read(t_->warehouse, in.w_id, &w));
  Row d;
  ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->district, TpccDistrictKey(in.w_id, in.d_id), &d));
  const int o_id = static_cast<int>(d.GetInt(D_NEXT_O_ID));
  d.SetInt(D_NEXT_O_ID, o_id + 1);
  const double w_tax = w.GetDouble(W_TAX), d_tax = d.GetDouble(D_TAX);
  ConstRow c;
  ENGINE_RETURN_IF_ERROR(tx.Read(t_->customer, TpccCustomerKey(in.w_id, in.d_id, in.c_id), &c));
  const double discount = c.GetDouble(C_DISCOUNT);
  if (insert_rows_) {
    Row o;
    ENGINE_RETURN_IF_ERROR(tx.Insert(t_->orders, TpccOrderKey(in.w_id, in.d_id, o_id), &o));
    o.SetInt(O_ID, o_id);
    o.SetInt(O_D_ID, in.d_id);
    o.SetInt(O_W_ID, in.w_id);
    o.SetInt(O_C_ID, in.c_id);
    o.SetInt(O_ENTRY_D, NowSeconds());
    o.SetInt(O_CARRIER_ID, 0);
    o.SetInt(O_OL_CNT, static_cast<int64_t>(in.lines.size()));
    o.SetInt(O_ALL_LOCAL, in.all_local ? 1 : 0);
    Row no;
    ENGINE_RETURN_IF_ERROR(tx.Insert(t_->new_order, TpccOrderKey(in.w_id, in.d_id, o_id), &no));
    no.SetInt(NO_O_ID, o_id);
    no.SetInt(NO_D_ID, in.d_id);
    no.SetInt(NO_W_ID, in.w_id);
  }
  double total = 0;
  int number = 0;
  for (const NewOrderLine& l : in.lines) {
    ++number;
    ConstRow item;
    absl::Status st = tx.Read(t_->item, l.i_id, &item);
    if (absl::IsNotFound(st)) return engine::UserAbortError("NewOrder: invalid item id");
    ENGINE_RETURN_IF_ERROR(st);
    Row s;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->stock, TpccStockKey(l.supply_w_id, l.i_id), &s));
    int64_t q = s.GetInt(S_QUANTITY);
    q = q >= l.quantity + 10 ? q - l.quantity : q - l.quantity + 91;
    s.SetInt(S_QUANTITY, q);
    s.AddInt(S_YTD, l.quantity);
    s.AddInt(S_ORDER_CNT, 1);
    if (l.supply_w_id != in.w_id) s.AddInt(S_REMOTE_CNT, 1);
    const double amount = std::round(l.quantity * item.GetDouble(I_PRICE) * 100) / 100;
    total += amount;
    if (!insert_rows_) continue;
    Row ol;
    ENGINE_RETURN_IF_ERROR(
        tx.Insert(t_->order_line, TpccOrderLineKey(in.w_id, in.d_id, o_id, number), &ol));
    ol.SetInt(OL_O_ID, o_id);
    ol.SetInt(OL_D_ID, in.d_id);
    ol.SetInt(OL_W_ID, in.w_id);
    ol.SetInt(OL_NUMBER, number);
    ol.SetInt(OL_I_ID, l.i_id);
    ol.SetInt(OL_SUPPLY_W_ID, l.supply_w_id);
    ol.SetInt(OL_DELIVERY_D, 0);
    ol.SetInt(OL_QUANTITY, l.quantity);
    ol.SetDouble(OL_AMOUNT, amount);
    ol.SetString(OL_DIST_INFO, s.GetString(S_DIST_01 + in.d_id - 1));
  }
  total *= (1 - discount) * (1 + w_tax + d_tax);
  (void)total;  // returned to the terminal in the specification
  return absl::OkStatus();
}

absl::Status TpccTxn::FindCustomerByLastName(Tx& tx, int w, int d, const std::string& last,
                                             int* c_id) {
  const int num = LastNameNumber(last);
  ScanSpec spec;
  spec.index = t_->customer_by_name;
  spec.lo = spec.hi = CustomerNameKey(w, d, num);
  std::vector<ConstRow> rows;
  ENGINE_RETURN_IF_ERROR(tx.Scan(spec, &rows));
  if (rows.empty()) return absl::NotFoundError(absl::StrCat("no customer named ", last));
  std::sort(rows.begin(), rows.end(), [](const ConstRow& a, const ConstRow& b) {
    absl::string_view fa = a.GetString(C_FIRST), fb = b.GetString(C_FIRST);
    return fa != fb ? fa < fb : a.GetInt(C_ID) < b.GetInt(C_ID);
  });
  *c_id = static_cast<int>(rows[(rows.size() - 1) / 2].GetInt(C_ID));  // position ceil(n/2)
  return absl::OkStatus();
}

absl::Status TpccTxn::RunPayment(Tx& tx) {
  const PaymentInput& in = payment;
  Row w;
  ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->warehouse, in.w_id, &w));
  w.AddDouble(W_YTD, in.h_amount);
  Row d;
  ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->district, TpccDistrictKey(in.w_id, in.d_id), &d));
  d.AddDouble(D_YTD, in.h_amount);
  int c_id = in.c_id;
  if (in.by_last_name) {
    ENGINE_RETURN_IF_ERROR(FindCustomerByLastName(tx, in.c_w_id, in.c_d_id, in.c_last, &c_id));
  }
  Row c;
  ENGINE_RETURN_IF_ERROR(
      tx.ReadForUpdate(t_->customer, TpccCustomerKey(in.c_w_id, in.c_d_id, c_id), &c));
  c.AddDouble(C_BALANCE, -in.h_amount);
  c.AddDouble(C_YTD_PAYMENT, in.h_amount);
  c.AddInt(C_PAYMENT_CNT, 1);
  if (insert_rows_ && c.GetString(C_CREDIT) == "BC") {
    std::string data = absl::StrCat(c_id, " ", in.c_d_id, " ", in.c_w_id, " ", in.d_id, " ",
                                    in.w_id, " ", in.h_amount, "|", c.GetString(C_DATA));
    if (data.size() > 500) data.resize(500);
    c.SetString(C_DATA, data);
  }
  if (!insert_rows_) return absl::OkStatus();
  const uint64_t seq = history_seq_->fetch_add(1, std::memory_order_relaxed);
  Row h;
  ENGINE_RETURN_IF_ERROR(tx.Insert(t_->history, HistoryKey(tx.worker_id() + 1, seq), &h));
  h.SetInt(H_C_ID, c_id);
  h.SetInt(H_C_D_ID, in.c_d_id);
  h.SetInt(H_C_W_ID, in.c_w_id);
  h.SetInt(H_D_ID, in.d_id);
  h.SetInt(H_W_ID, in.w_id);
  h.SetInt(H_DATE, NowSeconds());
  h.SetDouble(H_AMOUNT, in.h_amount);
  h.SetString(H_DATA, absl::StrCat(w.GetString(W_NAME), "    ", d.GetString(D_NAME)));
  return absl::OkStatus();
}

absl::Status TpccTxn::RunOrderStatus(Tx& tx) {
  const OrderStatusInput& in = order_status;
  int c_id = in.c_id;
  if (in.by_last_name) {
    ENGINE_RETURN_IF_ERROR(FindCustomerByLastName(tx, in.w_id, in.d_id, in.c_last, &c_id));
  }
  ConstRow c;
  ENGINE_RETURN_IF_ERROR(tx.Read(t_->customer, TpccCustomerKey(in.w_id, in.d_id, c_id), &c));
  ScanSpec spec;
  spec.index = t_->orders_by_customer;
  spec.lo = OrderByCustomerKey(in.w_id, in.d_id, c_id, 0);
  spec.hi = OrderByCustomerKey(in.w_id, in.d_id, c_id, (1 << 24) - 1);
  spec.limit = 1;
  spec.descending = true;
  std::vector<ConstRow> rows;
  ENGINE_RETURN_IF_ERROR(tx.Scan(spec, &rows));
  if (rows.empty()) return absl::OkStatus();  // a customer without orders
  const int o_id = static_cast<int>(rows[0].GetInt(O_ID));
  spec = ScanSpec();
  spec.index = t_->order_line->primary_ordered();
  spec.lo = TpccOrderLineKey(in.w_id, in.d_id, o_id, 0);
  spec.hi = TpccOrderLineKey(in.w_id, in.d_id, o_id, 255);
  return tx.Scan(spec, &rows);
}

absl::Status TpccTxn::RunDelivery(Tx& tx) {
  const DeliveryInput& in = delivery;
  std::vector<ConstRow> rows;
  for (int d = 1; d <= in.districts; ++d) {
    ScanSpec spec;
    spec.index = t_->new_order->primary_ordered();
    spec.lo = TpccOrderKey(in.w_id, d, 0);
    spec.hi = TpccOrderKey(in.w_id, d, std::numeric_limits<int32_t>::max());
    spec.limit = 1;
    spec.for_update = true;
    ENGINE_RETURN_IF_ERROR(tx.Scan(spec, &rows));
    if (rows.empty()) continue;  // no undelivered order in this district
    const int o_id = static_cast<int>(rows[0].GetInt(NO_O_ID));
    ENGINE_RETURN_IF_ERROR(tx.Delete(t_->new_order, TpccOrderKey(in.w_id, d, o_id)));
    Row o;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->orders, TpccOrderKey(in.w_id, d, o_id), &o));
    o.SetInt(O_CARRIER_ID, in.o_carrier_id);
    const int c_id = static_cast<int>(o.GetInt(O_C_ID));
    const int ol_cnt = static_cast<int>(o.GetInt(O_OL_CNT));
    double total = 0;
    const int64_t now = NowSeconds();
    for (int n = 1; n <= ol_cnt; ++n) {
      Row ol;
      ENGINE_RETURN_IF_ERROR(
          tx.ReadForUpdate(t_->order_line, TpccOrderLineKey(in.w_id, d, o_id, n), &ol));
      ol.SetInt(OL_DELIVERY_D, now);
      total += ol.GetDouble(OL_AMOUNT);
    }
    Row c;
    ENGINE_RETURN_IF_ERROR(tx.ReadForUpdate(t_->customer, TpccCustomerKey(in.w_id, d, c_id), &c));
    c.AddDouble(C_BALANCE, total);
    c.AddInt(C_DELIVERY_CNT, 1);
  }
  return absl::OkStatus();
}

absl::Status TpccTxn::RunStockLevel(Tx& tx) {
  const StockLevelInput& in = stock_level;
  ConstRow d;
  ENGINE_RETURN_IF_ERROR(tx.Read(t_->district, TpccDistrictKey(in.w_id, in.d_id), &d));
  const int next = static_cast<int>(d.GetInt(D_NEXT_O_ID));
  const int first = std::max(1, next - in.orders);
  ScanSpec spec;
  spec.index = t_->order_line->primary_ordered();
  spec.lo = TpccOrderLineKey(in.w_id, in.d_id, first, 0);
  spec.hi = TpccOrderLineKey(in.w_id, in.d_id, next - 1, 255);
  std::vector<ConstRow> lines;
  ENGINE_RETURN_IF_ERROR(tx.Scan(spec, &lines));
  absl::flat_hash_set<int> items;
  for (const ConstRow& l : lines) items.insert(static_cast<int>(l.GetInt(OL_I_ID)));
  int low = 0;
  for (int i : items) {
    ConstRow s;
    ENGINE_RETURN_IF_ERROR(tx.Read(t_->stock, TpccStockKey(in.w_id, i), &s));
    if (s.GetInt(S_QUANTITY) < in.threshold) ++low;
  }
  (void)low;
  return absl::OkStatus();
}

// ------------------------------------------------------------ workload

TpccWorkload::TpccWorkload(TpccParams params, std::string name)
    : p_(std::move(params)), name_(std::move(name)) {
  double sum = 0;
  for (size_t i = 0; i < 5; ++i) {
    sum += i < p_.mix.size() ? p_.mix[i] : 0;
    cum_mix_.push_back(sum);
  }
  a_c_id_ = ScaleA(1023, 3000, p_.customers_per_district);
  a_item_ = ScaleA(8191, 100000, p_.items);
  last_names_ = std::min(1000, p_.customers_per_district);
  a_last_ = ScaleA(255, 1000, last_names_);
}

int TpccWorkload::orders_per_district() const {
  return p_.orders_per_district < 0 ? p_.customers_per_district : p_.orders_per_district;
}

const std::vector<std::string>& TpccWorkload::TxnTypeNames() const {
  static const auto* names = new std::vector<std::string>{
      "NewOrder", "Payment", "OrderStatus", "Delivery", "StockLevel"};
  return *names;
}

int TpccWorkload::NURand(Rng& rng, int a, int c, int x, int y) {
  return static_cast<int>((((rng.Uniform(0, a) | rng.Uniform(x, y)) + c) % (y - x + 1)) + x);
}
int TpccWorkload::RandomCustomerId(Rng& rng) const {
  return NURand(rng, a_c_id_, p_.c_id_c, 1, p_.customers_per_district);
}
int TpccWorkload::RandomItemId(Rng& rng) const {
  return NURand(rng, a_item_, p_.c_ol_i_id, 1, p_.items);
}
std::string TpccWorkload::RandomLastName(Rng& rng, bool load) const {
  return TpccLastName(
      NURand(rng, a_last_, load ? p_.c_last_load : p_.c_last_run, 0, last_names_ - 1));
}

void TpccWorkload::OnPhases() {
  phase_zipf_.clear();
  for (const SkewPhase& ph : phases()) {
    phase_zipf_.push_back(ph.zipf_theta > 0
                              ? std::make_unique<Zipf>(p_.warehouses, ph.zipf_theta)
                              : nullptr);
  }
}

int TpccWorkload::HomeWarehouse(Rng& rng) const {
  const int ph = phase();
  if (ph >= 0 && ph < static_cast<int>(phase_zipf_.size()) && phase_zipf_[ph] != nullptr) {
    return static_cast<int>(
        ShiftKey(1 + static_cast<int64_t>(phase_zipf_[ph]->Draw(rng)), phases()[ph].hot_offset, p_.warehouses));
  }
  return static_cast<int>(rng.Uniform(1, p_.warehouses));
}

namespace {
int OtherWarehouse(Rng& rng, int w, int n) {
  int o = static_cast<int>(rng.Uniform(1, n - 1));
  return o >= w ? o + 1 : o;
}
}  // namespace

std::unique_ptr<TpccTxn> TpccWorkload::MakeNewOrder(Rng& rng, int w) const {
  auto t = std::make_unique<TpccTxn>(&t_, &history_seq_, kNewOrder, p_.insert_rows);
  NewOrderInput& in = t->new_order;
  in.w_id = w;
  in.d_id = static_cast<int>(rng.Uniform(1, p_.districts_per_warehouse));
  in.c_id = RandomCustomerId(rng);
  const int n = static_cast<int>(rng.Uniform(p_.min_ol_cnt, p_.max_ol_cnt));
  in.rollback = rng.Chance(p_.invalid_item_prob);
  for (int i = 0; i < n; ++i) {
    NewOrderLine l;
    l.i_id = RandomItemId(rng);
    l.supply_w_id = w;
    if (p_.warehouses > 1 && rng.Chance(p_.remote_item_prob)) {
      l.supply_w_id = OtherWarehouse(rng, w, p_.warehouses);
      in.all_local = false;
    }
    l.quantity = static_cast<int>(rng.Uniform(1, 10));
    in.lines.push_back(l);
  }
  if (in.rollback) in.lines.back().i_id = p_.items + 1;  // an unused item id
  t->type = TxnTypeId(kNewOrder);
  t->partition_key = static_cast<uint64_t>(w);
  return t;
}

std::unique_ptr<TpccTxn> TpccWorkload::MakePayment(Rng& rng, int w) const {
  auto t = std::make_unique<TpccTxn>(&t_, &history_seq_, kPayment, p_.insert_rows);
  PaymentInput& in = t->payment;
  in.w_id = w;
  in.d_id = static_cast<int>(rng.Uniform(1, p_.districts_per_warehouse));
  if (p_.warehouses > 1 && rng.Chance(p_.remote_payment_prob)) {
    in.c_w_id = OtherWarehouse(rng, w, p_.warehouses);
    in.c_d_id = static_cast<int>(rng.Uniform(1, p_.districts_per_warehouse));
  } else {
    in.c_w_id = w;
    in.c_d_id = in.d_id;
  }
  in.by_last_name = rng.Chance(p_.by_last_name_prob);
  if (in.by_last_name) {
    in.c_last = RandomLastName(rng, /*load=*/false);
  } else {
    in.c_id = RandomCustomerId(rng);
  }
  in.h_amount = Cents(rng.Uniform(100, 500000));
  t->type = TxnTypeId(kPayment);
  t->partition_key = static_cast<uint64_t>(w);
  return t;
}

std::unique_ptr<TpccTxn> TpccWorkload::MakeOrderStatus(Rng& rng, int w) const {
  auto t = std::make_unique<TpccTxn>(&t_, &history_seq_, kOrderStatus, p_.insert_rows);
  OrderStatusInput& in = t->order_status;
  in.w_id = w;
  in.d_id = static_cast<int>(rng.Uniform(1, p_.districts_per_warehouse));
  in.by_last_name = rng.Chance(p_.by_last_name_prob);
  if (in.by_last_name) {
    in.c_last = RandomLastName(rng, /*load=*/false);
  } else {
    in.c_id = RandomCustomerId(rng);
  }
  t->type = TxnTypeId(kOrderStatus);
  t->partition_key = static_cast<uint64_t>(w);
  return t;
}

std::unique_ptr<TpccTxn> TpccWorkload::MakeDelivery(Rng& rng, int w) const {
  auto t = std::make_unique<TpccTxn>(&t_, &history_seq_, kDelivery, p_.insert_rows);
  t->delivery.w_id = w;
  t->delivery.o_carrier_id = static_cast<int>(rng.Uniform(1, 10));
  t->delivery.districts = p_.districts_per_warehouse;
  t->type = TxnTypeId(kDelivery);
  t->partition_key = static_cast<uint64_t>(w);
  return t;
}

std::unique_ptr<TpccTxn> TpccWorkload::MakeStockLevel(Rng& rng, int w) const {
  auto t = std::make_unique<TpccTxn>(&t_, &history_seq_, kStockLevel, p_.insert_rows);
  t->stock_level.w_id = w;
  t->stock_level.d_id = static_cast<int>(rng.Uniform(1, p_.districts_per_warehouse));
  t->stock_level.threshold =
      static_cast<int>(rng.Uniform(p_.stock_threshold_min, p_.stock_threshold_max));
  t->stock_level.orders = p_.stock_level_orders;
  t->type = TxnTypeId(kStockLevel);
  t->partition_key = static_cast<uint64_t>(w);
  return t;
}

std::unique_ptr<WorkloadTxn> TpccWorkload::Next(Rng& rng) const {
  const int w = HomeWarehouse(rng);
  const double x = rng.Double() * cum_mix_.back();
  if (x < cum_mix_[0]) return MakeNewOrder(rng, w);
  if (x < cum_mix_[1]) return MakePayment(rng, w);
  if (x < cum_mix_[2]) return MakeOrderStatus(rng, w);
  if (x < cum_mix_[3]) return MakeDelivery(rng, w);
  return MakeStockLevel(rng, w);
}

// ------------------------------------------------------------ loading

absl::Status TpccWorkload::Load(engine::Database* db) {
  if (p_.warehouses < 1 || p_.warehouses > 65535 || p_.items < 1 || p_.items >= (1 << 24) - 1 ||
      p_.districts_per_warehouse < 1 || p_.districts_per_warehouse > 99 ||
      p_.customers_per_district < 1 || p_.customers_per_district > 65535) {
    return absl::InvalidArgumentError("TPC-C parameters out of range");
  }
  const int W = p_.warehouses, D = p_.districts_per_warehouse, C = p_.customers_per_district;
  const int O = orders_per_district();
  const size_t wd = static_cast<size_t>(W) * D;
  auto table = [&](const char* name, const Schema& s, bool ordered,
                   size_t rows) -> absl::StatusOr<engine::Table*> {
    engine::TableOptions opt;
    opt.ordered = ordered;
    opt.expected_rows = rows;
    return db->CreateTable(name, s, opt);
  };
#define TPCC_ASSIGN(lhs, expr)          \
  do {                                  \
    auto r_ = (expr);                   \
    if (!r_.ok()) return r_.status();   \
    lhs = *r_;                          \
  } while (0)
  TPCC_ASSIGN(t_.warehouse,
              table("warehouse",
                    MakeSchema({{"w_id", 'i', 0}, {"w_name", 's', 10}, {"w_street_1", 's', 20},
                                {"w_street_2", 's', 20}, {"w_city", 's', 20}, {"w_state", 's', 2},
                                {"w_zip", 's', 9}, {"w_tax", 'd', 0}, {"w_ytd", 'd', 0}}),
                    false, W));
  TPCC_ASSIGN(t_.district,
              table("district",
                    MakeSchema({{"d_id", 'i', 0}, {"d_w_id", 'i', 0}, {"d_name", 's', 10},
                                {"d_street_1", 's', 20}, {"d_street_2", 's', 20},
                                {"d_city", 's', 20}, {"d_state", 's', 2}, {"d_zip", 's', 9},
                                {"d_tax", 'd', 0}, {"d_ytd", 'd', 0}, {"d_next_o_id", 'i', 0}}),
                    false, wd));
  TPCC_ASSIGN(
      t_.customer,
      table("customer",
            MakeSchema({{"c_id", 'i', 0},         {"c_d_id", 'i', 0},        {"c_w_id", 'i', 0},
                        {"c_first", 's', 16},     {"c_middle", 's', 2},      {"c_last", 's', 16},
                        {"c_street_1", 's', 20},  {"c_street_2", 's', 20},   {"c_city", 's', 20},
                        {"c_state", 's', 2},      {"c_zip", 's', 9},         {"c_phone", 's', 16},
                        {"c_since", 'i', 0},      {"c_credit", 's', 2},      {"c_credit_lim", 'd', 0},
                        {"c_discount", 'd', 0},   {"c_balance", 'd', 0},     {"c_ytd_payment", 'd', 0},
                        {"c_payment_cnt", 'i', 0}, {"c_delivery_cnt", 'i', 0}, {"c_data", 's', 500}}),
            false, wd * C));
  TPCC_ASSIGN(t_.history,
              table("history",
                    MakeSchema({{"h_c_id", 'i', 0}, {"h_c_d_id", 'i', 0}, {"h_c_w_id", 'i', 0},
                                {"h_d_id", 'i', 0}, {"h_w_id", 'i', 0}, {"h_date", 'i', 0},
                                {"h_amount", 'd', 0}, {"h_data", 's', 24}}),
                    false, wd * C * 2));
  TPCC_ASSIGN(t_.orders,
              table("orders",
                    MakeSchema({{"o_id", 'i', 0}, {"o_d_id", 'i', 0}, {"o_w_id", 'i', 0},
                                {"o_c_id", 'i', 0}, {"o_entry_d", 'i', 0},
                                {"o_carrier_id", 'i', 0}, {"o_ol_cnt", 'i', 0},
                                {"o_all_local", 'i', 0}}),
                    true, wd * O * 2));
  TPCC_ASSIGN(t_.new_order,
              table("new_order",
                    MakeSchema({{"no_o_id", 'i', 0}, {"no_d_id", 'i', 0}, {"no_w_id", 'i', 0}}),
                    true, wd * O));
  TPCC_ASSIGN(t_.item,
              table("item",
                    MakeSchema({{"i_id", 'i', 0}, {"i_im_id", 'i', 0}, {"i_name", 's', 24},
                                {"i_price", 'd', 0}, {"i_data", 's', 50}}),
                    false, p_.items));
  TPCC_ASSIGN(
      t_.stock,
      table("stock",
            MakeSchema({{"s_i_id", 'i', 0},      {"s_w_id", 'i', 0},      {"s_quantity", 'i', 0},
                        {"s_dist_01", 's', 24},  {"s_dist_02", 's', 24},  {"s_dist_03", 's', 24},
                        {"s_dist_04", 's', 24},  {"s_dist_05", 's', 24},  {"s_dist_06", 's', 24},
                        {"s_dist_07", 's', 24},  {"s_dist_08", 's', 24},  {"s_dist_09", 's', 24},
                        {"s_dist_10", 's', 24},  {"s_ytd", 'i', 0},       {"s_order_cnt", 'i', 0},
                        {"s_remote_cnt", 'i', 0}, {"s_data", 's', 50}}),
            false, static_cast<size_t>(W) * p_.items));
  TPCC_ASSIGN(
      t_.order_line,
      table("order_line",
            MakeSchema({{"ol_o_id", 'i', 0}, {"ol_d_id", 'i', 0}, {"ol_w_id", 'i', 0},
                        {"ol_number", 'i', 0}, {"ol_i_id", 'i', 0}, {"ol_supply_w_id", 'i', 0},
                        {"ol_delivery_d", 'i', 0}, {"ol_quantity", 'i', 0},
                        {"ol_amount", 'd', 0}, {"ol_dist_info", 's', 24}}),
            true, wd * O * 20));
  TPCC_ASSIGN(t_.customer_by_name,
              db->CreateIndex(t_.customer, "customer_by_name", [](const ConstRow& r) {
                return CustomerNameKey(static_cast<int>(r.GetInt(C_W_ID)),
                                       static_cast<int>(r.GetInt(C_D_ID)),
                                       LastNameNumber(r.GetString(C_LAST)));
              }));
  TPCC_ASSIGN(t_.orders_by_customer,
              db->CreateIndex(t_.orders, "orders_by_customer", [](const ConstRow& r) {
                return OrderByCustomerKey(
                    static_cast<int>(r.GetInt(O_W_ID)), static_cast<int>(r.GetInt(O_D_ID)),
                    static_cast<int>(r.GetInt(O_C_ID)), static_cast<int>(r.GetInt(O_ID)));
              }));
#undef TPCC_ASSIGN
  // Lock granules of the planned protocols (see TpccTxn::DeclareOwnAccesses):
  // (w, d) for orders, new orders and order lines, the worker slot for history.
  ENGINE_RETURN_IF_ERROR(db->SetLockGranule(t_.orders, 32));
  ENGINE_RETURN_IF_ERROR(db->SetLockGranule(t_.new_order, 32));
  ENGINE_RETURN_IF_ERROR(db->SetLockGranule(t_.order_line, 32));
  ENGINE_RETURN_IF_ERROR(db->SetLockGranule(t_.history, 56));

  Rng rng(p_.load_seed);
  const int64_t now = NowSeconds();
  for (int i = 1; i <= p_.items; ++i) {
    ENGINE_RETURN_IF_ERROR(db->Load(t_.item, i, [&](const Row& r) {
      r.SetInt(I_ID, i);
      r.SetInt(I_IM_ID, rng.Uniform(1, 10000));
      r.SetString(I_NAME, RandomAString(rng, 14, 24));
      r.SetDouble(I_PRICE, Cents(rng.Uniform(100, 10000)));
      r.SetString(I_DATA, DataWithOriginal(rng, 26, 50));
    }));
  }
  const int first_new_order = O - static_cast<int>(std::lround(O * p_.new_order_fraction)) + 1;
  uint64_t hist_seq = 0;
  std::vector<int> perm(O);
  for (int w = 1; w <= W; ++w) {
    ENGINE_RETURN_IF_ERROR(db->Load(t_.warehouse, w, [&](const Row& r) {
      r.SetInt(W_ID, w);
      r.SetString(W_NAME, RandomAString(rng, 6, 10));
      r.SetString(W_STREET_1, RandomAString(rng, 10, 20));
      r.SetString(W_STREET_2, RandomAString(rng, 10, 20));
      r.SetString(W_CITY, RandomAString(rng, 10, 20));
      r.SetString(W_STATE, RandomAString(rng, 2, 2));
      r.SetString(W_ZIP, Zip(rng));
      r.SetDouble(W_TAX, rng.Uniform(0, 2000) / 10000.0);
      r.SetDouble(W_YTD, 30000.0 * D);
    }));
    for (int i = 1; i <= p_.items; ++i) {
      ENGINE_RETURN_IF_ERROR(db->Load(t_.stock, TpccStockKey(w, i), [&](const Row& r) {
        r.SetInt(S_I_ID, i);
        r.SetInt(S_W_ID, w);
        r.SetInt(S_QUANTITY, rng.Uniform(10, 100));
        for (int k = 0; k < 10; ++k) r.SetString(S_DIST_01 + k, RandomAString(rng, 24, 24));
        r.SetString(S_DATA, DataWithOriginal(rng, 26, 50));
      }));
    }
    for (int d = 1; d <= D; ++d) {
      ENGINE_RETURN_IF_ERROR(db->Load(t_.district, TpccDistrictKey(w, d), [&](const Row& r) {
        r.SetInt(D_ID, d);
        r.SetInt(D_W_ID, w);
        r.SetString(D_NAME, RandomAString(rng, 6, 10));
        r.SetString(D_STREET_1, RandomAString(rng, 10, 20));
        r.SetString(D_STREET_2, RandomAString(rng, 10, 20));
        r.SetString(D_CITY, RandomAString(rng, 10, 20));
        r.SetString(D_STATE, RandomAString(rng, 2, 2));
        r.SetString(D_ZIP, Zip(rng));
        r.SetDouble(D_TAX, rng.Uniform(0, 2000) / 10000.0);
        r.SetDouble(D_YTD, 30000.0);
        r.SetInt(D_NEXT_O_ID, O + 1);
      }));
      for (int c = 1; c <= C; ++c) {
        ENGINE_RETURN_IF_ERROR(db->Load(t_.customer, TpccCustomerKey(w, d, c), [&](const Row& r) {
          r.SetInt(C_ID, c);
          r.SetInt(C_D_ID, d);
          r.SetInt(C_W_ID, w);
          r.SetString(C_FIRST, RandomAString(rng, 8, 16));
          r.SetString(C_MIDDLE, "OE");
          r.SetString(C_LAST, c <= last_names_ ? TpccLastName(c - 1)
                                                : RandomLastName(rng, /*load=*/true));
          r.SetString(C_STREET_1, RandomAString(rng, 10, 20));
          r.SetString(C_STREET_2, RandomAString(rng, 10, 20));
          r.SetString(C_CITY, RandomAString(rng, 10, 20));
          r.SetString(C_STATE, RandomAString(rng, 2, 2));
          r.SetString(C_ZIP, Zip(rng));
          r.SetString(C_PHONE, RandomNString(rng, 16));
          r.SetInt(C_SINCE, now);
          r.SetString(C_CREDIT, rng.Chance(0.10) ? "BC" : "GC");
          r.SetDouble(C_CREDIT_LIM, 50000);
          r.SetDouble(C_DISCOUNT, rng.Uniform(0, 5000) / 10000.0);
          r.SetDouble(C_BALANCE, -10);
          r.SetDouble(C_YTD_PAYMENT, 10);
          r.SetInt(C_PAYMENT_CNT, 1);
          r.SetInt(C_DELIVERY_CNT, 0);
          r.SetString(C_DATA, RandomAString(rng, 300, 500));
        }));
        ENGINE_RETURN_IF_ERROR(db->Load(t_.history, HistoryKey(0, hist_seq++), [&](const Row& r) {
          r.SetInt(H_C_ID, c);
          r.SetInt(H_C_D_ID, d);
          r.SetInt(H_C_W_ID, w);
          r.SetInt(H_D_ID, d);
          r.SetInt(H_W_ID, w);
          r.SetInt(H_DATE, now);
          r.SetDouble(H_AMOUNT, 10);
          r.SetString(H_DATA, RandomAString(rng, 12, 24));
        }));
      }
      // Orders: customer ids a random permutation (1..C repeated if O > C).
      for (int o = 0; o < O; ++o) perm[o] = o % C + 1;
      for (int o = O - 1; o > 0; --o) std::swap(perm[o], perm[rng.Uniform(0, o)]);
      for (int o = 1; o <= O; ++o) {
        const bool delivered = o < first_new_order;
        const int ol_cnt = static_cast<int>(rng.Uniform(p_.min_ol_cnt, p_.max_ol_cnt));
        ENGINE_RETURN_IF_ERROR(db->Load(t_.orders, TpccOrderKey(w, d, o), [&](const Row& r) {
          r.SetInt(O_ID, o);
          r.SetInt(O_D_ID, d);
          r.SetInt(O_W_ID, w);
          r.SetInt(O_C_ID, perm[o - 1]);
          r.SetInt(O_ENTRY_D, now);
          r.SetInt(O_CARRIER_ID, delivered ? rng.Uniform(1, 10) : 0);
          r.SetInt(O_OL_CNT, ol_cnt);
          r.SetInt(O_ALL_LOCAL, 1);
        }));
        for (int n = 1; n <= ol_cnt; ++n) {
          ENGINE_RETURN_IF_ERROR(
              db->Load(t_.order_line, TpccOrderLineKey(w, d, o, n), [&](const Row& r) {
                r.SetInt(OL_O_ID, o);
                r.SetInt(OL_D_ID, d);
                r.SetInt(OL_W_ID, w);
                r.SetInt(OL_NUMBER, n);
                r.SetInt(OL_I_ID, rng.Uniform(1, p_.items));
                r.SetInt(OL_SUPPLY_W_ID, w);
                r.SetInt(OL_DELIVERY_D, delivered ? now : 0);
                r.SetInt(OL_QUANTITY, 5);
                r.SetDouble(OL_AMOUNT, delivered ? 0.0 : Cents(rng.Uniform(1, 999999)));
                r.SetString(OL_DIST_INFO, RandomAString(rng, 24, 24));
              }));
        }
        if (!delivered) {
          ENGINE_RETURN_IF_ERROR(db->Load(t_.new_order, TpccOrderKey(w, d, o), [&](const Row& r) {
            r.SetInt(NO_O_ID, o);
            r.SetInt(NO_D_ID, d);
            r.SetInt(NO_W_ID, w);
          }));
        }
      }
    }
  }
  loaded_history_rows_ = hist_seq;
  return absl::OkStatus();
}

// ------------------------------------------------------------ consistency

namespace {
// Present rows of `index` with keys in [lo, hi] (quiescent).
std::vector<ConstRow> QuiescentScan(const engine::Database& db, const engine::OrderedIndex* index,
                                    uint64_t lo, uint64_t hi) {
  std::vector<engine::OrderedIndex::Entry> entries;
  index->Collect(lo, hi, false, false, {0, 0}, kAll, &entries);
  std::vector<ConstRow> rows;
  rows.reserve(entries.size());
  for (const auto& e : entries) {
    ConstRow r;
    if (db.Peek(index->table(), e.pk, &r).ok()) rows.push_back(r);
  }
  return rows;
}
}  // namespace

absl::Status TpccWorkload::ForEachRow(const engine::Database& db, const RowFn& fn) const {
  if (t_.warehouse == nullptr) return absl::FailedPreconditionError("TPC-C not loaded");
  const int W = p_.warehouses, D = p_.districts_per_warehouse, C = p_.customers_per_district;
  auto visit = [&](const engine::Table* t, uint64_t key) -> absl::Status {
    ConstRow r;
    if (!db.Peek(t, key, &r).ok()) return absl::OkStatus();
    return fn(*t, r);
  };
  auto visit_ordered = [&](const engine::Table* t) -> absl::Status {
    for (const ConstRow& r : QuiescentScan(db, t->primary_ordered(), 0, kAll)) {
      ENGINE_RETURN_IF_ERROR(fn(*t, r));
    }
    return absl::OkStatus();
  };
  for (int i = 1; i <= p_.items; ++i) ENGINE_RETURN_IF_ERROR(visit(t_.item, i));
  for (int w = 1; w <= W; ++w) ENGINE_RETURN_IF_ERROR(visit(t_.warehouse, w));
  for (int w = 1; w <= W; ++w) {
    for (int i = 1; i <= p_.items; ++i) ENGINE_RETURN_IF_ERROR(visit(t_.stock, TpccStockKey(w, i)));
  }
  for (int w = 1; w <= W; ++w) {
    for (int d = 1; d <= D; ++d) ENGINE_RETURN_IF_ERROR(visit(t_.district, TpccDistrictKey(w, d)));
  }
  for (int w = 1; w <= W; ++w) {
    for (int d = 1; d <= D; ++d) {
      for (int c = 1; c <= C; ++c) {
        ENGINE_RETURN_IF_ERROR(visit(t_.customer, TpccCustomerKey(w, d, c)));
      }
    }
  }
  // History rows of the initial population (slot 0); rows inserted by runs
  // are not visited (their keys are not enumerable without a scan).
  for (uint64_t k = 0; k < loaded_history_rows_; ++k) {
    ENGINE_RETURN_IF_ERROR(visit(t_.history, HistoryKey(0, k)));
  }
  ENGINE_RETURN_IF_ERROR(visit_ordered(t_.orders));
  ENGINE_RETURN_IF_ERROR(visit_ordered(t_.new_order));
  return visit_ordered(t_.order_line);
}

absl::Status TpccWorkload::Check(const engine::Database& db) const {
  if (t_.warehouse == nullptr) return absl::FailedPreconditionError("TPC-C not loaded");
  const int W = p_.warehouses, D = p_.districts_per_warehouse;
  for (int w = 1; w <= W; ++w) {
    ConstRow wr;
    ENGINE_RETURN_IF_ERROR(db.Peek(t_.warehouse, w, &wr));
    double sum_d_ytd = 0;
    for (int d = 1; d <= D; ++d) {
      ConstRow dr;
      ENGINE_RETURN_IF_ERROR(db.Peek(t_.district, TpccDistrictKey(w, d), &dr));
      sum_d_ytd += dr.GetDouble(D_YTD);
      // Without row inserts (DBx1000's variant) D_NEXT_O_ID advances with no
      // orders behind it: only condition 1 applies.
      if (!p_.insert_rows) continue;
      const int64_t next = dr.GetInt(D_NEXT_O_ID);
      // Condition 2: D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID).
      std::vector<ConstRow> orders = QuiescentScan(
          db, t_.orders->primary_ordered(), TpccOrderKey(w, d, 0), TpccOrderKey(w, d, INT32_MAX));
      const int64_t max_o = orders.empty() ? 0 : orders.back().GetInt(O_ID);
      if (max_o != next - 1) {
        return absl::DataLossError(absl::StrCat(
            "TPC-C consistency condition 2 violated (w=", w, ", d=", d, "): D_NEXT_O_ID - 1 = ",
            next - 1, " but max(O_ID) = ", max_o));
      }
      std::vector<ConstRow> nos =
          QuiescentScan(db, t_.new_order->primary_ordered(), TpccOrderKey(w, d, 0),
                        TpccOrderKey(w, d, INT32_MAX));
      if (!nos.empty()) {
        const int64_t max_no = nos.back().GetInt(NO_O_ID), min_no = nos.front().GetInt(NO_O_ID);
        if (max_no != next - 1) {
          return absl::DataLossError(absl::StrCat(
              "TPC-C consistency condition 2 violated (w=", w, ", d=", d, "): D_NEXT_O_ID - 1 = ",
              next - 1, " but max(NO_O_ID) = ", max_no));
        }
        // Condition 3: max(NO_O_ID) - min(NO_O_ID) + 1 = rows in new_order.
        if (max_no - min_no + 1 != static_cast<int64_t>(nos.size())) {
          return absl::DataLossError(absl::StrCat(
              "TPC-C consistency condition 3 violated (w=", w, ", d=", d, "): max(NO_O_ID) - ",
              "min(NO_O_ID) + 1 = ", max_no - min_no + 1, " but new_order has ", nos.size(),
              " rows"));
        }
      }
      // Condition 4: sum(O_OL_CNT) = rows in order_line.
      int64_t sum_ol_cnt = 0;
      for (const ConstRow& o : orders) sum_ol_cnt += o.GetInt(O_OL_CNT);
      std::vector<ConstRow> lines =
          QuiescentScan(db, t_.order_line->primary_ordered(), TpccOrderLineKey(w, d, 0, 0),
                        TpccOrderLineKey(w, d, (1 << 24) - 1, 255));
      if (sum_ol_cnt != static_cast<int64_t>(lines.size())) {
        return absl::DataLossError(absl::StrCat(
            "TPC-C consistency condition 4 violated (w=", w, ", d=", d, "): sum(O_OL_CNT) = ",
            sum_ol_cnt, " but order_line has ", lines.size(), " rows"));
      }
    }
    // Condition 1: W_YTD = sum(D_YTD).
    if (std::fabs(wr.GetDouble(W_YTD) - sum_d_ytd) > 0.005) {
      return absl::DataLossError(absl::StrCat("TPC-C consistency condition 1 violated (w=", w,
                                              "): W_YTD = ", wr.GetDouble(W_YTD),
                                              " but sum(D_YTD) = ", sum_d_ytd));
    }
  }
  return absl::OkStatus();
}

}  // namespace workloads
}  // namespace corral
