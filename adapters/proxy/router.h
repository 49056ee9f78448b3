// Transaction routing, the proxy's seam to the scheduler: references in
// (from a simple Query's text, or from every Bind of an extended-protocol
// unit: its statement's text plus its parameters, text or binary, decoded by
// policies/pg_params.h with the statement's types), a queue out
// (Scheduler::Route, with whether learned affinity placed it), and the
// outcome back (History for commits and conflict aborts, ReportOutcome for
// the rest). Also classifies transaction-control statements (BEGIN /
// COMMIT / ROLLBACK), which the proxy answers itself when it can.
//
//   Router router(&scheduler, schema);
//   RoutedTxn t;
//   router.AddQuery("UPDATE a SET v = v + 1 WHERE id = 5", &t);
//   bool affine = false;
//   int queue = router.Route(&t, /*want_affinity=*/true, &affine);
//   ... run it on backend `queue`; t.conflict_state = "40001" on a conflict ...
//   router.AddQuery("UPDATE a SET v = 0 WHERE id = 7", &t);  // later statements
//   router.Finish(&t, t.outcome());   // every statement's references
//
// Parameter types: the Parse's declared OIDs; where one is unspecified (0),
// the server's ParameterDescription for the statement (LearnParamTypes, kept
// by statement in a bounded cache). A Bind whose binary parameter has no
// type yet is kept (DeferredBind) and decoded at Finish, after the proxy has
// asked the server (NeedsParamTypes says when to send a Describe). A value
// that cannot be decoded yields no reference and is counted.
//
// Thread safety: not thread-safe; the event loop owns it (the Scheduler it
// calls is thread-safe).
#ifndef CORRAL_ADAPTERS_PROXY_ROUTER_H_
#define CORRAL_ADAPTERS_PROXY_ROUTER_H_

#include <atomic>
#include <cstdint>
#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "adapters/proxy/prepared.h"
#include "adapters/proxy/retry_memory.h"
#include "adapters/proxy/templates.h"
#include "policies/pg_params.h"
#include "policies/ref_extractor.h"
#include "policies/schema.h"
#include "scheduler/scheduler.h"

namespace corral {
namespace proxy {

enum class TxnControl { kOther, kBegin, kCommit, kRollback };

// BEGIN / START TRANSACTION, COMMIT / END, ROLLBACK / ABORT as a single
// statement (savepoint forms and prepared-transaction forms are kOther).
TxnControl ClassifyTxnControl(absl::string_view sql);
// `sql` without trailing semicolons and blanks.
absl::string_view WithoutTrailingSemicolons(absl::string_view sql);
// Whether statement `sql` may end or split the transaction block it runs
// in: transaction control of any kind (also COMMIT PREPARED, ROLLBACK TO,
// SAVEPOINT, RELEASE, PREPARE), or a CALL / DO whose body may commit.
bool MayEndTxnBlock(absl::string_view sql);

// The transaction modes a BEGIN / START TRANSACTION names (0 = not named).
struct BeginModes {
  int serializable = 0;  // 1: ISOLATION LEVEL SERIALIZABLE, -1: another level
  int read_only = 0;     // 1: READ ONLY, -1: READ WRITE
  int deferrable = 0;    // 1: DEFERRABLE, -1: NOT DEFERRABLE
};
BeginModes ParseBeginModes(absl::string_view begin_sql);

// Whether a transaction with these modes can neither fail with nor cause a
// serialization failure through what it reads: below SERIALIZABLE,
// PostgreSQL takes no predicate locks and fails a transaction only for a
// row it writes or locks; a SERIALIZABLE READ ONLY DEFERRABLE one runs on a
// safe snapshot. (read_only: the transaction cannot write either.)
inline bool ReadsCannotConflict(bool serializable, bool read_only, bool deferrable) {
  return !serializable || (read_only && deferrable);
}

// A Bind waiting for its statement's parameter types (decoded at Finish).
struct DeferredBind {
  PreparedDef def;
  std::string body;  // the Bind's body
};

// One client transaction as the router sees it.
struct RoutedTxn {
  scheduler::Txn txn;
  RefTexts ref_texts;
  std::vector<DeferredBind> deferred;
  // Its first statement's RetryStatementKey (retry_memory.h): the text of
  // a simple Query, or the first Bind's statement text and parameters.
  std::string first_key;
  // Templates on (templates.h): its statements so far (the first
  // Templates::kMaxPositions + 1), and the references predicted for it.
  TxnTrace trace;
  RefVec predicted;
  // What it was routed on beyond its first statement's references (a
  // retry's remembered ones, predicted ones): running, it holds these too.
  RefVec ahead;
  // Placed on one of a split hot reference's queues (txn.placed_split,
  // txn.placed_by = that reference): how many queues it had then.
  int split_k = 0;
  // A plain read outside a transaction block at READ COMMITTED
  // (Options::free_reads): no references, not routed, not learned.
  bool conflict_free = false;
  // Of them: a READ ONLY block (Proxy::Loop::FreeModeOf): every statement
  // of it is free, not only the routing unit's.
  bool free_block = false;
  // What the backend answered, for the outcome.
  std::string conflict_state;  // 40001 / 40P01, "" when none
  bool had_error = false;
  bool rolled_back = false;

