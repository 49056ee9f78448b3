#include "bench/pgbackend/pg_backend.h"

#include <libpq-fe.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "adapters/libpq_connection.h"
#include "bench/workloads/pg_forms.h"
#include "common/hash.h"
#include "engine/engine.h"

namespace corral {
namespace bench {

using adapters::PgConnection;
using adapters::PgResult;

namespace {

absl::Status ReadDdl(const std::string& path, std::string* out) {
  std::vector<std::string> candidates = {path};
  if (const char* d = std::getenv("BUILD_WORKSPACE_DIRECTORY")) candidates.push_back(absl::StrCat(d, "/", path));
  if (const char* d = std::getenv("TEST_SRCDIR")) candidates.push_back(absl::StrCat(d, "/corral/", path));
  for (const auto& p : candidates) {
    std::ifstream in(p, std::ios::binary);
    if (!in) continue;
    std::stringstream ss;
    ss << in.rdbuf();
    *out = ss.str();
    return absl::OkStatus();
  }
  return absl::NotFoundError(absl::StrCat("DDL file ", path, " not found (run from the repository root)"));
}

absl::StatusOr<std::unique_ptr<PgConnection>> Connect(const std::string& conninfo) {
  return adapters::ConnectLibpq(conninfo);
}

absl::Status Exec(PgConnection& c, const std::string& sql) { return c.Exec(sql).ToStatus(sql); }

absl::StatusOr<int64_t> Int(PgConnection& c, const std::string& sql) {
  PgResult r = c.Exec(sql);
  if (!r.ok()) return r.ToStatus(sql);
  if (r.num_rows() != 1 || r.num_columns() < 1) return absl::InternalError(absl::StrCat("no single value: ", sql));
  if (r.IsNull(0, 0)) return int64_t{0};
  return r.GetInt(0, 0);
}

// ---------------------------------------------------------------- COPY loader

// One value in COPY text format (same values as pg_forms' LoadPg).
void AppendCopyValue(const engine::Column& col, const engine::ConstRow& r, int i, std::string* out) {
  switch (col.type) {
    case engine::ColumnType::kInt64: {
      const int64_t v = r.GetInt(i);
      switch (workloads::ClassifyInt64(col.name, v)) {
        case workloads::Int64Form::kNull: *out += "\\N"; break;
        case workloads::Int64Form::kTimestamp:
          *out += absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixSeconds(v), absl::UTCTimeZone());
          break;
        case workloads::Int64Form::kInteger: absl::StrAppend(out, v); break;
      }
      return;
    }
    case engine::ColumnType::kDouble:
      *out += std::string(workloads::SqlParam::Num(r.GetDouble(i)).value());
      return;
    case engine::ColumnType::kString:
      for (char ch : r.GetString(i)) {
        switch (ch) {
          case '\\': *out += "\\\\"; break;
          case '\t': *out += "\\t"; break;
          case '\n': *out += "\\n"; break;
          case '\r': *out += "\\r"; break;
          default: *out += ch;
        }
      }
      return;
  }
}

// Copies w's loaded population into the database of `conninfo` with COPY FROM
// STDIN; counts rows per table into *rows.
absl::Status CopyLoad(const workloads::Workload& w, const engine::Database& loaded,
                      const std::string& conninfo, int batch_bytes, std::map<std::string, int64_t>* rows) {
  PGconn* pg = PQconnectdb(conninfo.c_str());
  struct Closer {
    PGconn* c;
    ~Closer() { PQfinish(c); }
  } closer{pg};
  if (pg == nullptr || PQstatus(pg) != CONNECTION_OK) {
    return absl::UnavailableError(absl::StrCat("COPY connection: ", pg ? PQerrorMessage(pg) : "out of memory"));
  }
  std::string buf;
  const engine::Table* current = nullptr;
  auto send = [&]() -> absl::Status {
    if (buf.empty()) return absl::OkStatus();
    if (PQputCopyData(pg, buf.data(), static_cast<int>(buf.size())) != 1) {
      return absl::InternalError(absl::StrCat("PQputCopyData: ", PQerrorMessage(pg)));
    }
    buf.clear();
    return absl::OkStatus();
  };
  auto finish = [&]() -> absl::Status {
    if (current == nullptr) return absl::OkStatus();
    if (absl::Status s = send(); !s.ok()) return s;
    if (PQputCopyEnd(pg, nullptr) != 1) return absl::InternalError(absl::StrCat("PQputCopyEnd: ", PQerrorMessage(pg)));
    absl::Status st;
    while (PGresult* res = PQgetResult(pg)) {
      if (PQresultStatus(res) != PGRES_COMMAND_OK && st.ok()) {
        st = absl::InternalError(absl::StrCat("COPY ", current->name(), ": ", PQresultErrorMessage(res)));
      }
      PQclear(res);
    }
    current = nullptr;
    return st;
  };
  absl::Status st = w.ForEachRow(loaded, [&](const engine::Table& t, const engine::ConstRow& r) -> absl::Status {
    const engine::Schema& s = t.schema();
    if (&t != current) {
      if (absl::Status f = finish(); !f.ok()) return f;
      std::string sql = absl::StrCat("COPY ", t.name(), " (");
      for (size_t i = 0; i < s.num_columns(); ++i) {
        absl::StrAppend(&sql, i > 0 ? ", " : "", s.column(static_cast<int>(i)).name);
      }
      sql += ") FROM STDIN";
      PGresult* res = PQexec(pg, sql.c_str());
      const bool ok = PQresultStatus(res) == PGRES_COPY_IN;
      std::string err = ok ? "" : PQresultErrorMessage(res);
      PQclear(res);
      if (!ok) return absl::InternalError(absl::StrCat(sql, ": ", err));
      current = &t;
    }
    for (size_t i = 0; i < s.num_columns(); ++i) {
      if (i > 0) buf += '\t';
      AppendCopyValue(s.column(static_cast<int>(i)), r, static_cast<int>(i), &buf);
    }
    buf += '\n';
    ++(*rows)[t.name()];
    if (static_cast<int>(buf.size()) >= batch_bytes) return send();
    return absl::OkStatus();
  });
  if (!st.ok()) return st;
  return finish();
}

double Seconds(std::chrono::steady_clock::time_point a) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - a).count();
}

