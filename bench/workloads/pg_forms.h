// The PostgreSQL forms of the workloads: for every generated transaction a
// PgProcedure (adapters/pg_procedure.h) that runs the same SQL templates as
// its SQL form (WorkloadTxn::AppendSql) through a PgSession, with the same
// logic as the engine procedure (reading the results it needs: o_id from
// d_next_o_id, customer by last name, balances, ...), and a loader that
// copies a workload's loaded engine population into PostgreSQL.
//
//   // load: the same population as the engine's
//   auto db = engine::Database::Create({}).value();
//   CHECK_OK(w->Load(db.get()));
//   CHECK_OK(conn->Exec(ddl).ToStatus());          // schemas/<workload>.sql
//   CHECK_OK(LoadPg(*w, *db, *conn));
//   // run
//   std::unique_ptr<WorkloadTxn> t = w->Next(rng);
//   std::unique_ptr<adapters::PgTxn> pg = MakePgTxn(*t).value();
//   pg_executor->Execute(*pg);
//
// Templates are run with PgSession::ExecTemplate under a name derived from
// the SQL's fingerprint ("wl_<hex>"), so no catalog is needed. User aborts
// (TPC-C's invalid item, SmallBank's insufficient funds, TATP's failed
// lookups, InsertCallForwarding of an existing row via ON CONFLICT DO
// NOTHING + zero rows) return absl::AbortedError from the procedure, which
// the executor reports as UserAbort. Differences from the engine form:
// ORDER BY c_first follows the server's collation; TPC-C's bad-credit
// c_data update is a separate UPDATE; the engine-only audit rows of
// SmallBank/TATP/YCSB do not exist on PostgreSQL.
//
// Loader: multi-row INSERTs of `batch_rows` rows through
// PgConnection::Exec (the adapter exposes no COPY). int64 columns are
// written as integers, except TPC-C's timestamps (c_since, o_entry_d,
// h_date, ol_delivery_d: seconds, 0 = NULL, else to_timestamp) and
// o_carrier_id (0 = NULL); doubles as shortest exact decimals; strings
// quoted. History rows inserted by engine runs are not copied (load from a
// freshly loaded Database).
//
// Thread-safety: the functions are thread-safe; a procedure is run by one
// executor at a time; a PgConnection is used by one thread.
#ifndef CORRAL_BENCH_WORKLOADS_PG_FORMS_H_
#define CORRAL_BENCH_WORKLOADS_PG_FORMS_H_

#include <memory>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "adapters/pg_connection.h"
#include "adapters/pg_procedure.h"
#include "bench/workloads/workload.h"
#include "engine/engine.h"

namespace corral {
namespace workloads {

// The PostgreSQL procedure of a TpccTxn, SmallBankTxn, TatpTxn or YcsbTxn
// (InvalidArgument for another kind). It copies the inputs.
absl::StatusOr<std::unique_ptr<adapters::PgProcedure>> MakePgProcedure(const WorkloadTxn& t);
// A PgTxn around it with the same refs, partition_key and type.
absl::StatusOr<std::unique_ptr<adapters::PgTxn>> MakePgTxn(const WorkloadTxn& t);

// Whether an engine int64 column holds a timestamp (Unix seconds; 0 = NULL)
// that the PostgreSQL schema types as timestamp.
bool IsTimestampColumn(absl::string_view column);

// What a loader writes for an engine int64 value: the engine has no NULL and
// stores 0 in the columns PostgreSQL leaves NULL (timestamps, o_carrier_id
// of an undelivered order), so those read back as NULL; other timestamps as
// timestamps (Unix seconds), the rest as integers. LoadPg and the COPY loader
// (bench/pgbackend) share this rule and differ only in spelling.
enum class Int64Form { kNull, kTimestamp, kInteger };
Int64Form ClassifyInt64(absl::string_view column, int64_t v);

// Inserts the rows of `loaded` (w's population, via Workload::ForEachRow)
// into the tables of the connection's current search_path, which must
// already exist (run the workload's DDL first).
absl::Status LoadPg(const Workload& w, const engine::Database& loaded,
                    adapters::PgConnection& conn, int batch_rows = 500);

}  // namespace workloads
}  // namespace corral

#endif  // CORRAL_BENCH_WORKLOADS_PG_FORMS_H_
