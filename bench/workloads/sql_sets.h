// SqlSets: a transaction's read/write set derived from its SQL, for the
// planned protocols ("calvin", "planned") under `sets=sql`, instead of the
// workload's own declaration (WorkloadTxn::DeclareOwnAccesses).
//
// Each bound statement (WorkloadTxn::AppendBound) goes through the
// RefExtractor (literal naming, grouping All: one conjunction of
// `column=value` per WHERE clause, INSERT row or IN-list element); a
// conjunction that binds a table's key columns names that engine row. The
// mapping from SQL (table, key columns) to the engine's table and packed key
// is per workload (rules in sql_sets.cc, next to the workloads' key packers):
//  * every key column bound by an integer -> that row;
//  * a table whose lock granule is a key prefix (TPC-C orders, new_order,
//    order_line: (w, d)) needs only the prefix: NewOrder's INSERT of an
//    order whose o_id it does not know yet (a NULL parameter) still names
//    its district's granule;
//  * TPC-C history rows have no key in SQL; the engine numbers them per
//    executor slot, so any history statement names the slot's granule;
//  * engine-only audit rows that the SQL never names (SmallBank, TATP, YCSB)
//    are added by rule: the slot's audit row is written when the SQL writes
//    a given table (or any table);
//  * a statement writes (INSERT, UPDATE, DELETE, SELECT ... FOR UPDATE) all
//    the rows it names; otherwise it reads them.
// What the SQL does not name (a customer found by last name, Delivery's
// oldest new order, rows joined through `col = col`, ranges) is missing: the
// set is offered as complete, the engine's guard refuses the first access
// outside it, and the transaction is re-planned with a reconnaissance run
// (engine/planned.cc, ExecutorStats::replans).
//
//   auto schema = ...;   // policies Schema of w.schema_file(), InsertRefs::kAll
//   auto sets = SqlSets::Create(w.name(), *db, schema).value();
//   txn->set_access_deriver(sets.get());   // planned protocols now lock its SQL set
//
// Thread-safety: Derive, DeriveBound and DeriveBoundByText are thread-safe
// (the rules are immutable after Create; the cache of compiled templates
// sits behind a reader-writer lock; the RefExtractor is thread-safe).
#ifndef CORRAL_BENCH_WORKLOADS_SQL_SETS_H_
#define CORRAL_BENCH_WORKLOADS_SQL_SETS_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <shared_mutex>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "bench/workloads/workload.h"
#include "engine/engine.h"
#include "policies/ref_extractor.h"
#include "policies/schema.h"

namespace corral {
namespace workloads {

// A set compared with the accesses an execution made, per lock granule
// (Table::LockGranule: what a planned protocol's lock covers) and mode.
struct SetDiff {
  int actual = 0;  // distinct (granule, mode) the execution accessed
  int set = 0;     // distinct (granule, mode) of the set
  int missed = 0;  // accessed granules the set lacks, or writes it has only as reads
  int over = 0;    // set granules not accessed, or writes only read
  std::vector<const engine::Table*> missed_tables;  // the table of each miss
  bool complete() const { return missed == 0; }
  bool exact() const { return missed == 0 && over == 0; }
};
SetDiff CompareAccessSets(const std::vector<engine::AccessSet::Entry>& set,
                          const std::vector<engine::AccessSet::Entry>& actual);

// A Tx that forwards every call to `inner` and logs the rows it accessed
// (a scan: the rows it returned), to compare a set with an execution.
// Thread-compatible, as any Tx.
class RecordingTx final : public engine::Tx {
 public:
  RecordingTx(engine::Tx* inner, std::vector<engine::AccessSet::Entry>* log) : inner_(inner), log_(log) {}
  absl::Status Read(const engine::Table* table, uint64_t key, engine::ConstRow* out) override {
    log_->push_back({table, key, false});
    return inner_->Read(table, key, out);
  }
  absl::Status ReadForUpdate(const engine::Table* table, uint64_t key, engine::Row* out) override {
    log_->push_back({table, key, true});
    return inner_->ReadForUpdate(table, key, out);
  }
  absl::Status Insert(const engine::Table* table, uint64_t key, engine::Row* out) override {
    log_->push_back({table, key, true});
    return inner_->Insert(table, key, out);
  }
  absl::Status Delete(const engine::Table* table, uint64_t key) override {
    log_->push_back({table, key, true});
    return inner_->Delete(table, key);
  }
  absl::Status Scan(const engine::ScanSpec& spec, std::vector<engine::ConstRow>* out) override;
  bool conflicted() const override { return inner_->conflicted(); }
  int worker_id() const override { return inner_->worker_id(); }

