// The libpq seam: one PostgreSQL connection behind an abstract interface, so
// that the executor can be tested against a scriptable in-memory fake
// (fake_pg_connection.h) and run for real through libpq (libpq_connection.h),
// the way LevelDB tests its storage through an Env.
//
//   std::unique_ptr<PgConnection> c = ...;  // ConnectLibpq(...) or FakePgConnection
//   PgResult r = c->Exec("SELECT 1");
//   if (r.ok()) use(r.Get(0, 0));
//   c->Prepare("get_bal", "SELECT bal FROM acct WHERE id = $1");
//   PgResult b = c->ExecPrepared("get_bal", {"42"});
//   if (b.connection_lost()) c->Reset();      // prepared statements are gone
//   absl::Status s = b.ToStatus("get_bal");   // SQLSTATE, message, detail kept
#ifndef CORRAL_ADAPTERS_PG_CONNECTION_H_
#define CORRAL_ADAPTERS_PG_CONNECTION_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"

namespace corral {
namespace adapters {

// SQLSTATEs the adapter classifies.
inline constexpr absl::string_view kSqlStateSerialization = "40001";
inline constexpr absl::string_view kSqlStateDeadlock = "40P01";
inline constexpr absl::string_view kSqlStateLockNotAvailable = "55P03";
inline constexpr absl::string_view kSqlStateUniqueViolation = "23505";
inline constexpr absl::string_view kSqlStateInFailedTxn = "25P02";
inline constexpr absl::string_view kSqlStateQueryCanceled = "57014";

// The result of one statement. A value type; thread-compatible.
class PgResult {
 public:
  enum class Kind : uint8_t {
    kOk,              // command completed (with or without rows)
    kError,           // the server (or libpq) reported an error; connection still usable
    kConnectionLost,  // the connection is broken; outcome of this statement unknown
  };

  static PgResult Ok(std::string command_tag = "") {
    PgResult r;
    r.command_tag_ = std::move(command_tag);
    return r;
  }
  static PgResult Rows(std::vector<std::string> columns,
                       std::vector<std::vector<absl::optional<std::string>>> rows,
                       std::string command_tag = "SELECT");
  static PgResult Error(std::string sqlstate, std::string message, std::string detail = "",
                        std::string hint = "");
  static PgResult Lost(std::string message);

  Kind kind() const { return kind_; }
  bool ok() const { return kind_ == Kind::kOk; }
  bool connection_lost() const { return kind_ == Kind::kConnectionLost; }

  // Error fields (empty when ok()). sqlstate() may be empty for client-side
  // errors (libpq could not send the query, out of memory, ...).
  const std::string& sqlstate() const { return sqlstate_; }
  const std::string& message() const { return message_; }
  const std::string& detail() const { return detail_; }
  const std::string& hint() const { return hint_; }

  // "UPDATE 1", "SELECT 3", "COMMIT", "ROLLBACK", ...
  const std::string& command_tag() const { return command_tag_; }
  // The row count in the command tag (rows updated / inserted / selected), or -1.
  int64_t affected_rows() const;

  int num_rows() const { return static_cast<int>(rows_.size()); }
  int num_columns() const { return static_cast<int>(columns_.size()); }
  const std::vector<std::string>& columns() const { return columns_; }
  bool IsNull(int row, int col) const { return !rows_[row][col].has_value(); }
  // The text of a value; "" for NULL. row/col must be in range.
  const std::string& Get(int row, int col) const;
  // The value parsed as an integer; an error for NULL / not a number / out of range.
  absl::StatusOr<int64_t> GetInt(int row, int col) const;
  absl::StatusOr<double> GetDouble(int row, int col) const;

  // OK when ok(); otherwise a Status whose code follows the SQLSTATE class
  // (see StatusCodeForSqlState), whose message carries SQLSTATE, message,
  // detail, hint and `what` (the statement), and whose payload
  // kSqlStatePayloadUrl holds the SQLSTATE.
  absl::Status ToStatus(absl::string_view what = "") const;

 private:
  Kind kind_ = Kind::kOk;
  std::string sqlstate_, message_, detail_, hint_, command_tag_;
  std::vector<std::string> columns_;
  std::vector<std::vector<absl::optional<std::string>>> rows_;
};

// Status payload type URL under which ToStatus() stores the SQLSTATE.
inline constexpr absl::string_view kSqlStatePayloadUrl = "type.corral.dev/pg.sqlstate";

// The SQLSTATE carried by a Status made by PgResult::ToStatus(), or "".
std::string SqlStateOf(const absl::Status& s);

// absl code for a SQLSTATE: class 40 -> kAborted, 55P03 -> kAborted,
// 23505 -> kAlreadyExists, other class 23 -> kFailedPrecondition, class 42 and
// 22 -> kInvalidArgument, 57014 -> kDeadlineExceeded, class 08/57P0x ->
// kUnavailable, anything else -> kInternal.
absl::StatusCode StatusCodeForSqlState(absl::string_view sqlstate);

// One connection to a PostgreSQL server. Thread-compatible: one thread uses a
// connection at a time (libpq connections are not thread-safe).
class PgConnection {
 public:
  virtual ~PgConnection() = default;

  // True while the connection is usable (libpq: CONNECTION_OK).
  virtual bool connected() const = 0;
  // Runs one SQL string (simple query protocol, no parameters).
  virtual PgResult Exec(absl::string_view sql) = 0;
  // Prepares `sql` (with $1..$n placeholders, types inferred by the server)
  // under `name` on this connection.
  virtual PgResult Prepare(absl::string_view name, absl::string_view sql) = 0;
  // Runs a prepared statement with text parameters (absl::nullopt = NULL).
  virtual PgResult ExecPrepared(absl::string_view name,
                                absl::Span<const absl::optional<std::string>> params) = 0;
  // Drops and re-opens the connection with the same parameters. Everything
  // session-scoped (prepared statements, SET values, an open transaction) is
  // gone afterwards.
  virtual absl::Status Reset() = 0;
  // The server process id serving this connection (0 when not connected).
  virtual int backend_pid() const = 0;
};

}  // namespace adapters
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PG_CONNECTION_H_
