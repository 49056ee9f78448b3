// session_params against a real PostgreSQL (scripts/pg.sh; skips without
// CORRAL_PG_CONNINFO): the SQL AttachSql makes runs, gives each client its
// own settings, and the model follows the server through transactions.
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "adapters/pg_test_server.h"
#include "adapters/proxy/session_params.h"
#include "gtest/gtest.h"
#include "libpq-fe.h"

namespace corral {
namespace proxy {
namespace {

// One statement run in autocommit, as the proxy reports its results.
void Autocommit(ClientSession* c, const std::string& sql, const std::string& tag = "SET") {
  EXPECT_FALSE(c->OnStatement(sql).has_value()) << sql;
  c->OnCommandComplete(tag);
  c->OnReadyForQuery('I');
}


struct PgConnDeleter {
  void operator()(PGconn* c) const { PQfinish(c); }
};
using Conn = std::unique_ptr<PGconn, PgConnDeleter>;

Conn Connect(const std::string& conninfo) {
  Conn c(PQconnectdb(conninfo.c_str()));
  if (PQstatus(c.get()) != CONNECTION_OK) return nullptr;
  return c;
}

// Runs `sql`; "" on success, else the error message.
std::string Exec(PGconn* c, const std::string& sql) {
  PGresult* r = PQexec(c, sql.c_str());
  const ExecStatusType st = PQresultStatus(r);
  std::string err = st == PGRES_COMMAND_OK || st == PGRES_TUPLES_OK ? "" : PQresultErrorMessage(r);
  PQclear(r);
  return err;
}

std::string Show(PGconn* c, const std::string& name) {
  PGresult* r = PQexec(c, ("SHOW " + name).c_str());
  std::string v = PQresultStatus(r) == PGRES_TUPLES_OK && PQntuples(r) == 1 ? PQgetvalue(r, 0, 0) : "<error>";
  PQclear(r);
  return v;
}

// The ParameterStatus values libpq saw at connect.
ParamList ConnectParams(PGconn* c) {
  ParamList out;
  for (const char* k : {"application_name", "client_encoding", "DateStyle", "default_transaction_read_only",
                        "IntervalStyle", "is_superuser", "server_encoding", "standard_conforming_strings",
                        "TimeZone"}) {
    const char* v = PQparameterStatus(c, k);
    if (v != nullptr) out.emplace_back(k, v);
  }
  return out;
}

const char* const kChecked[] = {"client_encoding", "TimeZone", "search_path", "default_transaction_isolation",
                                "default_transaction_read_only", "application_name", "statement_timeout",
                                "extra_float_digits", "work_mem", "DateStyle"};

TEST(SessionParamsPgTest, ApplySqlRunsAndGivesEachClientItsOwnSettings) {
  std::string conninfo;
  if (!adapters::PgTestServer(&conninfo)) GTEST_SKIP() << adapters::PgTestSkipReason();
  Conn x = Connect(conninfo), fresh = Connect(conninfo);
  ASSERT_TRUE(x != nullptr && fresh != nullptr);
  std::map<std::string, std::string> defaults;
  for (const char* k : kChecked) defaults[k] = Show(fresh.get(), k);
  BackendSession bx(ConnectParams(x.get()));

  ClientSession a(1);
  a.LoginParameterStatus(ConnectParams(x.get()));
  Autocommit(&a, "SET client_encoding TO 'LATIN1'");
  Autocommit(&a, "SET TimeZone TO 'Asia/Tokyo'");
  Autocommit(&a, "SET search_path TO pg_catalog, 'we''ird\\x', \"Up\"");
  Autocommit(&a, "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE, READ ONLY");
  Autocommit(&a, "SET application_name = 'o''brien\\'");
  Autocommit(&a, "SELECT set_config('statement_timeout', '42s', false)", "SELECT 1");
  Autocommit(&a, "SET extra_float_digits = -2");
  Autocommit(&a, "SET work_mem = '5MB'");

  const std::string sql_a = AttachSql(&a, &bx);
  ASSERT_FALSE(sql_a.empty());
  ASSERT_EQ(Exec(x.get(), sql_a), "") << sql_a;
  EXPECT_EQ(Show(x.get(), "client_encoding"), "LATIN1");
  EXPECT_EQ(Show(x.get(), "TimeZone"), "Asia/Tokyo");
  EXPECT_EQ(Show(x.get(), "search_path"), "pg_catalog, \"we'ird\\x\", \"Up\"");
  EXPECT_EQ(Show(x.get(), "default_transaction_isolation"), "serializable");
  EXPECT_EQ(Show(x.get(), "default_transaction_read_only"), "on");
  EXPECT_EQ(Show(x.get(), "application_name"), "o'brien\\");
  EXPECT_EQ(Show(x.get(), "statement_timeout"), "42s");
  EXPECT_EQ(Show(x.get(), "extra_float_digits"), "-2");
  EXPECT_EQ(Show(x.get(), "work_mem"), "5MB");
  // What the server reported back keeps the models equal: nothing to do.
  for (const auto& [k, v] : ConnectParams(x.get())) {
    bx.OnParameterStatus(k, v);
    a.OnParameterStatus(k, v);
  }
  EXPECT_EQ(AttachSql(&a, &bx), "");
  DetachSession(&a, &bx);

  // Client b (its own TimeZone) on the same backend: a's settings are gone.
  ClientSession b(2);
  b.SetStartupParameter("TimeZone", "America/New_York");
  b.LoginParameterStatus(ConnectParams(fresh.get()));
  const std::string sql_b = AttachSql(&b, &bx);
  ASSERT_EQ(Exec(x.get(), sql_b), "") << sql_b;
  for (const char* k : kChecked) {
    const std::string want = std::string(k) == "TimeZone" ? "America/New_York" : defaults[k];
    EXPECT_EQ(Show(x.get(), k), want) << k << " after " << sql_b;
  }
  DetachSession(&b, &bx);
  // And a's state again, then everything back to the defaults.
  ASSERT_EQ(Exec(x.get(), AttachSql(&a, &bx)), "");
  EXPECT_EQ(Show(x.get(), "default_transaction_isolation"), "serializable");
  DetachSession(&a, &bx);
  ASSERT_EQ(Exec(x.get(), ResetSql(&bx)), "");
  for (const char* k : kChecked) EXPECT_EQ(Show(x.get(), k), defaults[k]) << k;
}

// The model follows the server statement by statement: drive one real
// session and a ClientSession with the same script, the results as the proxy
// would see them, and compare SHOW with the model after each step.
TEST(SessionParamsPgTest, ModelMatchesServerThroughTransactions) {
  std::string conninfo;
  if (!adapters::PgTestServer(&conninfo)) GTEST_SKIP() << adapters::PgTestSkipReason();
  Conn s = Connect(conninfo), fresh = Connect(conninfo);
  ASSERT_TRUE(s != nullptr && fresh != nullptr);
  std::map<std::string, std::string> defaults;
  for (const char* k : kChecked) defaults[k] = Show(fresh.get(), k);
  ClientSession c(1);
  c.LoginParameterStatus(ConnectParams(s.get()));
  const std::vector<std::string> script = {
      "SET TimeZone TO 'Asia/Tokyo'",
      "BEGIN",
      "SET search_path TO pg_catalog",
      "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
      "ROLLBACK",
      "BEGIN",
      "SET work_mem = '3MB'",
      "SAVEPOINT a",
      "SET statement_timeout = '9s'",
      "SELECT 1/0",
      "SET work_mem = '11MB'",  // ignored: the block has failed
      "SAVEPOINT b",
      "ROLLBACK TO SAVEPOINT a",
      "COMMIT",
      "BEGIN",
      "SET application_name = 'x'",
      "SELECT 1/0",
      "COMMIT",
      "SET default_transaction_isolation = 'repeatable read'; SELECT 1/0",
      "SET default_transaction_isolation = 'serializable'; SELECT 1",
      "SELECT set_config('search_path', 'public', false)",
      "SELECT set_config('work_mem', '7MB', true)",
      "RESET TimeZone",
      "SET extra_float_digits = 0",
      "BEGIN",
      "SET LOCAL work_mem = '9MB'",
      "COMMIT",
      "DISCARD ALL",
      "SET lock_timeout = 5",
  };
  for (const std::string& sql : script) {
    ASSERT_FALSE(c.OnStatement(sql).has_value()) << sql;
    ASSERT_EQ(PQsendQuery(s.get(), sql.c_str()), 1);
    while (PGresult* r = PQgetResult(s.get())) {
      if (PQresultStatus(r) == PGRES_FATAL_ERROR) {
        c.OnError();
      } else {
        c.OnCommandComplete(PQcmdStatus(r));
      }
      PQclear(r);
    }
    const PGTransactionStatusType ts = PQtransactionStatus(s.get());
    c.OnReadyForQuery(ts == PQTRANS_IDLE ? 'I' : ts == PQTRANS_INERROR ? 'E' : 'T');
    if (ts != PQTRANS_IDLE) continue;  // SHOW would change a failed block
    for (const char* k : kChecked) {
      const std::string lower = absl::AsciiStrToLower(k);
      auto it = c.committed().find(lower);
      const std::string model = it == c.committed().end() ? defaults[k] : it->second;
      EXPECT_TRUE(ParamValuesEqual(lower, model, Show(s.get(), k)))
          << "after `" << sql << "`: " << k << " model " << model << " server " << Show(s.get(), k);
    }
  }
}

TEST(SessionParamsPgTest, RefusalSqlRaisesTheRefusal) {
  std::string conninfo;
  if (!adapters::PgTestServer(&conninfo)) GTEST_SKIP() << adapters::PgTestSkipReason();
  Conn s = Connect(conninfo);
  ASSERT_TRUE(s != nullptr);
  ClientSession c(1);
  absl::optional<Refusal> r = c.OnStatement("CREATE TEMP TABLE t (a int)");
  ASSERT_TRUE(r.has_value());
  r->message += " 'quoted' \\ $$";
  PGresult* res = PQexec(s.get(), r->AsSql().c_str());
  ASSERT_EQ(PQresultStatus(res), PGRES_FATAL_ERROR);
  EXPECT_STREQ(PQresultErrorField(res, PG_DIAG_SQLSTATE), "0A000");
  EXPECT_EQ(std::string(PQresultErrorField(res, PG_DIAG_MESSAGE_PRIMARY)), r->message);
  EXPECT_EQ(std::string(PQresultErrorField(res, PG_DIAG_MESSAGE_HINT)), r->hint);
  PQclear(res);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
