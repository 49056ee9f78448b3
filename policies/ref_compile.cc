// Tree -> plan: walks libpg_query's parse tree for one statement shape into a
// RefExtractor::Plan (WHERE AND-trees, IN lists, ANY/OR chains, SET, INSERT
// values, joins, aliases, function calls). Runs once per shape, on a miss.
// Thread-safety: a Compiler is single-use on one thread; ParseAndCompile is reentrant.
#include <algorithm>
#include <map>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "pg_query.h"
#include "policies/json.h"
#include "policies/pg_tree.h"
#include "policies/ref_plan.h"

namespace corral {
namespace ref_internal {
namespace {

using Plan = RefExtractor::Plan;

struct Scope {
  std::vector<std::pair<std::string, std::string>> rels;  // (name or alias, table)
  const Scope* parent = nullptr;
};

// Walks libpg_query's JSON tree and fills a Plan.
class Compiler {
 public:
  Compiler(const Schema& schema, absl::string_view sql, const LexResult& lex, Plan* plan)
      : schema_(schema), sql_(sql), lex_(lex), plan_(plan) {
    for (size_t i = 0; i < lex.literals.size(); ++i) slot_at_[lex.literals[i].offset] = static_cast<int>(i);
  }

  void Statement(const Json& node, const Scope* parent) {
    absl::string_view kind = node.NodeType();
    const Json* b = node.NodeBody();
    if (b == nullptr) return;
    if (kind == "SelectStmt") {
      Select(*b, parent);
    } else if (kind == "UpdateStmt") {
      Update(*b, parent);
    } else if (kind == "DeleteStmt") {
      Delete(*b, parent);
    } else if (kind == "InsertStmt") {
      Insert(*b, parent);
    } else if (kind == "CallStmt") {
      if (const Json* fc = b->Get("funccall")) {
        Scope s;
        s.parent = parent;
        FuncCall(fc->NodeType() == "FuncCall" ? *fc->NodeBody() : *fc, s);
      }
    }
    // Everything else (DDL, SET, SHOW, transaction control, ...) yields nothing.
  }

  // Assigns names' ranks and hash states; checks slot values against the tree.
  void Finish() {
    for (int n = 0; n < 2; ++n) {
      std::vector<std::string> keys;
      for (const Pred& p : plan_->preds) keys.push_back(p.name[n].text + "=");
      std::sort(keys.begin(), keys.end());
      keys.erase(std::unique(keys.begin(), keys.end()), keys.end());
      for (Pred& p : plan_->preds) {
        std::string k = p.name[n].text + "=";
        p.name[n].rank = static_cast<int>(std::lower_bound(keys.begin(), keys.end(), k) - keys.begin());
        p.name[n].eq_state = Fnv1aAppend(kFingerprintSeed, k.data(), k.size());
      }
    }
    std::string a, b;
    for (const Pred& p : plan_->preds) {
      if (p.value.kind != ValueSrc::Kind::kSlot) continue;
      if (p.value.index < 0) {
        plan_->cacheable = false;
        continue;
      }
      const LexedLiteral& lit = lex_.literals[p.value.index];
      std::string raw = std::string(lex_.Value(lit, sql_));
      if (p.value.negate) raw = "-" + raw;
      a.clear();
      b.clear();
      AppendRenderedValue(raw, p.value.type, &a);
      AppendRenderedValue(p.value.tree_raw, p.value.type, &b);
      if (a != b) plan_->cacheable = false;
    }
  }

 private:
  int NewConj() {
    plan_->conjs.emplace_back();
    return static_cast<int>(plan_->conjs.size()) - 1;
  }

  int AddPred(const std::string& lit_name, const std::string& canon_name, ValueSrc v) {
    Pred p;
    p.name[0].text = lit_name;
    p.name[1].text = canon_name;
    p.value = std::move(v);
    plan_->preds.push_back(std::move(p));
    return static_cast<int>(plan_->preds.size()) - 1;
  }

