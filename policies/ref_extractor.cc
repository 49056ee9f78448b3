#include "policies/ref_extractor.h"

#include <algorithm>
#include <map>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/inlined_vector.h"
#include "absl/hash/hash.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/hash.h"
#include "pg_query.h"
#include "policies/json.h"
#include "policies/pg_params.h"
#include "policies/ref_value.h"
#include "policies/sql_lexer.h"

namespace corral {

constexpr char kPositionPayload[] = "corral.position";

absl::optional<int> SyntaxErrorPosition(const absl::Status& status) {
  absl::optional<absl::Cord> p = status.GetPayload(kPositionPayload);
  if (!p.has_value()) return absl::nullopt;
  int pos = 0;
  if (!absl::SimpleAtoi(std::string(*p), &pos)) return absl::nullopt;
  return pos;
}

// ------------------------------------------------------------------ the plan

namespace {

struct ValueSrc {
  enum class Kind : uint8_t { kSlot, kParam, kConst };
  Kind kind = Kind::kConst;
  bool negate = false;       // literal written as `- <number>`
  bool array = false;        // `= ANY(...)`: the value is an array (one reference per element)
  int index = -1;            // slot (0-based) or parameter number (1-based)
  TypeClass type = TypeClass::kUnknown;
  std::string tree_raw;      // value from the parse tree (kSlot, kConst)
};

struct Name {
  std::string text;
  uint64_t eq_state = 0;  // FNV state after text + "="
  int rank = 0;           // order of text + "=" among the plan's names
};

struct Pred {
  Name name[2];  // [RefNaming::kLiteral], [RefNaming::kCanonical]
  ValueSrc value;
};

struct Conj {
  std::vector<int> eqs;               // pred indices
  std::vector<std::vector<int>> ins;  // IN lists, pred indices
};

}  // namespace

struct RefExtractor::Plan {
  std::string key;  // the shape key (sql_lexer.h) it was compiled for
  std::vector<Pred> preds;
  std::vector<Conj> conjs;
  bool cacheable = true;  // slot values verified against the tree
};

namespace {

using Plan = RefExtractor::Plan;

int Idx(RefNaming n) { return n == RefNaming::kLiteral ? 0 : 1; }

std::vector<std::string> StringList(const Json* list) {
  std::vector<std::string> out;
  if (list == nullptr) return out;
  for (const Json& e : list->items()) {
    const Json* b = e.NodeBody();
    if (b != nullptr && e.NodeType() == "String") {
      const Json* s = b->Get("sval");
      out.push_back(s == nullptr ? "" : s->str());
    } else {
      out.push_back("*");
    }
  }
  return out;
}

std::string Str(const Json* j, absl::string_view key) {
  if (j == nullptr) return "";
  const Json* v = j->Get(key);
  return v == nullptr ? "" : v->str();
}

int Location(const Json* body) {
  const Json* l = body == nullptr ? nullptr : body->Get("location");
  int v = -1;
  if (l != nullptr) absl::SimpleAtoi(l->str(), &v);
  return v;
}

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

// A statement that libpg_query parses into a tree nested deeper than the
// JSON reader goes (e.g. ~1,000 unary operators in a row) is bad input, not a
// fault of ours; anything else the reader rejects is libpg_query's output.
absl::Status TreeError(const absl::Status& st) {
  if (absl::IsResourceExhausted(st)) {
    return absl::InvalidArgumentError(
        absl::StrCat("statement nested too deeply (its parse tree is over ", kMaxJsonDepth, " levels deep)"));
  }
  return absl::InternalError(absl::StrCat("reading libpg_query's tree: ", st.message()));
}

absl::Status ParseAndCompile(const Schema& schema, absl::string_view sql, const LexResult& lex, Plan* plan) {
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
  // Drop empty conjunctions.
  plan->conjs.erase(std::remove_if(plan->conjs.begin(), plan->conjs.end(),
                                   [](const Conj& j) { return j.eqs.empty() && j.ins.empty(); }),
                    plan->conjs.end());
  return absl::OkStatus();
}

// ------------------------------------------------------------------ emission

// Per-thread scratch: lexer output and rendered values. Reused, so the hit
// path allocates nothing once warm.
struct Scratch {
  LexResult lex;
  std::string arena;
  struct Value {
    absl::string_view view;  // valid after RenderValues
    uint32_t begin = 0, end = 0;
    bool present = false;
    bool in_arena = false;
    bool is_array = false;  // elements elems[elem_begin, elem_begin + elem_count)
    uint32_t elem_begin = 0, elem_count = 0;
  };
  std::vector<Value> values;
  // Rendered elements of array values (`= ANY(...)`), always in the arena.
  struct Elem {
    absl::string_view view;
    uint32_t begin = 0, end = 0;
  };
  std::vector<Elem> elems;
  std::string unescape;                     // ParseArrayLiteral's buffer
  std::vector<ArrayLiteralElement> lit_elems;
  // A small per-thread, lock-free front cache of plans (direct-mapped by the
  // key's hash), tagged with the owning extractor's id. Plans are immutable
  // and shared, so an entry stays valid after the shared cache evicts it.
  struct Front {
    uint64_t owner = 0;
    uint64_t hash = 0;
    std::shared_ptr<const Plan> plan;
  };
  static constexpr size_t kFront = 64;
  Front front[kFront];
  // In front of the lexer: statements seen before, byte for byte (prepared
  // templates, mostly), direct-mapped by a hash of the raw text. An entry
  // keeps the text (each hit is verified against it), the plan, and the
  // text's own lexed literals, so a hit needs no lexing at all. Only
  // statements likely to recur are entered: those with parameters or without
  // literals (literal SQL text rarely repeats byte for byte).
  struct Raw {
    uint64_t owner = 0;
    uint64_t hash = 0;
    std::string text;
    std::shared_ptr<const Plan> plan;
    LexResult lex;
  };
  static constexpr size_t kRaw = 256;
  std::unique_ptr<Raw[]> raw;  // allocated on first use
};

Scratch& LocalScratch() {
  thread_local Scratch s;
  return s;
}

// True if `raw` is already in canonical decimal form as an integer (the
// common case), so rendering would copy it unchanged.
inline bool IsPlainInteger(absl::string_view raw) {
  if (raw.empty() || raw.size() > 18 || (raw[0] == '0' && raw.size() > 1)) return false;
  for (char c : raw) {
    if (c < '0' || c > '9') return false;
  }
  return true;
}

// Renders one array value's elements into sc->arena / sc->elems: a typed
// array parameter's elements, or the elements of an array literal ('{1,2}'
// as a text parameter or a string constant). NULL elements yield nothing; a
// malformed literal yields no element.
void RenderArray(const ValueSrc& v, const ParamValue* param, absl::string_view literal, Scratch* sc,
                 Scratch::Value* out) {
  out->is_array = true;
  out->elem_begin = static_cast<uint32_t>(sc->elems.size());
  auto add = [&](absl::string_view raw) {
    Scratch::Elem e;
    e.begin = static_cast<uint32_t>(sc->arena.size());
    AppendRenderedValue(raw, v.type, &sc->arena);
    e.end = static_cast<uint32_t>(sc->arena.size());
    sc->elems.push_back(e);
  };
  if (param != nullptr && param->is_array) {
    for (uint32_t k = 0; k < param->num_elements; ++k) {
      if (!param->elements[k].is_null) add(param->elements[k].text);
    }
  } else if (ParseArrayLiteral(literal, &sc->unescape, &sc->lit_elems)) {
    for (const ArrayLiteralElement& e : sc->lit_elems) {
      if (!e.is_null) add(e.text);
    }
  }
  out->elem_count = static_cast<uint32_t>(sc->elems.size()) - out->elem_begin;
  out->present = out->elem_count > 0;
}

// Renders every pred's value into sc (from slots, parameters or the tree).
void RenderValues(const Plan& plan, absl::string_view sql, const LexResult* lex, bool from_tree,
                  ParamSpan params, Scratch* sc) {
  const size_t n = plan.preds.size();
  sc->arena.clear();
  sc->elems.clear();
  sc->values.resize(n);
  for (size_t i = 0; i < n; ++i) {
    const ValueSrc& v = plan.preds[i].value;
    Scratch::Value& out = sc->values[i];
    out.present = false;
    out.in_arena = false;
    out.is_array = false;
    absl::string_view raw;
    const ParamValue* param = nullptr;
    switch (v.kind) {
      case ValueSrc::Kind::kConst:
        raw = v.tree_raw;
        break;
      case ValueSrc::Kind::kParam:
        if (v.index > static_cast<int>(params.size()) || params[v.index - 1].is_null) continue;
        param = &params[v.index - 1];
        // An array bound where a scalar is compared: no reference.
        if (param->is_array && !v.array) continue;
        raw = param->text;
        break;
      case ValueSrc::Kind::kSlot:
        if (from_tree) {
          raw = v.tree_raw;
          break;
        }
        raw = lex->Value(lex->literals[v.index], sql);
        if (v.negate) {
          std::string neg = absl::StrCat("-", raw);  // rare path (negative literal)
          out.begin = static_cast<uint32_t>(sc->arena.size());
          AppendRenderedValue(neg, v.type, &sc->arena);
          out.end = static_cast<uint32_t>(sc->arena.size());
          out.present = out.in_arena = true;
          continue;
        }
        break;
    }
    if (v.array) {
      RenderArray(v, param, raw, sc, &out);
      continue;
    }
    out.present = true;
    if (v.type != TypeClass::kText && IsPlainInteger(raw)) {
      out.view = raw;  // already canonical: no copy
      continue;
    }
    out.in_arena = true;
    out.begin = static_cast<uint32_t>(sc->arena.size());
    AppendRenderedValue(raw, v.type, &sc->arena);
    out.end = static_cast<uint32_t>(sc->arena.size());
  }
  absl::string_view arena(sc->arena);
  for (size_t i = 0; i < n; ++i) {
    Scratch::Value& out = sc->values[i];
    if (out.in_arena) out.view = arena.substr(out.begin, out.end - out.begin);
  }
  for (Scratch::Elem& e : sc->elems) e.view = arena.substr(e.begin, e.end - e.begin);
}

// Appends `id` unless present; counts it in *mult (if any) once per
// statement: `stmt_begin` is the size of *ids when this statement started,
// `counted` the positions before it that this statement already counted.
// Returns whether it was appended.
inline bool AddRef(RefId id, RefVec* ids, RefMult* mult, size_t stmt_begin,
                   absl::InlinedVector<uint32_t, 8>* counted) {
  auto it = std::find(ids->begin(), ids->end(), id);
  if (it != ids->end()) {
    const size_t pos = static_cast<size_t>(it - ids->begin());
    if (mult != nullptr && pos < stmt_begin &&
        std::find(counted->begin(), counted->end(), pos) == counted->end()) {
      counted->push_back(static_cast<uint32_t>(pos));
      uint16_t& m = (*mult)[pos];
      if (m < 65535) ++m;
    }
    return false;
  }
  ids->push_back(id);
  if (mult != nullptr) mult->push_back(1);
  return true;
}

// Calls fn(value) for each value of pred p: its one value, or each element
// of an array value.
template <typename Fn>
inline void ForEachValue(const Scratch& sc, int p, Fn fn) {
  const Scratch::Value& v = sc.values[p];
  if (!v.present) return;
  if (!v.is_array) {
    fn(v.view);
    return;
  }
  for (uint32_t k = 0; k < v.elem_count; ++k) fn(sc.elems[v.elem_begin + k].view);
}

void Emit(const Plan& plan, ExtractionPolicy policy, Scratch* sc, RefVec* ids, RefMult* mult,
          std::vector<std::string>* texts) {
  if (mult != nullptr && mult->size() < ids->size()) mult->resize(ids->size(), 1);
  const size_t stmt_begin = ids->size();
  absl::InlinedVector<uint32_t, 8> counted;
  const int ni = Idx(policy.naming);
  auto single = [&](int p) {
    const Name& name = plan.preds[p].name[ni];
    ForEachValue(*sc, p, [&](absl::string_view v) {
      RefId id(Mix64(Fnv1aAppend(name.eq_state, v.data(), v.size())));
      if (!AddRef(id, ids, mult, stmt_begin, &counted)) return;
      if (texts != nullptr) texts->push_back(absl::StrCat(name.text, "=", v));
    });
  };
  if (policy.grouping == RefGrouping::kSingle) {
    for (const Conj& c : plan.conjs) {
      for (int p : c.eqs) single(p);
      for (const auto& in : c.ins) {
        for (int p : in) single(p);
      }
    }
    return;
  }
  // A conjunction's members: (pred, value); an array pred contributes one
  // member per element only as the IN-list element below.
  struct Member {
    int pred;
    absl::string_view value;
  };
  absl::InlinedVector<Member, 16> group;
  auto less = [&](const Member& a, const Member& b) {
    int ra = plan.preds[a.pred].name[ni].rank, rb = plan.preds[b.pred].name[ni].rank;
    if (ra != rb) return ra < rb;
    return a.value < b.value;
  };
  auto same = [&](const Member& a, const Member& b) {
    return plan.preds[a.pred].name[ni].rank == plan.preds[b.pred].name[ni].rank && a.value == b.value;
  };
  auto emit_group = [&]() {
    if (group.empty()) return;
    // Insertion sort: groups are small.
    for (size_t i = 1; i < group.size(); ++i) {
      Member x = group[i];
      size_t j = i;
      while (j > 0 && less(x, group[j - 1])) {
        group[j] = group[j - 1];
        --j;
      }
      group[j] = x;
    }
    size_t w = 0;
    for (size_t i = 0; i < group.size(); ++i) {
      if (w > 0 && same(group[w - 1], group[i])) continue;
      group[w++] = group[i];
    }
    group.resize(w);
    uint64_t h = kFingerprintSeed;
    for (size_t i = 0; i < group.size(); ++i) {
      const Name& name = plan.preds[group[i].pred].name[ni];
      absl::string_view v = group[i].value;
      if (i > 0) h = Fnv1aAppend(h, " AND ", 5);
      h = Fnv1aAppend(h, name.text.data(), name.text.size());
      h = Fnv1aAppend(h, "=", 1);
      h = Fnv1aAppend(h, v.data(), v.size());
    }
    RefId id(Mix64(h));
    if (!AddRef(id, ids, mult, stmt_begin, &counted)) return;
    if (texts != nullptr) {
      std::string t;
      for (size_t i = 0; i < group.size(); ++i) {
        if (i > 0) t.append(" AND ");
        absl::StrAppend(&t, plan.preds[group[i].pred].name[ni].text, "=", group[i].value);
      }
      texts->push_back(std::move(t));
    }
  };
  // The conjunction's scalar equalities (arrays only appear in IN lists).
  auto add_eqs = [&](const Conj& c) {
    group.clear();
    for (int p : c.eqs) {
      if (sc->values[p].present && !sc->values[p].is_array) group.push_back(Member{p, sc->values[p].view});
    }
  };
  for (const Conj& c : plan.conjs) {
    if (c.ins.empty()) {
      add_eqs(c);
      emit_group();
      continue;
    }
    for (int e : c.ins[0]) {
      ForEachValue(*sc, e, [&](absl::string_view v) {
        add_eqs(c);
        group.push_back(Member{e, v});
        emit_group();
      });
    }
  }
}

}  // namespace

// ------------------------------------------------------------------ the cache

// Sharded, bounded plan cache with clock eviction. Lookups take the shard's
// reader lock (concurrent readers do not exclude each other) and set the
// entry's clock bit with a relaxed atomic; inserts take the writer lock.
//
// The lock is std::shared_mutex rather than absl::Mutex on purpose: Debian's
// Abseil is not built with ThreadSanitizer annotations, so TSan cannot see
// absl::Mutex's happens-before edges and reports false races, while it does
// intercept the pthread rwlock behind std::shared_mutex.
class RefExtractor::Cache {
 public:
  enum class Found { kMiss, kHit, kUncacheable };

