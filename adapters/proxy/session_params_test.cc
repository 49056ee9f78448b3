#include "adapters/proxy/session_params.h"

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace {

// What a PostgreSQL 15 backend reports at connect (the proxy's own login).
ParamList ServerParams() {
  return {{"application_name", ""},
          {"client_encoding", "UTF8"},
          {"DateStyle", "ISO, MDY"},
          {"default_transaction_read_only", "off"},
          {"in_hot_standby", "off"},
          {"integer_datetimes", "on"},
          {"IntervalStyle", "postgres"},
          {"is_superuser", "on"},
          {"server_encoding", "UTF8"},
          {"server_version", "15.5"},
          {"session_authorization", "postgres"},
          {"standard_conforming_strings", "on"},
          {"TimeZone", "Etc/UTC"}};
}

std::string Get(const ParamMap& m, const std::string& k) {
  auto it = m.find(k);
  return it == m.end() ? "<default>" : it->second;
}

// One statement run in autocommit, as the proxy reports its results.
void Autocommit(ClientSession* c, const std::string& sql, const std::string& tag = "SET") {
  EXPECT_FALSE(c->OnStatement(sql).has_value()) << sql;
  c->OnCommandComplete(tag);
  c->OnReadyForQuery('I');
}

// One statement inside an open transaction block that succeeds.
void InBlock(ClientSession* c, const std::string& sql, const std::string& tag = "SET") {
  EXPECT_FALSE(c->OnStatement(sql).has_value()) << sql;
  c->OnCommandComplete(tag);
  c->OnReadyForQuery('T');
}

TEST(SessionParamsTest, QuoteLiteralEscapesQuotesAndBackslashes) {
  EXPECT_EQ(QuoteLiteral("LATIN1"), "'LATIN1'");
  EXPECT_EQ(QuoteLiteral("it's"), "'it''s'");
  EXPECT_EQ(QuoteLiteral("a\\b'c"), "E'a\\\\b''c'");
  EXPECT_EQ(QuoteLiteral(""), "''");
}

TEST(SessionParamsTest, ParamNamesAndValues) {
  EXPECT_TRUE(IsValidParamName("search_path"));
  EXPECT_TRUE(IsValidParamName("myext.some_knob"));
  EXPECT_FALSE(IsValidParamName("Search_path"));
  EXPECT_FALSE(IsValidParamName("a;drop table x"));
  EXPECT_FALSE(IsValidParamName("a..b"));
  EXPECT_FALSE(IsValidParamName(""));
  EXPECT_TRUE(IsReportedParam("TimeZone"));
  EXPECT_TRUE(IsReportedParam("client_encoding"));
  EXPECT_FALSE(IsReportedParam("search_path"));  // reported only from PostgreSQL 16
  EXPECT_FALSE(IsReportedParam("default_transaction_isolation"));
  EXPECT_EQ(ReportName("datestyle"), "DateStyle");
  EXPECT_EQ(ReportName("search_path"), "search_path");

  EXPECT_TRUE(ParamValuesEqual("client_encoding", "utf-8", "UTF8"));
  EXPECT_TRUE(ParamValuesEqual("client_encoding", "latin1", "LATIN1"));
  EXPECT_FALSE(ParamValuesEqual("client_encoding", "LATIN1", "UTF8"));
  EXPECT_TRUE(ParamValuesEqual("datestyle", "iso,mdy", "ISO, MDY"));
  EXPECT_TRUE(ParamValuesEqual("standard_conforming_strings", "true", "on"));
  EXPECT_FALSE(ParamValuesEqual("standard_conforming_strings", "off", "on"));
  EXPECT_TRUE(ParamValuesEqual("statement_timeout", "5s", "5000"));
  EXPECT_TRUE(ParamValuesEqual("statement_timeout", "1min", "60000ms"));
  EXPECT_FALSE(ParamValuesEqual("statement_timeout", "5s", "5"));
  EXPECT_TRUE(ParamValuesEqual("default_transaction_isolation", "SERIALIZABLE", "serializable"));
  EXPECT_FALSE(ParamValuesEqual("search_path", "\"Foo\"", "foo"));   // quoted identifiers differ
  EXPECT_FALSE(ParamValuesEqual("application_name", "App", "app"));
  EXPECT_FALSE(ParamValuesEqual("work_mem", "4MB", "4mb"));            // unknown: exact
}

TEST(SessionParamsTest, IsolationAndBooleanValues) {
  for (const char* v : {"serializable", "SERIALIZABLE", "'serializable'", "\"Serializable\""}) {
    EXPECT_TRUE(IsSerializableValue(v)) << v;
  }
  for (const char* v : {"read committed", "repeatable read", "'READ UNCOMMITTED'", "", "serializable2",
                        "serializable serializable"}) {
    EXPECT_FALSE(IsSerializableValue(v)) << v;
  }
  for (const char* v : {"on", "ON", "'on'", "true", "yes", "1"}) EXPECT_TRUE(IsOnValue(v)) << v;
  for (const char* v : {"off", "false", "0", "", "onn"}) EXPECT_FALSE(IsOnValue(v)) << v;
  // The session's value as the proxy tracks it.
  ClientSession cs(1);
  ASSERT_FALSE(cs.OnStatement("SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE"));
  cs.OnReadyForQuery('I');
  auto it = cs.current().find("default_transaction_isolation");
  ASSERT_NE(it, cs.current().end());
  EXPECT_TRUE(IsSerializableValue(it->second)) << it->second;
  ASSERT_FALSE(cs.OnStatement("SET default_transaction_isolation = 'read committed'"));
  cs.OnReadyForQuery('I');
  it = cs.current().find("default_transaction_isolation");
  ASSERT_NE(it, cs.current().end());
  EXPECT_FALSE(IsSerializableValue(it->second)) << it->second;
}

TEST(SessionParamsTest, PreFilterSkipsOrdinaryDml) {
  EXPECT_FALSE(StatementMayChangeSession("SELECT * FROM t WHERE id = 1"));
  EXPECT_FALSE(StatementMayChangeSession("UPDATE t SET a = 1 WHERE id = 2;"));
  EXPECT_FALSE(StatementMayChangeSession("INSERT INTO t VALUES (1, 'x');  "));
  EXPECT_FALSE(StatementMayChangeSession("BEGIN"));
  EXPECT_TRUE(StatementMayChangeSession("  /* c */ -- x\n set TimeZone = 'UTC'"));
  EXPECT_TRUE(StatementMayChangeSession("SELECT set_config('a.b', '1', false)"));
  EXPECT_TRUE(StatementMayChangeSession("SELECT pg_advisory_lock(1)"));
  EXPECT_TRUE(StatementMayChangeSession("create temporary table x (a int)"));
  EXPECT_TRUE(StatementMayChangeSession("SELECT 1; SET x.y = 1"));
  EXPECT_TRUE(StatementMayChangeSession("DISCARD ALL"));
  // SELECT / WITH ... INTO a TEMP table, any case; "temp" or "into" alone is not enough.
  EXPECT_TRUE(StatementMayChangeSession("select * InTo TeMp t2 from t"));
  EXPECT_TRUE(StatementMayChangeSession("WITH a AS (SELECT 1) SELECT * INTO TEMPORARY t3 FROM a"));
  EXPECT_FALSE(StatementMayChangeSession("SELECT temp FROM readings"));
  EXPECT_FALSE(StatementMayChangeSession("SELECT * FROM t WHERE note = 'into'"));
  EXPECT_FALSE(StatementMayChangeSession("CREATE TABLE t (a int)"));
  EXPECT_TRUE(StatementMayChangeSession("SELECT PG_ADVISORY_XACT_LOCK(1)"));
  EXPECT_TRUE(StatementMayChangeSession("select Set_Config('a.b', '1', false)"));
}

// RefusalFor (a Parse) answers as OnStatement would, and applies nothing.
TEST(SessionParamsTest, RefusalForAsksWithoutApplying) {
  ClientSession c(1);
  EXPECT_FALSE(c.RefusalFor("SET search_path TO pg_catalog").has_value());
  EXPECT_EQ(Get(c.current(), "search_path"), "<default>");
  const absl::optional<Refusal> r = c.RefusalFor("SET ROLE nobody");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->sqlstate, c.OnStatement("SET ROLE nobody")->sqlstate);
  EXPECT_FALSE(c.in_transaction());
}

