#include "adapters/proxy/router.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_split.h"
#include "adapters/proxy/session_params.h"
#include "adapters/proxy/wire.h"

namespace corral {
namespace proxy {

absl::string_view WithoutTrailingSemicolons(absl::string_view sql) {
  while (!sql.empty() && (sql.back() == ';' || absl::ascii_isspace(sql.back()))) sql.remove_suffix(1);
  return sql;
}

TxnControl ClassifyTxnControl(absl::string_view sql) {
  const absl::string_view s = WithoutTrailingSemicolons(absl::StripLeadingAsciiWhitespace(sql));
  if (s.empty() || s.find(';') != absl::string_view::npos) return TxnControl::kOther;
  const absl::string_view word = LeadingWord(s);
  // Most statements are none of these: decide on the word before lowering anything.
  const bool control = word.size() >= 3 && word.size() <= 8 &&
                       (absl::EqualsIgnoreCase(word, "begin") || absl::EqualsIgnoreCase(word, "start") ||
                        absl::EqualsIgnoreCase(word, "commit") || absl::EqualsIgnoreCase(word, "end") ||
                        absl::EqualsIgnoreCase(word, "rollback") || absl::EqualsIgnoreCase(word, "abort"));
  if (!control) return TxnControl::kOther;
  const std::string w = absl::AsciiStrToLower(word);
  const std::string rest = absl::AsciiStrToLower(absl::StripAsciiWhitespace(s.substr(word.size())));
  if (w == "begin") return TxnControl::kBegin;
  if (w == "start" && absl::StartsWith(rest, "transaction")) return TxnControl::kBegin;
  if (w == "commit" || w == "end") {
    if (absl::StartsWith(rest, "prepared") || absl::StrContains(rest, "chain")) return TxnControl::kOther;
    return TxnControl::kCommit;
  }
  if (w == "rollback" || w == "abort") {
    if (absl::StartsWith(rest, "to") || absl::StartsWith(rest, "prepared") ||
        absl::StrContains(rest, "chain")) {
      return TxnControl::kOther;
    }
    return TxnControl::kRollback;
  }
  return TxnControl::kOther;
}

BeginModes ParseBeginModes(absl::string_view begin_sql) {
  // (Per transaction block: word views, nothing allocated.)
  BeginModes m;
  absl::string_view prev2, prev;
  auto is = [](absl::string_view w, absl::string_view lower) { return absl::EqualsIgnoreCase(w, lower); };
  for (absl::string_view w : absl::StrSplit(begin_sql, absl::ByAnyChar(" \t\r\n,;"), absl::SkipEmpty())) {
    if (is(prev, "level")) {
      m.serializable = is(w, "serializable") ? 1 : -1;
    } else if (is(prev, "read") && (is(w, "only") || is(w, "write")) && !is(prev2, "repeatable")) {
      m.read_only = is(w, "only") ? 1 : -1;
    } else if (is(w, "deferrable")) {
      m.deferrable = is(prev, "not") ? -1 : 1;
    }
    prev2 = prev;
    prev = w;
  }
  return m;
}

void RoutedTxn::ClearRefs() {
  txn.refs.clear();
  txn.ref_mult.clear();
  ref_texts.clear();
  deferred.clear();
  first_key.clear();
  trace.clear();
  predicted.clear();
  ahead.clear();
  txn.placed_by = RefId(0);
  txn.placed_split = false;
  split_k = 0;
  conflict_free = false;
  free_block = false;
}

void RoutedTxn::ClearOutcome() {
  conflict_state.clear();
  had_error = false;
  rolled_back = false;
}

scheduler::Outcome RoutedTxn::outcome() const {
  if (!conflict_state.empty()) return scheduler::Outcome::kConflictAbort;
  if (had_error) return scheduler::Outcome::kFailed;
  if (rolled_back) return scheduler::Outcome::kUserAbort;
  return scheduler::Outcome::kCommitted;
}

Router::Router(scheduler::Scheduler* scheduler, std::shared_ptr<const Schema> schema,
               std::atomic<int64_t>* undecodable, size_t type_cache_size)
    : sched_(*scheduler),
      extractor_(std::make_unique<RefExtractor>(std::move(schema))),
      undecodable_(undecodable != nullptr ? *undecodable : own_undecodable_),
      types_(type_cache_size),
      parsed_(type_cache_size) {}

void Router::SetSchema(std::shared_ptr<const Schema> schema) {
  extractor_ = std::make_unique<RefExtractor>(std::move(schema));
  types_.Clear();
  parsed_.Clear();  // plain_read memos were worked out under the old schema
}

void Router::AddQuery(absl::string_view sql, RoutedTxn* t, bool free_if_plain_read) {
  StatementFacts facts;
  facts.skip_plain_read = free_if_plain_read;
  (void)extractor_->Extract(sql, sched_.policy().extraction, ParamSpan(), &t->txn.refs, &t->txn.ref_mult,
                            &t->ref_texts, &facts);
  if (free_if_plain_read && facts.plain_read) {
    t->conflict_free = true;
    return;
  }
  if (Traces(t->trace.size()) && ClassifyTxnControl(sql) == TxnControl::kOther) {
    t->trace.push_back(Stmt::FromSimple(sql));
  }
}

bool Router::PlainRead(const PreparedDef& d) {
  if (d.plain_read < 0) {
    StatementFacts facts;
    facts.skip_plain_read = true;
    RefVec scratch;
    (void)extractor_->Extract(d.query, sched_.policy().extraction, ParamSpan(), &scratch, nullptr, nullptr, &facts);
    d.plain_read = facts.plain_read ? 1 : 0;
  }
  return d.plain_read > 0;
}

const PreparedDef* Router::Statement(absl::string_view name, const StatementMap& stmts) {
  auto known = stmts.find(name);
  for (auto p = unit_parses_.rbegin(); p != unit_parses_.rend(); ++p) {
    if (p->name != name) continue;
    // Parsed in this unit: the client's own entry when it is the same text
    // (a driver re-parsing its unnamed statement), else the shared one.
    if (known != stmts.end() && known->second.key == p->key) return &known->second;
    if (const PreparedDef* d = parsed_.Find(p->key)) return d;
    std::string unused;
    parsed_.Put(std::string(p->key), PreparedDef::FromParse(p->body, &unused));
    return parsed_.Find(p->key);
  }
  return known == stmts.end() ? nullptr : &known->second;
}

template <typename Fn>
bool Router::ForEachBind(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts, Fn fn) {
  unit_parses_.clear();
  for (size_t i = 0; i <= end && i < pending.size(); ++i) {
    const Msg& u = pending[i];
    wire::Reader r(u.body());
    if (u.type == 'P') {
      const absl::string_view name = r.CString();
      unit_parses_.push_back(UnitParse{name, r.rest(), u.body()});  // the rest: PreparedDef::key
    } else if (u.type == 'B') {
      r.CString();  // portal
      const absl::string_view name = r.CString();
      if (!fn(Statement(name, stmts), u, r.rest())) return false;
    }
  }
  return true;
}

std::string Router::UnitBegin(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts) {
  std::string begin;
  ForEachBind(pending, end, stmts, [&](const PreparedDef* d, const Msg&, absl::string_view) {
    if (d != nullptr && ClassifyTxnControl(d->query) == TxnControl::kBegin) begin = d->query;
    return false;  // the first Bind decides
  });
  return begin;
}

bool MayEndTxnBlock(absl::string_view sql) {
  if (ClassifyTxnControl(sql) != TxnControl::kOther) return true;
  const absl::string_view word = LeadingWord(absl::StripLeadingAsciiWhitespace(sql));
  return absl::EqualsIgnoreCase(word, "call") || absl::EqualsIgnoreCase(word, "do") ||
         absl::EqualsIgnoreCase(word, "savepoint") || absl::EqualsIgnoreCase(word, "release") ||
         absl::EqualsIgnoreCase(word, "prepare") || absl::EqualsIgnoreCase(word, "commit") ||
         absl::EqualsIgnoreCase(word, "rollback");
}

bool Router::UnitFreeOfTxnControl(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts) {
  return ForEachBind(pending, end, stmts, [](const PreparedDef* d, const Msg&, absl::string_view) {
    return d != nullptr && !MayEndTxnBlock(d->query);
  });
}

bool Router::UnitIsPlainRead(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts) {
  if (end >= pending.size() || pending[end].type != 'S') return false;  // its implicit transaction goes on
  bool any = false;
  const bool all = ForEachBind(pending, end, stmts, [&](const PreparedDef* d, const Msg&, absl::string_view) {
    any = true;
    return d != nullptr && PlainRead(*d);
  });
  return all && any;
}

void Router::AddUnit(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts, RoutedTxn* t,
                     bool free_if_plain_read) {
  if (free_if_plain_read && UnitIsPlainRead(pending, end, stmts)) {
    t->conflict_free = true;
    return;
  }
  ForEachBind(pending, end, stmts, [&](const PreparedDef* d, const Msg& bind, absl::string_view params) {
    if (d == nullptr) return true;
    if (key_first_ && t->first_key.empty() && ClassifyTxnControl(d->query) != TxnControl::kBegin) {
      t->first_key = RetryStatementKey(d->query, params);
    }
    AddBind(*d, bind.body(), t);
    return true;
  });
}

bool Router::ResolveTypes(const PreparedDef& d) {
  const size_t n = bind_.values.size();
  oids_.assign(d.oids.begin(), d.oids.begin() + std::min(n, d.oids.size()));
  oids_.resize(n, pgoid::kUnspecified);
  const std::vector<uint32_t>* learned = nullptr;
  bool learned_looked = false;
  bool resolved = true;
  const std::vector<int16_t>& fmts = bind_.param_formats;
  for (size_t i = 0; i < n; ++i) {
    if (oids_[i] != pgoid::kUnspecified) continue;
    if (!learned_looked) {
      learned = types_.Find(d.key);
      learned_looked = true;
    }
    if (learned != nullptr && i < learned->size()) oids_[i] = (*learned)[i];
    const int16_t fmt = fmts.empty() ? 0 : (fmts.size() == 1 ? fmts[0] : (i < fmts.size() ? fmts[i] : 0));
    if (oids_[i] == pgoid::kUnspecified && fmt != 0 && !bind_.values[i].is_null) resolved = false;
  }
  return resolved;
}

bool Router::NeedsParamTypes(const PreparedDef& d, absl::string_view bind_body) {
  if (types_.Find(d.key) != nullptr) return false;
  if (!ParseBindMessage(bind_body, &bind_).ok()) return false;
  if (!ResolveTypes(d)) return true;
  // Every type declared: remember so, so later Binds skip this parse
  // (statements without parameters are not worth an entry).
  if (!oids_.empty() && std::find(oids_.begin(), oids_.end(), pgoid::kUnspecified) == oids_.end()) {
    types_.Put(d.key, oids_);
  }
  return false;
}

void Router::LearnParamTypes(const std::string& key, absl::string_view parameter_description) {
  auto oids = ParseParameterDescription(parameter_description);
  if (oids.ok()) types_.Put(key, std::move(*oids));
}

void Router::AddBindImpl(const PreparedDef& d, absl::string_view bind_body, bool may_defer, RoutedTxn* t) {
  // A malformed Bind yields nothing here; the server reports it to the client.
  if (!ParseBindMessage(bind_body, &bind_).ok()) return;
  if (may_defer && Traces(t->trace.size()) && ClassifyTxnControl(d.query) == TxnControl::kOther) {
    std::vector<std::string> vals;
    const std::vector<int16_t>& fmts = bind_.param_formats;
    for (size_t i = 0; i < bind_.values.size(); ++i) {
      const int16_t fmt = fmts.empty() ? 0 : (fmts.size() == 1 ? fmts[0] : (i < fmts.size() ? fmts[i] : 0));
      vals.push_back(fmt == 0 && !bind_.values[i].is_null ? std::string(bind_.values[i].bytes)
                                                         : std::string(kUnknownLiteral));
    }
    t->trace.push_back(Stmt::FromExtended(d.query, std::move(vals)));
  }
  if (!ResolveTypes(d) && may_defer) {
    t->deferred.push_back(DeferredBind{d, std::string(bind_body)});
    return;
  }
  if (!bound_.Decode(oids_, bind_.param_formats, bind_.values).ok()) return;
  if (bound_.undecodable() > 0) undecodable_ += bound_.undecodable();
  (void)extractor_->Extract(d.query, sched_.policy().extraction, bound_.params(), &t->txn.refs,
                            &t->txn.ref_mult, &t->ref_texts);
}

size_t Router::PredictRefs(RoutedTxn* t) {
  t->predicted.clear();
  if (templates_ == nullptr || t->trace.empty()) return 0;
  return templates_->PredictRefs(t->trace[0], *extractor_, sched_.policy().extraction, &t->predicted);
}

namespace {
// A transaction's texts for History::Record, which asks for one only when it
// adds the reference and keeps a copy (the transaction's buffer is reused).
history::History::TextProvider TextsOf(const RefTexts& texts) {
  return [&texts](size_t i) { return i < texts.size() ? std::string(texts[i]) : std::string(); };
}
}  // namespace

void Router::RecordConflict(const RoutedTxn& t) {
  // A split lead counts it alone; an unsplit one is not spared
  // (scheduler::RecordConflictAbort).
  const history::History::TextProvider provider = TextsOf(t.ref_texts);
  sched_.ReportOutcome(t.txn, scheduler::Outcome::kConflictAbort, &provider, /*spare_lead=*/false);
}

absl::Status Router::CheckSyntax(absl::string_view sql) {
  RefVec scratch;
  absl::Status st = extractor_->Extract(sql, sched_.policy().extraction, &scratch);
  if (!st.ok() && SyntaxErrorPosition(st).has_value()) return st;
  return absl::OkStatus();
}

int Router::Route(RoutedTxn* t, const RefVec& extra, bool want_affinity, bool* affinity, int num_queues) {
  t->txn.decision_start_ns = 0;
  t->txn.attempts = 1;
  *affinity = false;
  scheduler::Txn* on = &t->txn;
  scheduler::Txn whole;
  if (!extra.empty()) {
    whole.refs = t->txn.refs;
    for (RefId r : extra) {
      if (std::find(whole.refs.begin(), whole.refs.end(), r) == whole.refs.end()) whole.refs.push_back(r);
    }
    on = &whole;
  }
  const QueueId q = want_affinity ? sched_.Route(*on, affinity) : sched_.Route(*on);
  t->txn.queue = on->queue;
  t->txn.placed_by = on->placed_by;
  t->txn.placed_split = on->placed_split;
  t->split_k = 0;
  if (on->placed_split && sched_.hot_spots() != nullptr) {
    t->split_k = sched_.hot_spots()->K(on->placed_by);
  }
  // A pool smaller than its database's queue count (a [users] pool_size)
  // folds the queues onto its backends.
  return q.value() < 0 ? 0 : static_cast<int>(q.value() % num_queues);
}

void Router::Finish(RoutedTxn* txn, scheduler::Outcome o) {
  if (txn->conflict_free) return;  // nothing to learn
  for (const DeferredBind& b : txn->deferred) AddBindImpl(b.def, b.body, /*may_defer=*/false, txn);
  txn->deferred.clear();
  const RoutedTxn& t = *txn;
  if (templates_ != nullptr && !t.trace.empty() &&
      (o == scheduler::Outcome::kCommitted || o == scheduler::Outcome::kConflictAbort)) {
    templates_->Learn(t.trace, o == scheduler::Outcome::kCommitted);
  }
  if (o == scheduler::Outcome::kConflictAbort) {
    RecordConflict(t);
  } else {
    const history::History::TextProvider provider = TextsOf(t.ref_texts);
    sched_.ReportOutcome(t.txn, o, &provider);
  }
}

}  // namespace proxy
}  // namespace corral
