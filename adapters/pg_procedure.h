// How a transaction is written for PostgreSQL: a PgProcedure runs the body of
// one attempt through a PgSession (statements by template name with text
// parameters, results back as rows), and may decide the next statement from
// earlier results or roll back on its own. PgExecutor wraps each attempt in
// BEGIN ISOLATION LEVEL ... / COMMIT, prepares each template once per
// connection, and classifies the outcome. A PgTxn carries a procedure through
// the scheduler's run queues.
//
//   auto catalog = std::make_shared<PgCatalog>();
//   catalog->Add("get_next_o_id",
//                "SELECT d_next_o_id FROM district WHERE d_w_id = $1 AND d_id = $2");
//   catalog->Add("bump_next_o_id",
//                "UPDATE district SET d_next_o_id = d_next_o_id + 1 WHERE d_w_id = $1 AND d_id = $2");
//   catalog->Add("insert_order", "INSERT INTO oorder (o_w_id, o_d_id, o_id) VALUES ($1, $2, $3)");
//
//   class NewOrder : public PgProcedure {      // TPC-C style, inputs as members
//    public:
//     absl::Status Run(PgSession& s) override {
//       auto r = s.Exec("get_next_o_id", {w_, d_});
//       if (!r.ok()) return r.status();
//       auto o_id = r->GetInt(0, 0);
//       if (!o_id.ok()) return o_id.status();
//       if (auto u = s.Exec("bump_next_o_id", {w_, d_}); !u.ok()) return u.status();
//       if (invalid_item_) return absl::AbortedError("NewOrder: invalid item");  // user abort
//       return s.Exec("insert_order", {w_, d_, std::to_string(*o_id)}).status();
//     }
//     std::string w_, d_; bool invalid_item_ = false;
//   };
//
//   auto txn = std::make_unique<PgTxn>(std::make_unique<NewOrder>(...));
//   txn->refs = ...;   // from the policy's reference extraction
//
// A procedure may be run several times (the scheduler retries conflict
// aborts): Run() must start from its inputs each time.
#ifndef CORRAL_ADAPTERS_PG_PROCEDURE_H_
#define CORRAL_ADAPTERS_PG_PROCEDURE_H_

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "adapters/pg_connection.h"
#include "scheduler/txn.h"

namespace corral {
namespace adapters {

// Text parameters of a statement; absl::nullopt is SQL NULL.
using PgParams = std::vector<absl::optional<std::string>>;

// A statement template: a name to prepare it under and SQL with $1..$n.
struct PgTemplate {
  std::string name;
  std::string sql;
};

// A workload's statement templates by name. Filled once, then shared
// read-only (std::shared_ptr<const PgCatalog>) by every executor: thread-safe
// for concurrent Find() after the last Add().
class PgCatalog {
 public:
  // Fails on an empty or duplicate name.
  absl::Status Add(std::string name, std::string sql);
  // The SQL of `name`, or null.
  const std::string* Find(absl::string_view name) const;
  size_t size() const { return sql_.size(); }

 private:
  absl::flat_hash_map<std::string, std::string> sql_;
};

// The statements of one transaction attempt, inside BEGIN ... COMMIT. Handed
// to PgProcedure::Run by the executor; valid only during that call.
//
// Every statement error (an SQLSTATE, a lost connection) comes back as a
// non-OK status that carries the SQLSTATE (SqlStateOf) and also marks the
// attempt as failed: later calls return FailedPrecondition without touching
// the server, and the executor classifies the first error even if the
// procedure swallows it. Not thread-safe: one procedure thread.
class PgSession {
 public:
  virtual ~PgSession() = default;
  // Runs the catalog template `name` (prepared once per connection).
  virtual absl::StatusOr<PgResult> Exec(absl::string_view name, const PgParams& params = {}) = 0;
  // Runs a template that is not in the catalog (prepared once per connection
  // under t.name; a name prepared earlier with different SQL is an error).
  virtual absl::StatusOr<PgResult> ExecTemplate(const PgTemplate& t,
                                                const PgParams& params = {}) = 0;
  // Runs SQL text as is (simple query protocol, no parameters).
  virtual absl::StatusOr<PgResult> ExecSql(absl::string_view sql) = 0;
};

// The body of a transaction. Thread-compatible: one executor runs it at a time.
class PgProcedure {
 public:
  virtual ~PgProcedure() = default;
  // Returns OK to commit. A non-OK status that did not come from a statement
  // is the procedure's own rollback (ExecResult::UserAbort, not retried).
  virtual absl::Status Run(PgSession& s) = 0;
};

// A procedure from a function.
class FunctionProcedure final : public PgProcedure {
 public:
  explicit FunctionProcedure(std::function<absl::Status(PgSession&)> fn) : fn_(std::move(fn)) {}
  absl::Status Run(PgSession& s) override { return fn_(s); }

 private:
  std::function<absl::Status(PgSession&)> fn_;
};

// One statement of a PgStatementSequence: a template (prepared) or, when
// stmt.name is empty, stmt.sql sent as text (then params must be empty).
struct PgStep {
  PgTemplate stmt;
  PgParams params;
};

// A sequence of statements, fixed or decided step by step from the results
// so far. results() holds the results of the last attempt.
class PgStatementSequence final : public PgProcedure {
 public:
  // Given the results so far (one per step run), returns the next step,
  // absl::nullopt to commit, or a non-OK status to roll back (user abort).
  using Next =
      std::function<absl::StatusOr<absl::optional<PgStep>>(const std::vector<PgResult>& so_far)>;

  explicit PgStatementSequence(std::vector<PgStep> steps);
  explicit PgStatementSequence(Next next) : next_(std::move(next)) {}

  absl::Status Run(PgSession& s) override;
  const std::vector<PgResult>& results() const { return results_; }

 private:
  Next next_;
  std::vector<PgResult> results_;
};

// A transaction for the PostgreSQL back end. Thread-compatible (see Txn).
class PgTxn final : public scheduler::Txn {
 public:
  explicit PgTxn(std::unique_ptr<PgProcedure> p) : procedure(std::move(p)) {}
  std::unique_ptr<PgProcedure> procedure;
};

}  // namespace adapters
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PG_PROCEDURE_H_