TEST(SessionParamsTest, AutocommitSetTakesEffectAtReadyForQuery) {
  ClientSession c(1);
  EXPECT_FALSE(c.OnStatement("SET search_path TO pg_catalog").has_value());
  EXPECT_EQ(Get(c.current(), "search_path"), "pg_catalog");
  EXPECT_EQ(Get(c.committed(), "search_path"), "<default>");
  c.OnCommandComplete("SET");
  c.OnReadyForQuery('I');
  EXPECT_EQ(Get(c.committed(), "search_path"), "pg_catalog");
}

TEST(SessionParamsTest, SetFormsAndValues) {
  ClientSession c(1);
  Autocommit(&c, "SET client_encoding = 'LATIN1'");
  Autocommit(&c, "set TimeZone to 'Asia/Tokyo'");
  Autocommit(&c, "SET SESSION DateStyle TO ISO, DMY");
  Autocommit(&c, "SET search_path TO public, 'My Schema', \"$user\"");
  Autocommit(&c, "SET extra_float_digits = -3");
  Autocommit(&c, "SET statement_timeout = 0");
  Autocommit(&c, "SET lock_timeout TO '2s'");
  Autocommit(&c, "SET application_name = 'it''s'");
  Autocommit(&c, "SET work_mem = '64MB'");
  EXPECT_EQ(Get(c.committed(), "client_encoding"), "LATIN1");
  EXPECT_EQ(Get(c.committed(), "timezone"), "Asia/Tokyo");
  EXPECT_EQ(Get(c.committed(), "datestyle"), "iso, dmy");  // unquoted: lower-cased by the parser
  EXPECT_EQ(Get(c.committed(), "search_path"), "public, \"My Schema\", \"$user\"");
  EXPECT_EQ(Get(c.committed(), "extra_float_digits"), "-3");
  EXPECT_EQ(Get(c.committed(), "statement_timeout"), "0");
  EXPECT_EQ(Get(c.committed(), "lock_timeout"), "2s");
  EXPECT_EQ(Get(c.committed(), "application_name"), "it's");
  EXPECT_EQ(Get(c.committed(), "work_mem"), "64MB");  // any name is tracked
  Autocommit(&c, "SET TIME ZONE 'Europe/Paris'");
  Autocommit(&c, "SET NAMES 'UTF8'");
  EXPECT_EQ(Get(c.committed(), "timezone"), "Europe/Paris");
  EXPECT_EQ(Get(c.committed(), "client_encoding"), "UTF8");
  Autocommit(&c, "SET TIME ZONE LOCAL");   // = DEFAULT
  Autocommit(&c, "SET work_mem TO DEFAULT");
  EXPECT_EQ(Get(c.committed(), "timezone"), "<default>");
  EXPECT_EQ(Get(c.committed(), "work_mem"), "<default>");
  // Transaction-local forms are not session state.
  Autocommit(&c, "SET LOCAL statement_timeout = '1s'");
  Autocommit(&c, "SET TRANSACTION ISOLATION LEVEL SERIALIZABLE");
  Autocommit(&c, "SET transaction_isolation = 'serializable'");
  EXPECT_EQ(Get(c.committed(), "statement_timeout"), "0");
  EXPECT_EQ(Get(c.committed(), "default_transaction_isolation"), "<default>");
  EXPECT_EQ(c.committed().count("transaction_isolation"), 0u);
  // Ordinary DML and bad SQL change nothing.
  Autocommit(&c, "UPDATE t SET work_mem = 1", "UPDATE 0");
  Autocommit(&c, "SET SET SET", "");
  EXPECT_EQ(Get(c.committed(), "work_mem"), "<default>");
}