// ---------------------------------------------------------------- instance

// Thread-safety: see the file comment of pg_backend.h.
class PgInstance : public BackendInstance {
 public:
  PgInstance(std::string admin_conninfo, std::string run_conninfo, std::string run_db,
             std::map<std::string, int64_t> rows)
      : admin_conninfo_(std::move(admin_conninfo)), run_conninfo_(std::move(run_conninfo)),
        run_db_(std::move(run_db)), rows_(std::move(rows)) {}

  ~PgInstance() override {
    executors_.clear();  // close the connections before dropping their database
    auto admin = Connect(admin_conninfo_);
    if (admin.ok()) (void)(*admin)->Exec(absl::StrCat("DROP DATABASE IF EXISTS ", run_db_, " WITH (FORCE)"));
  }

  std::vector<std::unique_ptr<adapters::PgExecutor>>& executors() { return executors_; }

  std::vector<scheduler::Executor*> Executors() override {
    std::vector<scheduler::Executor*> out;
    for (auto& e : executors_) out.push_back(e.get());
    return out;
  }

  std::unique_ptr<scheduler::Txn> PrepareTxn(std::unique_ptr<workloads::WorkloadTxn> t) override {
    absl::StatusOr<std::unique_ptr<adapters::PgTxn>> pg = workloads::MakePgTxn(*t);
    // Without a PG form the executor reports Failed(InvalidArgument) for the
    // WorkloadTxn itself, which the runner counts as a failure.
    if (!pg.ok()) return t;
    return std::move(*pg);
  }

  absl::Status Check(const workloads::Workload& w) override {
    auto c = Connect(run_conninfo_);
    if (!c.ok()) return c.status();
    return CheckPgConsistency(w, **c, rows_);
  }

  bool ExecutorCounts(uint64_t* commits, uint64_t* conflict_aborts) override {
    *commits = 0;
    *conflict_aborts = 0;
    for (auto& e : executors_) {
      adapters::PgExecutorStats s = e->stats();
      *commits += static_cast<uint64_t>(s.commits);
      *conflict_aborts += static_cast<uint64_t>(s.conflicts);
    }
    return true;
  }

 private:
  const std::string admin_conninfo_, run_conninfo_, run_db_;
  const std::map<std::string, int64_t> rows_;
  std::vector<std::unique_ptr<adapters::PgExecutor>> executors_;
};