 private:
  engine::Tx* inner_;
  std::vector<engine::AccessSet::Entry>* log_;
};

class SqlSets final : public AccessDeriver {
 public:
  // How the conjunctions on one SQL table name rows of the engine table of
  // the same name.
  struct KeyRule {
    std::string table;
    std::vector<std::string> key;  // SQL key columns, in the order `pack` takes them
    size_t granule = 0;            // the first `granule` key columns must be bound (the rest: 0)
    std::function<uint64_t(const int64_t* values, int worker)> pack;
  };
  // An engine-only table: the worker slot's row is written whenever the SQL
  // writes `trigger` (empty: any table).
  struct SlotRule {
    std::string engine_table;
    std::string trigger;
  };

  // Rules for workload `workload` ("tpcc", "tpcc-np", "smallbank", "tatp",
  // "ycsb") over `db` (loaded by that workload). `schema` is the workload's
  // SQL schema built with InsertRefs::kAll (an INSERT's key columns must
  // yield references). InvalidArgument for an unknown workload, a missing
  // table or another InsertRefs mode.
  static absl::StatusOr<std::unique_ptr<SqlSets>> Create(const std::string& workload,
                                                         const engine::Database& db,
                                                         std::shared_ptr<const Schema> schema);

  // Adds the accesses `bound` names to *set (for executor slot
  // set->worker_id()). Returns how many statements did not extract (syntax
  // errors; none for the workloads' SQL).
  int DeriveBound(const BoundSql& bound, engine::AccessSet* set) const;
  // The same through the RefExtractor's text path for every statement (the
  // parameters written out as text): what DeriveBound's compiled templates
  // must agree with (tests).
  int DeriveBoundByText(const BoundSql& bound, engine::AccessSet* set) const;
  // AccessDeriver: txn's SQL set; always "complete" (true): what it misses is
  // refused and re-planned at run time.
  bool Derive(const WorkloadTxn& txn, engine::AccessSet& set) const override;

 private:
  static constexpr size_t kMaxKey = 8;
  struct Column {
    int rule;  // index into rules_
    int key;   // position in the rule's key, or -1
  };
  // One `column=value` of a conjunction, on a column of a rule's table.
  struct Member {
    int rule = 0;
    int key = -1;
    int param = -1;  // compiled template: 0-based parameter feeding the value; -1: a constant
    bool is_int = false;  // the value (quotes stripped) is an integer
    int64_t value = 0;
  };
  using Conj = std::vector<Member>;
  // A template compiled once: its conjunctions with parameter slots (each
  // parameter bound to a sentinel, found again in the references' texts).
  struct Plan {
    size_t params = 0;
    bool write = false;
    std::vector<Conj> conjs;
  };
  // The conjunctions of references' texts, restricted to the rules' tables.
  std::vector<Conj> Conjunctions(const std::vector<std::string>& texts) const;
  absl::StatusOr<const Plan*> PlanFor(absl::string_view tmpl, size_t params) const;
  static absl::StatusOr<const Plan*> Checked(const Plan* plan, size_t params);
  void Apply(const std::vector<Conj>& conjs, bool write, engine::AccessSet* set,
             std::vector<bool>* rule_written, bool* any_write) const;
  void AddSlots(const std::vector<bool>& rule_written, bool any_write, engine::AccessSet* set) const;
  SqlSets(std::shared_ptr<const Schema> schema, std::vector<KeyRule> rules,
          std::vector<SlotRule> slots, const engine::Database& db);
  absl::Status Init();

  std::shared_ptr<const Schema> schema_;
  std::unique_ptr<RefExtractor> extractor_;
  std::vector<KeyRule> rules_;
  std::vector<const engine::Table*> tables_;  // per rule
  std::vector<SlotRule> slots_;
  std::vector<const engine::Table*> slot_tables_;  // per slot rule
  const engine::Database& db_;
  absl::flat_hash_map<std::string, Column> columns_;  // literal reference name -> column
  // std::shared_mutex rather than absl::Mutex: the Debian absl is not
  // TSan-instrumented (as in bench/runner/sql_refs.h and engine/planned.cc).
  mutable std::shared_mutex mu_;
  // Template text -> its plan; plans are never removed (stable pointers). Guarded by mu_.
  mutable absl::flat_hash_map<std::string, std::unique_ptr<Plan>> plans_;
};

}  // namespace workloads
}  // namespace corral

#endif  // CORRAL_BENCH_WORKLOADS_SQL_SETS_H_