TEST(SessionParamsTest, SessionCharacteristicsSetDefaultTransactionParameters) {
  ClientSession c(1);
  Autocommit(&c, "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE");
  EXPECT_EQ(Get(c.committed(), "default_transaction_isolation"), "serializable");
  Autocommit(&c, "SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY, DEFERRABLE");
  EXPECT_EQ(Get(c.committed(), "default_transaction_read_only"), "on");
  EXPECT_EQ(Get(c.committed(), "default_transaction_deferrable"), "on");
  Autocommit(&c, "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL REPEATABLE READ, READ WRITE, "
                 "NOT DEFERRABLE");
  EXPECT_EQ(Get(c.committed(), "default_transaction_isolation"), "repeatable read");
  EXPECT_EQ(Get(c.committed(), "default_transaction_read_only"), "off");
  EXPECT_EQ(Get(c.committed(), "default_transaction_deferrable"), "off");
  Autocommit(&c, "SET default_transaction_isolation = 'serializable'");
  EXPECT_EQ(Get(c.committed(), "default_transaction_isolation"), "serializable");
}

TEST(SessionParamsTest, SetInsideTransactionFollowsCommitAndRollback) {
  ClientSession c(1);
  // ROLLBACK undoes it.
  InBlock(&c, "BEGIN", "BEGIN");
  InBlock(&c, "SET TimeZone TO 'Asia/Tokyo'");
  EXPECT_EQ(Get(c.current(), "timezone"), "Asia/Tokyo");
  EXPECT_FALSE(c.OnStatement("ROLLBACK").has_value());
  c.OnCommandComplete("ROLLBACK");
  c.OnReadyForQuery('I');
  EXPECT_EQ(Get(c.committed(), "timezone"), "<default>");
  EXPECT_EQ(Get(c.current(), "timezone"), "<default>");
  // COMMIT keeps it.
  InBlock(&c, "BEGIN", "BEGIN");
  InBlock(&c, "SET TimeZone TO 'Asia/Tokyo'");
  EXPECT_EQ(Get(c.committed(), "timezone"), "<default>");
  c.OnStatement("COMMIT");
  c.OnCommandComplete("COMMIT");
  c.OnReadyForQuery('I');
  EXPECT_EQ(Get(c.committed(), "timezone"), "Asia/Tokyo");
  // A failed transaction: COMMIT answers ROLLBACK.
  InBlock(&c, "BEGIN", "BEGIN");
  InBlock(&c, "SET search_path = x");
  c.OnStatement("SELECT 1/0");
  c.OnError();
  c.OnReadyForQuery('E');
  c.OnStatement("COMMIT");
  c.OnCommandComplete("ROLLBACK");
  c.OnReadyForQuery('I');
  EXPECT_EQ(Get(c.committed(), "search_path"), "<default>");
  // An implicit transaction (several statements in one Query) that fails.
  c.OnStatement("SET search_path = y; SELECT 1/0");
  c.OnCommandComplete("SET");
  c.OnError();
  c.OnReadyForQuery('I');
  EXPECT_EQ(Get(c.committed(), "search_path"), "<default>");
  // One that succeeds.
  Autocommit(&c, "SET search_path = y; SELECT 1", "SELECT 1");
  EXPECT_EQ(Get(c.committed(), "search_path"), "y");
}

