// TPC-C on the embedded engine (all five transactions), with its SQL form
// (schemas/tpcc.sql) for reference extraction and the PostgreSQL forms
// (tpcc_pg.h).
//
//   TpccParams p;                 // paper defaults (Table 5), scale knobs
//   p.warehouses = 4;
//   TpccWorkload w(p);            // or MakeWorkload("tpcc") / ("tpcc-np")
//   CHECK_OK(w.Load(db));
//   auto t = w.Next(rng);         // NewOrder 45, Payment 43, others 4 each
//
// Population (per the specification, scaled): items, warehouses,
// districts_per_warehouse, customers_per_district, orders_per_district (=
// customers), the newest new_order_fraction (900/3000) of them undelivered.
// NURand constants A scale with the ranges (A=1023 for 3000 customers, 8191
// for 100,000 items, 255 for 1000 last names); C constants are parameters.
// Last names: customers 1..min(1000, n) get names 0..n-1 in order, the
// rest NURand; generated last names are drawn from the names that exist.
//
// Engine layout: keys packed with KeyPacker: warehouse w; district (w:16,
// d:8); customer (w:16, d:8, c:24); stock (w:16, i:24); order / new_order
// (w:16, d:8, o:32); order_line (w:16, d:8, o:24, number:8); history
// (worker slot+1:8, sequence:56). Secondary ordered indexes: customer by
// (w:16, d:8, last-name number:10) - the by-last-name lookup sorts the
// range's rows by c_first (then c_id) and takes the middle one (position
// ceil(n/2)); orders by (w:16, d:8, c:16, o:24) for OrderStatus. Timestamps are int64 seconds; in SQL they are
// CURRENT_TIMESTAMP.
//
// Partition key: the home warehouse (w_id). Type ids: 0 NewOrder, 1 Payment,
// 2 OrderStatus, 3 Delivery, 4 StockLevel.
//
// SQL parameters unknown at generation (NULL in AppendSql): NewOrder's o_id
// (from d_next_o_id), new s_quantity, ol_amount, ol_dist_info; Payment's and
// OrderStatus's c_id when chosen by last name, and the bad-credit c_data
// update (listed only by the PostgreSQL form, which knows c_credit);
// Delivery's o_id, c_id and amounts; StockLevel's o_id bounds.
//
// Check(): TPC-C consistency conditions 1-4 (see tpcc.cc).
//
// Thread-safety: as Workload. Transactions read the workload's table
// pointers, so the workload must outlive them.
#ifndef CORRAL_BENCH_WORKLOADS_TPCC_H_
#define CORRAL_BENCH_WORKLOADS_TPCC_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/workloads/workload.h"

