// TPC-C partitioned by warehouse on the partitioned engine. The transaction
// inputs come from the shared generator (bench/workloads/tpcc.h,
// TpccWorkload::Next: mix, NURand customers and items, remote supply
// warehouses, remote-customer payments, rollbacks); this file translates
// them into the partitioned engine's key/value fragments, loads the initial
// values, and checks consistency conditions after a run. It is a benchmark
// workload on the engine, so it lives in bench/ (the engine does not depend
// on the benchmarks).
//
//   workloads::TpccParams tp;  tp.warehouses = 2;  tp.remote_item_prob = 0.1;
//   PartitionedTpcc tpcc(tp, /*partitions=*/2);
//   PartitionedOptions o;  o.partitions = 2;
//   o.keys_per_partition = tpcc.keys_per_partition();
//   auto eng = PartitionedEngine::Create(o).value();
//   CHECK_OK(tpcc.Load(eng.get()));
//   TpccDriver d(eng.get(), &tpcc, /*clients=*/20, /*seed=*/1);
//   d.Start(); ... d.Stop(); eng->Drain();
//   CHECK_OK(tpcc.Check(eng.get()));
//
// Layout: warehouse w (1-based) lives on partition (w - 1) % P; its rows are
// int64 slots (money in cents): W_YTD, W_TAX; per district D_YTD, D_TAX,
// D_NEXT_O_ID, and the order-table aggregates D_OL_CNT (order lines
// inserted), D_OL_QTY (their quantities), D_REMOTE_OL (lines supplied by
// another warehouse), D_PAY_CNT (payments to this district), D_UNDELIVERED
// (new_order rows); per customer C_BALANCE, C_YTD_PAYMENT, C_PAYMENT_CNT,
// C_DISCOUNT; per stock row S_QUANTITY, S_YTD, S_ORDER_CNT, S_REMOTE_CNT;
// and I_PRICE (the read-only item table, replicated on every warehouse as in
// H-Store, so item reads are local).
//
// Transactions (one round each; a transaction touching another partition's
// warehouse is multi-partition; the home warehouse's ops come first, so the
// queue is the home partition):
//  * NewOrder: reads W_TAX, D_TAX, D_NEXT_O_ID (the order's O_ID, returned
//    to the client), C_DISCOUNT, I_PRICE per line; D_NEXT_O_ID += 1,
//    D_UNDELIVERED += 1, D_OL_CNT += ol_cnt, D_OL_QTY += sum qty,
//    D_REMOTE_OL += remote lines; per line at the supply warehouse
//    S_QUANTITY -= q (+91 if below 10), S_YTD += q, S_ORDER_CNT += 1,
//    S_REMOTE_CNT += remote. The 1% with an invalid item user-abort (the
//    home partition votes no), as the spec's rollback.
//  * Payment: W_YTD, D_YTD += amount, D_PAY_CNT += 1 at the home warehouse;
//    C_BALANCE -= amount, C_YTD_PAYMENT += amount, C_PAYMENT_CNT += 1 at the
//    customer's warehouse (remote with remote_payment_prob). By last name:
//    the customer whose name number is the generated one (customers 1..n
//    carry names 0..n-1 in the shared loader when n <= 1000, so the name
//    identifies one customer per district).
//  * OrderStatus: reads the customer's C_BALANCE, C_YTD_PAYMENT and
//    D_NEXT_O_ID (read-only, single-partition).
//  * Delivery: per district D_UNDELIVERED -= 1 unless it is 0 (a wrap op:
//    -1, +1 back below 0). Not modelled: the customer's balance update (the
//    delivered order's customer and amount are only known from rows read in
//    the transaction, and fragments here are fixed when submitted).
//  * StockLevel: reads D_NEXT_O_ID and S_QUANTITY of orders x 10 items drawn
//    like order lines (the items of the last 20 orders are not stored).
//
// Check() (quiescent), adapted TPC-C consistency conditions plus
// money-style cross-partition invariants (an MP transaction that commits on
// one partition only, a lost update or a double-applied re-execution breaks
// one of them):
//  1. per warehouse W_YTD = sum of its D_YTD (spec condition 1);
//  2. per district the O_IDs returned to committed NewOrders are exactly
//     init_next .. D_NEXT_O_ID - 1, each once (spec condition 2, D_NEXT_O_ID
//     - 1 = max O_ID, made strict: no duplicate, no gap);
//  3. per district D_OL_CNT, D_OL_QTY, D_REMOTE_OL = the sums over its
//     committed NewOrders (client side), and 0 <= D_UNDELIVERED <= initial +
//     its committed NewOrders;
//  4. over all warehouses sum S_ORDER_CNT = sum D_OL_CNT, sum S_YTD = sum
//     D_OL_QTY, sum S_REMOTE_CNT = sum D_REMOTE_OL (cross-partition);
//  5. per stock row 10 <= S_QUANTITY <= 100 and S_QUANTITY + S_YTD = its
//     initial quantity modulo 91;
//  6. per customer C_BALANCE + C_YTD_PAYMENT = 0; over all warehouses the
//     payment deltas agree: sum C_YTD_PAYMENT, sum W_YTD and the client's
//     sum of committed amounts; sum C_PAYMENT_CNT, sum D_PAY_CNT and the
//     client's count of committed payments (cross-partition).
//
// Thread-safety: Next and Record are thread-safe (Record locks a mutex
// briefly); Load and Check are quiescent.
#ifndef CORRAL_BENCH_PARTITIONED_TPCC_H_
#define CORRAL_BENCH_PARTITIONED_TPCC_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "absl/status/status.h"
#include "bench/workloads/tpcc.h"
#include "engine/partitioned/partitioned.h"