TEST(SessionParamsTest, RollbackToSavepointUndoesLaterSets) {
  ClientSession c(1);
  InBlock(&c, "BEGIN", "BEGIN");
  InBlock(&c, "SET application_name = 'a'");
  InBlock(&c, "SAVEPOINT s1", "SAVEPOINT");
  InBlock(&c, "SET application_name = 'b'");
  InBlock(&c, "SET search_path = z");
  c.OnStatement("SELECT 1/0");
  c.OnError();
  c.OnReadyForQuery('E');
  InBlock(&c, "ROLLBACK TO SAVEPOINT s1", "ROLLBACK");  // recovers the transaction
  EXPECT_EQ(Get(c.current(), "application_name"), "a");
  EXPECT_EQ(Get(c.current(), "search_path"), "<default>");
  InBlock(&c, "SAVEPOINT s2", "SAVEPOINT");
  InBlock(&c, "SET lock_timeout = '3s'");
  InBlock(&c, "RELEASE s2", "RELEASE");
  c.OnStatement("COMMIT");
  c.OnCommandComplete("COMMIT");
  c.OnReadyForQuery('I');
  EXPECT_EQ(Get(c.committed(), "application_name"), "a");
  EXPECT_EQ(Get(c.committed(), "lock_timeout"), "3s");
  EXPECT_EQ(Get(c.committed(), "search_path"), "<default>");
}