  Cache(size_t max_entries, int shards) {
    if (shards < 1) shards = 1;
    size_t per = std::max<size_t>(1, (max_entries + shards - 1) / shards);
    for (int i = 0; i < shards; ++i) shards_.push_back(std::make_unique<Shard>(per));
  }

  // The plan cached for `key`, or null.
  std::shared_ptr<const Plan> Lookup(uint64_t hash, absl::string_view key) {
    Shard& s = *shards_[Mix64(hash) % shards_.size()];
    std::shared_lock<std::shared_mutex> l(s.mu);
    auto it = s.index.find(hash);
    if (it == s.index.end()) return nullptr;
    Entry& e = s.slots[it->second];
    if (e.plan->key != key) return nullptr;
    if (!e.referenced.load(std::memory_order_relaxed)) e.referenced.store(true, std::memory_order_relaxed);
    return e.plan;
  }

  void Insert(uint64_t hash, std::shared_ptr<const Plan> plan) {
    Shard& s = *shards_[Mix64(hash) % shards_.size()];
    std::unique_lock<std::shared_mutex> l(s.mu);
    s.misses.fetch_add(1, std::memory_order_relaxed);
    auto it = s.index.find(hash);
    size_t slot;
    if (it != s.index.end()) {
      slot = it->second;  // same shape raced in, or a hash collision: replace
    } else if (s.used < s.capacity) {
      slot = s.used++;
    } else {
      while (s.slots[s.hand].referenced.load(std::memory_order_relaxed)) {
        s.slots[s.hand].referenced.store(false, std::memory_order_relaxed);
        s.hand = (s.hand + 1) % s.capacity;
      }
      slot = s.hand;
      s.hand = (s.hand + 1) % s.capacity;
      s.index.erase(s.slots[slot].hash);
    }
    Entry& e = s.slots[slot];
    e.hash = hash;
    e.plan = std::move(plan);
    e.referenced.store(true, std::memory_order_relaxed);
    s.index[hash] = slot;
  }