namespace corral {
namespace workloads {

struct TpccParams {
  int warehouses = 4;
  int items = 10000;                  // paper: 10,000 (spec: 100,000)
  int districts_per_warehouse = 10;
  int customers_per_district = 300;   // paper: 300 (spec: 3000)
  int orders_per_district = -1;       // -1: = customers_per_district
  double new_order_fraction = 900.0 / 3000.0;  // undelivered tail of the initial orders
  // Mix in percent: NewOrder, Payment, OrderStatus, Delivery, StockLevel.
  std::vector<double> mix = {45, 43, 4, 4, 4};
  double remote_item_prob = 0.01;     // per NewOrder line (when warehouses > 1)
  double remote_payment_prob = 0.15;  // Payment through a remote warehouse
  double by_last_name_prob = 0.60;    // Payment and OrderStatus
  double invalid_item_prob = 0.01;    // NewOrder rollback
  int min_ol_cnt = 5, max_ol_cnt = 15;
  // NURand C constants (load and run C for last names differ per the spec).
  int c_last_load = 157, c_last_run = 223, c_id_c = 259, c_ol_i_id = 7911;
  int stock_threshold_min = 10, stock_threshold_max = 20;
  int stock_level_orders = 20;        // StockLevel looks at the last 20 orders
  uint64_t load_seed = 1;
  // false: NewOrder and Payment insert no rows (orders, new_order, order_line,
  // history) and Payment leaves c_data alone, as DBx1000's TPC-C does (those
  // lines are commented out in its source). For like-for-like speed
  // comparisons with DBx1000 only: Check() can then test condition 1 alone,
  // and OrderStatus, Delivery and StockLevel see only the loaded orders.
  bool insert_rows = true;
};

// Engine tables and column indexes (filled by Load).
struct TpccTables {
  engine::Table *warehouse = nullptr, *district = nullptr, *customer = nullptr,
                *history = nullptr, *orders = nullptr, *new_order = nullptr, *item = nullptr,
                *stock = nullptr, *order_line = nullptr;
  engine::OrderedIndex *customer_by_name = nullptr, *orders_by_customer = nullptr;
};

// Key packing (exposed for tests).
uint64_t TpccDistrictKey(int w, int d);
uint64_t TpccCustomerKey(int w, int d, int c);
uint64_t TpccStockKey(int w, int i);
uint64_t TpccOrderKey(int w, int d, int o);
uint64_t TpccOrderLineKey(int w, int d, int o, int n);
// A key of the history granule of executor slot `worker_id` (history rows
// have no key in SQL; the engine numbers them per slot, one lock granule each).
uint64_t TpccHistorySlotKey(int worker_id);
// Last name of number 0..999 (three syllables).
std::string TpccLastName(int num);

// Inputs of each transaction type (what a client knows when it submits).
struct NewOrderLine {
  int i_id = 0, supply_w_id = 0, quantity = 0;
};
struct NewOrderInput {
  int w_id = 0, d_id = 0, c_id = 0;
  std::vector<NewOrderLine> lines;  // the last one's i_id is invalid for a rollback
  bool all_local = true;
  bool rollback = false;
};
struct PaymentInput {
  int w_id = 0, d_id = 0, c_w_id = 0, c_d_id = 0;
  int c_id = 0;            // 0 when by_last_name
  std::string c_last;      // when by_last_name
  bool by_last_name = false;
  double h_amount = 0;     // 1.00 .. 5000.00
};
struct OrderStatusInput {
  int w_id = 0, d_id = 0, c_id = 0;
  std::string c_last;
  bool by_last_name = false;
};
struct DeliveryInput {
  int w_id = 0, o_carrier_id = 0, districts = 10;
};
struct StockLevelInput {
  int w_id = 0, d_id = 0, threshold = 0, orders = 20;
};

enum TpccType : int { kNewOrder = 0, kPayment, kOrderStatus, kDelivery, kStockLevel };

// The SQL templates (shared by the engine's SQL form and tpcc_pg.h).
namespace tpcc_sql {
extern const char* const kNoGetWarehouse;
extern const char* const kNoGetDistrict;
extern const char* const kNoBumpDistrict;
extern const char* const kNoGetCustomer;
extern const char* const kNoInsertOrder;
extern const char* const kNoInsertNewOrder;
extern const char* const kNoGetItem;
extern const char* const kNoUpdateStock;
extern const char* const kNoInsertOrderLine;
extern const char* const kPayUpdateWarehouse;
extern const char* const kPayGetWarehouse;
extern const char* const kPayUpdateDistrict;
extern const char* const kPayGetDistrict;
extern const char* const kCustomerIdsByLastName;
extern const char* const kPayGetCustomer;
extern const char* const kPayUpdateCustomer;
extern const char* const kPayUpdateCustomerData;
extern const char* const kPayInsertHistory;
extern const char* const kOsGetCustomer;
extern const char* const kOsGetLastOrder;
extern const char* const kOsGetOrderLines;
extern const char* const kDlvGetNewOrder;
extern const char* const kDlvDeleteNewOrder;
extern const char* const kDlvGetOrder;
extern const char* const kDlvUpdateOrder;
extern const char* const kDlvUpdateOrderLines;
extern const char* const kDlvSumOrderLines;
extern const char* const kDlvUpdateCustomer;
extern const char* const kSlGetDistrict;
extern const char* const kSlCountLowStock;
// The stock SELECT for district d (s_dist_<dd>).
std::string NoGetStock(int d_id);
}  // namespace tpcc_sql

// Statement lists of each type, with runtime values where known (pass
// nullptr / 0 for unknown ones: they become NULL parameters).
void AppendNewOrderSql(const NewOrderInput& in, BoundSql* out);
void AppendPaymentSql(const PaymentInput& in, BoundSql* out);
void AppendOrderStatusSql(const OrderStatusInput& in, BoundSql* out);
void AppendDeliverySql(const DeliveryInput& in, BoundSql* out);
void AppendStockLevelSql(const StockLevelInput& in, BoundSql* out);

// A generated TPC-C transaction: exactly one of the inputs is meaningful
// (by tpcc_type()).
class TpccTxn : public WorkloadTxn {
 public:
  // insert_rows: TpccParams::insert_rows.
  TpccTxn(const TpccTables* t, std::atomic<uint64_t>* history_seq, TpccType type,
          bool insert_rows = true)
      : t_(t), history_seq_(history_seq), tpcc_type_(type), insert_rows_(insert_rows) {}
  absl::Status Run(engine::Tx& tx) override;
  // NewOrder, Payment and OrderStatus by customer id: complete from the
  // parameters (a district's orders, new orders and order lines are one lock
  // granule, a worker slot's history rows another, so NewOrder's and
  // Payment's inserts are covered before their keys are known). Payment and
  // OrderStatus by last name, Delivery (which customer) and StockLevel
  // (which stock rows) also depend on reads: the part the parameters fix is
  // declared and false is returned (reconnaissance finds the rest).
  bool DeclareOwnAccesses(engine::AccessSet& set) const override;
  void AppendBound(BoundSql* out) const override;
  TpccType tpcc_type() const { return tpcc_type_; }