TEST(SessionParamsTest, ResetReturnsToStartupValues) {
  ClientSession c(1);
  EXPECT_TRUE(c.SetStartupParameter("client_encoding", "LATIN1"));
  EXPECT_TRUE(c.SetStartupParameter("extra_float_digits", "3"));
  EXPECT_TRUE(c.SetStartupParameter("TimeZone", "Asia/Tokyo"));
  EXPECT_FALSE(c.SetStartupParameter("user", "alice"));
  EXPECT_FALSE(c.SetStartupParameter("work_mem", "1GB"));  // not a known startup parameter
  EXPECT_EQ(Get(c.committed(), "timezone"), "Asia/Tokyo");
  Autocommit(&c, "SET client_encoding = 'UTF8'");
  Autocommit(&c, "SET search_path = a");
  Autocommit(&c, "SET TimeZone = 'UTC'");
  Autocommit(&c, "RESET client_encoding", "RESET");
  Autocommit(&c, "RESET search_path", "RESET");
  EXPECT_EQ(Get(c.committed(), "client_encoding"), "LATIN1");
  EXPECT_EQ(Get(c.committed(), "search_path"), "<default>");
  EXPECT_EQ(Get(c.committed(), "timezone"), "UTC");
  Autocommit(&c, "SET work_mem = '8MB'");
  Autocommit(&c, "RESET ALL", "RESET");
  EXPECT_EQ(c.committed(), (ParamMap{{"client_encoding", "LATIN1"},
                                     {"extra_float_digits", "3"},
                                     {"timezone", "Asia/Tokyo"}}));
  Autocommit(&c, "SET work_mem = '8MB'");
  Autocommit(&c, "SET TimeZone = 'UTC'");
  Autocommit(&c, "DISCARD ALL", "DISCARD ALL");
  EXPECT_EQ(c.committed(), (ParamMap{{"client_encoding", "LATIN1"},
                                     {"extra_float_digits", "3"},
                                     {"timezone", "Asia/Tokyo"}}));
}

TEST(SessionParamsTest, SetConfigSessionVersusLocal) {
  ClientSession c(1);
  Autocommit(&c, "SELECT set_config('search_path', 'a, \"B\"', false)", "SELECT 1");
  EXPECT_EQ(Get(c.committed(), "search_path"), "a, \"B\"");
  Autocommit(&c, "SELECT pg_catalog.set_config('statement_timeout', '7s', 'f')", "SELECT 1");
  EXPECT_EQ(Get(c.committed(), "statement_timeout"), "7s");
  Autocommit(&c, "SELECT set_config('search_path', 'other', true)", "SELECT 1");
  EXPECT_EQ(Get(c.committed(), "search_path"), "a, \"B\"");
  absl::optional<Refusal> r = c.OnStatement("SELECT set_config('search_path', $1, false)");
  ASSERT_TRUE(r.has_value());
  EXPECT_EQ(r->sqlstate, "0A000");
}