  int AddColumnPred(const std::string& table, const std::string& col, ValueSrc v) {
    v.type = schema_.ColumnType(table, col);
    return AddPred(schema_.LiteralName(table, col), schema_.CanonicalName(table, col), std::move(v));
  }

  // A constant or parameter: A_Const, ParamRef, or a TypeCast of one.
  bool ValueOf(const Json& expr, ValueSrc* out) {
    absl::string_view kind = expr.NodeType();
    const Json* b = expr.NodeBody();
    if (b == nullptr) return false;
    if (kind == "TypeCast") {
      const Json* arg = b->Get("arg");
      return arg != nullptr && ValueOf(*arg, out);
    }
    if (kind == "ParamRef") {
      out->kind = ValueSrc::Kind::kParam;
      out->index = 0;
      if (const Json* n = b->Get("number")) absl::SimpleAtoi(n->str(), &out->index);
      return out->index > 0;
    }
    if (kind != "A_Const") return false;
    if (const Json* bv = b->Get("boolval")) {
      const Json* v = bv->Get("boolval");
      out->kind = ValueSrc::Kind::kConst;
      out->tree_raw = (v != nullptr && v->boolean()) ? "true" : "false";
      return true;
    }
    int loc = Location(b);
    if (const Json* iv = b->Get("ival")) {
      const Json* v = iv->Get("ival");
      out->tree_raw = v == nullptr ? "0" : v->str();
      // libpg_query 15-4.0.0's JSON drops negative ival values: read the
      // digits after the '-' from the text instead.
      if (loc >= 0 && loc < static_cast<int>(sql_.size()) && sql_[loc] == '-') {
        size_t k = loc + 1;
        while (k < sql_.size() && (sql_[k] == ' ' || sql_[k] == '\t' || sql_[k] == '\n' || sql_[k] == '\r')) ++k;
        size_t e = k;
        while (e < sql_.size() && sql_[e] >= '0' && sql_[e] <= '9') ++e;
        out->tree_raw = absl::StrCat("-", sql_.substr(k, e - k));
      }
    } else if (const Json* fv = b->Get("fval")) {
      out->tree_raw = Str(fv, "fval");
    } else if (const Json* sv = b->Get("sval")) {
      out->tree_raw = Str(sv, "sval");
    } else {
      return false;  // NULL, bit strings
    }
    out->kind = ValueSrc::Kind::kSlot;
    out->index = -1;
    auto it = slot_at_.find(loc);
    if (it != slot_at_.end()) {
      out->index = it->second;
    } else if (loc >= 0 && loc < static_cast<int>(sql_.size()) && sql_[loc] == '-') {
      // `- 5`: the constant's location is the sign's; the slot follows it.
      auto next = slot_at_.upper_bound(loc);
      if (next != slot_at_.end()) {
        bool only_space = true;
        for (int k = loc + 1; k < next->first; ++k) {
          char c = sql_[k];
          only_space &= c == ' ' || c == '\t' || c == '\n' || c == '\r';
        }
        if (only_space && lex_.literals[next->second].kind == LexedLiteral::Kind::kNumber) {
          out->index = next->second;
          out->negate = true;
        }
      }
    }
    return true;
  }

  // (table, column) of a ColumnRef; table "" when unknown.
  bool ColumnOf(const Json& expr, const Scope& scope, std::string* table, std::string* col) {
    if (expr.NodeType() != "ColumnRef") return false;
    std::vector<std::string> f = StringList(expr.NodeBody()->Get("fields"));
    if (f.empty() || f.back() == "*") return false;
    *col = f.back();
    table->clear();
    if (f.size() >= 2) {
      const std::string& q = f[f.size() - 2];
      for (const Scope* s = &scope; s != nullptr; s = s->parent) {
        for (const auto& r : s->rels) {
          if (r.first == q) {
            *table = r.second;
            return true;
          }
        }
      }
      *table = q;  // not in FROM: take the qualifier as the table name
      return true;
    }
    for (const Scope* s = &scope; s != nullptr; s = s->parent) {
      std::string found;
      int matches = 0;
      for (const auto& r : s->rels) {
        if (schema_.HasColumn(r.second, *col) && r.second != found) {
          found = r.second;
          ++matches;
        }
      }
      if (matches == 1) {
        *table = found;
        return true;
      }
      if (matches > 1) return true;  // ambiguous
      if (s->rels.size() == 1 && !schema_.HasTable(s->rels[0].second)) {
        *table = s->rels[0].second;
        return true;
      }
    }
    return true;
  }

