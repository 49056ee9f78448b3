// Partitioned execution (Jones, Abadi, Madden, SIGMOD 2010): P partitions,
// each run by one thread from its queue; single-partition (SP) transactions
// run without locks or undo when nothing else is active there;
// multi-partition (MP) transactions are split into per-partition fragments
// and driven by one coordinator thread with two-phase commit (the last
// round's fragments carry "prepare"; a partition's response is its vote).
// Every coordinator <-> partition message is delivered after a configurable
// network stall (partitions on separate machines). Three schemes, switchable
// at run time at a quiescent point (in-flight MP transactions drained):
//
//  * kBlocking     a partition that executed an MP fragment runs nothing
//                  else until the commit decision.
//  * kSpeculation  after an MP transaction's last fragment at a partition,
//                  queued SP transactions and later MP fragments run
//                  speculatively with undo; SP results are held until the
//                  transactions before them commit; MP results go to the
//                  coordinator at once (it decides strictly in order, so a
//                  result is used only after everything before it committed,
//                  and a result computed before an abort reached that
//                  partition is recognised by the partition's abort epoch);
//                  an abort undoes the speculated work and re-executes it in
//                  order (cascading).
//  * kLocking      while an MP transaction is active at a partition, every
//                  transaction takes S/X locks (an SP transaction that meets
//                  a lock waits, an MP fragment waits too); a local waits-for
//                  cycle aborts the requester, a lock wait longer than
//                  lock_timeout_ns aborts it (distributed deadlock); system
//                  aborts are retried by the coordinator.
//
//   PartitionedOptions o; o.partitions = 2; o.scheme = Scheme::kSpeculation;
//   auto eng = PartitionedEngine::Create(o).value();
//   TxnRequest t;
//   t.rounds = {{Op::Add(3, -5), Op::Add(4, +5)}};   // keys 3, 4: 2 partitions
//   t.done = [](const TxnResult& r) { ... };          // on an engine thread
//   eng->Submit(std::move(t)).IgnoreError();
//   eng->Drain();
//   eng->SwitchScheme(Scheme::kLocking);   // quiescent switch
//   model::ModelParams m = eng->TakeWindow().params;   // measured online
//
// Keys are int64 in [0, partitions * keys_per_partition); key k lives on
// partition k % partitions. Values are int64, all zero at start (Load sets
// them). A transaction is a list of rounds, each a list of ops; the rounds of
// an MP transaction are sent one after the other (a later round only after
// the earlier round's results came back), the commit decision after the
// last. `user_abort` makes the transaction abort by user decision: the
// partition of its first key votes no after executing its ops.
//
// Thread-safety: all public methods are thread-safe. `done` callbacks run
// on engine threads and must not block (they may Submit).
#ifndef CORRAL_ENGINE_PARTITIONED_PARTITIONED_H_
#define CORRAL_ENGINE_PARTITIONED_PARTITIONED_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "policies/model/model.h"