// ---------------------------------------------------------------- backend

// Thread-safety: thread-compatible (see pg_backend.h).
class PgBackend : public Backend {
 public:
  explicit PgBackend(PgBackendOptions o) : o_(std::move(o)) {}

  ~PgBackend() override {
    if (templates_.empty()) return;
    auto admin = Connect(last_admin_);
    if (!admin.ok()) return;
    for (const auto& kv : templates_) {
      (void)(*admin)->Exec(absl::StrCat("DROP DATABASE IF EXISTS ", kv.second.db, " WITH (FORCE)"));
    }
  }

  std::string name() const override { return "postgres"; }

  absl::StatusOr<std::unique_ptr<BackendInstance>> Open(const BenchConfig& c, workloads::Workload& w) override {
    const std::string admin_ci = c.conninfo.empty() ? o_.conninfo : c.conninfo;
    if (admin_ci.empty()) {
      return absl::InvalidArgumentError("backend=postgres needs a conninfo (--conninfo or spec key conninfo)");
    }
    adapters::PgExecutorOptions eo = o_.executor;
    eo.isolation = o_.isolation;
    if (auto iso = adapters::ParsePgIsolation(c.protocol); iso.ok()) eo.isolation = *iso;
    if (!c.pg_seqscan) eo.session_setup.push_back("SET enable_seqscan = off");

    auto admin = Connect(admin_ci);
    if (!admin.ok()) return admin.status();
    last_admin_ = admin_ci;

    std::string ddl;
    if (absl::Status s = ReadDdl(w.schema_file(), &ddl); !s.ok()) return s;
    const std::string key = absl::StrCat(admin_ci, "|", w.name(), "|", c.warehouses, "|", c.scale, "|",
                                         c.hot_size, "|", ddl);
    auto it = templates_.find(key);
    if (it == templates_.end()) {
      Template t;
      t.db = absl::StrCat("corral_tpl_", adapters::PgProcessTag(), "_", absl::Hex(Fingerprint64(key) & 0xffffffffu));
      if (absl::Status s = BuildTemplate(**admin, admin_ci, ddl, w, &t); !s.ok()) return s;
      it = templates_.emplace(key, std::move(t)).first;
    }
    const Template& t = it->second;

    const std::string run_db = absl::StrCat("corral_run_", adapters::PgProcessTag());
    const auto t0 = std::chrono::steady_clock::now();
    if (absl::Status s = Exec(**admin, absl::StrCat("DROP DATABASE IF EXISTS ", run_db, " WITH (FORCE)")); !s.ok()) {
      return s;
    }
    if (absl::Status s = Exec(**admin, absl::StrCat("CREATE DATABASE ", run_db, " TEMPLATE ", t.db)); !s.ok()) {
      return s;
    }
    copy_s_ = Seconds(t0);
    const std::string run_ci = ConninfoWithDatabase(admin_ci, run_db);
    auto inst = std::make_unique<PgInstance>(admin_ci, run_ci, run_db, t.rows);
    auto ex = adapters::ConnectPgExecutors(run_ci, c.queues, eo);
    if (!ex.ok()) return ex.status();
    inst->executors() = std::move(*ex);
    if (c.progress_s > 0) {
      std::fprintf(stderr, "postgres: %s database %s (copy of %s: %.2f s), %d connections at %s\n",
                   w.name().c_str(), run_db.c_str(), t.db.c_str(), copy_s_, c.queues,
                   adapters::PgIsolationName(eo.isolation));
    }
    return std::unique_ptr<BackendInstance>(std::move(inst));
  }

 private:
  struct Template {
    std::string db;
    std::map<std::string, int64_t> rows;
  };