  NewOrderInput new_order;
  PaymentInput payment;
  OrderStatusInput order_status;
  DeliveryInput delivery;
  StockLevelInput stock_level;

 private:
  absl::Status RunNewOrder(engine::Tx& tx);
  absl::Status RunPayment(engine::Tx& tx);
  absl::Status RunOrderStatus(engine::Tx& tx);
  absl::Status RunDelivery(engine::Tx& tx);
  absl::Status RunStockLevel(engine::Tx& tx);
  absl::Status FindCustomerByLastName(engine::Tx& tx, int w, int d, const std::string& last,
                                      int* c_id);
  const TpccTables* t_;
  std::atomic<uint64_t>* history_seq_;
  TpccType tpcc_type_;
  bool insert_rows_;
};

class TpccWorkload : public Workload {
 public:
  // `name` is what name() reports ("tpcc" or "tpcc-np").
  explicit TpccWorkload(TpccParams params, std::string name = "tpcc");

  std::string name() const override { return name_; }
  std::string schema_file() const override { return "schemas/tpcc.sql"; }
  absl::Status Load(engine::Database* db) override;
  std::unique_ptr<WorkloadTxn> Next(Rng& rng) const override;
  const std::vector<std::string>& TxnTypeNames() const override;
  absl::Status Check(const engine::Database& db) const override;
  absl::Status ForEachRow(const engine::Database& db, const RowFn& fn) const override;

  const TpccParams& params() const { return p_; }
  const TpccTables& tables() const { return t_; }

  // Generators of each type (tests use them directly).
  std::unique_ptr<TpccTxn> MakeNewOrder(Rng& rng, int w) const;
  std::unique_ptr<TpccTxn> MakePayment(Rng& rng, int w) const;
  std::unique_ptr<TpccTxn> MakeOrderStatus(Rng& rng, int w) const;
  std::unique_ptr<TpccTxn> MakeDelivery(Rng& rng, int w) const;
  std::unique_ptr<TpccTxn> MakeStockLevel(Rng& rng, int w) const;
  // NURand(A, x, y) with this workload's C for `c`.
  static int NURand(Rng& rng, int a, int c, int x, int y);
  int RandomCustomerId(Rng& rng) const;
  int RandomItemId(Rng& rng) const;
  std::string RandomLastName(Rng& rng, bool load) const;
  int HomeWarehouse(Rng& rng) const;

 protected:
  void OnPhases() override;

 private:
  int orders_per_district() const;
  TpccParams p_;
  std::string name_;
  std::vector<double> cum_mix_;
  int a_c_id_, a_item_, a_last_, last_names_;
  TpccTables t_;
  mutable std::atomic<uint64_t> history_seq_{0};
  uint64_t loaded_history_rows_ = 0;
  std::vector<std::unique_ptr<Zipf>> phase_zipf_;  // per phase, null = uniform
};

}  // namespace workloads
}  // namespace corral

#endif  // CORRAL_BENCH_WORKLOADS_TPCC_H_