  void AddRel(const Json& range_var_body, Scope* scope) {
    std::string rel = Str(&range_var_body, "relname");
    std::string alias = Str(range_var_body.Get("alias"), "aliasname");
    scope->rels.emplace_back(alias.empty() ? rel : alias, rel);
  }

  void FromItem(const Json& item, Scope* scope, int conj) {
    absl::string_view kind = item.NodeType();
    const Json* b = item.NodeBody();
    if (b == nullptr) return;
    if (kind == "RangeVar") {
      AddRel(*b, scope);
    } else if (kind == "JoinExpr") {
      if (const Json* l = b->Get("larg")) FromItem(*l, scope, conj);
      if (const Json* r = b->Get("rarg")) FromItem(*r, scope, conj);
      if (const Json* q = b->Get("quals")) pending_quals_.push_back(q);
    } else if (kind == "RangeSubselect") {
      if (const Json* sq = b->Get("subquery")) subqueries_.push_back({sq, scope});
    } else if (kind == "RangeFunction") {
      if (const Json* fs = b->Get("functions")) {
        for (const Json& pair : fs->items()) {
          const Json* lb = pair.NodeBody();
          const Json* items = lb == nullptr ? nullptr : lb->Get("items");
          if (items == nullptr || items->items().empty()) continue;
          const Json& fc = items->items()[0];
          if (fc.NodeType() == "FuncCall") FuncCall(*fc.NodeBody(), *scope);
        }
      }
    }
  }

  void Where(const Json& expr, const Scope& scope, int conj) {
    absl::string_view kind = expr.NodeType();
    const Json* b = expr.NodeBody();
    if (b == nullptr) return;
    if (kind == "BoolExpr") {
      const std::string boolop = Str(b, "boolop");
      if (boolop == "OR_EXPR") {
        OrChain(expr, scope, conj);
        return;
      }
      if (boolop != "AND_EXPR") return;  // NOT subtrees yield nothing
      if (const Json* args = b->Get("args")) {
        for (const Json& a : args->items()) Where(a, scope, conj);
      }
      return;
    }
    if (kind == "SubLink") {
      if (const Json* sub = b->Get("subselect")) Statement(*sub, &scope);
      return;
    }
    if (kind != "A_Expr") return;
    const Json* l = b->Get("lexpr");
    const Json* r = b->Get("rexpr");
    if (l != nullptr && r != nullptr && IsEqualityOp(*b)) {
      if (l->NodeType() == "SubLink") Where(*l, scope, conj);
      if (r->NodeType() == "SubLink") Where(*r, scope, conj);
    }
    std::string table, col;
    std::vector<ValueSrc> values;
    bool is_list = false;
    if (!EqualityValues(expr, scope, &table, &col, &values, &is_list)) return;
    std::vector<int> preds;
    for (ValueSrc& v : values) preds.push_back(AddColumnPred(table, col, std::move(v)));
    if (preds.empty()) return;
    if (is_list) {
      plan_->conjs[conj].ins.push_back(std::move(preds));
    } else {
      plan_->conjs[conj].eqs.push_back(preds[0]);
    }
  }

  static bool IsEqualityOp(const Json& a_expr_body) {
    std::vector<std::string> op = StringList(a_expr_body.Get("name"));
    return op.size() == 1 && op[0] == "=";
  }

