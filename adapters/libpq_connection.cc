#include "adapters/libpq_connection.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <random>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace corral {
namespace adapters {
namespace {

void IgnoreNotice(void*, const char*) {}

std::string Field(const PGresult* r, int code) {
  const char* v = PQresultErrorField(r, code);
  return v ? std::string(v) : std::string();
}

// Thread-compatible: owned and used by one thread at a time.
class LibpqConnection final : public PgConnection {
 public:
  explicit LibpqConnection(PGconn* conn) : conn_(conn) {
    PQsetNoticeProcessor(conn_, &IgnoreNotice, nullptr);
  }
  ~LibpqConnection() override { PQfinish(conn_); }

  bool connected() const override { return PQstatus(conn_) == CONNECTION_OK; }

  PgResult Exec(absl::string_view sql) override {
    if (!connected()) return PgResult::Lost("not connected");
    std::string q(sql);
    return Convert(PQexec(conn_, q.c_str()));
  }

  PgResult Prepare(absl::string_view name, absl::string_view sql) override {
    if (!connected()) return PgResult::Lost("not connected");
    std::string n(name), q(sql);
    return Convert(PQprepare(conn_, n.c_str(), q.c_str(), 0, nullptr));
  }

  PgResult ExecPrepared(absl::string_view name,
                        absl::Span<const absl::optional<std::string>> params) override {
    if (!connected()) return PgResult::Lost("not connected");
    std::string n(name);
    std::vector<const char*> values(params.size());
    for (size_t i = 0; i < params.size(); ++i) {
      values[i] = params[i].has_value() ? params[i]->c_str() : nullptr;
    }
    return Convert(PQexecPrepared(conn_, n.c_str(), static_cast<int>(params.size()),
                                  values.data(), nullptr, nullptr, /*resultFormat=*/0));
  }

  absl::Status Reset() override {
    PQreset(conn_);
    if (PQstatus(conn_) != CONNECTION_OK) {
      return absl::UnavailableError(
          absl::StrCat("reconnect failed: ", PQerrorMessage(conn_)));
    }
    PQsetNoticeProcessor(conn_, &IgnoreNotice, nullptr);
    return absl::OkStatus();
  }

  int backend_pid() const override { return connected() ? PQbackendPID(conn_) : 0; }

 private:
  // Takes ownership of `r` (may be null).
  PgResult Convert(PGresult* r) {
    PgResult out;
    ExecStatusType st = r ? PQresultStatus(r) : PGRES_FATAL_ERROR;
    if (st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK || st == PGRES_EMPTY_QUERY) {
      int nrows = PQntuples(r), ncols = PQnfields(r);
      std::vector<std::string> cols(ncols);
      for (int c = 0; c < ncols; ++c) cols[c] = PQfname(r, c);
      std::vector<std::vector<absl::optional<std::string>>> rows(nrows);
      for (int i = 0; i < nrows; ++i) {
        rows[i].resize(ncols);
        for (int c = 0; c < ncols; ++c) {
          if (!PQgetisnull(r, i, c)) rows[i][c].emplace(PQgetvalue(r, i, c), PQgetlength(r, i, c));
        }
      }
      out = PgResult::Rows(std::move(cols), std::move(rows), PQcmdStatus(r));
    } else if (PQstatus(conn_) != CONNECTION_OK) {
      // The server went away (terminated backend, crash, network): whatever
      // the statement did is unknown to us.
      std::string msg = r ? Field(r, PG_DIAG_MESSAGE_PRIMARY) : "";
      if (msg.empty()) msg = PQerrorMessage(conn_);
      std::string state = r ? Field(r, PG_DIAG_SQLSTATE) : "";
      if (!state.empty()) msg = absl::StrCat(msg, " (SQLSTATE ", state, ")");
      out = PgResult::Lost(std::move(msg));
    } else if (r && st == PGRES_FATAL_ERROR) {
      std::string msg = Field(r, PG_DIAG_MESSAGE_PRIMARY);
      if (msg.empty()) msg = PQresultErrorMessage(r);
      out = PgResult::Error(Field(r, PG_DIAG_SQLSTATE), std::move(msg),
                            Field(r, PG_DIAG_MESSAGE_DETAIL), Field(r, PG_DIAG_MESSAGE_HINT));
    } else {
      out = PgResult::Error("", r ? absl::StrCat("unexpected result status ", PQresStatus(st))
                                  : std::string(PQerrorMessage(conn_)));
    }
    PQclear(r);
    return out;
  }

  PGconn* conn_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<PgConnection>> ConnectLibpq(const std::string& conninfo,
                                                           LibpqOptions options) {
  // Keywords are applied in order, so the conninfo (expanded from "dbname")
  // overrides our default connect_timeout.
  std::string timeout = std::to_string(options.connect_timeout_s);
  const char* keys[] = {"connect_timeout", "dbname", nullptr};
  const char* values[] = {timeout.c_str(), conninfo.c_str(), nullptr};
  PGconn* conn = PQconnectdbParams(keys, values, /*expand_dbname=*/1);
  if (conn == nullptr) return absl::ResourceExhaustedError("libpq: out of memory");
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string err = PQerrorMessage(conn);
    PQfinish(conn);
    return absl::UnavailableError(absl::StrCat("cannot connect to PostgreSQL (", conninfo,
                                               "): ", err));
  }
  return std::unique_ptr<PgConnection>(new LibpqConnection(conn));
}

const std::string& PgProcessTag() {
  static const std::string tag = [] {
    std::random_device rd;
    return absl::StrCat(getpid(), "_", absl::Hex(static_cast<uint32_t>(rd()) ^
                                                 static_cast<uint32_t>(absl::ToUnixNanos(absl::Now()))));
  }();
  return tag;
}

}  // namespace adapters
}  // namespace corral
