// YCSB on the embedded engine: transactions of ops_per_txn operations on one
// table (bench/workloads/ycsb.sql), each a read or a read-modify-write, keys
// drawn from a Zipf(theta) distribution (Gray et al.'s generator, workload.h).
//
//   YcsbWorkload w(YcsbParams{});    // or MakeWorkload("ycsb")
//   CHECK_OK(w.Load(db));
//   auto t = w.Next(rng);
//
// Keys 0..records-1. Not scrambled by default: rank r of the Zipf
// distribution is key r, so the hot keys are the lowest keys (one partition
// range); with scrambled = true the rank is hashed (FNV-1a, 64 bit) into the
// key space, spreading the hot keys over all ranges. The keys of one
// transaction are distinct. A read is `SELECT * ... WHERE ycsb_key = k`; a
// read-modify-write reads the row for update and sets one random field to
// a new field_size-byte value and counter = counter + 1.
//
// With update_txn_fraction >= 0 the mix is per transaction instead (Deneva's
// update rate): update transactions carry ops_per_txn / 2 read-modify-writes,
// the others only reads.
//
// Partition key: the first key's range, key / ceil(records / partitions).
// One type (id 0, "Txn"); per-type statistics are by transaction.
// Check(): sum(counter) over the table = committed read-modify-write
// operations, counted in an engine-only audit row per worker slot
// (ycsb_audit) in the same transaction (not in the SQL form).
//
// Thread-safety: as Workload.
#ifndef CORRAL_BENCH_WORKLOADS_YCSB_H_
#define CORRAL_BENCH_WORKLOADS_YCSB_H_

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "bench/workloads/workload.h"

namespace corral {
namespace workloads {

struct YcsbParams {
  int64_t records = 100000;
  int ops_per_txn = 10;
  double read_fraction = 0.9;  // the rest are read-modify-writes
  // Deneva's update-rate mix (Harding et al. 2017, Section 4.3): when >= 0,
  // read_fraction is not used; a transaction is an update transaction with
  // this probability, with ops_per_txn / 2 read-modify-writes at random
  // positions ("5 reads / 5 updates"), and read-only (all reads) otherwise.
  double update_txn_fraction = -1;
  double theta = 0.9;          // Zipf skew; 0 = uniform
  bool scrambled = false;
  int fields = 10;
  int field_size = 100;
  int64_t partitions = 64;     // key ranges for the partition key
  // Orthrus's microbenchmark (Ren et al. 2016, Section 4.1) when > 0: every
  // operation is a read-modify-write; the first hot_ops of a transaction's
  // keys are drawn uniformly from the hot_records hot keys [0, hot_records),
  // the rest uniformly from the cold ones (theta and the mix are not used).
  int64_t hot_records = 0;
  int hot_ops = 2;
  uint64_t load_seed = 1;
};

struct YcsbTables {
  engine::Table *usertable = nullptr, *audit = nullptr;
};

struct YcsbOp {
  int64_t key = 0;
  bool rmw = false;
  int field = 0;        // rmw: which field is set
  std::string value;    // rmw: the new value
};

class YcsbTxn : public WorkloadTxn {
 public:
  explicit YcsbTxn(const YcsbTables* t) : t_(t) {}
  absl::Status Run(engine::Tx& tx) override;
  // Complete from the parameters (planned protocols).
  bool DeclareOwnAccesses(engine::AccessSet& set) const override;
  void AppendBound(BoundSql* out) const override;
  std::vector<YcsbOp> ops;

 private:
  const YcsbTables* t_;
};

namespace ycsb_sql {
extern const char* const kRead;
extern const char* const kReadForUpdate;
// "UPDATE usertable SET field<f> = $1, counter = counter + 1 WHERE ycsb_key = $2"
std::string Update(int field);
}  // namespace ycsb_sql

class YcsbWorkload : public Workload {
 public:
  explicit YcsbWorkload(YcsbParams params);
  std::string name() const override { return "ycsb"; }
  std::string schema_file() const override { return "bench/workloads/ycsb.sql"; }
  absl::Status Load(engine::Database* db) override;
  std::unique_ptr<WorkloadTxn> Next(Rng& rng) const override;
  const std::vector<std::string>& TxnTypeNames() const override;
  absl::Status Check(const engine::Database& db) const override;
  absl::Status ForEachRow(const engine::Database& db, const RowFn& fn) const override;

  const YcsbParams& params() const { return p_; }
  const YcsbTables& tables() const { return t_; }
  int64_t RandomKey(Rng& rng) const;
  int64_t PartitionOf(int64_t key) const;

 protected:
  void OnPhases() override;

 private:
  YcsbParams p_;
  Zipf zipf_;
  YcsbTables t_;
  std::vector<std::unique_ptr<Zipf>> phase_zipf_;
};

}  // namespace workloads
}  // namespace corral

#endif  // CORRAL_BENCH_WORKLOADS_YCSB_H_
