// TATP on the embedded engine, with its SQL form (schemas/tatp.sql) and the
// paper's hot spot (Table 6: 90% of accesses to subscribers 1..20).
//
//   TatpWorkload w(TatpParams{});     // or MakeWorkload("tatp")
//   CHECK_OK(w.Load(db));
//   auto t = w.Next(rng);
//
// Transactions (type ids, paper mix): 0 GetSubscriberData 40, 1
// GetNewDestination 3, 2 GetAccessData 3, 3 UpdateSubscriberData 10, 4
// UpdateLocation 40, 5 InsertCallForwarding 2, 6 DeleteCallForwarding 2.
// Population (standard): subscribers 1..n; 1-4 access_info rows and 1-4
// special_facility rows (distinct types 1..4) per subscriber, 0-3
// call_forwarding rows (start_time 0/8/16) per special facility.
//
// sub_nbr is the subscriber id as 15 zero-padded digits, so the by-sub_nbr
// lookups (UpdateLocation, Insert/DeleteCallForwarding) compute s_id from it
// and read the subscriber by its hash index, checking the row's sub_nbr;
// the SQL form binds that s_id in the statements after the sub_nbr SELECT.
// A failed lookup is a user abort (not retried): InsertCallForwarding of an
// existing row or for a missing special facility, DeleteCallForwarding of a
// missing row, UpdateSubscriberData of a missing special facility.
// GetAccessData / GetNewDestination that find nothing commit (read-only).
//
// Partition key: s_id. Check(): every subscriber has its sub_nbr, 1-4
// access_info and 1-4 special_facility rows; every call_forwarding row
// belongs to an existing special facility and has start_time in {0,8,16},
// start_time < end_time <= start_time + 8; and the call_forwarding row count
// equals the loaded count + committed inserts - committed deletes (an
// engine-only audit row per worker slot, tatp_audit, updated in the same
// transaction; not in the SQL form).
//
// Thread-safety: as Workload.
#ifndef CORRAL_BENCH_WORKLOADS_TATP_H_
#define CORRAL_BENCH_WORKLOADS_TATP_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/workloads/workload.h"

namespace corral {
namespace workloads {

struct TatpParams {
  int64_t subscribers = 10000;
  double hot_fraction = 0.90;
  int64_t hot_size = 20;
  std::vector<double> mix = {40, 3, 3, 10, 40, 2, 2};
  uint64_t load_seed = 1;
};

enum TatpType : int {
  kGetSubscriberData = 0, kGetNewDestination, kGetAccessData, kUpdateSubscriberData,
  kUpdateLocation, kInsertCallForwarding, kDeleteCallForwarding
};

struct TatpTables {
  engine::Table *subscriber = nullptr, *access_info = nullptr, *special_facility = nullptr,
                *call_forwarding = nullptr, *audit = nullptr;
};

uint64_t TatpSfKey(int64_t s_id, int sf_type);
uint64_t TatpAiKey(int64_t s_id, int ai_type);
uint64_t TatpCfKey(int64_t s_id, int sf_type, int start_time);
std::string TatpSubNbr(int64_t s_id);

namespace tatp_sql {
extern const char* const kGetSubscriber;
extern const char* const kGetNewDestination;
extern const char* const kGetAccessData;
extern const char* const kUpdateSubscriberBit;
extern const char* const kUpdateSpecialFacility;
extern const char* const kGetSubscriberId;
extern const char* const kUpdateLocation;
extern const char* const kGetSpecialFacilityTypes;
extern const char* const kInsertCallForwarding;
extern const char* const kDeleteCallForwarding;
}  // namespace tatp_sql

class TatpTxn : public WorkloadTxn {
 public:
  TatpTxn(const TatpTables* t, TatpType type) : t_(t), tatp_type_(type) {}
  absl::Status Run(engine::Tx& tx) override;
  // Complete from the parameters (planned protocols).
  bool DeclareOwnAccesses(engine::AccessSet& set) const override;
  void AppendBound(BoundSql* out) const override;
  TatpType tatp_type() const { return tatp_type_; }

  int64_t s_id = 0;
  std::string sub_nbr;
  int ai_type = 0, sf_type = 0, start_time = 0, end_time = 0;
  int bit_1 = 0, data_a = 0;
  int64_t vlr_location = 0;
  std::string numberx;

 private:
  absl::Status SubscriberByNbr(engine::Tx& tx, int64_t* s_id_out);
  absl::Status Audit(engine::Tx& tx, int col);
  const TatpTables* t_;
  TatpType tatp_type_;
};

class TatpWorkload : public Workload {
 public:
  explicit TatpWorkload(TatpParams params);
  std::string name() const override { return "tatp"; }
  std::string schema_file() const override { return "schemas/tatp.sql"; }
  absl::Status Load(engine::Database* db) override;
  std::unique_ptr<WorkloadTxn> Next(Rng& rng) const override;
  const std::vector<std::string>& TxnTypeNames() const override;
  absl::Status Check(const engine::Database& db) const override;
  absl::Status ForEachRow(const engine::Database& db, const RowFn& fn) const override;

  const TatpParams& params() const { return p_; }
  const TatpTables& tables() const { return t_; }
  std::unique_ptr<TatpTxn> Make(Rng& rng, TatpType type) const;
  int64_t RandomSubscriber(Rng& rng) const;

 protected:
  void OnPhases() override;

 private:
  TatpParams p_;
  std::vector<double> cum_mix_;
  TatpTables t_;
  HotSpotKeys keys_;  // after p_: built from it
};

}  // namespace workloads
}  // namespace corral

#endif  // CORRAL_BENCH_WORKLOADS_TATP_H_
