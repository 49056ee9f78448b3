// The PostgreSQL Backend of the experiment runner (bench/runner/runner.h):
// every Open() gives a fresh database loaded with the workload's population,
// one PgExecutor (own libpq connection) per run queue at the chosen isolation
// level, the workloads' PostgreSQL procedures (bench/workloads/pg_forms.h) as
// the transactions, and the workload's consistency conditions checked in SQL
// on the server after the run.
//
//   PgBackendOptions o;
//   o.conninfo = "host=127.0.0.1 port=54329 user=postgres dbname=postgres";
//   o.isolation = adapters::PgIsolation::kSerializable;
//   Runner runner(MakePgBackend(o), MakeWorkloadFactory());
//   BenchConfig c; c.workload = "tpcc"; c.warehouses = 2; c.queues = 8;
//   absl::StatusOr<BenchResult> r = runner.Run(c);
//
//   // `corral bench` / `corral experiment`: picks by BenchConfig::backend
//   Runner runner(MakeBackendSelector(o), MakeWorkloadFactory());
//
// Fresh databases. The first Open() for a population (workload name,
// warehouses, scale, DDL text) in this process builds a template database
// "corral_tpl_<pid>_<tag>_<hex>": CREATE DATABASE, the workload's DDL
// (schemas/<workload>.sql), the engine-generated population copied with
// COPY FROM STDIN (the same values as pg_forms' LoadPg), ANALYZE. Every
// Open() then drops and re-creates the run database "corral_run_<pid>_<tag>" as
// CREATE DATABASE ... TEMPLATE <template> (a file copy: well under a second
// for TPC-C with a few warehouses). The run database is dropped when the
// instance is destroyed, the templates when the Backend is. The admin
// connection uses the conninfo as given (its database must exist, e.g.
// postgres); executors use the same conninfo with dbname replaced.
//
// Isolation: PgBackendOptions::isolation, unless BenchConfig::protocol names
// an isolation level ("serializable", "repeatable-read", "read-committed"),
// which lets experiment specs sweep it as `protocol = ...`.
//
// Plans: unless BenchConfig::pg_seqscan, every executor session runs SET
// enable_seqscan = off (config.h says why: relation-level SIRead locks).
//
// Check(): TPC-C consistency conditions 1-4 (W_YTD = sum(D_YTD); D_NEXT_O_ID
// - 1 = max(O_ID) = max(NO_O_ID); new_order ids contiguous; sum(O_OL_CNT) =
// order_line rows), per district, in SQL. SmallBank: every account still has
// exactly one savings and one checking row and the row counts equal the
// loaded ones (the total is not conserved by the workload and PostgreSQL has
// no audit rows to account for it: pg_forms.h). TATP: subscriber,
// access_info, special_facility counts unchanged. YCSB: usertable count
// unchanged.
//
// Thread-safety: a Backend is thread-compatible (the runner opens one
// instance at a time). An instance's executors are each driven by one worker
// thread; Check/ExecutorCounts are called by the controlling thread while
// the executors are quiescent.
#ifndef CORRAL_BENCH_PGBACKEND_PG_BACKEND_H_
#define CORRAL_BENCH_PGBACKEND_PG_BACKEND_H_

#include <cstdint>
#include <map>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "adapters/pg_connection.h"
#include "adapters/pg_executor.h"
#include "bench/runner/runner.h"
#include "bench/workloads/workload.h"

namespace corral {
namespace bench {

struct PgBackendOptions {
  // libpq keyword/value conninfo or postgres:// URI of the admin database;
  // BenchConfig::conninfo, when set, takes precedence.
  std::string conninfo;
  adapters::PgIsolation isolation = adapters::PgIsolation::kSerializable;
  // Passed to every executor (statement/lock timeouts, session setup).
  adapters::PgExecutorOptions executor;
  // Bytes per PQputCopyData call when loading a template.
  int copy_batch_bytes = 1 << 20;
};

// The PostgreSQL backend (name "postgres").
std::unique_ptr<Backend> MakePgBackend(PgBackendOptions options);

// A backend that opens each configuration on BenchConfig::backend:
// "engine" -> MakeEngineBackend(), "postgres" -> MakePgBackend(pg_defaults);
// anything else is InvalidArgument from Open().
std::unique_ptr<Backend> MakeBackendSelector(PgBackendOptions pg_defaults);

// `conninfo` with its database replaced by `dbname` (keyword/value form: a
// trailing dbname=..., which libpq lets override an earlier one; URI form:
// the path replaced).
std::string ConninfoWithDatabase(const std::string& conninfo, const std::string& dbname);

// The workload's consistency conditions on a loaded database (see the file
// comment), with `expected_rows` the loaded row counts by table for the
// row-count conditions (may be empty to skip them). The error names the
// violated condition. Quiescent.
absl::Status CheckPgConsistency(const workloads::Workload& w, adapters::PgConnection& conn,
                                const std::map<std::string, int64_t>& expected_rows);

}  // namespace bench
}  // namespace corral

#endif  // CORRAL_BENCH_PGBACKEND_PG_BACKEND_H_