  absl::Status BuildTemplate(PgConnection& admin, const std::string& admin_ci, const std::string& ddl,
                             workloads::Workload& w, Template* t) {
    const auto t0 = std::chrono::steady_clock::now();
    if (absl::Status s = Exec(admin, absl::StrCat("DROP DATABASE IF EXISTS ", t->db, " WITH (FORCE)")); !s.ok()) {
      return s;
    }
    if (absl::Status s = Exec(admin, absl::StrCat("CREATE DATABASE ", t->db)); !s.ok()) return s;
    const std::string ci = ConninfoWithDatabase(admin_ci, t->db);
    {
      auto conn = Connect(ci);
      if (!conn.ok()) return conn.status();
      if (absl::Status s = Exec(**conn, ddl); !s.ok()) return s;
    }
    auto db = engine::Database::Create({});
    if (!db.ok()) return db.status();
    if (absl::Status s = w.Load(db->get()); !s.ok()) return s;
    const double gen_s = Seconds(t0);
    if (absl::Status s = CopyLoad(w, **db, ci, o_.copy_batch_bytes, &t->rows); !s.ok()) return s;
    const double copy_s = Seconds(t0) - gen_s;
    {
      auto conn = Connect(ci);
      if (!conn.ok()) return conn.status();
      if (absl::Status s = Exec(**conn, "VACUUM ANALYZE"); !s.ok()) return s;
    }
    int64_t total = 0;
    for (const auto& kv : t->rows) total += kv.second;
    std::fprintf(stderr,
                 "postgres: template %s for %s: %lld rows; engine population %.2f s, COPY %.2f s, "
                 "total with VACUUM ANALYZE %.2f s\n",
                 t->db.c_str(), w.name().c_str(), static_cast<long long>(total), gen_s, copy_s, Seconds(t0));
    return absl::OkStatus();
  }

  const PgBackendOptions o_;
  std::map<std::string, Template> templates_;  // by population key
  std::string last_admin_;
  double copy_s_ = 0;
};

// Thread-safety: thread-compatible, as Backend.
class BackendSelector : public Backend {
 public:
  explicit BackendSelector(PgBackendOptions o) : pg_(MakePgBackend(std::move(o))), engine_(MakeEngineBackend()) {}
  std::string name() const override { return "selector(engine|postgres)"; }
  absl::StatusOr<std::unique_ptr<BackendInstance>> Open(const BenchConfig& c, workloads::Workload& w) override {
    if (c.backend == "engine") return engine_->Open(c, w);
    if (c.backend == "postgres" || c.backend == "pg") return pg_->Open(c, w);
    return absl::InvalidArgumentError(absl::StrCat("unknown backend '", c.backend, "' (known: engine, postgres)"));
  }

 private:
  std::unique_ptr<Backend> pg_, engine_;
};

}  // namespace

std::unique_ptr<Backend> MakePgBackend(PgBackendOptions options) {
  return std::make_unique<PgBackend>(std::move(options));
}

std::unique_ptr<Backend> MakeBackendSelector(PgBackendOptions pg_defaults) {
  return std::make_unique<BackendSelector>(std::move(pg_defaults));
}

std::string ConninfoWithDatabase(const std::string& conninfo, const std::string& dbname) {
  if (absl::StartsWith(conninfo, "postgres://") || absl::StartsWith(conninfo, "postgresql://")) {
    const size_t scheme_end = conninfo.find("://") + 3;
    const size_t q = conninfo.find('?', scheme_end);
    const std::string head = conninfo.substr(0, q == std::string::npos ? conninfo.size() : q);
    const std::string query = q == std::string::npos ? "" : conninfo.substr(q);
    const size_t slash = head.find('/', scheme_end);
    return absl::StrCat(slash == std::string::npos ? head : head.substr(0, slash), "/", dbname, query);
  }
  return absl::StrCat(conninfo, " dbname=", dbname);
}

// ---------------------------------------------------------------- checks