  void ClearRefs();
  void ClearOutcome();
  scheduler::Outcome outcome() const;
};

class Router {
 public:
  // `undecodable` (may be null) counts the parameter values that yielded no
  // reference because they could not be decoded.
  Router(scheduler::Scheduler* scheduler, std::shared_ptr<const Schema> schema,
         std::atomic<int64_t>* undecodable = nullptr, size_t type_cache_size = 4096);

  // The catalog changed (RELOAD): also forgets the learned parameter types.
  void SetSchema(std::shared_ptr<const Schema> schema);

  // Appends the references of a simple query. With `free_if_plain_read`
  // (the caller runs it outside a transaction block at READ COMMITTED), a
  // text of plain reads (StatementFacts) appends nothing, is not traced and
  // sets t->conflict_free.
  void AddQuery(absl::string_view sql, RoutedTxn* t, bool free_if_plain_read = false);
  // Appends the references of pending[0..end] (an extended-protocol unit):
  // every Bind's statement (parsed in the unit or known in `stmts`). With
  // `free_if_plain_read`, a unit that binds only plain reads appends
  // nothing and sets t->conflict_free, as AddQuery.
  void AddUnit(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts, RoutedTxn* t,
               bool free_if_plain_read = false);
  // The text of the BEGIN / START TRANSACTION that the unit pending[0..end]
  // binds first (a driver that opens its block with the first query's
  // unit, as pgjdbc does), "" when its first Bind is not one.
  std::string UnitBegin(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts);
  // Whether every Bind of the unit binds a known statement that cannot end
  // the block it runs in (MayEndTxnBlock).
  bool UnitFreeOfTxnControl(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts);
  // Appends the references of one Bind (`bind_body`: the whole body) of
  // statement `d`, or defers it when a binary parameter's type is not known.
  void AddBind(const PreparedDef& d, absl::string_view bind_body, RoutedTxn* t) {
    AddBindImpl(d, bind_body, /*may_defer=*/true, t);
  }
  // Whether a Bind of `d` has a binary parameter of a type neither declared
  // nor learned: the proxy should Describe the statement on the backend.
  bool NeedsParamTypes(const PreparedDef& d, absl::string_view bind_body);
  // The server's ParameterDescription body for statement `key`
  // (PreparedDef::key); a malformed one is ignored.
  void LearnParamTypes(const std::string& key, absl::string_view parameter_description);
  const ParamTypeCache& param_types() const { return types_; }
  // Statement templates (templates.h), null = off: statements are traced,
  // every committed or conflict-failed transaction teaches them (Finish),
  // and PredictRefs predicts a transaction's later references.
  void SetTemplates(std::unique_ptr<Templates> t) { templates_ = std::move(t); }
  Templates* templates() { return templates_.get(); }
  const Templates* templates() const { return templates_.get(); }
  // Trace the first statement even with templates off (t->trace[0]: its
  // shape keys the per-template concurrency cap, template_cap.h).
  void SetTraceFirst(bool on) { trace_first_ = on; }
  // Key each transaction by its first statement (RoutedTxn::first_key, for
  // retry-aware routing); off, no key is built.
  void SetKeyFirst(bool on) { key_first_ = on; }
  bool keys_first() const { return key_first_; }
  // Whether a transaction with `n` traced statements traces its next one.
  bool Traces(size_t n) const {
    return templates_ != nullptr ? n <= Templates::kMaxPositions : trace_first_ && n == 0;
  }
  // The references the templates predict for t's later statements from its
  // first (those naming an unpredictable parameter dropped), into
  // t->predicted (replaced); how many.
  size_t PredictRefs(RoutedTxn* t);
  // The History learns a conflict of t's references so far, as at a
  // 40001 (the transaction goes on: a restart the proxy made instead);
  // counted for auto (Scheduler::ReportOutcome), as Finish counts a
  // commit.
  void RecordConflict(const RoutedTxn& t);
  // The syntax error of a statement, OK when it parses (or fails otherwise).
  absl::Status CheckSyntax(absl::string_view sql);

