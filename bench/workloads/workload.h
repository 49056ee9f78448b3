// The common interface of the benchmark workloads (TPC-C, SmallBank, TATP,
// YCSB) on the embedded engine: loading, transaction generation, the SQL
// form of every generated transaction, per-type names, a consistency check,
// and a phase schedule that changes the skew over time.
//
//   std::unique_ptr<Workload> w = MakeWorkload("tpcc").value();   // factory.h
//   auto db = engine::Database::Create({.protocol = "occ"}).value();
//   CHECK_OK(w->Load(db.get()));
//   Rng rng(/*seed=*/42);                      // one per generating thread
//   std::unique_ptr<WorkloadTxn> t = w->Next(rng);
//   std::vector<SqlStatement> sql;
//   t->AppendSql(&sql);                         // text form (PostgreSQL, tests)
//   BoundSql bound;
//   t->AppendBound(&bound);                     // for the scheduler's front-end
//   std::string text = sql[0].Literal();        // "SELECT w_tax FROM warehouse WHERE w_id = 1"
//   executor->Execute(*t);                      // an engine::EngineExecutor
//   CHECK_OK(w->Check(*db));                    // after the run, quiescent
//
// SQL forms: every WorkloadTxn lists the statements it would run on
// PostgreSQL (the tables and columns of schemas/<workload>.sql), each as a
// template with $n and text parameters. Parameters known when the
// transaction is generated are bound; values that only become known while it
// runs (TPC-C's o_id from d_next_o_id, a customer id found by last name,
// amounts computed from rows read) are listed as NULL parameters
// (SqlParam::is_null), from which reference extraction yields nothing.
//
// Skew over time: SetPhaseSchedule() installs a list of phases {duration,
// skew}. With a Clock the current phase follows the time since the schedule
// was installed (the last phase lasts forever); without one, the bench runner
// moves between phases with SetPhase(i).
//
// Thread-safety: Load, SetPhaseSchedule and Check are single-threaded
// (quiescent). Next, SetPhase, phase(), TxnTypeNames are thread-safe; give
// every generating thread its own Rng. Generation is deterministic given the
// Rng's seed and the phase.
#ifndef CORRAL_BENCH_WORKLOADS_WORKLOAD_H_
#define CORRAL_BENCH_WORKLOADS_WORKLOAD_H_

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/clock.h"
#include "engine/engine.h"
#include "policies/bound_value.h"

namespace corral {
namespace workloads {

// A small, fast, seedable generator (xoshiro256**, seeded by splitmix64).
// Thread-compatible: one per thread.
class Rng {
 public:
  explicit Rng(uint64_t seed = 1);
  uint64_t Next();
  // Uniform in [lo, hi] (inclusive); lo <= hi.
  int64_t Uniform(int64_t lo, int64_t hi);
  // Uniform in [0, 1).
  double Double() { return static_cast<double>(Next() >> 11) * 0x1.0p-53; }
  bool Chance(double p) { return Double() < p; }

 private:
  uint64_t s_[4];
};

// A Zipf(theta) generator over [0, n) (Gray et al., "Quickly generating
// billion-record synthetic databases", SIGMOD'94): rank 0 is the most
// frequent. theta in [0, 1) (theta 0 = uniform). O(n) setup (zeta), O(1)
// draws. Immutable after construction: thread-safe.
class Zipf {
 public:
  Zipf(uint64_t n, double theta);
  uint64_t Draw(Rng& rng) const;
  uint64_t n() const { return n_; }
  double theta() const { return theta_; }

 private:
  uint64_t n_;
  double theta_, alpha_, zetan_, eta_, half_pow_theta_;
};

// One SQL parameter in text form. An integer (Int) keeps its decimal text in
// an inline buffer rather than a std::string, so building a statement's
// parameters costs no string operations; read every parameter's text with
// value().
struct SqlParam {
  std::string text;        // Str/Num text (empty for Int and Null: use value())
  bool is_null = false;    // unknown when generated (or SQL NULL)
  bool is_string = false;  // render quoted in the literal form
  uint8_t int_len = 0;     // > 0: an integer, its text in int_text[0, int_len)
  char int_text[20];       // int64's longest text: "-9223372036854775808"