  // An equality on one column: `col = v` / `v = col` (one value, *is_list
  // false), `col IN (v, ...)`, `col = ANY($n | ARRAY[v, ...] | '{...}')`
  // (*is_list true; elements that are not constants or parameters are left
  // out, as in IN lists). Appends the values to *values; false (appending
  // nothing) for anything else.
  bool EqualityValues(const Json& expr, const Scope& scope, std::string* table, std::string* col,
                      std::vector<ValueSrc>* values, bool* is_list) {
    if (expr.NodeType() != "A_Expr") return false;
    const Json* b = expr.NodeBody();
    if (b == nullptr || !IsEqualityOp(*b)) return false;
    const Json* l = b->Get("lexpr");
    const Json* r = b->Get("rexpr");
    if (l == nullptr || r == nullptr) return false;
    const std::string akind = Str(b, "kind");
    if (akind == "AEXPR_OP") {
      ValueSrc v;
      if ((ColumnOf(*l, scope, table, col) && ValueOf(*r, &v)) || (ColumnOf(*r, scope, table, col) && ValueOf(*l, &v))) {
        *is_list = false;
        values->push_back(std::move(v));
        return true;
      }
      return false;
    }
    if (akind == "AEXPR_IN") {
      if (!ColumnOf(*l, scope, table, col)) return false;
      const Json* lb = r->NodeBody();
      const Json* items = lb == nullptr ? nullptr : lb->Get("items");
      if (items == nullptr) return false;
      for (const Json& e : items->items()) {
        ValueSrc v;
        if (ValueOf(e, &v)) values->push_back(std::move(v));
      }
      *is_list = true;
      return true;
    }
    if (akind == "AEXPR_OP_ANY") {
      if (!ColumnOf(*l, scope, table, col)) return false;
      const Json* arr = r;
      while (arr->NodeType() == "TypeCast" && arr->NodeBody() != nullptr && arr->NodeBody()->Get("arg") != nullptr) {
        arr = arr->NodeBody()->Get("arg");
      }
      *is_list = true;
      if (arr->NodeType() == "A_ArrayExpr") {
        const Json* elems = arr->NodeBody() == nullptr ? nullptr : arr->NodeBody()->Get("elements");
        if (elems != nullptr) {
          for (const Json& e : elems->items()) {
            ValueSrc v;
            if (ValueOf(e, &v)) values->push_back(std::move(v));
          }
        }
        return true;
      }
      ValueSrc v;
      // A parameter bound to an array, or an array literal '{1,2}'.
      if (ValueOf(*arr, &v) && v.kind != ValueSrc::Kind::kConst) {
        v.array = true;
        v.negate = false;
        values->push_back(std::move(v));
      }
      return true;
    }
    return false;
  }

  // `a = 1 OR a = 2 OR a IN (3, 4) OR a = ANY($1)`: one IN list over the
  // column, if every disjunct (nested ORs flattened) is an equality on the
  // same column; anything else (another column, a range, AND inside) and the
  // OR yields nothing.
  void OrChain(const Json& expr, const Scope& scope, int conj) {
    std::vector<const Json*> disjuncts, stack = {&expr};
    while (!stack.empty()) {
      const Json* e = stack.back();
      stack.pop_back();
      const Json* b = e->NodeBody();
      if (b == nullptr) return;
      if (e->NodeType() == "BoolExpr" && Str(b, "boolop") == "OR_EXPR") {
        const Json* args = b->Get("args");
        if (args == nullptr) return;
        for (auto it = args->items().rbegin(); it != args->items().rend(); ++it) stack.push_back(&*it);
        continue;
      }
      disjuncts.push_back(e);
    }
    std::string table, col;
    std::vector<ValueSrc> values;
    for (size_t i = 0; i < disjuncts.size(); ++i) {
      std::string t, c;
      bool is_list = false;
      if (!EqualityValues(*disjuncts[i], scope, &t, &c, &values, &is_list)) return;
      if (i == 0) {
        table = t;
        col = c;
      } else if (t != table || c != col) {
        return;
      }
    }
    std::vector<int> in;
    for (ValueSrc& v : values) in.push_back(AddColumnPred(table, col, std::move(v)));
    if (!in.empty()) plan_->conjs[conj].ins.push_back(std::move(in));
  }

