// The schema that reference naming needs: tables and their columns (with a
// coarse type class), primary and foreign keys, functions' parameter names,
// and a column -> canonical-name override mapping. Canonical classes are
// derived from the foreign keys: union-find over FK column pairs, each class
// named after its referenced primary-key column (`s_w_id`, `c_w_id`, `d_w_id`
// -> `w_id`; TPC-C's composite FK (c_w_id, c_d_id) -> district(d_w_id, d_id)
// puts c_w_id with d_w_id, whose own FK puts it with w_id).
//
// Names never collide: a column name held by more than one table is written
// `table.column` (ORM-style `orders.id`), and so is a class whose root column
// name is not unique.
//
// Filled by a SchemaBuilder, from DDL text (CREATE TABLE, ALTER TABLE ... ADD
// CONSTRAINT, CREATE FUNCTION/PROCEDURE), from a catalog reader through the
// same Add* calls, and from a mapping file (`column=canonical` or
// `table.column=canonical` per line, `#` comments).
//
//   SchemaBuilder b;
//   CHECK_OK(b.AddDdl(ReadFile("schemas/tpcc.sql")));
//   CHECK_OK(b.AddMappingText("ol_amount=amount\n"));
//   absl::StatusOr<std::shared_ptr<const Schema>> s = b.Build();
//   (*s)->CanonicalName("stock", "s_w_id");   // "w_id"
//   (*s)->LiteralName("orders", "id");         // "orders.id" if `id` is not unique
//
// Thread-safety: SchemaBuilder is not thread-safe (one builder per thread).
// A built Schema is immutable and safe to share between threads.
#ifndef CORRAL_POLICIES_SCHEMA_H_
#define CORRAL_POLICIES_SCHEMA_H_

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "policies/ref_value.h"

namespace corral {

struct SchemaColumn {
  std::string name;
  TypeClass type = TypeClass::kUnknown;
};

struct FunctionParamDef {
  std::string name;
  TypeClass type = TypeClass::kUnknown;
};

struct FunctionDef {
  std::string name;
  std::vector<FunctionParamDef> params;  // the arguments a call passes, in order
};

// Which written values yield references (RefExtractor): INSERT column/value
// pairs and UPDATE `SET col = value`. WHERE references are never affected.
enum class InsertRefs {
  kAll,          // every column (DESIGN.md "References"; the default)
  kForeignKeys,  // in a table that has foreign-key classes, only its columns
                 // that belong to one (they name existing rows: the data a
                 // write can contend on); tables without any keep all
};

class Schema {
 public:
  bool HasTable(absl::string_view table) const;
  InsertRefs insert_refs() const { return insert_refs_; }
  // Whether a written value of table.column (`INSERT INTO table (column, ..)`,
  // `UPDATE table SET column = ..`) yields a reference under insert_refs().
  bool WrittenColumnYieldsRef(absl::string_view table, absl::string_view column) const;
  bool HasColumn(absl::string_view table, absl::string_view column) const;
  // Columns of a table in declaration order (empty if unknown).
  std::vector<std::string> ColumnsOf(absl::string_view table) const;
  // How many tables hold a column of this name.
  int TablesWithColumn(absl::string_view column) const;
  // The type class of table.column; with table "" the class every table
  // holding the column agrees on (kUnknown otherwise).
  TypeClass ColumnType(absl::string_view table, absl::string_view column) const;

  // `column`, or `table.column` when the column name is held by several tables
  // and `table` is known (non-empty). With qualify_all(), `table.column`
  // whenever the table is known (with table "": the column's one table).
  std::string LiteralName(absl::string_view table, absl::string_view column) const;
  // Names never depend on what other tables exist (SchemaBuilder::
  // SetQualifyAll): every literal name and FK class name is table-qualified.
  bool qualify_all() const { return qualify_all_; }
  // Mapping override (table.column, then column), else the FK class name,
  // else the literal name. With table "", the column's unique table is used.
  std::string CanonicalName(absl::string_view table, absl::string_view column) const;

  const FunctionDef* FindFunction(absl::string_view name) const;
  // Canonical name for a function parameter: a mapping override for the name,
  // else the canonical name of a column of that name if the schema has one
  // unambiguously, else the name itself.
  std::string ParamCanonicalName(absl::string_view param) const;

