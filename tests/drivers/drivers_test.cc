// The client-driver matrix (issue 26): the stock PostgreSQL clients and
// drivers through an in-process `corral proxy` against the test server, one
// TEST per driver scenario, each run over plain TCP and over TLS (the TLS
// instance skips, saying why, while the proxy has no client TLS keys). The
// client programs (tests/drivers/clients/, data deps) check the values they
// read back and print one result line; the test checks the exit code and
// that line. Also the issue-27 check: a JDBC TPC-C NewOrder/Payment mix,
// after which SHOW HISTORY lists warehouse and district references with
// aborts.
//
//   bazel test //tests/drivers:drivers_test --test_env=CORRAL_PG_CONNINFO ...
//
// Needs: CORRAL_PG_CONNINFO (else every test skips), psql/pgbench,
// /usr/bin/python3 with psycopg 3 and asyncpg, java 17 and
// /usr/share/java/postgresql.jar (scripts/setup.sh installs them; a missing
// one skips its tests with the package to install).
#include <libpq-fe.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "adapters/proxy/config.h"
#include "gtest/gtest.h"
#include "tests/proxy/proxy_test_util.h"

namespace corral {
namespace proxy {
namespace {

constexpr char kJdbcJar[] = "/usr/share/java/postgresql.jar";
constexpr char kPython[] = "/usr/bin/python3";
// Single-file source launch. C1 only and the serial collector halve the CPU
// a short client spends starting and compiling its source.
constexpr char kJava[] = "java -XX:-UsePerfData -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -cp /usr/share/java/postgresql.jar";

enum class Transport { kPlain, kTls };

std::string TransportName(const ::testing::TestParamInfo<Transport>& info) {
  return info.param == Transport::kTls ? "tls" : "plain";
}

// A data dependency, from the runfiles tree under Bazel (else from the
// working directory, the repository root when run by hand).
std::string Runfile(const std::string& rel) {
  const char* src = std::getenv("TEST_SRCDIR");
  const char* ws = std::getenv("TEST_WORKSPACE");
  if (src != nullptr && ws != nullptr) return absl::StrCat(src, "/", ws, "/", rel);
  return rel;
}

std::string ScratchDir() {
  const char* d = std::getenv("TEST_TMPDIR");
  return d != nullptr ? d : "/tmp";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// True when java 17 and pgjdbc are installed.
bool HaveJdbc() { return access(kJdbcJar, R_OK) == 0 && access("/usr/bin/java", X_OK) == 0; }
constexpr char kNoJdbc[] = "needs java 17 and /usr/share/java/postgresql.jar (default-jdk-headless, "
                           "libpostgresql-jdbc-java)";

// A self-signed certificate for the proxy's client side, made once per run.
struct TlsFiles {
  std::string cert, key, error;
};
const TlsFiles& TestCertificate() {
  static const TlsFiles* files = [] {
    auto* f = new TlsFiles;
    f->cert = absl::StrCat(ScratchDir(), "/drivers_cert.pem");
    f->key = absl::StrCat(ScratchDir(), "/drivers_key.pem");
    std::string out;
    if (Shell(absl::StrCat("openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=localhost -keyout ", f->key,
                           " -out ", f->cert, " && chmod 600 ", f->key),
              &out) != 0) {
      f->error = absl::StrCat("openssl could not make a test certificate: ", out);
    }
    return f;
  }();
  return *files;
}

class DriverMatrix : public ::testing::TestWithParam<Transport> {
 protected:
  void SetUp() override {
    if (!TestServer(&server_, &why_)) GTEST_SKIP() << why_;
    if (GetParam() == Transport::kTls) {
      Options probe;
      if (absl::Status st = ApplyConfigLine("client_tls_sslmode", "require", &probe); !st.ok()) {
        GTEST_SKIP() << "TLS instance: this proxy has no client TLS yet (" << st.message()
                     << "); it runs once TLS (client_tls_sslmode, client_tls_cert_file, client_tls_key_file; "
                        "branch tls) is merged";
      }
      if (!TestCertificate().error.empty()) FAIL() << TestCertificate().error;
    }
  }
  void TearDown() override {
    if (proxy_.port() != 0) {
      EXPECT_EQ(proxy_.proxy().stats().protocol_errors.load(), 0);
    }
    proxy_.Stop();
  }

  // Starts the proxy (pool_size 2) on database `db` (the server's by
  // default), with client TLS required for the TLS instance.
  absl::Status StartProxy(const std::string& db = "", int pool_size = 2) {
    Options o;
    o.pool_size = pool_size;
    if (!db.empty()) o.server_dbname = db;
    if (GetParam() == Transport::kTls) {
      const TlsFiles& f = TestCertificate();
      for (const auto& [k, v] : {std::pair<std::string, std::string>{"client_tls_sslmode", "require"},
                                 {"client_tls_cert_file", f.cert},
                                 {"client_tls_key_file", f.key}}) {
        if (absl::Status st = ApplyConfigLine(k, v, &o); !st.ok()) return st;
      }
    }
    db_ = db.empty() ? server_.dbname : db;
    return proxy_.Start(server_, o);
  }

  std::string SslMode() const { return GetParam() == Transport::kTls ? "require" : "disable"; }
  // A table name of this test process and instance.
  std::string Table(const std::string& scenario) const {
    static const std::string tag = PgUniqueName("drv");  // one per process
    return absl::StrCat(tag, "_", scenario, GetParam() == Transport::kTls ? "_tls" : "_plain");
  }
  // The client programs' common arguments: HOST PORT USER DBNAME SSLMODE.
  std::string ClientArgs() const {
    return absl::StrCat("127.0.0.1 ", proxy_.port(), " ", server_.user, " ", db_, " ", SslMode());
  }
  // libpq environment for psql and pgbench.
  std::string LibpqEnv() const { return absl::StrCat("PGSSLMODE=", SslMode(), " PGCONNECT_TIMEOUT=10 "); }

  // Runs a client (60 s at most); it must exit 0 and print `want` as a line.
  void ExpectClient(const std::string& cmd, const std::string& want) {
    std::string out;
    const int rc = Shell(absl::StrCat("timeout 60 ", cmd), &out);
    EXPECT_EQ(rc, 0) << cmd << "\n" << out;
    EXPECT_TRUE(absl::StrContains(absl::StrCat("\n", out), absl::StrCat("\n", want, "\n")))
        << "want the line: " << want << "\ngot:\n" << out;
  }
  // A Python client (psycopg_client.py, asyncpg_client.py) in /usr/bin/python3.
  void Python(const std::string& module, const std::string& package, const std::string& scenario,
              const std::string& want) {
    if (Shell(absl::StrCat(kPython, " -c 'import ", module, "'"), &why_) != 0) {
      GTEST_SKIP() << module << " is not installed for /usr/bin/python3 (" << package << "): " << why_;
    }
    ASSERT_TRUE(IsOk(StartProxy()));
    ExpectClient(absl::StrCat(kPython, " ", Runfile(absl::StrCat("tests/drivers/clients/", module, "_client.py")), " ",
                              ClientArgs(), " ", Table(scenario), " ", scenario),
                 want);
  }
  void Psycopg(const std::string& scenario, const std::string& want) {
    Python("psycopg", "python3-psycopg", scenario, want);
  }
  void Asyncpg(const std::string& scenario, const std::string& want) {
    Python("asyncpg", "python3-asyncpg", scenario, want);
  }
  void Jdbc(const std::string& scenario, const std::string& want) {
    if (!HaveJdbc()) GTEST_SKIP() << kNoJdbc;
    ASSERT_TRUE(IsOk(StartProxy()));
    ExpectClient(absl::StrCat(kJava, " ", Runfile("tests/drivers/clients/JdbcClient.java"), " ",
                              ClientArgs(), " ", Table(scenario), " ", scenario),
                 want);
  }

  ServerInfo server_;
  std::string why_;
  std::string db_;
  ProxyUnderTest proxy_;
};

INSTANTIATE_TEST_SUITE_P(Transports, DriverMatrix, ::testing::Values(Transport::kPlain, Transport::kTls),
                         TransportName);

// psql: COPY FROM STDIN, \copy out and in, a two-statement Query, a
// rolled-back and a committed transaction, COPY TO STDOUT.
TEST_P(DriverMatrix, PsqlScriptCopyMultiStatement) {
  if (access("/usr/bin/psql", X_OK) != 0) GTEST_SKIP() << "psql is not installed (postgresql-client)";
  ASSERT_TRUE(IsOk(StartProxy()));
  const std::string script = absl::StrCat(ScratchDir(), "/", Table("psql"), ".sql");
  std::ofstream(script) << absl::StrReplaceAll(ReadFile(Runfile("tests/drivers/clients/psql_session.sql")),
                                               {{"TBL", Table("psql")}, {"DIR", ScratchDir()}});
  std::string out;
  ASSERT_EQ(Shell(absl::StrCat(LibpqEnv(), "timeout 60 /usr/bin/psql -X -q -At -v ON_ERROR_STOP=1 -h 127.0.0.1 -p ",
                               proxy_.port(), " -U ", server_.user, " -d ", db_, " -f ", script),
                  &out),
            0)
      << out;
  EXPECT_EQ(out, "3|6\none,two,three\n1\tone\n2\tTWO\n3\tthree\n");
}

// pgbench's built-in TPC-B script in its three query modes (pgbench -i
// against the server directly, in a database of its own).
TEST_P(DriverMatrix, PgbenchSimpleExtendedPrepared) {
  if (access("/usr/bin/pgbench", X_OK) != 0) GTEST_SKIP() << "pgbench is not installed (postgresql-contrib)";
  const std::string db = Table("pgb");
  ASSERT_TRUE(RecreateDatabase(server_, db).ok());
  std::string out;
  ASSERT_EQ(Shell(absl::StrCat("/usr/bin/pgbench -i -q -s 1 -h ", server_.host, " -p ", server_.port, " -U ",
                               server_.user, " ", db),
                  &out),
            0)
      << out;
  ASSERT_TRUE(StartProxy(db).ok());
  for (const char* mode : {"simple", "extended", "prepared"}) {
    const int64_t commits_before = proxy_.proxy().stats().commits.load();
    ASSERT_EQ(Shell(absl::StrCat(LibpqEnv(), "timeout 60 /usr/bin/pgbench -n -c 4 -t 50 -M ", mode,
                                 " -h 127.0.0.1 -p ", proxy_.port(), " -U ", server_.user, " ", db),
                    &out),
              0)
        << mode << ": " << out;
    EXPECT_TRUE(absl::StrContains(out, "number of transactions actually processed: 200/200")) << mode << ": " << out;
    // Every pgbench transaction committed through the proxy.
    EXPECT_GE(proxy_.proxy().stats().commits.load() - commits_before, 200) << mode;
  }
  proxy_.Stop();
  DropDatabase(server_, db);
}

// psycopg 3 with its defaults (server-side prepared after 5 executions).
TEST_P(DriverMatrix, PsycopgDefault) {
  Psycopg("default", "psycopg default rows=100 ksum=5050 nsum=1262.50 after=100/1272.50");
}
// prepare_threshold=0: every statement a server-side prepared statement.
TEST_P(DriverMatrix, PsycopgPrepareThreshold0) {
  Psycopg("prepared", "psycopg prepared rows=100 ksum=5050 nsum=1262.50 after=100/1272.50");
}
TEST_P(DriverMatrix, PsycopgCopyInOut) { Psycopg("copy", "psycopg copy in=1000 out=1000 sum=500500"); }
TEST_P(DriverMatrix, PsycopgExecutemany) {
  Psycopg("executemany", "psycopg executemany rows=200 sum=20100000000100");
}
TEST_P(DriverMatrix, PsycopgBinaryParameters) {
  Psycopg("binary", "psycopg binary lookups=6 any=3 even=10 bsum=1100000000000 nsum=112.50");
}

// asyncpg sends every parameter in binary and caches named statements.
TEST_P(DriverMatrix, AsyncpgPreparedStatements) { Asyncpg("prepared", "asyncpg prepared inserted=50 selected=50"); }
TEST_P(DriverMatrix, AsyncpgPool) { Asyncpg("pool", "asyncpg pool rows=40 sum=1640"); }
TEST_P(DriverMatrix, AsyncpgExecutemany) { Asyncpg("executemany", "asyncpg executemany rows=300 sum=135450000000100"); }
TEST_P(DriverMatrix, AsyncpgBinaryParameters) {
  Asyncpg("binary", "asyncpg binary lookups=8 any=3 thirds=6 bsum=630000000000 nsum=66.0");
}
TEST_P(DriverMatrix, AsyncpgTransactions) { Asyncpg("transactions", "asyncpg transactions values=70,130,101,100 sum=1001"); }

// pgjdbc's defaults: prepareThreshold=5 (named server-side statements S_n
// from the fifth execution; PgBouncer 1.18 fails on it) and the
// extra_float_digits startup parameter.
TEST_P(DriverMatrix, JdbcDefaults) { Jdbc("defaults", "jdbc defaults rows=30 selects=30 sum=465010"); }
TEST_P(DriverMatrix, JdbcPrepareThreshold1) { Jdbc("threshold1", "jdbc threshold1 rows=30 selects=30 sum=465010"); }
TEST_P(DriverMatrix, JdbcBatches) { Jdbc("batch", "jdbc batch inserted=500 updated=100 sum=150100"); }
// setInt/setLong/setString/setObject(UUID)/setBigDecimal/createArrayOf.
TEST_P(DriverMatrix, JdbcParameterTypes) {
  Jdbc("types", "jdbc types lookups=5 any=3 bsum=2100000000000 nsum=215");
}

// Issue 27: a JDBC TPC-C NewOrder/Payment mix (JDBC defaults, SERIALIZABLE
// through the database's default, 8 terminals x 25 transactions on 2 warehouses, pool 4,
// 40001 retried); the proxy must have learned warehouse and district
// references from pgjdbc's binary integer parameters, with aborts. The mix
// uses 2 of each warehouse's 10 districts, so that district references rank
// in SHOW HISTORY's top 20 among the INSERTs' column references.
class JdbcTpccHistory : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!TestServer(&server_, &why_)) GTEST_SKIP() << why_;
    if (!HaveJdbc()) GTEST_SKIP() << kNoJdbc;
  }
  // The mix (8 terminals x 25 transactions on 2 warehouses, 2 districts
  // each) through the proxy on `port`: its exit code, *out its output.
  int RunTpccClient(int port, const std::string& db, std::string* out) {
    return Shell(absl::StrCat("timeout 120 ", kJava, " ", Runfile("tests/drivers/clients/TpccClient.java"),
                              " 127.0.0.1 ", port, " ", server_.user, " ", db, " disable 2 8 25 2"),
                 out);
  }
  ServerInfo server_;
  std::string why_;
};

// Loads schemas/tpcc.sql and a tiny dataset of `warehouses` warehouses (10
// districts, 30 customers each, 100 items), every transaction SERIALIZABLE.
absl::Status LoadTinyTpcc(const ServerInfo& server, const std::string& db, int warehouses) {
  PGconn* c = PQconnectdb(absl::StrCat(server.conninfo, " dbname=", db).c_str());
  const std::string w = std::to_string(warehouses);
  const std::string sql[] = {
      ReadFile(Runfile("schemas/tpcc.sql")),
      absl::StrCat("INSERT INTO warehouse SELECT w, 'w' || w, 's1', 's2', 'city', 'ST', '123456789', 0.1, 300000 "
                   "FROM generate_series(1, ", w, ") w"),
      absl::StrCat("INSERT INTO district SELECT d, w, 'd' || d, 's1', 's2', 'city', 'ST', '123456789', 0.05, 30000, "
                   "3001 FROM generate_series(1, ", w, ") w, generate_series(1, 10) d"),
      absl::StrCat("INSERT INTO customer (c_id, c_d_id, c_w_id, c_first, c_last, c_credit, c_credit_lim, "
                   "c_discount, c_balance, c_ytd_payment, c_payment_cnt, c_delivery_cnt, c_since) "
                   "SELECT cu, d, w, 'first', 'last' || cu, 'GC', 50000, 0.1, -10, 10, 1, 0, now() "
                   "FROM generate_series(1, ", w, ") w, generate_series(1, 10) d, generate_series(1, 30) cu"),
      "INSERT INTO item SELECT i, i, 'item' || i, 1 + i % 100, 'data' FROM generate_series(1, 100) i",
      absl::StrCat("INSERT INTO stock (s_i_id, s_w_id, s_quantity, s_ytd, s_order_cnt, s_remote_cnt, s_data) "
                   "SELECT i, w, 50, 0, 0, 0, 'data' FROM generate_series(1, ",
                   w, ") w, generate_series(1, 100) i"),
      absl::StrCat("ALTER DATABASE ", db, " SET default_transaction_isolation = 'serializable'"),
  };
  absl::Status st = absl::OkStatus();
  if (PQstatus(c) != CONNECTION_OK) st = absl::UnavailableError(PQerrorMessage(c));
  for (const std::string& s : sql) {
    if (!st.ok()) break;
    PGresult* r = PQexec(c, s.c_str());
    if (PQresultStatus(r) != PGRES_COMMAND_OK) st = absl::InternalError(absl::StrCat(PQerrorMessage(c), " in ", s));
    PQclear(r);
  }
  PQfinish(c);
  return st;
}

TEST_F(JdbcTpccHistory, ShowHistoryListsWarehouseAndDistrictAborts) {
  const std::string db = PgUniqueName("drv_tpcc");
  ASSERT_TRUE(RecreateDatabase(server_, db).ok());
  ASSERT_TRUE(LoadTinyTpcc(server_, db, 2).ok());
  {
    ProxyUnderTest p;
    Options o;
    o.pool_size = 4;
    o.server_dbname = db;  // the proxy reads the TPC-C schema from the catalog (d_w_id -> w_id, ...)
    ASSERT_TRUE(IsOk(p.Start(server_, o)));
    std::string out;
    ASSERT_EQ(RunTpccClient(p.port(), db, &out), 0) << out;
    EXPECT_TRUE(absl::StrContains(out, "tpcc committed=200 ")) << out;
    EXPECT_GT(p.proxy().stats().aborts_40001.load(), 0) << out;
    PGconn* admin = PQconnectdb(absl::StrCat("host=127.0.0.1 port=", p.port(), " user=", server_.user,
                                             " dbname=corral connect_timeout=5")
                                    .c_str());
    ASSERT_EQ(PQstatus(admin), CONNECTION_OK) << PQerrorMessage(admin);
    PGresult* r = PQexec(admin, "SHOW HISTORY");
    ASSERT_EQ(PQresultStatus(r), PGRES_TUPLES_OK) << PQerrorMessage(admin);
    int w_aborts = 0, d_aborts = 0;
    std::string history;
    for (int i = 0; i < PQntuples(r); ++i) {
      const std::string ref = PQgetvalue(r, i, 0);
      const int aborts = std::atoi(PQgetvalue(r, i, 1));
      absl::StrAppend(&history, ref, " aborts=", aborts, " commits=", PQgetvalue(r, i, 2), "\n");
      if (absl::StartsWith(ref, "w_id=")) w_aborts += aborts;
      if (absl::StartsWith(ref, "d_id=")) d_aborts += aborts;
    }
    PQclear(r);
    PQfinish(admin);
    EXPECT_GT(w_aborts, 0) << "no warehouse reference with aborts in SHOW HISTORY:\n" << history << out;
    EXPECT_GT(d_aborts, 0) << "no district reference with aborts in SHOW HISTORY:\n" << history << out;
    std::printf("%s\nSHOW HISTORY:\n%s", out.c_str(), history.c_str());
  }
  DropDatabase(server_, db);
}

// Issue 25, cluster_lock = table, with pgjdbc: the same mix through proxy A
// of a two-proxy cluster (B a live peer) taking stripe table locks. pgjdbc
// opens each block with BEGIN in the unit of its first query, so once A's
// warehouse and district references are hot the proxy's BEGIN and LOCK go
// before that unit (the driver's BEGIN then draws the server's 25001
// warning, which the proxy keeps back). Every transaction commits and the
// client's consistency check passes; A took table locks.
TEST_F(JdbcTpccHistory, JdbcThroughATableLockedCluster) {
  const std::string db = PgUniqueName("drv_tpcc_tl");
  ASSERT_TRUE(RecreateDatabase(server_, db).ok());
  ASSERT_TRUE(LoadTinyTpcc(server_, db, 2).ok());
  {
    ProxyUnderTest a, b;
    Options o;
    o.pool_size = 4;
    o.server_dbname = db;
    o.cluster_name = PgUniqueName("drvcl");
    o.cluster_publish_interval_ms = 100;
    o.cluster_hot_threshold = 1;
    o.cluster_table_locks = true;
    o.cluster_proxy_id = "a";
    ASSERT_TRUE(IsOk(a.Start(server_, o)));
    o.cluster_proxy_id = "b";
    ASSERT_TRUE(IsOk(b.Start(server_, o)));
    std::string out;
    ASSERT_EQ(RunTpccClient(a.port(), db, &out), 0) << out;
    EXPECT_TRUE(absl::StrContains(out, "tpcc committed=200 ")) << out;
    const Stats& s = a.proxy().stats();
    EXPECT_GT(s.cluster_lock_txns.load(), 0) << out;
    EXPECT_EQ(s.cluster_unlocks_folded.load(), 0);  // no advisory unlock: COMMIT released the stripes
    EXPECT_EQ(s.protocol_errors.load(), 0);
    std::printf("%s\ncluster lock txns %lld, wrapped units %lld, unlocked units %lld\n", out.c_str(),
                static_cast<long long>(s.cluster_lock_txns.load()),
                static_cast<long long>(s.cluster_wrapped_units.load()),
                static_cast<long long>(s.cluster_unlocked_units.load()));
  }
  DropDatabase(server_, db);
}

}  // namespace
}  // namespace proxy
}  // namespace corral