  void FuncCall(const Json& fc, const Scope& scope) {
    std::vector<std::string> fname = StringList(fc.Get("funcname"));
    if (fname.empty()) return;
    const FunctionDef* def = schema_.FindFunction(fname.back());
    if (def == nullptr) return;
    const Json* args = fc.Get("args");
    if (args == nullptr) return;
    int conj = NewConj();
    size_t i = 0;
    for (const Json& a : args->items()) {
      size_t pos = i++;
      std::string pname;
      const Json* val = &a;
      TypeClass type = TypeClass::kUnknown;
      if (a.NodeType() == "NamedArgExpr") {
        pname = Str(a.NodeBody(), "name");
        val = a.NodeBody()->Get("arg");
        for (const FunctionParamDef& p : def->params) {
          if (p.name == pname) type = p.type;
        }
      } else if (pos < def->params.size()) {
        pname = def->params[pos].name;
        type = def->params[pos].type;
      }
      ValueSrc v;
      if (pname.empty() || val == nullptr || !ValueOf(*val, &v)) continue;
      v.type = type;
      plan_->conjs[conj].eqs.push_back(AddPred(pname, schema_.ParamCanonicalName(pname), std::move(v)));
    }
  }

  void Select(const Json& b, const Scope* parent) {
    std::string op = Str(&b, "op");
    if (!op.empty() && op != "SETOP_NONE") {
      if (const Json* l = b.Get("larg")) Select(*l, parent);
      if (const Json* r = b.Get("rarg")) Select(*r, parent);
      return;
    }
    With(b, parent);
    Scope scope;
    scope.parent = parent;
    int conj = NewConj();
    Quals(b.Get("fromClause"), b.Get("whereClause"), &scope, conj);
    if (const Json* tl = b.Get("targetList")) {
      for (const Json& t : tl->items()) {
        const Json* rt = t.NodeBody();
        const Json* val = rt == nullptr ? nullptr : rt->Get("val");
        if (val == nullptr) continue;
        if (val->NodeType() == "FuncCall") FuncCall(*val->NodeBody(), scope);
        if (val->NodeType() == "SubLink") Where(*val, scope, conj);
      }
    }
  }

  // FROM items (scope, join quals) and WHERE into conjunction `conj`, then
  // the FROM sub-selects.
  void Quals(const Json* from, const Json* where, Scope* scope, int conj) {
    std::vector<const Json*> saved_quals;
    saved_quals.swap(pending_quals_);
    std::vector<std::pair<const Json*, const Scope*>> saved_subs;
    saved_subs.swap(subqueries_);
    if (from != nullptr) {
      for (const Json& f : from->items()) FromItem(f, scope, conj);
    }
    std::vector<const Json*> quals;
    quals.swap(pending_quals_);
    std::vector<std::pair<const Json*, const Scope*>> subs;
    subs.swap(subqueries_);
    pending_quals_.swap(saved_quals);
    subqueries_.swap(saved_subs);
    for (const Json* q : quals) Where(*q, *scope, conj);
    if (where != nullptr) Where(*where, *scope, conj);
    for (const auto& s : subs) Statement(*s.first, s.second->parent);
  }

  void With(const Json& b, const Scope* parent) {
    const Json* with = b.Get("withClause");
    if (with == nullptr) return;
    // WithClause is written inline ({"ctes": [...]}), or as a node.
    const Json* ctes = with->Get("ctes");
    if (ctes == nullptr && with->NodeBody() != nullptr) ctes = with->NodeBody()->Get("ctes");
    if (ctes == nullptr) return;
    for (const Json& c : ctes->items()) {
      const Json* cb = c.NodeBody();
      const Json* q = cb == nullptr ? nullptr : cb->Get("ctequery");
      if (q != nullptr) Statement(*q, parent);
    }
  }

