#include "policies/schema.h"

#include <algorithm>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "pg_query.h"
#include "policies/json.h"

namespace corral {
namespace {

std::string Key(absl::string_view table, absl::string_view column) {
  return absl::StrCat(table, ".", column);
}

// ["String":{"sval":..}, ...] -> strings.
std::vector<std::string> StringList(const Json* list) {
  std::vector<std::string> out;
  if (list == nullptr) return out;
  for (const Json& e : list->items()) {
    const Json* b = e.NodeBody();
    if (b == nullptr) continue;
    const Json* s = b->Get("sval");
    if (s != nullptr) out.push_back(s->str());
  }
  return out;
}

std::string JsonStr(const Json* j, absl::string_view key) {
  if (j == nullptr) return "";
  const Json* v = j->Get(key);
  return v == nullptr ? "" : v->str();
}

TypeClass TypeOf(const Json* type_name) {
  std::vector<std::string> names = StringList(type_name == nullptr ? nullptr : type_name->Get("names"));
  return names.empty() ? TypeClass::kUnknown : TypeClassOfTypeName(names.back());
}

// Union-find over column keys.
class UnionFind {
 public:
  int Id(const std::string& k) {
    auto it = ids_.find(k);
    if (it != ids_.end()) return it->second;
    int id = static_cast<int>(parent_.size());
    parent_.push_back(id);
    names_.push_back(k);
    ids_[k] = id;
    return id;
  }
  int Find(int x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void Union(int a, int b) { parent_[Find(a)] = Find(b); }
  size_t size() const { return parent_.size(); }
  const std::string& name(int i) const { return names_[i]; }

 private:
  std::map<std::string, int> ids_;
  std::vector<int> parent_;
  std::vector<std::string> names_;
};

}  // namespace

TypeClass TypeClassOfTypeName(absl::string_view t) {
  static const char* const kNumeric[] = {"int2", "int4", "int8", "smallint", "integer", "int",
                                         "bigint", "numeric", "decimal", "float4", "float8",
                                         "real", "double precision", "serial", "bigserial",
                                         "smallserial", "money", "oid"};
  static const char* const kText[] = {"text", "varchar", "bpchar", "char", "character",
                                      "character varying", "name", "citext"};
  std::string l = absl::AsciiStrToLower(t);
  for (const char* k : kNumeric) {
    if (l == k) return TypeClass::kNumeric;
  }
  for (const char* k : kText) {
    if (l == k) return TypeClass::kText;
  }
  return TypeClass::kUnknown;
}

// ---------------------------------------------------------------- Schema

bool Schema::HasTable(absl::string_view table) const { return tables_.contains(table); }

bool Schema::WrittenColumnYieldsRef(absl::string_view table, absl::string_view column) const {
  if (insert_refs_ == InsertRefs::kAll) return true;
  if (table_has_classes_.find(table) == table_has_classes_.end()) return true;
  return class_of_.find(absl::StrCat(table, ".", column)) != class_of_.end();
}

bool Schema::HasColumn(absl::string_view table, absl::string_view column) const {
  auto it = tables_.find(table);
  if (it == tables_.end()) return false;
  for (const SchemaColumn& c : it->second.columns) {
    if (c.name == column) return true;
  }
  return false;
}

std::vector<std::string> Schema::ColumnsOf(absl::string_view table) const {
  std::vector<std::string> out;
  auto it = tables_.find(table);
  if (it == tables_.end()) return out;
  for (const SchemaColumn& c : it->second.columns) out.push_back(c.name);
  return out;
}

int Schema::TablesWithColumn(absl::string_view column) const {
  auto it = column_tables_.find(column);
  return it == column_tables_.end() ? 0 : static_cast<int>(it->second.size());
}

TypeClass Schema::ColumnType(absl::string_view table, absl::string_view column) const {
  if (!table.empty()) {
    auto it = tables_.find(table);
    if (it != tables_.end()) {
      for (const SchemaColumn& c : it->second.columns) {
        if (c.name == column) return c.type;
      }
    }
    return TypeClass::kUnknown;
  }
  auto it = column_tables_.find(column);
  if (it == column_tables_.end()) return TypeClass::kUnknown;
  TypeClass agreed = TypeClass::kUnknown;
  bool first = true;
  for (const std::string& t : it->second) {
    TypeClass c = ColumnType(t, column);
    if (first) {
      agreed = c;
      first = false;
    } else if (c != agreed) {
      return TypeClass::kUnknown;
    }
  }
  return agreed;
}

std::string Schema::LiteralName(absl::string_view table, absl::string_view column) const {
  if (qualify_all_) {
    if (!table.empty()) return Key(table, column);
    auto ct = column_tables_.find(column);
    if (ct != column_tables_.end() && ct->second.size() == 1) return Key(ct->second[0], column);
    return std::string(column);
  }
  if (!table.empty() && TablesWithColumn(column) > 1) return Key(table, column);
  return std::string(column);
}

std::string Schema::CanonicalName(absl::string_view table, absl::string_view column) const {
  if (!table.empty()) {
    auto m = mapping_.find(Key(table, column));
    if (m != mapping_.end()) return m->second;
  }
  auto m = mapping_.find(column);
  if (m != mapping_.end()) return m->second;
  std::string t(table);
  if (t.empty()) {
    auto ct = column_tables_.find(column);
    if (ct != column_tables_.end() && ct->second.size() == 1) t = ct->second[0];
  }
  if (!t.empty()) {
    auto c = class_of_.find(Key(t, column));
    if (c != class_of_.end()) return c->second;
  }
  return LiteralName(table, column);
}

const FunctionDef* Schema::FindFunction(absl::string_view name) const {
  auto it = functions_.find(name);
  return it == functions_.end() ? nullptr : &it->second;
}

std::string Schema::ParamCanonicalName(absl::string_view param) const {
  auto m = mapping_.find(param);
  if (m != mapping_.end()) return m->second;
  if (TablesWithColumn(param) == 1) return CanonicalName("", param);
  return std::string(param);
}

std::vector<std::pair<std::string, std::string>> Schema::CanonicalClasses() const {
  std::vector<std::pair<std::string, std::string>> out(class_of_.begin(), class_of_.end());
  std::sort(out.begin(), out.end());
  return out;
}

// ---------------------------------------------------------------- SchemaBuilder

absl::Status SchemaBuilder::AddTable(absl::string_view table, std::vector<SchemaColumn> columns) {
  if (table.empty()) return absl::InvalidArgumentError("AddTable: empty table name");
  for (const auto& t : tables_) {
    if (t.first == table) return absl::AlreadyExistsError(absl::StrCat("table ", table, " added twice"));
  }
  tables_.emplace_back(std::string(table), std::move(columns));
  return absl::OkStatus();
}

absl::Status SchemaBuilder::AddPrimaryKey(absl::string_view table, std::vector<std::string> columns) {
  if (columns.empty()) return absl::InvalidArgumentError(absl::StrCat("primary key of ", table, ": no columns"));
  pks_[std::string(table)] = std::move(columns);
  return absl::OkStatus();
}

absl::Status SchemaBuilder::AddForeignKey(absl::string_view table, std::vector<std::string> columns,
                                          absl::string_view ref_table,
                                          std::vector<std::string> ref_columns) {
  if (columns.empty()) return absl::InvalidArgumentError(absl::StrCat("foreign key of ", table, ": no columns"));
  if (!ref_columns.empty() && ref_columns.size() != columns.size()) {
    return absl::InvalidArgumentError(absl::StrCat("foreign key of ", table, " -> ", ref_table,
                                                   ": column counts differ"));
  }
  fks_.push_back(Fk{std::string(table), std::move(columns), std::string(ref_table), std::move(ref_columns)});
  return absl::OkStatus();
}

absl::Status SchemaBuilder::AddFunction(absl::string_view name, std::vector<FunctionParamDef> params) {
  functions_.push_back(FunctionDef{std::string(name), std::move(params)});
  return absl::OkStatus();
}

absl::Status SchemaBuilder::AddMapping(absl::string_view from, absl::string_view to) {
  if (from.empty() || to.empty()) return absl::InvalidArgumentError("mapping: empty name");
  mappings_.emplace_back(std::string(from), std::string(to));
  return absl::OkStatus();
}

absl::Status SchemaBuilder::AddMappingText(absl::string_view text) {
  int line_no = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++line_no;
    size_t hash = line.find('#');
    if (hash != absl::string_view::npos) line = line.substr(0, hash);
    line = absl::StripAsciiWhitespace(line);
    if (line.empty()) continue;
    size_t eq = line.find('=');
    absl::string_view from, to;
    if (eq != absl::string_view::npos) {
      from = absl::StripAsciiWhitespace(line.substr(0, eq));
      to = absl::StripAsciiWhitespace(line.substr(eq + 1));
    }
    auto ok_name = [](absl::string_view s) {
      if (s.empty()) return false;
      for (char c : s) {
        if (!(absl::ascii_isalnum(c) || c == '_' || c == '.' || c == '$')) return false;
      }
      return true;
    };
    if (!ok_name(from) || !ok_name(to)) {
      return absl::InvalidArgumentError(absl::StrCat("mapping line ", line_no,
                                                     ": expected 'column=canonical', got '", line, "'"));
    }
    mappings_.emplace_back(std::string(from), std::string(to));
  }
  return absl::OkStatus();
}

absl::Status SchemaBuilder::AddDdl(absl::string_view ddl) {
  std::string text(ddl);
  PgQueryParseResult r = pg_query_parse(text.c_str());
  if (r.error != nullptr) {
    int pos = r.error->cursorpos;
    int line = 1;
    for (int i = 0; i < pos - 1 && i < static_cast<int>(text.size()); ++i) line += text[i] == '\n';
    absl::Status st = absl::InvalidArgumentError(
        absl::StrCat("DDL: ", r.error->message, " at line ", line, " (position ", pos, ")"));
    pg_query_free_parse_result(r);
    return st;
  }
  absl::StatusOr<Json> tree = ParseJson(r.parse_tree);
  pg_query_free_parse_result(r);
  if (!tree.ok()) return tree.status();
  const Json* stmts = tree->Get("stmts");
  if (stmts == nullptr) return absl::OkStatus();

  auto add_constraint = [&](const std::string& table, const Json& con,
                            const std::string& column) -> absl::Status {
    std::string type = JsonStr(&con, "contype");
    if (type == "CONSTR_PRIMARY") {
      std::vector<std::string> keys = StringList(con.Get("keys"));
      if (keys.empty() && !column.empty()) keys.push_back(column);
      return AddPrimaryKey(table, keys);
    }
    if (type == "CONSTR_FOREIGN") {
      std::vector<std::string> fk = StringList(con.Get("fk_attrs"));
      if (fk.empty() && !column.empty()) fk.push_back(column);
      return AddForeignKey(table, fk, JsonStr(con.Get("pktable"), "relname"),
                           StringList(con.Get("pk_attrs")));
    }
    return absl::OkStatus();
  };

  for (const Json& raw : stmts->items()) {
    const Json* node = raw.Get("stmt");
    if (node == nullptr) continue;
    absl::string_view kind = node->NodeType();
    const Json* body = node->NodeBody();
    if (kind == "CreateStmt") {
      std::string table = JsonStr(body->Get("relation"), "relname");
      std::vector<SchemaColumn> cols;
      std::vector<std::pair<std::string, const Json*>> cons;  // (column or "", constraint)
      if (const Json* elts = body->Get("tableElts")) {
        for (const Json& e : elts->items()) {
          if (e.NodeType() == "ColumnDef") {
            const Json* cd = e.NodeBody();
            SchemaColumn c{JsonStr(cd, "colname"), TypeOf(cd->Get("typeName"))};
            if (const Json* cs = cd->Get("constraints")) {
              for (const Json& ce : cs->items()) {
                if (ce.NodeType() == "Constraint") cons.emplace_back(c.name, ce.NodeBody());
              }
            }
            cols.push_back(std::move(c));
          } else if (e.NodeType() == "Constraint") {
            cons.emplace_back("", e.NodeBody());
          }
        }
      }
      absl::Status st = AddTable(table, std::move(cols));
      if (!st.ok()) return st;
      for (const auto& c : cons) {
        st = add_constraint(table, *c.second, c.first);
        if (!st.ok()) return st;
      }
    } else if (kind == "AlterTableStmt") {
      std::string table = JsonStr(body->Get("relation"), "relname");
      if (const Json* cmds = body->Get("cmds")) {
        for (const Json& c : cmds->items()) {
          const Json* cmd = c.NodeBody();
          if (cmd == nullptr || JsonStr(cmd, "subtype") != "AT_AddConstraint") continue;
          const Json* def = cmd->Get("def");
          if (def == nullptr || def->NodeType() != "Constraint") continue;
          absl::Status st = add_constraint(table, *def->NodeBody(), "");
          if (!st.ok()) return st;
        }
      }
    } else if (kind == "CreateFunctionStmt") {
      std::vector<std::string> fname = StringList(body->Get("funcname"));
      if (fname.empty()) continue;
      bool proc = body->Get("is_procedure") != nullptr && body->Get("is_procedure")->boolean();
      std::vector<FunctionParamDef> params;
      if (const Json* ps = body->Get("parameters")) {
        for (const Json& p : ps->items()) {
          const Json* fp = p.NodeBody();
          if (fp == nullptr) continue;
          std::string mode = JsonStr(fp, "mode");
          if (mode == "FUNC_PARAM_TABLE") continue;
          if (!proc && mode == "FUNC_PARAM_OUT") continue;  // functions' OUT args are not passed
          params.push_back(FunctionParamDef{JsonStr(fp, "name"), TypeOf(fp->Get("argType"))});
        }
      }
      absl::Status st = AddFunction(fname.back(), std::move(params));
      if (!st.ok()) return st;
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::shared_ptr<const Schema>> SchemaBuilder::Build() const {
  auto s = std::make_shared<Schema>();
  for (const auto& t : tables_) {
    Schema::Table& tab = s->tables_[t.first];
    tab.columns = t.second;
    for (const SchemaColumn& c : t.second) s->column_tables_[c.name].push_back(t.first);
  }
  for (const auto& pk : pks_) {
    for (const std::string& c : pk.second) {
      if (!s->HasColumn(pk.first, c)) {
        return absl::InvalidArgumentError(absl::StrCat("primary key column ", pk.first, ".", c, " does not exist"));
      }
    }
  }
  UnionFind uf;
  std::set<std::string> referenced, referencing;
  for (const Fk& fk : fks_) {
    if (!s->HasTable(fk.ref_table)) {
      return absl::InvalidArgumentError(
          absl::StrCat("foreign key of ", fk.table, " references unknown table ", fk.ref_table));
    }
    std::vector<std::string> ref_cols = fk.ref_columns;
    if (ref_cols.empty()) {
      auto pk = pks_.find(fk.ref_table);
      if (pk == pks_.end()) {
        return absl::InvalidArgumentError(
            absl::StrCat("foreign key of ", fk.table, " -> ", fk.ref_table, ": no columns and no primary key"));
      }
      ref_cols = pk->second;
    }
    if (ref_cols.size() != fk.columns.size()) {
      return absl::InvalidArgumentError(
          absl::StrCat("foreign key of ", fk.table, " -> ", fk.ref_table, ": column counts differ"));
    }
    for (size_t i = 0; i < ref_cols.size(); ++i) {
      if (!s->HasColumn(fk.table, fk.columns[i]) || !s->HasColumn(fk.ref_table, ref_cols[i])) {
        return absl::InvalidArgumentError(absl::StrCat("foreign key ", fk.table, "(", fk.columns[i], ") -> ",
                                                       fk.ref_table, "(", ref_cols[i], "): unknown column"));
      }
      std::string a = Key(fk.table, fk.columns[i]), b = Key(fk.ref_table, ref_cols[i]);
      uf.Union(uf.Id(a), uf.Id(b));
      referencing.insert(a);
      referenced.insert(b);
    }
  }
  // Pick each class's root: a referenced column that references nothing
  // (the primary key at the end of the FK chains); ties by smallest name.
  std::map<int, std::vector<std::string>> members;
  for (size_t i = 0; i < uf.size(); ++i) members[uf.Find(static_cast<int>(i))].push_back(uf.name(static_cast<int>(i)));
  for (auto& m : members) {
    std::sort(m.second.begin(), m.second.end());
    std::string root;
    for (const std::string& k : m.second) {
      if (referenced.count(k) && !referencing.count(k)) {
        root = k;
        break;
      }
    }
    if (root.empty()) {
      for (const std::string& k : m.second) {
        if (referenced.count(k)) {
          root = k;
          break;
        }
      }
    }
    if (root.empty()) root = m.second.front();
    size_t dot = root.find('.');
    std::string rt = root.substr(0, dot), rc = root.substr(dot + 1);
    std::string name = qualify_all_ || s->TablesWithColumn(rc) > 1 ? root : rc;
    for (const std::string& k : m.second) s->class_of_[k] = name;
  }
  for (const auto& mp : mappings_) s->mapping_[mp.first] = mp.second;
  for (const FunctionDef& f : functions_) s->functions_[f.name] = f;
  for (const auto& kv : s->class_of_) s->table_has_classes_[kv.first.substr(0, kv.first.find('.'))] = true;
  s->insert_refs_ = insert_refs_;
  s->qualify_all_ = qualify_all_;
  return std::shared_ptr<const Schema>(std::move(s));
}

}  // namespace corral