namespace corral {
namespace partitioned {

class PartitionedTpcc {
 public:
  // A translated transaction and what the client needs to record it.
  struct Txn {
    TxnRequest req;
    workloads::TpccType type = workloads::kNewOrder;
    int w = 0, d = 0;              // home warehouse and district
    bool multi_partition = false;
    int64_t amount = 0;            // Payment: cents
    int ol_cnt = 0, remote_lines = 0;
    int64_t ol_qty = 0;
    int64_t o_id_key = -1;         // NewOrder: the D_NEXT_O_ID key read
  };

  PartitionedTpcc(workloads::TpccParams params, int partitions);

  int partitions() const { return P_; }
  int64_t keys_per_partition() const { return wh_per_part_ * slots_; }
  const workloads::TpccWorkload& workload() const { return gen_; }

  absl::Status Load(PartitionedEngine* eng);
  Txn Next(workloads::Rng& rng) const;
  // Records a finished transaction (client-side bookkeeping for Check).
  void Record(const Txn& t, const TxnResult& r);
  absl::Status Check(PartitionedEngine* eng) const;

  int64_t committed_new_orders() const;
  int64_t committed_payments() const;

  // Key of slot `slot` of warehouse w (exposed for tests).
  int64_t Key(int w, int64_t slot) const;
  int64_t DistrictSlot(int d, int field) const;  // d 1-based
  enum DistrictField { kDYtd = 0, kDTax, kDNextOId, kDOlCnt, kDOlQty, kDRemoteOl,
                       kDPayCnt, kDUndelivered, kDistrictFields };

 private:
  int64_t CustomerSlot(int d, int c, int field) const;
  int64_t StockSlot(int i, int field) const;
  int64_t ItemSlot(int i) const;
  int PartitionOf(int w) const { return (w - 1) % P_; }
  // The customer a Payment / OrderStatus names: c_id, or by last name the
  // customer carrying that name number (see the header).
  int CustomerId(int c_id, bool by_last_name, const std::string& c_last) const;

  workloads::TpccParams p_;
  workloads::TpccWorkload gen_;
  int P_;
  int64_t wh_per_part_ = 1, slots_ = 0;
  int init_next_o_id_ = 0, init_undelivered_ = 0;
  std::unordered_map<std::string, int> name_number_;
  std::vector<int64_t> init_stock_qty_;  // (w - 1) * items + i - 1

  mutable std::mutex mu_;
  // Per district ((w - 1) * D + d - 1): committed NewOrders' O_IDs and sums.
  struct DistrictLog {
    std::vector<int64_t> o_ids;
    int64_t ol_cnt = 0, ol_qty = 0, remote = 0;
  };
  std::vector<DistrictLog> log_;
  int64_t payments_ = 0, payment_cents_ = 0;
};

// Closed-loop clients on a PartitionedTpcc (one outstanding transaction
// each; the next is submitted from the previous one's callback).
class TpccDriver {
 public:
  TpccDriver(PartitionedEngine* eng, PartitionedTpcc* tpcc, int clients, uint64_t seed);
  void Start();
  void Stop() { stop_.store(true); }
  int64_t finished() const { return finished_.load(); }
  int64_t committed_mp() const { return committed_mp_.load(); }

 private:
  struct Client {
    explicit Client(uint64_t s) : rng(s) {}
    workloads::Rng rng;
  };
  void Next(Client* c);
  PartitionedEngine* eng_;
  PartitionedTpcc* tpcc_;
  std::vector<std::unique_ptr<Client>> cl_;
  std::atomic<bool> stop_{false};
  std::atomic<int64_t> finished_{0}, committed_mp_{0};
};

}  // namespace partitioned
}  // namespace corral

#endif  // CORRAL_BENCH_PARTITIONED_TPCC_H_