  // The parameter's text (empty for NULL).
  absl::string_view value() const {
    return int_len > 0 ? absl::string_view(int_text, int_len) : absl::string_view(text);
  }
  // Sets this parameter to the integer v (same text as std::to_string).
  void SetInt(int64_t v) {
    int_len = static_cast<uint8_t>(std::to_chars(int_text, int_text + sizeof(int_text), v).ptr - int_text);
  }
  static SqlParam Int(int64_t v) {
    SqlParam p;
    p.SetInt(v);
    return p;
  }
  static SqlParam Num(double v);  // shortest exact decimal text
  static SqlParam Str(std::string s) {
    SqlParam p;
    p.text = std::move(s);
    p.is_string = true;
    return p;
  }
  static SqlParam Null() {
    SqlParam p;
    p.is_null = true;
    return p;
  }
};

// One statement: a template with $1..$n and its parameters.
//
// The template is either static text, not copied (a `const char*` or
// string_view must point at text that lives as long as the process and never
// changes: a string literal, a constant, a never-freed table), or a
// std::string the statement owns (moved in). Up to 9 parameters are stored
// inline, so building a statement list into a reused vector allocates
// nothing in steady state (integer texts fit std::string's inline buffer).
//
//   out->emplace_back(kTemplate).Int(w_id).Null().Str(last_name);
//   out->push_back({kTemplate, {SqlParam::Int(w_id)}});
struct SqlStatement {
  using Params = absl::InlinedVector<SqlParam, 9>;

  SqlStatement() = default;
  SqlStatement(const char* static_tmpl, Params p = {}) : tmpl(static_tmpl), params(std::move(p)) {}  // NOLINT
  SqlStatement(absl::string_view static_tmpl, Params p = {})  // NOLINT
      : tmpl(static_tmpl), params(std::move(p)) {}
  SqlStatement(std::string owned_tmpl, Params p = {})  // NOLINT
      : params(std::move(p)), owned_(std::move(owned_tmpl)), owns_(true) {
    tmpl = owned_;
  }
  SqlStatement(const SqlStatement& o) : tmpl(o.tmpl), params(o.params), owned_(o.owned_), owns_(o.owns_) {
    if (owns_) tmpl = owned_;
  }
  SqlStatement(SqlStatement&& o) noexcept
      : tmpl(o.tmpl), params(std::move(o.params)), owned_(std::move(o.owned_)), owns_(o.owns_) {
    if (owns_) tmpl = owned_;
  }
  SqlStatement& operator=(const SqlStatement& o) {
    if (this != &o) *this = SqlStatement(o);
    return *this;
  }
  SqlStatement& operator=(SqlStatement&& o) noexcept {
    params = std::move(o.params);
    owned_ = std::move(o.owned_);
    owns_ = o.owns_;
    tmpl = owns_ ? absl::string_view(owned_) : o.tmpl;
    return *this;
  }

  // Append one parameter (builders for emplace_back).
  SqlStatement& Int(int64_t v) {
    params.emplace_back().SetInt(v);
    return *this;
  }
  SqlStatement& Num(double v) {
    params.push_back(SqlParam::Num(v));
    return *this;
  }
  SqlStatement& Str(absl::string_view v) {
    SqlParam& p = params.emplace_back();
    p.text.assign(v.data(), v.size());
    p.is_string = true;
    return *this;
  }
  SqlStatement& Null() {
    params.emplace_back().is_null = true;
    return *this;
  }
  SqlStatement& Param(const SqlParam& p) {
    params.push_back(p);
    return *this;
  }

  // The statement with the parameters substituted as literals (strings
  // single-quoted, NULL for unknown ones).
  std::string Literal() const;
  // Whether tmpl is static text (a constant of the workload: the same
  // address always holds the same text, for the life of the process), which
  // a caller may key by address (the runner's prepared templates), rather
  // than text the statement owns.
  bool static_tmpl() const { return !owns_; }

  absl::string_view tmpl;  // static text or owned_
  Params params;

 private:
  std::string owned_;
  bool owns_ = false;
};

// A transaction's statements as the workload binds them: each a constant
// template (static text, as SqlStatement's) with typed parameters
// (policies/bound_value.h), none written out as text. What the runner
// extracts references from (policies/template_refs.h, keyed by the
// template's address); AppendSql derives the text form from it. A template
// that is not a constant is copied in (AddOwned; static_tmpl() false).
// Reused across transactions (clear), it allocates nothing in steady state.
// Thread-compatible: one per generating thread.
//
//   BoundSql b;
//   b.Add(kTemplate).Int(w_id).Null().Str(last_name);   // the view must outlive b's use
//   for (const BoundSql::Statement& s : b.statements()) Use(s.tmpl, b.params(s));
class BoundSql {
 public:
  struct Statement {
    absl::string_view tmpl;
    uint32_t begin = 0, end = 0;  // its parameters: values_[begin, end)
    bool owned = false;           // tmpl is a copy held by this BoundSql
    bool static_tmpl() const { return !owned; }
  };