TEST(SessionParamsTest, SessionBoundStatementsAreRefused) {
  struct Case {
    const char* sql;
    bool refused;
    bool in_block;
  };
  const Case cases[] = {
      {"CREATE TEMP TABLE t (a int)", true, false},
      {"CREATE TEMPORARY TABLE t AS SELECT 1", true, false},
      {"SELECT 1 INTO TEMP t", true, false},
      {"CREATE TEMP TABLE t (a int) ON COMMIT DROP", false, true},
      {"CREATE TEMP VIEW v AS SELECT 1", true, false},
      {"CREATE TABLE t (a int)", false, false},
      {"DECLARE c CURSOR WITH HOLD FOR SELECT 1", true, true},
      {"DECLARE c CURSOR FOR SELECT 1", false, true},
      {"SELECT pg_advisory_lock(1)", true, false},
      {"SELECT pg_catalog.pg_try_advisory_lock_shared(1, 2)", true, false},
      {"UPDATE t SET a = 1 WHERE pg_advisory_lock(a) IS NOT NULL", true, false},
      {"SELECT pg_advisory_xact_lock(1)", false, true},
      {"SELECT pg_advisory_unlock_all()", false, false},
      {"PREPARE p AS SELECT 1", true, false},
      {"LISTEN ch", true, true},
      {"LISTEN ch", false, false},
      {"BEGIN; LISTEN ch; COMMIT", true, false},
      {"SET ROLE alice", true, false},
      {"SET SESSION AUTHORIZATION alice", true, false},
      {"SELECT set_config('role', 'alice', false)", true, false},
      {"SET LOCAL ROLE alice", false, true},
      {"RESET ROLE", false, false},
  };
  for (const Case& k : cases) {
    ClientSession c(1);
    if (k.in_block) c.OnReadyForQuery('T');
    absl::optional<Refusal> r = c.OnStatement(k.sql);
    EXPECT_EQ(r.has_value(), k.refused) << k.sql;
    if (r.has_value()) {
      EXPECT_EQ(r->sqlstate, "0A000") << k.sql;
      EXPECT_TRUE(absl::StrContains(r->message, "corral proxy")) << r->message;
      EXPECT_TRUE(absl::StrContains(r->hint, "transaction pooling")) << r->hint;
    }
  }
  // A refused statement applies nothing from its Query string.
  ClientSession c(1);
  ASSERT_TRUE(c.OnStatement("SET search_path = a; CREATE TEMP TABLE t (a int)").has_value());
  c.OnReadyForQuery('I');
  EXPECT_EQ(Get(c.committed(), "search_path"), "<default>");
  // The DO block raises exactly this error.
  Refusal r{"0A000", "it's \"bad\"", "a\\b"};
  EXPECT_EQ(r.AsSql(),
            "DO E'BEGIN RAISE EXCEPTION USING ERRCODE = ''0A000'', MESSAGE = ''it''''s \"bad\"'', "
            "HINT = E''a\\\\\\\\b''; END'");
}