  void AddStats(Stats* st) const {
    for (const auto& s : shards_) {
      std::shared_lock<std::shared_mutex> l(s->mu);
      st->misses += s->misses.load(std::memory_order_relaxed);
      st->entries += s->index.size();
    }
  }

 private:
  struct Entry {
    uint64_t hash = 0;
    std::shared_ptr<const Plan> plan;
    std::atomic<bool> referenced{false};
  };
  struct Shard {
    explicit Shard(size_t cap) : capacity(cap), slots(new Entry[cap]) {}
    mutable std::shared_mutex mu;
    const size_t capacity;
    // Guarded by mu: entries are written under the writer lock; `referenced`
    // is also set under the reader lock (it is atomic).
    std::unique_ptr<Entry[]> slots;
    absl::flat_hash_map<uint64_t, size_t> index;  // guarded by mu
    size_t used = 0;                              // guarded by mu
    size_t hand = 0;                              // guarded by mu
    std::atomic<uint64_t> misses{0};
  };
  std::vector<std::unique_ptr<Shard>> shards_;
};

// ------------------------------------------------------------------ RefExtractor

namespace {
uint64_t NextExtractorId() {
  static std::atomic<uint64_t> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}
}  // namespace

RefExtractor::RefExtractor(std::shared_ptr<const Schema> schema) : RefExtractor(std::move(schema), Options()) {}

RefExtractor::RefExtractor(std::shared_ptr<const Schema> schema, Options options)
    : id_(NextExtractorId()),
      text_hash_(options.text_hash_for_testing),
      schema_(schema != nullptr ? std::move(schema) : *SchemaBuilder().Build()),
      cache_(std::make_unique<Cache>(options.max_shapes, options.shards)) {}

RefExtractor::~RefExtractor() = default;

namespace {
// Whether a statement is worth an entry in the per-thread raw-text cache.
inline bool RawCacheable(ParamSpan params, const LexResult& lex) {
  return lex.cacheable && (!params.empty() || lex.literals.empty());
}
}  // namespace

uint64_t RefExtractor::TextHash(absl::string_view sql) const {
  if (text_hash_ != nullptr) return text_hash_(sql);
  return absl::Hash<absl::string_view>{}(sql);
}

absl::Status RefExtractor::Extract(absl::string_view sql, ExtractionPolicy policy, ParamSpan params, RefVec* ids,
                                   RefMult* mult, std::vector<std::string>* texts) {
  Scratch& sc = LocalScratch();
  // 1. The exact text seen before on this thread: no lexing.
  if (sc.raw == nullptr) sc.raw.reset(new Scratch::Raw[Scratch::kRaw]);
  const uint64_t text_hash = TextHash(sql);
  Scratch::Raw& r = sc.raw[Mix64(text_hash) % Scratch::kRaw];
  if (r.owner == id_ && r.hash == text_hash && absl::string_view(r.text) == sql) {
    const Plan& plan = *r.plan;
    if (!plan.cacheable) return ExtractUncached(sql, policy, params, ids, mult, texts);
    RenderValues(plan, r.text, &r.lex, /*from_tree=*/false, params, &sc);
    Emit(plan, policy, &sc, ids, mult, texts);
    return absl::OkStatus();
  }
  // 2. The shape seen before: lex, then the front cache or the shared one.
  LexSql(sql, &sc.lex);
  uint64_t hash = 0;
  std::shared_ptr<const Plan> found;
  if (sc.lex.cacheable) {
    // Process-local hash (fast); the stable Fingerprint64 is for RefIds only.
    hash = absl::Hash<absl::string_view>{}(absl::string_view(sc.lex.key));
    Scratch::Front& f = sc.front[hash % Scratch::kFront];
    if (f.owner == id_ && f.hash == hash && f.plan->key == sc.lex.key) {
      found = f.plan;
    } else if (std::shared_ptr<const Plan> p = cache_->Lookup(hash, sc.lex.key)) {
      f.owner = id_;
      f.hash = hash;
      f.plan = p;
      found = std::move(p);
    }
  }
  if (found == nullptr) {
    // 3. A new shape: libpg_query, compile, and share the plan.
    auto plan = std::make_shared<Plan>();
    absl::Status st = ParseAndCompile(*schema_, sql, sc.lex, plan.get());
    if (!st.ok()) return st;
    RenderValues(*plan, sql, &sc.lex, /*from_tree=*/true, params, &sc);
    Emit(*plan, policy, &sc, ids, mult, texts);
    if (!sc.lex.cacheable) return absl::OkStatus();
    plan->key = sc.lex.key;
    found = plan;
    cache_->Insert(hash, std::move(plan));
  } else if (!found->cacheable) {
    absl::Status st = ExtractUncached(sql, policy, params, ids, mult, texts);
    if (!st.ok()) return st;
  } else {
    RenderValues(*found, sql, &sc.lex, /*from_tree=*/false, params, &sc);
    Emit(*found, policy, &sc, ids, mult, texts);
  }
  if (RawCacheable(params, sc.lex)) {
    // Copy-assignments reuse the entry's capacity: no allocation once warm.
    r.owner = id_;
    r.hash = text_hash;
    r.text.assign(sql.data(), sql.size());
    r.plan = std::move(found);
    r.lex = sc.lex;
  }
  return absl::OkStatus();
}

absl::Status RefExtractor::ExtractUncached(absl::string_view sql, ExtractionPolicy policy, ParamSpan params,
                                           RefVec* ids, RefMult* mult, std::vector<std::string>* texts) const {
  Scratch& sc = LocalScratch();
  LexSql(sql, &sc.lex);
  Plan plan;
  absl::Status st = ParseAndCompile(*schema_, sql, sc.lex, &plan);
  if (!st.ok()) return st;
  RenderValues(plan, sql, &sc.lex, /*from_tree=*/true, params, &sc);
  Emit(plan, policy, &sc, ids, mult, texts);
  return absl::OkStatus();
}

class RefExtractor::Prepared {
 public:
  std::string text;
  std::shared_ptr<const Plan> plan;  // null: not cacheable, extract uncached
  LexResult lex;                     // of `text`
};

absl::StatusOr<std::shared_ptr<const RefExtractor::Prepared>> RefExtractor::Prepare(absl::string_view sql) {
  auto p = std::make_shared<Prepared>();
  p->text.assign(sql.data(), sql.size());
  LexSql(p->text, &p->lex);
  std::shared_ptr<const Plan> found;
  uint64_t hash = 0;
  if (p->lex.cacheable) {
    hash = absl::Hash<absl::string_view>{}(absl::string_view(p->lex.key));
    found = cache_->Lookup(hash, p->lex.key);
  }
  if (found == nullptr) {
    auto plan = std::make_shared<Plan>();
    absl::Status st = ParseAndCompile(*schema_, p->text, p->lex, plan.get());
    if (!st.ok()) return st;
    if (p->lex.cacheable) {
      plan->key = p->lex.key;
      cache_->Insert(hash, plan);
    }
    found = std::move(plan);
  }
  // A shape whose slot values cannot be trusted from the lexer, or a text
  // the lexer could not key, takes the uncached path every time (as Extract).
  if (found->cacheable && p->lex.cacheable) p->plan = std::move(found);
  return std::shared_ptr<const Prepared>(std::move(p));
}

absl::Status RefExtractor::ExtractPrepared(const Prepared& prepared, ExtractionPolicy policy, ParamSpan params,
                                           RefVec* ids, RefMult* mult, std::vector<std::string>* texts) const {
  if (prepared.plan == nullptr) return ExtractUncached(prepared.text, policy, params, ids, mult, texts);
  Scratch& sc = LocalScratch();
  RenderValues(*prepared.plan, prepared.text, &prepared.lex, /*from_tree=*/false, params, &sc);
  Emit(*prepared.plan, policy, &sc, ids, mult, texts);
  return absl::OkStatus();
}

RefExtractor::Stats RefExtractor::stats() const {
  Stats st;
  cache_->AddStats(&st);
  return st;
}

}  // namespace corral