  void clear() {
    stmts_.clear();
    values_.clear();
    owned_.clear();
  }
  // Starts a statement on static text (see SqlStatement).
  BoundSql& Add(absl::string_view static_tmpl) {
    const uint32_t n = static_cast<uint32_t>(values_.size());
    // Built in place, field by field (see BoundValue::SetInt).
    Statement& s = stmts_.emplace_back();
    s.tmpl = static_tmpl;
    s.begin = n;
    s.end = n;
    return *this;
  }
  // Starts a statement on a template that is not a constant.
  BoundSql& AddOwned(std::string tmpl) {
    owned_.push_back(std::move(tmpl));
    Add(owned_.back());
    stmts_.back().owned = true;
    return *this;
  }
  // Parameters of the last statement started.
  BoundSql& Int(int64_t v) {
    NewValue().SetInt(v);
    return *this;
  }
  BoundSql& Num(double v) {
    NewValue().SetNum(v);
    return *this;
  }
  BoundSql& Null() {
    NewValue().SetNull();
    return *this;
  }
  // Not copied: the text must outlive this BoundSql's use (the transaction's own members).
  BoundSql& Str(absl::string_view v) {
    NewValue().SetText(v);
    return *this;
  }
  BoundSql& Value(const BoundValue& v) {
    NewValue().Set(v);
    return *this;
  }

  // Issues write prefetches for the first `max_bytes` of the statement and
  // value buffers (their capacity, as grown by earlier transactions), so the
  // next transaction's binding does not stall on lines other work evicted.
  // No effect on the contents.
  void PrefetchForWrite(size_t max_bytes = 4096) const {
    PrefetchRange(stmts_.data(), std::min(stmts_.capacity() * sizeof(Statement), max_bytes));
    PrefetchRange(values_.data(), std::min(values_.capacity() * sizeof(BoundValue), max_bytes));
  }

  const std::vector<Statement>& statements() const { return stmts_; }
  size_t size() const { return stmts_.size(); }
  BoundSpan params(const Statement& s) const { return BoundSpan(values_.data() + s.begin, s.end - s.begin); }

 private:
  // Appends a value to the last statement started; the caller sets it.
  BoundValue& NewValue() {
    BoundValue& v = values_.emplace_back();
    stmts_.back().end = static_cast<uint32_t>(values_.size());
    return v;
  }
  static void PrefetchRange(const void* p, size_t bytes) {
    const char* c = static_cast<const char*>(p);
    for (size_t off = 0; off < bytes; off += 64) __builtin_prefetch(c + off, 1);
  }

  std::vector<Statement> stmts_;
  std::vector<BoundValue> values_;
  std::deque<std::string> owned_;  // stable addresses
};

class WorkloadTxn;

// Where a transaction's read/write set comes from when it is not the
// workload's own declaration (WorkloadTxn::DeclareOwnAccesses): e.g. the set
// derived from its SQL (bench/workloads/sql_sets.h, `sets=sql`). Same
// contract as engine::ProcedureTxn::DeclareAccesses. Implementations are
// called concurrently from the executors' threads: thread-safe.
class AccessDeriver {
 public:
  virtual ~AccessDeriver() = default;
  virtual bool Derive(const WorkloadTxn& txn, engine::AccessSet& set) const = 0;
};

// A generated transaction: an engine procedure that also knows its SQL.
// Sets scheduler::Txn::type and ::partition_key when generated.
class WorkloadTxn : public engine::ProcedureTxn {
 public:
  // Appends the statements this transaction runs on PostgreSQL, bound.
  virtual void AppendBound(BoundSql* out) const = 0;
  // The same statements in text-parameter form (from AppendBound).
  void AppendSql(std::vector<SqlStatement>* out) const;

  // Planned protocols: the deriver's set when one is installed
  // (set_access_deriver), else the workload's own declaration.
  bool DeclareAccesses(engine::AccessSet& set) const final {
    return deriver_ != nullptr ? deriver_->Derive(*this, set) : DeclareOwnAccesses(set);
  }
  // The workload's declaration from the parameters (ProcedureTxn::DeclareAccesses's contract).
  virtual bool DeclareOwnAccesses(engine::AccessSet& set) const { return false; }
  // Not owned; must outlive the transaction's runs. Null: DeclareOwnAccesses.
  void set_access_deriver(const AccessDeriver* d) { deriver_ = d; }