TEST(SessionParamsTest, AttachSqlBringsBackendToClientAndBack) {
  BackendSession b(ServerParams());
  ClientSession fresh(1);
  fresh.LoginParameterStatus(ServerParams());
  EXPECT_EQ(AttachSql(&fresh, &b), "");  // the common case costs nothing
  DetachSession(&fresh, &b);

  ClientSession a(2);
  EXPECT_TRUE(a.SetStartupParameter("client_encoding", "utf-8"));  // same as the server's
  a.LoginParameterStatus(ServerParams());
  Autocommit(&a, "SET client_encoding TO 'LATIN1'");
  Autocommit(&a, "SET TimeZone TO 'Asia/Tokyo'");
  Autocommit(&a, "SET search_path TO pg_catalog, 'it''s'");
  Autocommit(&a, "SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE");
  Autocommit(&a, "SET application_name = 'o''brien\\'");
  EXPECT_EQ(AttachSql(&a, &b),
            "SET application_name = E'o''brien\\\\';"
            "SET client_encoding = 'LATIN1';"
            "SET default_transaction_isolation = 'serializable';"
            "SELECT pg_catalog.set_config('search_path', 'pg_catalog, \"it''s\"', false);"
            "SET timezone = 'Asia/Tokyo';");
  EXPECT_EQ(AttachSql(&a, &b), "");  // now equal
  DetachSession(&a, &b);
  EXPECT_EQ(AttachSql(&a, &b), "");
  DetachSession(&a, &b);

  // The next client gets the defaults back, not a's settings.
  ClientSession next(3);
  next.LoginParameterStatus(ServerParams());
  EXPECT_EQ(AttachSql(&next, &b),
            "RESET application_name;RESET client_encoding;RESET default_transaction_isolation;"
            "RESET search_path;RESET timezone;");
  EXPECT_TRUE(b.values().empty());
  EXPECT_EQ(AttachSql(&next, &b), "");
}

TEST(SessionParamsTest, BackendChangedDuringClientTransactionIsAdoptedAtDetach) {
  BackendSession b(ServerParams());
  ClientSession a(1);
  a.LoginParameterStatus(ServerParams());
  EXPECT_EQ(AttachSql(&a, &b), "");
  Autocommit(&a, "SET work_mem = '64MB'");  // ran on b
  DetachSession(&a, &b);
  EXPECT_EQ(Get(b.values(), "work_mem"), "64MB");
  ClientSession c(2);
  c.LoginParameterStatus(ServerParams());
  EXPECT_EQ(AttachSql(&c, &b), "RESET work_mem;");
  // Rolled back on b: b keeps what it had.
  InBlock(&c, "BEGIN", "BEGIN");
  InBlock(&c, "SET work_mem = '1MB'");
  c.OnStatement("ROLLBACK");
  c.OnCommandComplete("ROLLBACK");
  c.OnReadyForQuery('I');
  DetachSession(&c, &b);
  EXPECT_TRUE(b.values().empty());
}

TEST(SessionParamsTest, ResetOfStartupParameterMarksBackendUnknown) {
  BackendSession b(ServerParams());
  ClientSession a(1);
  a.SetStartupParameter("extra_float_digits", "3");
  a.LoginParameterStatus(ServerParams());
  EXPECT_EQ(AttachSql(&a, &b), "SET extra_float_digits = '3';");
  // On the backend RESET goes to the server's default, not a's startup 3.
  Autocommit(&a, "RESET extra_float_digits", "RESET");
  DetachSession(&a, &b);
  EXPECT_EQ(b.unknown().count("extra_float_digits"), 1u);
  EXPECT_EQ(AttachSql(&a, &b), "SET extra_float_digits = '3';");
  EXPECT_TRUE(b.unknown().empty());
  DetachSession(&a, &b);
  EXPECT_EQ(AttachSql(&a, &b), "");
}

// A reported startup parameter RESET on the backend: the server reports its
// own startup value, which is not the client's (it gets its own back at the
// next attach) and is not forwarded.
TEST(SessionParamsTest, ResetReportOfStartupParameterIsNotTheClients) {
  BackendSession b(ServerParams());
  ClientSession a(1);
  a.SetStartupParameter("client_encoding", "WIN1252");
  a.LoginParameterStatus(ServerParams());
  EXPECT_EQ(AttachSql(&a, &b), "SET client_encoding = 'WIN1252';");
  EXPECT_FALSE(a.OnParameterStatus("client_encoding", "WIN1252"));
  EXPECT_FALSE(a.OnStatement("RESET client_encoding").has_value());
  b.OnParameterStatus("client_encoding", "UTF8");
  EXPECT_FALSE(a.OnParameterStatus("client_encoding", "UTF8"));
  a.OnCommandComplete("RESET");
  a.OnReadyForQuery('I');
  EXPECT_EQ(Get(a.committed(), "client_encoding"), "WIN1252");
  DetachSession(&a, &b);
  EXPECT_EQ(AttachSql(&a, &b), "SET client_encoding = 'WIN1252';");
}

