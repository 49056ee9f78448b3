// A scriptable in-memory PgConnection for unit tests: it simulates a
// server's transaction state (idle / in transaction / failed transaction),
// prepared statements per connection, and a log of what was sent and what
// was committed, and it returns scripted failures: an SQLSTATE on the Nth
// statement or on statements matching a text, a dropped connection (before
// or after the statement took effect), failing reconnects.
//
//   FakePgConnection fake;                        // or std::make_unique, then keep a raw ptr
//   fake.FailNth(3, "40001");                     // 3rd statement: serialization failure
//   fake.DropWhen("UPDATE");                      // first UPDATE: connection lost
//   fake.DropWhen("COMMIT", 1, /*after_apply=*/true);  // COMMIT applied, reply lost
//   fake.SetResponder([](absl::string_view sql, auto params) {
//     return PgResult::Rows({"n"}, {{std::string("7")}});
//   });
//   ... run the executor ...
//   EXPECT_EQ(fake.committed().size(), 1);
//
// Statements are counted from 1 over Exec and ExecPrepared calls (BEGIN,
// COMMIT and ROLLBACK included; Prepare not) since the fake was created.
// Thread-safe: every method takes an internal mutex; the responder runs under
// it and must not call back into the fake.
#ifndef CORRAL_ADAPTERS_FAKE_PG_CONNECTION_H_
#define CORRAL_ADAPTERS_FAKE_PG_CONNECTION_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"
#include "adapters/pg_connection.h"

namespace corral {
namespace adapters {

class FakePgConnection final : public PgConnection {
 public:
  // One scripted failure.
  struct Rule {
    int64_t nth = 0;          // fire on statement number `nth` (1-based); 0 = any
    std::string match;        // fire when the SQL (prepared: its SQL or name) contains this; "" = any
    bool on_prepare = false;  // match Prepare calls instead of statements
    int times = 1;            // how often it fires; -1 = forever
    std::string sqlstate;     // the error to return (unless drop)
    std::string message = "scripted error";
    std::string detail;
    bool drop = false;        // lose the connection instead
    bool after_apply = false; // with drop: the statement takes effect first, then the reply is lost
  };

  // Result for a successful statement: sql is the statement's SQL (for a
  // prepared statement, its prepared SQL); params its parameters.
  using Responder = std::function<PgResult(absl::string_view sql,
                                           absl::Span<const absl::optional<std::string>> params)>;

  FakePgConnection() = default;

  void AddRule(Rule r);
  void FailNth(int64_t nth, std::string sqlstate, std::string message = "scripted error");
  void FailWhen(std::string match, std::string sqlstate, int times = 1,
                std::string message = "scripted error", std::string detail = "");
  void DropNth(int64_t nth, bool after_apply = false);
  void DropWhen(std::string match, int times = 1, bool after_apply = false);
  // The next `n` Reset() calls fail (server unreachable).
  void FailResets(int n);
  void SetResponder(Responder r);

  // What happened, in order: "EXEC <sql>", "PREPARE <name>: <sql>",
  // "EXECP <name>(<p1>,<p2>)" (NULL as \N), "RESET ok" / "RESET failed",
  // with " -> <SQLSTATE>" or " -> LOST" appended to calls that failed.
  std::vector<std::string> log() const;
  // The statements (same text as in log(), without suffix) of every committed
  // transaction and autocommitted statement, in commit order; session
  // commands (SET, SHOW, RESET, DISCARD) are left out.
  std::vector<std::string> committed() const;
  int64_t statements() const;
  int resets() const;
  bool in_transaction() const;

  // PgConnection
  bool connected() const override;
  PgResult Exec(absl::string_view sql) override;
  PgResult Prepare(absl::string_view name, absl::string_view sql) override;
  PgResult ExecPrepared(absl::string_view name,
                        absl::Span<const absl::optional<std::string>> params) override;
  absl::Status Reset() override;
  int backend_pid() const override;

 private:
  enum class TxnState { kIdle, kOpen, kFailed };

  // Applies a statement to the simulated server state and returns its result.
  PgResult Apply(const std::string& entry, absl::string_view sql,
                 absl::Span<const absl::optional<std::string>> params)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  PgResult Statement(std::string entry, absl::string_view sql, absl::string_view name,
                     absl::Span<const absl::optional<std::string>> params);
  // The first rule that fires for this call (consuming one of its `times`), or null.
  const Rule* Fire(int64_t nth, absl::string_view sql, absl::string_view name, bool prepare)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void DropLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  std::vector<Rule> rules_ ABSL_GUARDED_BY(mu_);
  Responder responder_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> log_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> committed_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> pending_ ABSL_GUARDED_BY(mu_);  // statements of the open txn
  absl::flat_hash_map<std::string, std::string> prepared_ ABSL_GUARDED_BY(mu_);
  TxnState txn_ ABSL_GUARDED_BY(mu_) = TxnState::kIdle;
  bool connected_ ABSL_GUARDED_BY(mu_) = true;
  int64_t statements_ ABSL_GUARDED_BY(mu_) = 0;
  int resets_ ABSL_GUARDED_BY(mu_) = 0;
  int failing_resets_ ABSL_GUARDED_BY(mu_) = 0;
  int pid_ ABSL_GUARDED_BY(mu_) = 1000;
};

}  // namespace adapters
}  // namespace corral

#endif  // CORRAL_ADAPTERS_FAKE_PG_CONNECTION_H_
