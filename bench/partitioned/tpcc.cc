#include "bench/partitioned/tpcc.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"

namespace corral {
namespace partitioned {

namespace {
constexpr int kCustomerFields = 4;  // C_BALANCE, C_YTD_PAYMENT, C_PAYMENT_CNT, C_DISCOUNT
constexpr int kStockFields = 4;     // S_QUANTITY, S_YTD, S_ORDER_CNT, S_REMOTE_CNT
enum { kCBalance = 0, kCYtd, kCPayCnt, kCDiscount };
enum { kSQty = 0, kSYtd, kSOrderCnt, kSRemoteCnt };
constexpr int64_t kWYtd = 0, kWTax = 1, kWarehouseSlots = 2;
constexpr int64_t kInitDYtd = 3000000;  // 30,000.00
}  // namespace

PartitionedTpcc::PartitionedTpcc(workloads::TpccParams params, int partitions)
    : p_(params), gen_(params, "tpcc-partitioned"), P_(std::max(1, partitions)) {
  const int D = p_.districts_per_warehouse, C = p_.customers_per_district;
  wh_per_part_ = (p_.warehouses + P_ - 1) / P_;
  slots_ = kWarehouseSlots + int64_t{D} * kDistrictFields +
           int64_t{D} * C * kCustomerFields + int64_t{p_.items} * kStockFields + p_.items;
  const int orders = p_.orders_per_district < 0 ? C : p_.orders_per_district;
  init_next_o_id_ = orders + 1;
  init_undelivered_ = static_cast<int>(std::lround(orders * p_.new_order_fraction));
  for (int n = 0; n < std::min(1000, C); ++n) name_number_[workloads::TpccLastName(n)] = n;
  log_.resize(static_cast<size_t>(p_.warehouses) * D);
}

int64_t PartitionedTpcc::Key(int w, int64_t slot) const {
  const int64_t local = int64_t{(w - 1) / P_} * slots_ + slot;
  return local * P_ + PartitionOf(w);
}
int64_t PartitionedTpcc::DistrictSlot(int d, int field) const {
  return kWarehouseSlots + int64_t{d - 1} * kDistrictFields + field;
}
int64_t PartitionedTpcc::CustomerSlot(int d, int c, int field) const {
  const int D = p_.districts_per_warehouse, C = p_.customers_per_district;
  return kWarehouseSlots + int64_t{D} * kDistrictFields +
         (int64_t{d - 1} * C + (c - 1)) * kCustomerFields + field;
}
int64_t PartitionedTpcc::StockSlot(int i, int field) const {
  const int D = p_.districts_per_warehouse, C = p_.customers_per_district;
  return kWarehouseSlots + int64_t{D} * kDistrictFields + int64_t{D} * C * kCustomerFields +
         int64_t{i - 1} * kStockFields + field;
}
int64_t PartitionedTpcc::ItemSlot(int i) const {
  return StockSlot(p_.items + 1, 0) + (i - 1);
}

absl::Status PartitionedTpcc::Load(PartitionedEngine* eng) {
  if (p_.customers_per_district > 1000) {
    return absl::InvalidArgumentError("customers_per_district > 1000: last names not unique");
  }
  const int W = p_.warehouses, D = p_.districts_per_warehouse, C = p_.customers_per_district;
  workloads::Rng rng(p_.load_seed);
  init_stock_qty_.assign(static_cast<size_t>(W) * p_.items, 0);
  auto set = [&](int w, int64_t slot, int64_t v) { return eng->Load(Key(w, slot), v); };
  for (int w = 1; w <= W; ++w) {
    absl::Status s = set(w, kWYtd, kInitDYtd * D);
    if (s.ok()) s = set(w, kWTax, rng.Uniform(0, 2000));
    if (!s.ok()) return s;
    for (int d = 1; d <= D; ++d) {
      const int64_t v[kDistrictFields] = {kInitDYtd, rng.Uniform(0, 2000), init_next_o_id_,
                                          0, 0, 0, 0, init_undelivered_};
      for (int f = 0; f < kDistrictFields; ++f) {
        s = set(w, DistrictSlot(d, f), v[f]);
        if (!s.ok()) return s;
      }
      for (int c = 1; c <= C; ++c) {
        const int64_t cv[kCustomerFields] = {-1000, 1000, 1, rng.Uniform(0, 5000)};
        for (int f = 0; f < kCustomerFields; ++f) {
          s = set(w, CustomerSlot(d, c, f), cv[f]);
          if (!s.ok()) return s;
        }
      }
    }
    for (int i = 1; i <= p_.items; ++i) {
      const int64_t q = rng.Uniform(10, 100);
      init_stock_qty_[static_cast<size_t>(w - 1) * p_.items + (i - 1)] = q;
      s = set(w, StockSlot(i, kSQty), q);
      if (s.ok()) s = set(w, ItemSlot(i), rng.Uniform(100, 10000));
      if (!s.ok()) return s;
    }
  }
  return absl::OkStatus();
}

int PartitionedTpcc::CustomerId(int c_id, bool by_last_name, const std::string& c_last) const {
  if (!by_last_name) return c_id;
  auto it = name_number_.find(c_last);
  return it == name_number_.end() ? 1 : it->second + 1;
}

PartitionedTpcc::Txn PartitionedTpcc::Next(workloads::Rng& rng) const {
  std::unique_ptr<workloads::WorkloadTxn> base = gen_.Next(rng);
  const auto* t = static_cast<const workloads::TpccTxn*>(base.get());
  Txn out;
  out.type = t->tpcc_type();
  std::vector<Op> ops;
  switch (out.type) {
    case workloads::kNewOrder: {
      const workloads::NewOrderInput& in = t->new_order;
      out.w = in.w_id;
      out.d = in.d_id;
      out.o_id_key = Key(in.w_id, DistrictSlot(in.d_id, kDNextOId));
      ops.push_back(Op::Read(Key(in.w_id, kWTax)));
      ops.push_back(Op::Read(Key(in.w_id, DistrictSlot(in.d_id, kDTax))));
      ops.push_back(Op::Read(out.o_id_key));
      ops.push_back(Op::Add(out.o_id_key, 1));
      ops.push_back(Op::Add(Key(in.w_id, DistrictSlot(in.d_id, kDUndelivered)), 1));
      ops.push_back(Op::Read(Key(in.w_id, CustomerSlot(in.d_id, in.c_id, kCDiscount))));
      std::vector<Op> stock;
      for (const workloads::NewOrderLine& l : in.lines) {
        if (l.i_id < 1 || l.i_id > p_.items) continue;  // the rollback's invalid item
        ops.push_back(Op::Read(Key(in.w_id, ItemSlot(l.i_id))));
        const bool remote = l.supply_w_id != in.w_id;
        ++out.ol_cnt;
        out.ol_qty += l.quantity;
        out.remote_lines += remote ? 1 : 0;
        if (PartitionOf(l.supply_w_id) != PartitionOf(in.w_id)) out.multi_partition = true;
        stock.push_back(Op::AddWrap(Key(l.supply_w_id, StockSlot(l.i_id, kSQty)), -l.quantity,
                                    10, 91));
        stock.push_back(Op::Add(Key(l.supply_w_id, StockSlot(l.i_id, kSYtd)), l.quantity));
        stock.push_back(Op::Add(Key(l.supply_w_id, StockSlot(l.i_id, kSOrderCnt)), 1));
        if (remote) {
          stock.push_back(Op::Add(Key(l.supply_w_id, StockSlot(l.i_id, kSRemoteCnt)), 1));
        }
      }
      ops.push_back(Op::Add(Key(in.w_id, DistrictSlot(in.d_id, kDOlCnt)), out.ol_cnt));
      ops.push_back(Op::Add(Key(in.w_id, DistrictSlot(in.d_id, kDOlQty)), out.ol_qty));
      ops.push_back(Op::Add(Key(in.w_id, DistrictSlot(in.d_id, kDRemoteOl)), out.remote_lines));
      ops.insert(ops.end(), stock.begin(), stock.end());
      out.req.user_abort = in.rollback;
      break;
    }
    case workloads::kPayment: {
      const workloads::PaymentInput& in = t->payment;
      out.w = in.w_id;
      out.d = in.d_id;
      const int c_id = CustomerId(in.c_id, in.by_last_name, in.c_last);
      out.amount = std::llround(in.h_amount * 100);
      out.multi_partition = PartitionOf(in.c_w_id) != PartitionOf(in.w_id);
      ops.push_back(Op::Add(Key(in.w_id, kWYtd), out.amount));
      ops.push_back(Op::Add(Key(in.w_id, DistrictSlot(in.d_id, kDYtd)), out.amount));
      ops.push_back(Op::Add(Key(in.w_id, DistrictSlot(in.d_id, kDPayCnt)), 1));
      ops.push_back(Op::Add(Key(in.c_w_id, CustomerSlot(in.c_d_id, c_id, kCBalance)), -out.amount));
      ops.push_back(Op::Add(Key(in.c_w_id, CustomerSlot(in.c_d_id, c_id, kCYtd)), out.amount));
      ops.push_back(Op::Add(Key(in.c_w_id, CustomerSlot(in.c_d_id, c_id, kCPayCnt)), 1));
      break;
    }
    case workloads::kOrderStatus: {
      const workloads::OrderStatusInput& in = t->order_status;
      out.w = in.w_id;
      out.d = in.d_id;
      const int c_id = CustomerId(in.c_id, in.by_last_name, in.c_last);
      ops.push_back(Op::Read(Key(in.w_id, CustomerSlot(in.d_id, c_id, kCBalance))));
      ops.push_back(Op::Read(Key(in.w_id, CustomerSlot(in.d_id, c_id, kCYtd))));
      ops.push_back(Op::Read(Key(in.w_id, DistrictSlot(in.d_id, kDNextOId))));
      break;
    }
    case workloads::kDelivery: {
      const workloads::DeliveryInput& in = t->delivery;
      out.w = in.w_id;
      out.d = 1;
      for (int d = 1; d <= in.districts; ++d) {
        ops.push_back(Op::AddWrap(Key(in.w_id, DistrictSlot(d, kDUndelivered)), -1, 0, 1));
      }
      break;
    }
    case workloads::kStockLevel: {
      const workloads::StockLevelInput& in = t->stock_level;
      out.w = in.w_id;
      out.d = in.d_id;
      ops.push_back(Op::Read(Key(in.w_id, DistrictSlot(in.d_id, kDNextOId))));
      for (int k = 0; k < in.orders * 10; ++k) {
        ops.push_back(Op::Read(Key(in.w_id, StockSlot(gen_.RandomItemId(rng), kSQty))));
      }
      break;
    }
  }
  out.req.rounds.push_back(std::move(ops));
  return out;
}

void PartitionedTpcc::Record(const Txn& t, const TxnResult& r) {
  if (!r.committed) return;
  if (t.type == workloads::kNewOrder) {
    int64_t o_id = -1;
    for (const auto& kv : r.reads) {
      if (kv.first == t.o_id_key) o_id = kv.second;
    }
    std::lock_guard<std::mutex> l(mu_);
    DistrictLog& lg = log_[static_cast<size_t>(t.w - 1) * p_.districts_per_warehouse + t.d - 1];
    lg.o_ids.push_back(o_id);
    lg.ol_cnt += t.ol_cnt;
    lg.ol_qty += t.ol_qty;
    lg.remote += t.remote_lines;
  } else if (t.type == workloads::kPayment) {
    std::lock_guard<std::mutex> l(mu_);
    ++payments_;
    payment_cents_ += t.amount;
  }
}

int64_t PartitionedTpcc::committed_new_orders() const {
  std::lock_guard<std::mutex> l(mu_);
  int64_t n = 0;
  for (const DistrictLog& lg : log_) n += static_cast<int64_t>(lg.o_ids.size());
  return n;
}
int64_t PartitionedTpcc::committed_payments() const {
  std::lock_guard<std::mutex> l(mu_);
  return payments_;
}

absl::Status PartitionedTpcc::Check(PartitionedEngine* eng) const {
  std::lock_guard<std::mutex> l(mu_);
  const int W = p_.warehouses, D = p_.districts_per_warehouse, C = p_.customers_per_district;
  absl::Status err = absl::OkStatus();
  auto get = [&](int w, int64_t slot) -> int64_t {
    absl::StatusOr<int64_t> v = eng->Value(Key(w, slot));
    if (!v.ok()) {
      if (err.ok()) err = v.status();
      return 0;
    }
    return *v;
  };
  int64_t sum_d_ol = 0, sum_d_qty = 0, sum_d_remote = 0, sum_d_pay = 0, sum_w_ytd = 0;
  int64_t sum_s_order = 0, sum_s_ytd = 0, sum_s_remote = 0, sum_c_ytd = 0, sum_c_pay = 0;
  for (int w = 1; w <= W; ++w) {
    int64_t d_ytd = 0;
    for (int d = 1; d <= D; ++d) {
      d_ytd += get(w, DistrictSlot(d, kDYtd));
      const DistrictLog& lg = log_[static_cast<size_t>(w - 1) * D + d - 1];
      // 2. O_IDs of committed NewOrders = init_next .. D_NEXT_O_ID - 1.
      const int64_t next = get(w, DistrictSlot(d, kDNextOId));
      std::vector<int64_t> ids = lg.o_ids;
      std::sort(ids.begin(), ids.end());
      if (static_cast<int64_t>(ids.size()) != next - init_next_o_id_) {
        return absl::InternalError(absl::StrCat("w ", w, " d ", d, ": D_NEXT_O_ID ", next,
                                                " but ", ids.size(), " committed NewOrders"));
      }
      for (size_t k = 0; k < ids.size(); ++k) {
        if (ids[k] != init_next_o_id_ + static_cast<int64_t>(k)) {
          return absl::InternalError(absl::StrCat("w ", w, " d ", d, ": O_ID ", ids[k],
                                                  " at rank ", k, " (duplicate or gap)"));
        }
      }
      // 3. Order-line aggregates and undelivered rows.
      const int64_t ol = get(w, DistrictSlot(d, kDOlCnt));
      const int64_t qty = get(w, DistrictSlot(d, kDOlQty));
      const int64_t rem = get(w, DistrictSlot(d, kDRemoteOl));
      if (ol != lg.ol_cnt || qty != lg.ol_qty || rem != lg.remote) {
        return absl::InternalError(absl::StrCat("w ", w, " d ", d, ": order lines ", ol, "/",
                                                qty, "/", rem, " vs committed ", lg.ol_cnt,
                                                "/", lg.ol_qty, "/", lg.remote));
      }
      const int64_t und = get(w, DistrictSlot(d, kDUndelivered));
      if (und < 0 || und > init_undelivered_ + static_cast<int64_t>(ids.size())) {
        return absl::InternalError(absl::StrCat("w ", w, " d ", d, ": D_UNDELIVERED ", und));
      }
      sum_d_ol += ol;
      sum_d_qty += qty;
      sum_d_remote += rem;
      sum_d_pay += get(w, DistrictSlot(d, kDPayCnt));
      for (int c = 1; c <= C; ++c) {
        const int64_t bal = get(w, CustomerSlot(d, c, kCBalance));
        const int64_t ytd = get(w, CustomerSlot(d, c, kCYtd));
        if (bal + ytd != 0) {
          return absl::InternalError(absl::StrCat("w ", w, " d ", d, " c ", c,
                                                  ": C_BALANCE + C_YTD_PAYMENT = ", bal + ytd));
        }
        sum_c_ytd += ytd - 1000;
        sum_c_pay += get(w, CustomerSlot(d, c, kCPayCnt)) - 1;
      }
    }
    // 1. W_YTD = sum D_YTD.
    const int64_t w_ytd = get(w, kWYtd);
    if (w_ytd != d_ytd) {
      return absl::InternalError(
          absl::StrCat("w ", w, ": W_YTD ", w_ytd, " != sum D_YTD ", d_ytd));
    }
    sum_w_ytd += w_ytd - kInitDYtd * D;
    for (int i = 1; i <= p_.items; ++i) {
      const int64_t q = get(w, StockSlot(i, kSQty));
      const int64_t ytd = get(w, StockSlot(i, kSYtd));
      const int64_t q0 = init_stock_qty_[static_cast<size_t>(w - 1) * p_.items + (i - 1)];
      // 5. Stock quantity in range and conserved modulo the 91 refill.
      if (q < 10 || q > 100 || (q + ytd - q0) % 91 != 0) {
        return absl::InternalError(absl::StrCat("w ", w, " i ", i, ": S_QUANTITY ", q,
                                                " S_YTD ", ytd, " initial ", q0));
      }
      sum_s_ytd += ytd;
      sum_s_order += get(w, StockSlot(i, kSOrderCnt));
      sum_s_remote += get(w, StockSlot(i, kSRemoteCnt));
    }
  }
  if (!err.ok()) return err;
  // 4. Stock vs order lines, across partitions.
  if (sum_s_order != sum_d_ol || sum_s_ytd != sum_d_qty || sum_s_remote != sum_d_remote) {
    return absl::InternalError(absl::StrCat(
        "stock vs order lines: S_ORDER_CNT ", sum_s_order, " D_OL_CNT ", sum_d_ol, "; S_YTD ",
        sum_s_ytd, " D_OL_QTY ", sum_d_qty, "; S_REMOTE_CNT ", sum_s_remote, " D_REMOTE_OL ",
        sum_d_remote));
  }
  // 6. Payments, across partitions.
  if (sum_c_ytd != sum_w_ytd || sum_w_ytd != payment_cents_) {
    return absl::InternalError(absl::StrCat("payments: sum C_YTD_PAYMENT delta ", sum_c_ytd,
                                            ", sum W_YTD delta ", sum_w_ytd,
                                            ", committed amounts ", payment_cents_));
  }
  if (sum_c_pay != sum_d_pay || sum_d_pay != payments_) {
    return absl::InternalError(absl::StrCat("payments: sum C_PAYMENT_CNT delta ", sum_c_pay,
                                            ", sum D_PAY_CNT ", sum_d_pay, ", committed ",
                                            payments_));
  }
  return absl::OkStatus();
}

TpccDriver::TpccDriver(PartitionedEngine* eng, PartitionedTpcc* tpcc, int clients,
                       uint64_t seed)
    : eng_(eng), tpcc_(tpcc) {
  for (int i = 0; i < clients; ++i) {
    cl_.push_back(std::make_unique<Client>(seed * 1000003 + static_cast<uint64_t>(i)));
  }
}

void TpccDriver::Start() {
  for (auto& c : cl_) Next(c.get());
}

void TpccDriver::Next(Client* c) {
  if (stop_.load(std::memory_order_relaxed)) return;
  auto t = std::make_shared<PartitionedTpcc::Txn>(tpcc_->Next(c->rng));
  TxnRequest req = std::move(t->req);
  req.done = [this, c, t](const TxnResult& r) {
    tpcc_->Record(*t, r);
    if (r.committed && r.multi_partition) committed_mp_.fetch_add(1);
    finished_.fetch_add(1);
    Next(c);
  };
  if (!eng_->Submit(std::move(req)).ok()) std::abort();
}

}  // namespace partitioned
}  // namespace corral