absl::Status CheckPgConsistency(const workloads::Workload& w, PgConnection& conn,
                                const std::map<std::string, int64_t>& expected_rows) {
  auto violation = [&](const std::string& what, const std::string& sql) -> absl::Status {
    PgResult r = conn.Exec(sql);
    if (!r.ok()) return r.ToStatus(what);
    if (r.num_rows() == 0) return absl::OkStatus();
    std::string row;
    for (int i = 0; i < r.num_columns(); ++i) {
      absl::StrAppend(&row, i > 0 ? ", " : "", r.columns()[i], "=", r.IsNull(0, i) ? "NULL" : r.Get(0, i));
    }
    return absl::DataLossError(absl::StrCat(w.name(), " on PostgreSQL: ", what, " violated (", r.num_rows(),
                                            " rows, first: ", row, ")"));
  };
  auto counts = [&](const std::vector<std::string>& tables) -> absl::Status {
    for (const auto& t : tables) {
      auto e = expected_rows.find(t);
      if (e == expected_rows.end()) continue;
      auto n = Int(conn, absl::StrCat("SELECT count(*) FROM ", t));
      if (!n.ok()) return n.status();
      if (*n != e->second) {
        return absl::DataLossError(absl::StrCat(w.name(), " on PostgreSQL: ", t, " has ", *n,
                                                " rows, loaded ", e->second));
      }
    }
    return absl::OkStatus();
  };
  const std::string name = w.name();
  if (name == "tpcc" || name == "tpcc-np") {
    absl::Status s = violation(
        "TPC-C consistency condition 1 (W_YTD = sum(D_YTD))",
        "SELECT w_id, w_ytd, (SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id) AS sum_d_ytd "
        "FROM warehouse WHERE abs(w_ytd - (SELECT sum(d_ytd) FROM district WHERE d_w_id = w_id)) > 0.005 "
        "ORDER BY w_id");
    if (!s.ok()) return s;
    s = violation(
        "TPC-C consistency condition 2 (D_NEXT_O_ID - 1 = max(O_ID) = max(NO_O_ID))",
        "SELECT d_w_id, d_id, d_next_o_id - 1 AS next_minus_1, o.mx AS max_o_id, n.mx AS max_no_o_id "
        "FROM district "
        "LEFT JOIN (SELECT o_w_id, o_d_id, max(o_id) AS mx FROM orders GROUP BY 1, 2) o "
        "  ON o.o_w_id = d_w_id AND o.o_d_id = d_id "
        "LEFT JOIN (SELECT no_w_id, no_d_id, max(no_o_id) AS mx FROM new_order GROUP BY 1, 2) n "
        "  ON n.no_w_id = d_w_id AND n.no_d_id = d_id "
        "WHERE d_next_o_id - 1 <> coalesce(o.mx, 0) OR (n.mx IS NOT NULL AND n.mx <> d_next_o_id - 1) "
        "ORDER BY 1, 2");
    if (!s.ok()) return s;
    s = violation("TPC-C consistency condition 3 (max(NO_O_ID) - min(NO_O_ID) + 1 = new_order rows)",
                  "SELECT no_w_id, no_d_id, max(no_o_id) - min(no_o_id) + 1 AS span, count(*) AS n "
                  "FROM new_order GROUP BY 1, 2 HAVING max(no_o_id) - min(no_o_id) + 1 <> count(*) "
                  "ORDER BY 1, 2");
    if (!s.ok()) return s;
    return violation(
        "TPC-C consistency condition 4 (sum(O_OL_CNT) = order_line rows)",
        "SELECT d_w_id, d_id, coalesce(o.s, 0) AS sum_ol_cnt, coalesce(l.n, 0) AS order_lines FROM district "
        "LEFT JOIN (SELECT o_w_id, o_d_id, sum(o_ol_cnt) AS s FROM orders GROUP BY 1, 2) o "
        "  ON o.o_w_id = d_w_id AND o.o_d_id = d_id "
        "LEFT JOIN (SELECT ol_w_id, ol_d_id, count(*) AS n FROM order_line GROUP BY 1, 2) l "
        "  ON l.ol_w_id = d_w_id AND l.ol_d_id = d_id "
        "WHERE coalesce(o.s, 0) <> coalesce(l.n, 0) ORDER BY 1, 2");
  }
  if (name == "smallbank") {
    absl::Status s = counts({"accounts", "savings", "checking"});
    if (!s.ok()) return s;
    return violation("SmallBank: one savings and one checking row per account, finite balances",
                     "SELECT a.custid, s.bal AS savings, c.bal AS checking FROM accounts a "
                     "LEFT JOIN savings s ON s.custid = a.custid LEFT JOIN checking c ON c.custid = a.custid "
                     "WHERE s.custid IS NULL OR c.custid IS NULL OR s.bal = 'NaN' OR c.bal = 'NaN' "
                     "OR s.bal IN ('Infinity', '-Infinity') OR c.bal IN ('Infinity', '-Infinity') LIMIT 5");
  }
  if (name == "tatp") return counts({"subscriber", "access_info", "special_facility"});
  if (name == "ycsb") return counts({"usertable"});
  return absl::OkStatus();
}

}  // namespace bench
}  // namespace corral