  // Every column that belongs to an FK class, as ("table.column", class name),
  // sorted. For tests and `corral refs --explain`-style display.
  std::vector<std::pair<std::string, std::string>> CanonicalClasses() const;

 private:
  friend class SchemaBuilder;
  struct Table {
    std::vector<SchemaColumn> columns;
  };
  absl::flat_hash_map<std::string, Table> tables_;
  absl::flat_hash_map<std::string, std::vector<std::string>> column_tables_;  // column -> tables
  absl::flat_hash_map<std::string, std::string> class_of_;  // "table.column" -> class name
  absl::flat_hash_map<std::string, std::string> mapping_;   // "table.column" or "column" -> name
  absl::flat_hash_map<std::string, FunctionDef> functions_;
  absl::flat_hash_map<std::string, bool> table_has_classes_;  // table -> has FK-class columns
  InsertRefs insert_refs_ = InsertRefs::kAll;
  bool qualify_all_ = false;
};

class SchemaBuilder {
 public:
  absl::Status AddTable(absl::string_view table, std::vector<SchemaColumn> columns);
  absl::Status AddPrimaryKey(absl::string_view table, std::vector<std::string> columns);
  // `ref_columns` empty means the referenced table's primary key. Checked in
  // Build(), so tables may be added in any order.
  absl::Status AddForeignKey(absl::string_view table, std::vector<std::string> columns,
                             absl::string_view ref_table, std::vector<std::string> ref_columns);
  absl::Status AddFunction(absl::string_view name, std::vector<FunctionParamDef> params);
  // `from` is "column" or "table.column"; `to` is the canonical name to use.
  absl::Status AddMapping(absl::string_view from, absl::string_view to);

  // Reads DDL with libpg_query: CREATE TABLE (column types, PRIMARY KEY,
  // FOREIGN KEY / inline REFERENCES), ALTER TABLE ... ADD CONSTRAINT, CREATE
  // FUNCTION / PROCEDURE. Other statements are ignored. A syntax error names
  // the line and the byte position.
  absl::Status AddDdl(absl::string_view ddl);
  // `column=canonical` lines; '#' starts a comment; blank lines are skipped.
  // A bad line gives an error naming its line number.
  absl::Status AddMappingText(absl::string_view text);

  // Which written values yield references (default kAll). Why kForeignKeys
  // exists: auto-extracted TPC-C INSERTs yield ol_number=1..15,
  // ol_quantity=1..10, o_all_local=1, values shared by most NewOrders that
  // name no existing data; under Count they outrank w_id=k and route
  // NewOrders of every warehouse to one queue (measured, bench/results/headline_tpcc_nosteal/NOTES.md).
  // SET values likewise: SmallBank's Amalgamate writes `bal = 0`, a value in
  // every Amalgamate, which outranked the accounts under Count and sent all
  // Amalgamates to one queue of their own (bench/RESULTS.md, issue 7).
  void SetInsertRefs(InsertRefs mode) { insert_refs_ = mode; }
  // Qualify every name with its table (Schema::qualify_all): `t.k=1`, not
  // `k=1` while `k` is a column of one table only. Without it a table
  // created later with a column of the same name renames the reference
  // (to `t.k=1`) for whoever reads the catalog after it; proxies of one
  // cluster, which must agree on names, read it at different times.
  void SetQualifyAll(bool on) { qualify_all_ = on; }

  absl::StatusOr<std::shared_ptr<const Schema>> Build() const;

 private:
  InsertRefs insert_refs_ = InsertRefs::kAll;
  bool qualify_all_ = false;
  struct Fk {
    std::string table;
    std::vector<std::string> columns;
    std::string ref_table;
    std::vector<std::string> ref_columns;
  };
  std::vector<std::pair<std::string, std::vector<SchemaColumn>>> tables_;
  absl::flat_hash_map<std::string, std::vector<std::string>> pks_;
  std::vector<Fk> fks_;
  std::vector<FunctionDef> functions_;
  std::vector<std::pair<std::string, std::string>> mappings_;
};

// Type class of a PostgreSQL type name as libpg_query spells it ("int4",
// "numeric", "varchar", "text", ...).
TypeClass TypeClassOfTypeName(absl::string_view type_name);

}  // namespace corral

#endif  // CORRAL_POLICIES_SCHEMA_H_