namespace corral {
namespace partitioned {

enum class Scheme { kBlocking = 0, kSpeculation, kLocking };
const char* SchemeName(Scheme s);
absl::StatusOr<Scheme> ParseScheme(const std::string& name);
model::ModelScheme ToModelScheme(Scheme s);

// How a thread waits out a network stall: sleeping frees the core (the
// right choice when partitions share cores, as on a 2-core box), spinning
// gives exact delays but burns the core.
enum class StallMode { kSleep, kSpin };

// kAdd: value += delta; then, when wrap != 0 and value < floor, value +=
// wrap (TPC-C's stock update: s_quantity - q, plus 91 below 10). Either is
// a read-modify-write (an X lock under locking, undone on abort).
struct Op {
  enum Kind : uint8_t { kRead, kAdd };
  Kind kind = kRead;
  int64_t key = 0;
  int64_t delta = 0;
  int64_t floor = 0;
  int64_t wrap = 0;
  static Op Read(int64_t k) { return Op{kRead, k, 0}; }
  static Op Add(int64_t k, int64_t d) { return Op{kAdd, k, d}; }
  static Op AddWrap(int64_t k, int64_t d, int64_t floor, int64_t wrap) {
    return Op{kAdd, k, d, floor, wrap};
  }
};

struct TxnResult {
  bool committed = false;
  bool user_aborted = false;
  bool multi_partition = false;
  int rounds = 1;
  int system_retries = 0;  // lock timeouts / deadlocks retried
  int64_t latency_ns = 0;
  std::vector<std::pair<int64_t, int64_t>> reads;  // (key, value) of kRead
};

struct TxnRequest {
  std::vector<std::vector<Op>> rounds;
  bool user_abort = false;
  std::function<void(const TxnResult&)> done;
};

// One committed read or write, for the serializability check: a read saw
// `version` of `key`, a write produced it (an add is a read and a write).
struct AccessRecord {
  uint64_t txn = 0;
  int64_t key = 0;
  uint32_t version = 0;
  bool write = false;
};

struct PartitionedOptions {
  int partitions = 2;
  int64_t keys_per_partition = 4096;
  Scheme scheme = Scheme::kBlocking;
  int64_t network_stall_ns = 20000;  // per message, one way
  StallMode stall_mode = StallMode::kSleep;
  int64_t lock_timeout_ns = 5000000;
  int max_system_retries = 1000;
  bool record_history = false;
  // Queue (= partition) a transaction goes to; a transaction touching any
  // other partition is multi-partition. Default: the first key's partition
  // (Hard Partition). A learned queue from the scheduler fits here.
  std::function<int(const TxnRequest&)> queue_choice;
};

// Measured parameters of one window (since the previous TakeWindow).
struct Window {
  model::ModelParams params;  // tsp, tspS, tmp, tmpC, tmpN, l, f, a, m, ...
  double seconds = 0;
  int64_t committed = 0;
  int64_t aborted = 0;
  int64_t sp_committed = 0;
  int64_t mp_committed = 0;
  int64_t reexecuted = 0;     // cascading re-executions (speculation)
  int64_t system_aborts = 0;  // lock timeouts / deadlocks
  double throughput() const { return seconds > 0 ? committed / seconds : 0; }
  std::string ToString() const;
};

class PartitionedEngine {
 public:
  static absl::StatusOr<std::unique_ptr<PartitionedEngine>> Create(
      PartitionedOptions options);
  virtual ~PartitionedEngine() = default;

  // Sets a key's value; only while quiescent (before Submit or after Drain).
  virtual absl::Status Load(int64_t key, int64_t value) = 0;
  virtual absl::Status Submit(TxnRequest txn) = 0;
  // Waits until every submitted transaction finished.
  virtual void Drain() = 0;
  // Drains in-flight MP transactions (new ones are held), switches every
  // thread to `scheme`, resumes. Blocks until done.
  virtual absl::Status SwitchScheme(Scheme scheme) = 0;
  virtual Scheme scheme() const = 0;
  // Sum of all values / one value; only while quiescent.
  virtual absl::StatusOr<int64_t> Sum() = 0;
  virtual absl::StatusOr<int64_t> Value(int64_t key) = 0;
  virtual Window TakeWindow() = 0;
  // Committed accesses so far (record_history); clears them.
  virtual std::vector<AccessRecord> TakeHistory() = 0;
  // Internal protocol violations observed (0 in a correct run).
  virtual int64_t protocol_errors() const = 0;
};

// Checks that the committed history is conflict-serializable: each
// (key, version) written once, versions contiguous, and the conflict graph
// (wr, ww, rw edges) acyclic. Returns the first problem found.
absl::Status CheckSerializable(const std::vector<AccessRecord>& history);

}  // namespace partitioned
}  // namespace corral

#endif  // CORRAL_ENGINE_PARTITIONED_PARTITIONED_H_