 private:
  const AccessDeriver* deriver_ = nullptr;
};

// Appends `bound`'s statements to *out in text-parameter form.
void AppendSqlStatements(const BoundSql& bound, std::vector<SqlStatement>* out);

// Skew of one phase. Negative fields mean "the workload's default".
struct SkewPhase {
  double duration_s = 60;
  // Zipf theta over the workload's partition domain (TPC-C: home warehouse;
  // SmallBank: account; TATP: subscriber; YCSB: key). 0 = uniform. When >= 0
  // it replaces the hot-spot distribution for SmallBank/TATP.
  double zipf_theta = -1;
  // SmallBank/TATP hot spot: fraction of accesses to the hot range and its size.
  double hot_fraction = -1;
  int64_t hot_size = -1;
  // Where the phase's hot keys sit: every drawn key moves this far (modulo
  // the domain), so a later phase with another offset has a hot spot (or
  // Zipf head) that moved: TPC-C's hot warehouse, SmallBank's hot accounts,
  // TATP's hot subscribers, YCSB's hot range.
  int64_t hot_offset = 0;
};

// Key k of 1..n moved by `offset` (modulo n): a phase's hot spot moved.
inline int64_t ShiftKey(int64_t k, int64_t offset, int64_t n) {
  if (offset == 0 || n <= 0) return k;
  int64_t o = offset % n;
  if (o < 0) o += n;
  return (k - 1 + o) % n + 1;
}

// Keys 1..n for SmallBank (accounts) and TATP (subscribers): a hot spot
// (hot_fraction of draws uniform over 1..hot_size, the rest over the others),
// replaced per skew phase by the phase's hot spot or Zipf theta.
// Thread-safety: SetPhases while no thread draws; Draw is then thread-safe.
class HotSpotKeys {
 public:
  HotSpotKeys(int64_t n, double hot_fraction, int64_t hot_size)
      : n_(n), hot_fraction_(hot_fraction), hot_size_(hot_size) {}
  void SetPhases(const std::vector<SkewPhase>& phases);
  // A key for skew phase `phase` (-1: no phase schedule).
  int64_t Draw(Rng& rng, int phase) const;

 private:
  int64_t n_;
  double hot_fraction_;
  int64_t hot_size_;
  std::vector<SkewPhase> phases_;
  std::vector<std::unique_ptr<Zipf>> phase_zipf_;  // per phase, null = hot spot
};

class Workload {
 public:
  virtual ~Workload() = default;

  virtual std::string name() const = 0;
  // The DDL file (relative to the repository root) its SQL is written against.
  virtual std::string schema_file() const = 0;
  // Creates the tables and indexes and loads the initial population.
  virtual absl::Status Load(engine::Database* db) = 0;
  // The next transaction. Thread-safe (see the file comment).
  virtual std::unique_ptr<WorkloadTxn> Next(Rng& rng) const = 0;
  // TxnTypeId value -> name.
  virtual const std::vector<std::string>& TxnTypeNames() const = 0;
  // Consistency conditions, on a quiescent database loaded by this workload.
  // The error names the violated condition.
  virtual absl::Status Check(const engine::Database& db) const = 0;

  // Visits every row of the tables of the SQL schema (not the engine-only
  // audit tables), quiescent, table by table; for loaders that copy the
  // loaded population elsewhere (PostgreSQL, pg_forms.h). Stops at the
  // first non-OK status of `fn` and returns it. The default (for workloads
  // without a PostgreSQL form) returns Unimplemented.
  using RowFn = std::function<absl::Status(const engine::Table&, const engine::ConstRow&)>;
  virtual absl::Status ForEachRow(const engine::Database& db, const RowFn& fn) const {
    return absl::UnimplementedError(name() + ": ForEachRow not implemented");
  }

  // Phase schedule (see the file comment). `clock` may be null (explicit
  // SetPhase). An empty schedule means the workload's defaults.
  void SetPhaseSchedule(std::vector<SkewPhase> phases, const Clock* clock);
  void SetPhase(int i) { explicit_phase_.store(i, std::memory_order_relaxed); }
  // Index of the current phase, or -1 without a schedule.
  int phase() const;
  const std::vector<SkewPhase>& phases() const { return phases_; }

 protected:
  // Called by SetPhaseSchedule after the phases are stored, to precompute
  // per-phase generators.
  virtual void OnPhases() {}

 private:
  std::vector<SkewPhase> phases_;
  std::vector<int64_t> phase_end_ns_;  // cumulative, relative to start_ns_
  const Clock* clock_ = nullptr;
  int64_t start_ns_ = 0;
  std::atomic<int> explicit_phase_{0};
};

}  // namespace workloads
}  // namespace corral

#endif  // CORRAL_BENCH_WORKLOADS_WORKLOAD_H_
