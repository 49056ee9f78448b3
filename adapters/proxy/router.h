// Transaction routing, the proxy's seam to the scheduler: references in
// (from a simple Query's text, or from every Bind of an extended-protocol
// unit: its statement's text plus its text parameters), a queue out
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
//   router.Finish(t, t.outcome());
//
// Later: binary Bind parameters are decoded into references in AddBind
// (the statement's declared types: PreparedDef::ParamTypes()).
//
// Thread safety: not thread-safe; the event loop owns it (the Scheduler it
// calls is thread-safe).
#ifndef CORRAL_ADAPTERS_PROXY_ROUTER_H_
#define CORRAL_ADAPTERS_PROXY_ROUTER_H_

#include <deque>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "adapters/proxy/prepared.h"
#include "policies/ref_extractor.h"
#include "policies/schema.h"
#include "scheduler/scheduler.h"

namespace corral {
namespace proxy {

enum class TxnControl { kOther, kBegin, kCommit, kRollback };

// BEGIN / START TRANSACTION, COMMIT / END, ROLLBACK / ABORT as a single
// statement (savepoint forms and prepared-transaction forms are kOther).
TxnControl ClassifyTxnControl(absl::string_view sql);

// One client transaction as the router sees it.
struct RoutedTxn {
  scheduler::Txn txn;
  std::vector<std::string> ref_texts;
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
  Router(scheduler::Scheduler* scheduler, std::shared_ptr<const Schema> schema);

  // The catalog changed (RELOAD).
  void SetSchema(std::shared_ptr<const Schema> schema);

  // Appends the references of a simple query.
  void AddQuery(absl::string_view sql, RoutedTxn* t);
  // Appends the references of pending[0..end] (an extended-protocol unit):
  // every Bind's statement (parsed in the unit or known in `stmts`).
  void AddUnit(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts, RoutedTxn* t);
  // The syntax error of a statement, OK when it parses (or fails otherwise).
  absl::Status CheckSyntax(absl::string_view sql);

  // The queue, in [0, num_queues); *affinity (when asked: it costs a Decide)
  // says whether learned affinity placed it.
  int Route(RoutedTxn* t, bool want_affinity, bool* affinity, int num_queues);
  // The transaction ended with `o`.
  void Finish(const RoutedTxn& t, scheduler::Outcome o);

 private:
  // One Bind's references: `text` is its statement, `params` the Bind's
  // body after the statement name (formats, then values).
  void AddBind(const std::string& text, absl::string_view params, RoutedTxn* t);

  scheduler::Scheduler& sched_;
  std::unique_ptr<RefExtractor> extractor_;
  std::vector<ParamValue> params_;  // AddBind's scratch
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_ROUTER_H_
