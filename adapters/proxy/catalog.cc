// LoadCatalogSchema: the database's own keys and functions into a Schema.
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "adapters/libpq_connection.h"
#include "adapters/proxy/proxy.h"

namespace corral {
namespace proxy {
namespace {

constexpr const char* kUserSchemas =
    "n.nspname NOT IN ('pg_catalog', 'information_schema') AND n.nspname NOT LIKE 'pg_toast%' "
    "AND n.nspname NOT LIKE 'pg_temp%'";

std::vector<std::string> SplitList(const std::string& s) {
  if (s.empty()) return {};
  return absl::StrSplit(s, ',');
}

}  // namespace

absl::StatusOr<std::shared_ptr<const Schema>> LoadCatalogSchema(const std::string& conninfo, bool qualify_all) {
  auto conn_or = adapters::ConnectLibpq(conninfo);
  if (!conn_or.ok()) return conn_or.status();
  adapters::PgConnection& conn = **conn_or;
  SchemaBuilder b;
  b.SetQualifyAll(qualify_all);
  // One snapshot for the three reads: a table created or dropped between
  // them (another application's DDL) must not leave a key without its
  // table. The connection is closed at the end, which ends the transaction.
  adapters::PgResult begin = conn.Exec("BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY");
  if (!begin.ok()) return begin.ToStatus("starting the catalog read");

  adapters::PgResult cols = conn.Exec(absl::StrCat(
      "SELECT c.relname, a.attname, t.typname FROM pg_class c "
      "JOIN pg_namespace n ON n.oid = c.relnamespace "
      "JOIN pg_attribute a ON a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped "
      "JOIN pg_type t ON t.oid = a.atttypid "
      "WHERE c.relkind IN ('r', 'p') AND NOT c.relispartition AND ", kUserSchemas,
      " ORDER BY n.nspname, c.relname, a.attnum"));
  if (!cols.ok()) return cols.ToStatus("reading tables from pg_class/pg_attribute");
  std::string table;
  std::vector<SchemaColumn> columns;
  auto flush = [&]() -> absl::Status {
    if (table.empty()) return absl::OkStatus();
    absl::Status st = b.AddTable(table, std::move(columns));
    columns.clear();
    // The same table name in two schemas: the first one wins.
    if (!st.ok() && st.code() != absl::StatusCode::kAlreadyExists &&
        st.code() != absl::StatusCode::kInvalidArgument) {
      return st;
    }
    return absl::OkStatus();
  };
  for (int i = 0; i < cols.num_rows(); ++i) {
    if (cols.Get(i, 0) != table) {
      if (absl::Status st = flush(); !st.ok()) return st;
      table = cols.Get(i, 0);
    }
    columns.push_back({cols.Get(i, 1), TypeClassOfTypeName(cols.Get(i, 2))});
  }
  if (absl::Status st = flush(); !st.ok()) return st;

  // Keys: column lists in key order.
  adapters::PgResult keys = conn.Exec(absl::StrCat(
      "SELECT con.contype, c.relname, "
      "  array_to_string(ARRAY(SELECT a.attname FROM unnest(con.conkey) WITH ORDINALITY k(n, o) "
      "    JOIN pg_attribute a ON a.attrelid = con.conrelid AND a.attnum = k.n ORDER BY k.o), ','), "
      "  coalesce(rc.relname, ''), "
      "  coalesce(array_to_string(ARRAY(SELECT a.attname FROM unnest(con.confkey) WITH ORDINALITY k(n, o) "
      "    JOIN pg_attribute a ON a.attrelid = con.confrelid AND a.attnum = k.n ORDER BY k.o), ','), '') "
      "FROM pg_constraint con JOIN pg_class c ON c.oid = con.conrelid "
      "JOIN pg_namespace n ON n.oid = c.relnamespace "
      "LEFT JOIN pg_class rc ON rc.oid = con.confrelid "
      "WHERE con.contype IN ('p', 'f') AND ", kUserSchemas,
      " ORDER BY con.contype DESC, c.relname, con.conname"));
  if (!keys.ok()) return keys.ToStatus("reading keys from pg_constraint");
  for (int i = 0; i < keys.num_rows(); ++i) {
    const std::string& kind = keys.Get(i, 0);
    if (kind == "p") {
      absl::Status st = b.AddPrimaryKey(keys.Get(i, 1), SplitList(keys.Get(i, 2)));
      (void)st;  // a duplicate-named table's key: ignored with the table
    } else {
      absl::Status st = b.AddForeignKey(keys.Get(i, 1), SplitList(keys.Get(i, 2)), keys.Get(i, 3),
                                        SplitList(keys.Get(i, 4)));
      (void)st;
    }
  }

  // Functions and procedures: the names of the arguments a call passes.
  adapters::PgResult procs = conn.Exec(absl::StrCat(
      "SELECT p.proname, coalesce(array_to_string(p.proargnames, ',', ''), ''), "
      "  coalesce(array_to_string(p.proargmodes, ','), ''), "
      "  coalesce((SELECT string_agg(t.typname, ',' ORDER BY k.o) "
      "    FROM unnest(p.proargtypes::oid[]) WITH ORDINALITY k(oid, o) JOIN pg_type t ON t.oid = k.oid), '') "
      "FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE ", kUserSchemas,
      " ORDER BY p.proname"));
  if (!procs.ok()) return procs.ToStatus("reading functions from pg_proc");
  for (int i = 0; i < procs.num_rows(); ++i) {
    std::vector<std::string> names = absl::StrSplit(procs.Get(i, 1), ',');
    std::vector<std::string> modes = SplitList(procs.Get(i, 2));
    std::vector<std::string> types = SplitList(procs.Get(i, 3));
    std::vector<FunctionParamDef> params;
    size_t in_index = 0;
    for (size_t j = 0; j < names.size() || (modes.empty() && j < types.size()); ++j) {
      const bool input = modes.empty() || (j < modes.size() && (modes[j] == "i" || modes[j] == "b" ||
                                                                modes[j] == "v"));
      if (!input) continue;
      FunctionParamDef d;
      d.name = j < names.size() ? names[j] : "";
      if (in_index < types.size()) d.type = TypeClassOfTypeName(types[in_index]);
      ++in_index;
      params.push_back(std::move(d));
    }
    absl::Status st = b.AddFunction(procs.Get(i, 0), std::move(params));
    (void)st;  // overloaded names: the first wins
  }
  return b.Build();
}

}  // namespace proxy
}  // namespace corral

namespace corral {
namespace proxy {

absl::StatusOr<std::string> LookupPassword(const std::string& conninfo, const std::string& query,
                                           const std::string& user) {
  auto conn_or = adapters::ConnectLibpq(conninfo);
  if (!conn_or.ok()) return conn_or.status();
  adapters::PgConnection& conn = **conn_or;
  adapters::PgResult prep = conn.Prepare("corral_auth_query", query);
  if (!prep.ok()) return prep.ToStatus("preparing auth_query");
  const absl::optional<std::string> param = user;
  adapters::PgResult r = conn.ExecPrepared("corral_auth_query", absl::MakeConstSpan(&param, 1));
  if (!r.ok()) return r.ToStatus("running auth_query");
  if (r.num_rows() == 0 || r.num_columns() < 2 || r.IsNull(0, 1)) {
    return absl::NotFoundError(absl::StrCat("auth_query found no password for user \"", user, "\""));
  }
  return r.Get(0, 1);
}

}  // namespace proxy
}  // namespace corral