TEST(SessionParamsTest, ParameterStatusIsGroundTruthAndForwardedOnlyWhenChanged) {
  ClientSession c(1);
  c.SetStartupParameter("client_encoding", "latin1");
  c.SetStartupParameter("application_name", "psql");
  c.SetStartupParameter("search_path", "x");
  ParamList login = c.LoginParameterStatus(ServerParams());
  ASSERT_EQ(login.size(), ServerParams().size());
  for (const auto& [k, v] : login) {
    if (k == "client_encoding") {
      EXPECT_EQ(v, "LATIN1");
    } else if (k == "application_name") {
      EXPECT_EQ(v, "psql");
    } else if (k == "TimeZone") {
      EXPECT_EQ(v, "Etc/UTC");
    }
    EXPECT_NE(k, "search_path");  // not GUC_REPORT
  }
  EXPECT_FALSE(c.OnParameterStatus("client_encoding", "LATIN1"));  // already told
  EXPECT_FALSE(c.OnParameterStatus("TimeZone", "Etc/UTC"));
  EXPECT_EQ(Get(c.committed(), "timezone"), "<default>");           // the server's default: stays default
  EXPECT_TRUE(c.OnParameterStatus("TimeZone", "Asia/Tokyo"));       // e.g. SET inside a function
  EXPECT_EQ(Get(c.committed(), "timezone"), "Asia/Tokyo");
  // Inside a transaction it is pending, undone with the transaction (the
  // server reports the old value again on ROLLBACK).
  InBlock(&c, "BEGIN", "BEGIN");
  EXPECT_TRUE(c.OnParameterStatus("DateStyle", "SQL, DMY"));
  EXPECT_EQ(Get(c.current(), "datestyle"), "SQL, DMY");
  c.OnCommandComplete("ROLLBACK");
  EXPECT_TRUE(c.OnParameterStatus("DateStyle", "ISO, MDY"));
  c.OnReadyForQuery('I');
  EXPECT_EQ(Get(c.committed(), "datestyle"), "<default>");
  // Unsettable reported parameters are passed on but not tracked.
  EXPECT_TRUE(c.OnParameterStatus("is_superuser", "off"));
  EXPECT_EQ(c.committed().count("is_superuser"), 0u);

  BackendSession b(ServerParams());
  b.OnParameterStatus("TimeZone", "Etc/UTC");
  EXPECT_TRUE(b.values().empty());
  b.OnParameterStatus("TimeZone", "Asia/Tokyo");
  EXPECT_EQ(Get(b.values(), "timezone"), "Asia/Tokyo");
}

TEST(SessionParamsTest, ListenOwnerIsUnlistenedForOtherClients) {
  BackendSession b(ServerParams());
  ClientSession a(1), other(2);
  EXPECT_EQ(AttachSql(&a, &b), "");
  Autocommit(&a, "LISTEN ch", "LISTEN");
  DetachSession(&a, &b);
  EXPECT_EQ(b.listen_owner(), 1u);
  EXPECT_EQ(AttachSql(&a, &b), "");  // its own listen stays
  DetachSession(&a, &b);
  EXPECT_EQ(AttachSql(&other, &b), "UNLISTEN *;");
  DetachSession(&other, &b);
  EXPECT_EQ(b.listen_owner(), 0u);
  // ResetSql cleans everything.
  Autocommit(&other, "SET work_mem = '2MB'");
  EXPECT_EQ(AttachSql(&other, &b), "SET work_mem = '2MB';");
  DetachSession(&other, &b);
  EXPECT_EQ(ResetSql(&b), "RESET ALL;");
  EXPECT_EQ(ResetSql(&b), "");
}

}  // namespace
}  // namespace proxy
}  // namespace corral