  // The queue, in [0, num_queues); *affinity (when asked: it costs a Decide)
  // says whether learned affinity placed it.
  int Route(RoutedTxn* t, bool want_affinity, bool* affinity, int num_queues) {
    return Route(t, RefVec(), want_affinity, affinity, num_queues);
  }
  // As Route, deciding on t's references plus `extra` (a retry's
  // remembered ones, retry_memory.h); t's own references are unchanged.
  int Route(RoutedTxn* t, const RefVec& extra, bool want_affinity, bool* affinity, int num_queues);
  // The transaction ended with `o`: decodes its deferred Binds (those whose
  // types are still unknown count as undecodable), then records the outcome
  // for every statement's references (none for a conflict_free one).
  void Finish(RoutedTxn* t, scheduler::Outcome o);

 private:
  void AddBindImpl(const PreparedDef& d, absl::string_view bind_body, bool may_defer, RoutedTxn* t);
  // Whether d's text is a plain read (memoized in d).
  bool PlainRead(const PreparedDef& d);
  // Calls fn(d, bind, params) for every Bind of pending[0..end]: d its
  // statement (Statement; null when unknown), params the Bind's part after
  // the names (formats, values, result formats). Stops at the first fn that
  // returns false; whether none did. Allocates nothing once the unit's
  // statement texts are known.
  template <typename Fn>
  bool ForEachBind(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts, Fn fn);
  // Statement `name` as a Bind of the unit ForEachBind walks sees it: the
  // unit's latest Parse of that name before it (unit_parses_), else the
  // client's `stmts`; null when neither. A text parsed in the unit is the
  // client's entry when that holds the same text and types, else the
  // shared entry in parsed_ (made on first sight). The pointer is good
  // until the next call.
  const PreparedDef* Statement(absl::string_view name, const StatementMap& stmts);
  // Whether the unit pending[0..end] ends with its Sync and binds only
  // plain reads (at least one).
  bool UnitIsPlainRead(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts);
  // Fills oids_ for bind_ (declared, else learned); true when every non-null
  // binary value has a type.
  bool ResolveTypes(const PreparedDef& d);

  scheduler::Scheduler& sched_;
  std::unique_ptr<RefExtractor> extractor_;
  std::atomic<int64_t> own_undecodable_{0};
  std::atomic<int64_t>& undecodable_;
  ParamTypeCache types_;
  // Statements parsed in units, by PreparedDef::key (text and declared
  // types), across clients: what Statement gives for a text the client's
  // map does not hold yet; plain_read is memoized there. Emptied by SetSchema.
  FifoCache<PreparedDef> parsed_;
  // ForEachBind's scratch: the unit's Parses so far (views into it).
  struct UnitParse {
    absl::string_view name;
    absl::string_view key;   // query '\0' types, as PreparedDef::key
    absl::string_view body;  // the whole Parse body
  };
  std::vector<UnitParse> unit_parses_;
  // AddBind's scratch (reused: no allocation once warm).
  BindMessage bind_;
  BoundParams bound_;
  std::vector<uint32_t> oids_;
  std::unique_ptr<Templates> templates_;
  bool trace_first_ = false;
  bool key_first_ = true;
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_ROUTER_H_
