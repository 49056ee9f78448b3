#include "bench/workloads/sql_sets.h"

#include <algorithm>
#include <cctype>
#include <mutex>
#include <shared_mutex>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "bench/workloads/tatp.h"
#include "bench/workloads/tpcc.h"
#include "policies/bound_value.h"
#include "policies/param_value.h"

namespace corral {
namespace workloads {
namespace {

using KeyRule = SqlSets::KeyRule;
using SlotRule = SqlSets::SlotRule;

int I(const int64_t* v, int i) { return static_cast<int>(v[i]); }

KeyRule Single(const char* table, const char* column) {
  return {table, {column}, 1, [](const int64_t* v, int) { return static_cast<uint64_t>(v[0]); }};
}

bool Rules(const std::string& workload, std::vector<KeyRule>* rules, std::vector<SlotRule>* slots) {
  if (workload == "tpcc" || workload == "tpcc-np") {
    *rules = {
        Single("warehouse", "w_id"),
        {"district", {"d_w_id", "d_id"}, 2,
         [](const int64_t* v, int) { return TpccDistrictKey(I(v, 0), I(v, 1)); }},
        {"customer", {"c_w_id", "c_d_id", "c_id"}, 3,
         [](const int64_t* v, int) { return TpccCustomerKey(I(v, 0), I(v, 1), I(v, 2)); }},
        {"history", {}, 0, [](const int64_t*, int worker) { return TpccHistorySlotKey(worker); }},
        {"new_order", {"no_w_id", "no_d_id", "no_o_id"}, 2,
         [](const int64_t* v, int) { return TpccOrderKey(I(v, 0), I(v, 1), I(v, 2)); }},
        {"orders", {"o_w_id", "o_d_id", "o_id"}, 2,
         [](const int64_t* v, int) { return TpccOrderKey(I(v, 0), I(v, 1), I(v, 2)); }},
        {"order_line", {"ol_w_id", "ol_d_id", "ol_o_id", "ol_number"}, 2,
         [](const int64_t* v, int) { return TpccOrderLineKey(I(v, 0), I(v, 1), I(v, 2), I(v, 3)); }},
        Single("item", "i_id"),
        {"stock", {"s_w_id", "s_i_id"}, 2,
         [](const int64_t* v, int) { return TpccStockKey(I(v, 0), I(v, 1)); }},
    };
    *slots = {};
    return true;
  }
  if (workload == "smallbank") {
    *rules = {Single("accounts", "custid"), Single("savings", "custid"), Single("checking", "custid")};
    *slots = {{"smallbank_audit", ""}};
    return true;
  }
  if (workload == "tatp") {
    *rules = {
        Single("subscriber", "s_id"),
        {"access_info", {"s_id", "ai_type"}, 2,
         [](const int64_t* v, int) { return TatpAiKey(v[0], I(v, 1)); }},
        {"special_facility", {"s_id", "sf_type"}, 2,
         [](const int64_t* v, int) { return TatpSfKey(v[0], I(v, 1)); }},
        {"call_forwarding", {"s_id", "sf_type", "start_time"}, 3,
         [](const int64_t* v, int) { return TatpCfKey(v[0], I(v, 1), I(v, 2)); }},
    };
    *slots = {{"tatp_audit", "call_forwarding"}};
    return true;
  }
  if (workload == "ycsb") {
    *rules = {Single("usertable", "ycsb_key")};
    *slots = {{"ycsb_audit", "usertable"}};
    return true;
  }
  return false;
}

// Whether the statement writes the rows it names.
bool Writes(absl::string_view sql) {
  sql = absl::StripLeadingAsciiWhitespace(sql);
  auto starts = [sql](absl::string_view kw) {
    return sql.size() >= kw.size() && absl::EqualsIgnoreCase(sql.substr(0, kw.size()), kw);
  };
  return starts("INSERT") || starts("UPDATE") || starts("DELETE") ||
         absl::StrContains(absl::AsciiStrToUpper(sql), "FOR UPDATE");
}

// Splits a conjunction's text ("a=1 AND t.b='x AND y'") into (name, value)
// pairs; quoted values may hold anything ('' escapes a quote).
void SplitConjunction(absl::string_view text,
                      std::vector<std::pair<absl::string_view, absl::string_view>>* out) {
  out->clear();
  size_t i = 0;
  while (i < text.size()) {
    const size_t eq = text.find('=', i);
    if (eq == absl::string_view::npos) return;
    const absl::string_view name = text.substr(i, eq - i);
    size_t j = eq + 1;
    if (j < text.size() && text[j] == '\'') {
      ++j;
      while (j < text.size()) {
        if (text[j] == '\'') {
          if (j + 1 < text.size() && text[j + 1] == '\'') {
            j += 2;
            continue;
          }
          ++j;
          break;
        }
        ++j;
      }
    }
    const size_t and_pos = text.find(" AND ", j);
    const size_t end = and_pos == absl::string_view::npos ? text.size() : and_pos;
    out->push_back({name, text.substr(eq + 1, end - eq - 1)});
    i = and_pos == absl::string_view::npos ? text.size() : and_pos + 5;
  }
}

struct Granule {
  const engine::Table* table;
  uint64_t granule;
  bool write;
  bool operator<(const Granule& o) const {
    return table != o.table ? table < o.table : granule < o.granule;
  }
  bool Same(const Granule& o) const { return table == o.table && granule == o.granule; }
};

// Sorted by (table, granule), one entry each (write wins).
std::vector<Granule> Granules(const std::vector<engine::AccessSet::Entry>& entries) {
  std::vector<Granule> g;
  for (const engine::AccessSet::Entry& e : entries) g.push_back({e.table, e.table->LockGranule(e.key), e.write});
  std::sort(g.begin(), g.end());
  size_t out = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    if (out > 0 && g[out - 1].Same(g[i])) {
      g[out - 1].write |= g[i].write;
    } else {
      g[out++] = g[i];
    }
  }
  g.resize(out);
  return g;
}

}  // namespace

absl::Status RecordingTx::Scan(const engine::ScanSpec& spec, std::vector<engine::ConstRow>* out) {
  absl::Status s = inner_->Scan(spec, out);
  const engine::Table* table = spec.index->table();
  for (const engine::ConstRow& r : *out) log_->push_back({table, r.key(), spec.for_update});
  return s;
}

SetDiff CompareAccessSets(const std::vector<engine::AccessSet::Entry>& set,
                          const std::vector<engine::AccessSet::Entry>& actual) {
  const std::vector<Granule> s = Granules(set), a = Granules(actual);
  SetDiff d;
  d.set = static_cast<int>(s.size());
  d.actual = static_cast<int>(a.size());
  size_t i = 0, j = 0;
  while (i < s.size() || j < a.size()) {
    if (j == a.size() || (i < s.size() && s[i] < a[j])) {
      ++d.over;  // declared, not accessed
      ++i;
    } else if (i == s.size() || a[j] < s[i]) {
      ++d.missed;  // accessed, not declared
      d.missed_tables.push_back(a[j].table);
      ++j;
    } else {
      if (a[j].write && !s[i].write) {
        ++d.missed;
        d.missed_tables.push_back(a[j].table);
      }
      if (s[i].write && !a[j].write) ++d.over;
      ++i;
      ++j;
    }
  }
  return d;
}

absl::StatusOr<std::unique_ptr<SqlSets>> SqlSets::Create(const std::string& workload,
                                                         const engine::Database& db,
                                                         std::shared_ptr<const Schema> schema) {
  if (schema == nullptr || schema->insert_refs() != InsertRefs::kAll) {
    return absl::InvalidArgumentError(
        "sets=sql: the SQL schema must yield every INSERT column (InsertRefs::kAll)");
  }
  std::vector<KeyRule> rules;
  std::vector<SlotRule> slots;
  if (!Rules(workload, &rules, &slots)) {
    return absl::InvalidArgumentError(absl::StrCat("sets=sql: no SQL key mapping for workload '", workload, "'"));
  }
  std::unique_ptr<SqlSets> s(new SqlSets(std::move(schema), std::move(rules), std::move(slots), db));
  absl::Status st = s->Init();
  if (!st.ok()) return st;
  return s;
}

SqlSets::SqlSets(std::shared_ptr<const Schema> schema, std::vector<KeyRule> rules,
                 std::vector<SlotRule> slots, const engine::Database& db)
    : schema_(std::move(schema)),
      extractor_(std::make_unique<RefExtractor>(schema_)),
      rules_(std::move(rules)),
      slots_(std::move(slots)),
      db_(db) {}

absl::Status SqlSets::Init() {
  for (size_t r = 0; r < rules_.size(); ++r) {
    const KeyRule& rule = rules_[r];
    const engine::Table* t = db_.FindTable(rule.table);
    if (t == nullptr || !schema_->HasTable(rule.table)) {
      return absl::InvalidArgumentError(absl::StrCat("sets=sql: no table '", rule.table, "'"));
    }
    tables_.push_back(t);
    if (rule.key.size() > kMaxKey || rule.granule > rule.key.size()) {
      return absl::InvalidArgumentError(absl::StrCat("sets=sql: bad key rule for ", rule.table));
    }
    for (const std::string& col : schema_->ColumnsOf(rule.table)) {
      int key = -1;
      for (size_t k = 0; k < rule.key.size(); ++k) {
        if (rule.key[k] == col) key = static_cast<int>(k);
      }
      columns_[schema_->LiteralName(rule.table, col)] = {static_cast<int>(r), key};
    }
    for (const std::string& k : rule.key) {
      if (!schema_->HasColumn(rule.table, k)) {
        return absl::InvalidArgumentError(absl::StrCat("sets=sql: no column ", rule.table, ".", k));
      }
    }
  }
  for (const SlotRule& s : slots_) {
    const engine::Table* t = db_.FindTable(s.engine_table);
    if (t == nullptr) return absl::InvalidArgumentError(absl::StrCat("sets=sql: no table '", s.engine_table, "'"));
    slot_tables_.push_back(t);
  }
  return absl::OkStatus();
}

// Sentinel parameter values of a template's compilation: parameter i is
// bound to kSentinel + i, recognized in the references' texts.
constexpr int64_t kSentinel = 7000000000000000000;

std::vector<SqlSets::Conj> SqlSets::Conjunctions(const std::vector<std::string>& texts) const {
  std::vector<Conj> out;
  std::vector<std::pair<absl::string_view, absl::string_view>> pairs;
  for (const std::string& text : texts) {
    SplitConjunction(text, &pairs);
    Conj c;
    for (const auto& [name, value] : pairs) {
      auto it = columns_.find(name);
      if (it == columns_.end()) continue;
      Member m;
      m.rule = it->second.rule;
      m.key = it->second.key;
      absl::string_view v = value;
      if (v.size() >= 2 && v.front() == '\'' && v.back() == '\'') v = v.substr(1, v.size() - 2);
      m.is_int = absl::SimpleAtoi(v, &m.value);
      c.push_back(m);
    }
    if (!c.empty()) out.push_back(std::move(c));
  }
  return out;
}

absl::StatusOr<const SqlSets::Plan*> SqlSets::Checked(const Plan* plan, size_t params) {
  if (plan->params != params) {
    return absl::InvalidArgumentError(absl::StrCat("sets=sql: a template bound with ", params,
                                                   " parameters, compiled with ", plan->params));
  }
  return plan;
}

absl::StatusOr<const SqlSets::Plan*> SqlSets::PlanFor(absl::string_view tmpl, size_t params) const {
  {
    std::shared_lock<std::shared_mutex> l(mu_);
    auto it = plans_.find(tmpl);
    if (it != plans_.end()) return Checked(it->second.get(), params);
  }
  auto plan = std::make_unique<Plan>();
  plan->params = params;
  plan->write = Writes(tmpl);
  std::vector<std::string> sentinel_texts(params);
  std::vector<ParamValue> values(params);
  for (size_t i = 0; i < params; ++i) {
    sentinel_texts[i] = absl::StrCat(kSentinel + static_cast<int64_t>(i));
    values[i].text = sentinel_texts[i];
  }
  RefVec ids;
  std::vector<std::string> texts;
  absl::Status st = extractor_->Extract(tmpl, {RefNaming::kLiteral, RefGrouping::kAll}, values, &ids, &texts);
  if (!st.ok()) return st;
  plan->conjs = Conjunctions(texts);
  for (Conj& c : plan->conjs) {
    for (Member& m : c) {
      if (m.is_int && m.value >= kSentinel && m.value < kSentinel + static_cast<int64_t>(params)) {
        m.param = static_cast<int>(m.value - kSentinel);
      }
    }
  }
  std::unique_lock<std::shared_mutex> l(mu_);
  // A racing compilation of the same template made the same plan: keep the first.
  auto it = plans_.try_emplace(std::string(tmpl), std::move(plan)).first;
  return Checked(it->second.get(), params);
}

int SqlSets::DeriveBound(const BoundSql& bound, engine::AccessSet* set) const {
  int errors = 0;
  std::vector<bool> rule_written(rules_.size(), false);
  bool any_write = false;
  std::vector<Conj> conjs;
  std::string text;
  for (const BoundSql::Statement& st : bound.statements()) {
    const BoundSpan ps = bound.params(st);
    absl::StatusOr<const Plan*> plan = PlanFor(st.tmpl, ps.size());
    if (!plan.ok()) {
      ++errors;
      continue;
    }
    // Fill the parameters in: a NULL one names nothing (as in the text path).
    conjs.clear();
    for (const Conj& pc : (*plan)->conjs) {
      Conj c;
      for (Member m : pc) {
        if (m.param >= 0) {
          const BoundValue& v = ps[m.param];
          if (v.is_null()) continue;
          if (v.kind() == BoundValue::Kind::kInt) {
            m.value = v.int_value();
            m.is_int = true;
          } else {
            text.clear();
            AppendText(v, &text);
            m.is_int = absl::SimpleAtoi(text, &m.value);
          }
        }
        c.push_back(m);
      }
      if (!c.empty()) conjs.push_back(std::move(c));
    }
    Apply(conjs, (*plan)->write, set, &rule_written, &any_write);
  }
  AddSlots(rule_written, any_write, set);
  return errors;
}

int SqlSets::DeriveBoundByText(const BoundSql& bound, engine::AccessSet* set) const {
  int errors = 0;
  std::vector<bool> rule_written(rules_.size(), false);
  bool any_write = false;
  std::vector<std::string> texts, param_texts;
  std::vector<ParamValue> params;
  for (const BoundSql::Statement& st : bound.statements()) {
    const BoundSpan ps = bound.params(st);
    param_texts.assign(ps.size(), std::string());
    params.assign(ps.size(), ParamValue());
    for (size_t i = 0; i < ps.size(); ++i) {
      if (ps[i].is_null()) {
        params[i].is_null = true;
      } else {
        AppendText(ps[i], &param_texts[i]);
      }
    }
    for (size_t i = 0; i < ps.size(); ++i) params[i].text = param_texts[i];
    RefVec ids;
    texts.clear();
    if (!extractor_->Extract(st.tmpl, {RefNaming::kLiteral, RefGrouping::kAll}, params, &ids, &texts).ok()) {
      ++errors;
      continue;
    }
    Apply(Conjunctions(texts), Writes(st.tmpl), set, &rule_written, &any_write);
  }
  AddSlots(rule_written, any_write, set);
  return errors;
}

void SqlSets::Apply(const std::vector<Conj>& conjs, bool write, engine::AccessSet* set,
                    std::vector<bool>* rule_written, bool* any_write) const {
  int64_t values[kMaxKey];
  bool have[kMaxKey];
  for (const Conj& c : conjs) {
    // Each rule the conjunction touches names one row, if its granule's
    // key columns are bound.
    for (size_t r = 0; r < rules_.size(); ++r) {
      const KeyRule& rule = rules_[r];
      bool touched = false;
      std::fill(values, values + kMaxKey, 0);
      std::fill(have, have + kMaxKey, false);
      for (const Member& m : c) {
        if (m.rule != static_cast<int>(r)) continue;
        touched = true;
        if (m.key >= 0 && m.is_int) {
          values[m.key] = m.value;
          have[m.key] = true;
        }
      }
      if (!touched) continue;
      bool bound_prefix = true;
      for (size_t k = 0; k < rule.granule; ++k) bound_prefix = bound_prefix && have[k];
      if (!bound_prefix) continue;
      set->Add(tables_[r], rule.pack(values, set->worker_id()), write);
      if (write) {
        (*rule_written)[r] = true;
        *any_write = true;
      }
    }
  }
}

void SqlSets::AddSlots(const std::vector<bool>& rule_written, bool any_write, engine::AccessSet* set) const {
  for (size_t s = 0; s < slots_.size(); ++s) {
    bool fire = slots_[s].trigger.empty() && any_write;
    for (size_t r = 0; r < rules_.size() && !fire; ++r) {
      fire = rule_written[r] && rules_[r].table == slots_[s].trigger;
    }
    if (fire) set->Write(slot_tables_[s], static_cast<uint64_t>(set->worker_id()));
  }
}

bool SqlSets::Derive(const WorkloadTxn& txn, engine::AccessSet& set) const {
  BoundSql bound;
  txn.AppendBound(&bound);
  DeriveBound(bound, &set);
  return true;
}

}  // namespace workloads
}  // namespace corral