  void Update(const Json& b, const Scope* parent) {
    With(b, parent);
    Scope scope;
    scope.parent = parent;
    std::string table;
    if (const Json* rel = b.Get("relation")) {
      AddRel(*rel, &scope);
      table = Str(rel, "relname");
    }
    if (const Json* tl = b.Get("targetList")) {
      for (const Json& t : tl->items()) {
        if (t.NodeType() != "ResTarget") continue;
        const Json* rt = t.NodeBody();
        const Json* val = rt->Get("val");
        ValueSrc v;
        if (val == nullptr || !ValueOf(*val, &v)) {
          if (val != nullptr && val->NodeType() == "SubLink") Where(*val, scope, NewConj());
          continue;
        }
        const std::string col = Str(rt, "name");
        if (!schema_.WrittenColumnYieldsRef(table, col)) continue;
        int conj = NewConj();
        plan_->conjs[conj].eqs.push_back(AddColumnPred(table, col, std::move(v)));
      }
    }
    int conj = NewConj();
    Quals(b.Get("fromClause"), b.Get("whereClause"), &scope, conj);
  }

  void Delete(const Json& b, const Scope* parent) {
    With(b, parent);
    Scope scope;
    scope.parent = parent;
    if (const Json* rel = b.Get("relation")) AddRel(*rel, &scope);
    int conj = NewConj();
    Quals(b.Get("usingClause"), b.Get("whereClause"), &scope, conj);
  }

  void Insert(const Json& b, const Scope* parent) {
    With(b, parent);
    std::string table = Str(b.Get("relation"), "relname");
    std::vector<std::string> cols;
    if (const Json* cl = b.Get("cols")) {
      for (const Json& c : cl->items()) cols.push_back(Str(c.NodeBody(), "name"));
    } else {
      cols = schema_.ColumnsOf(table);
    }
    const Json* sel = b.Get("selectStmt");
    const Json* sb = sel == nullptr ? nullptr : sel->NodeBody();
    if (sb == nullptr) return;
    const Json* rows = sb->Get("valuesLists");
    if (rows == nullptr) {
      Statement(*sel, parent);  // INSERT ... SELECT
      return;
    }
    for (const Json& row : rows->items()) {
      const Json* rb = row.NodeBody();
      const Json* items = rb == nullptr ? nullptr : rb->Get("items");
      if (items == nullptr) continue;
      int conj = NewConj();
      for (size_t i = 0; i < items->items().size() && i < cols.size(); ++i) {
        if (!schema_.WrittenColumnYieldsRef(table, cols[i])) continue;
        ValueSrc v;
        if (!ValueOf(items->items()[i], &v)) continue;
        plan_->conjs[conj].eqs.push_back(AddColumnPred(table, cols[i], std::move(v)));
      }
    }
  }

  const Schema& schema_;
  absl::string_view sql_;
  const LexResult& lex_;
  Plan* plan_;
  std::map<int, int> slot_at_;  // literal byte offset -> slot
  std::vector<const Json*> pending_quals_;
  std::vector<std::pair<const Json*, const Scope*>> subqueries_;
};


// Built-in functions that neither write, take a lock nor wait for another
// session: a plain read may call them. Anything else (nextval, set_config,
// pg_advisory_lock, a user's function) may do any of these.
bool IsPureBuiltin(absl::string_view name) {
  static const auto* const kPure = new absl::flat_hash_set<absl::string_view>{
      "count", "sum", "avg", "min", "max", "bool_and", "bool_or", "every", "array_agg", "string_agg",
      "json_agg", "jsonb_agg", "stddev", "variance", "abs", "round", "floor", "ceil", "ceiling", "mod",
      "trunc", "sqrt", "power", "lower", "upper", "length", "char_length", "octet_length", "substr",
      "substring", "trim", "btrim", "ltrim", "rtrim", "concat", "concat_ws", "left", "right", "lpad",
      "rpad", "replace", "split_part", "strpos", "position", "md5", "to_char", "to_date", "to_number",
      "to_timestamp", "date_trunc", "date_part", "extract", "age", "now", "array_length", "cardinality",
      "unnest", "generate_series", "row_number", "rank", "dense_rank", "lag", "lead", "first_value",
      "last_value", "format", "json_build_object", "jsonb_build_object", "coalesce", "nullif",
      "greatest", "least"};
  return kPure->contains(name);
}

// Whether the subtree reads only: no locking or INTO clause, no
// data-modifying statement (a WITH's), no call of a function outside
// IsPureBuiltin or of one the schema knows as the database's own.
bool ReadsOnly(const Json& j, const Schema& schema, int depth) {
  if (depth > kMaxJsonDepth) return false;
  if (j.is_array()) {
    for (const Json& e : j.items()) {
      if (!ReadsOnly(e, schema, depth + 1)) return false;
    }
    return true;
  }
  if (!j.is_object()) return true;
  const std::vector<std::string>& keys = j.keys();
  for (size_t i = 0; i < keys.size(); ++i) {
    const std::string& k = keys[i];
    if (k == "lockingClause" || k == "intoClause" || k == "InsertStmt" || k == "UpdateStmt" ||
        k == "DeleteStmt" || k == "MergeStmt") {
      return false;
    }
    if (k == "FuncCall") {
      const std::vector<std::string> fname = StringList(j.items()[i].Get("funcname"));
      if (fname.empty() || fname.size() > 2 || (fname.size() == 2 && fname[0] != "pg_catalog") ||
          !IsPureBuiltin(fname.back()) || schema.FindFunction(fname.back()) != nullptr) {
        return false;
      }
    }
    if (!ReadsOnly(j.items()[i], schema, depth + 1)) return false;
  }
  return true;
}

// Every statement of the tree is a SELECT that reads only (ReadsOnly).
bool PlainRead(const Json& tree, const Schema& schema) {
  const Json* stmts = tree.Get("stmts");
  if (stmts == nullptr || stmts->items().empty()) return false;
  for (const Json& s : stmts->items()) {
    const Json* node = s.Get("stmt");
    if (node == nullptr || node->NodeType() != "SelectStmt" || !ReadsOnly(*node, schema, 0)) return false;
  }
  return true;
}

}  // namespace

absl::Status ParseAndCompile(const Schema& schema, absl::string_view sql, const LexResult& lex, Plan* plan) {
  if (lex.longest_operator > kMaxOperatorRun) {
    return absl::InvalidArgumentError(absl::StrCat("a chain of ", lex.longest_operator,
                                                   " operator characters (over ", kMaxOperatorRun, ")"));
  }
  std::string text(sql);
  PgQueryParseResult r = pg_query_parse(text.c_str());
  if (r.error != nullptr) {
    int pos = r.error->cursorpos;
    absl::Status st =
        absl::InvalidArgumentError(absl::StrCat(r.error->message, " at position ", pos));
    st.SetPayload(kPositionPayload, absl::Cord(absl::StrCat(pos)));
    pg_query_free_parse_result(r);
    return st;
  }
  absl::StatusOr<Json> tree = ParseJson(r.parse_tree);
  pg_query_free_parse_result(r);
  if (!tree.ok()) return TreeError(tree.status());
  Compiler c(schema, sql, lex, plan);
  if (const Json* stmts = tree->Get("stmts")) {
    for (const Json& s : stmts->items()) {
      if (const Json* node = s.Get("stmt")) c.Statement(*node, nullptr);
    }
  }
  c.Finish();
  plan->plain_read = PlainRead(*tree, schema);
  // Drop empty conjunctions.
  plan->conjs.erase(std::remove_if(plan->conjs.begin(), plan->conjs.end(),
                                   [](const Conj& j) { return j.eqs.empty() && j.ins.empty(); }),
                    plan->conjs.end());
  return absl::OkStatus();
}

}  // namespace ref_internal
}  // namespace corral
