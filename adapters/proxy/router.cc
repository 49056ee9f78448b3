#include "adapters/proxy/router.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "adapters/proxy/wire.h"

namespace corral {
namespace proxy {

TxnControl ClassifyTxnControl(absl::string_view sql) {
  absl::string_view s = absl::StripAsciiWhitespace(sql);
  while (!s.empty() && (s.back() == ';' || absl::ascii_isspace(s.back()))) s.remove_suffix(1);
  if (s.empty() || s.find(';') != absl::string_view::npos) return TxnControl::kOther;
  size_t i = 0;
  while (i < s.size() && absl::ascii_isalpha(s[i])) ++i;
  const std::string w = absl::AsciiStrToLower(s.substr(0, i));
  const std::string rest = absl::AsciiStrToLower(absl::StripAsciiWhitespace(s.substr(i)));
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

void RoutedTxn::ClearRefs() {
  txn.refs.clear();
  txn.ref_mult.clear();
  ref_texts.clear();
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

Router::Router(scheduler::Scheduler* scheduler, std::shared_ptr<const Schema> schema)
    : sched_(*scheduler), extractor_(std::make_unique<RefExtractor>(std::move(schema))) {}

void Router::SetSchema(std::shared_ptr<const Schema> schema) {
  extractor_ = std::make_unique<RefExtractor>(std::move(schema));
}

void Router::AddQuery(absl::string_view sql, RoutedTxn* t) {
  (void)extractor_->Extract(sql, sched_.policy().extraction, ParamSpan(), &t->txn.refs, &t->txn.ref_mult,
                            &t->ref_texts);
}

void Router::AddUnit(const std::deque<Msg>& pending, size_t end, const StatementMap& stmts, RoutedTxn* t) {
  absl::flat_hash_map<std::string, std::string> local;  // statements parsed in this unit
  for (size_t i = 0; i <= end; ++i) {
    const Msg& u = pending[i];
    wire::Reader r(u.body());
    if (u.type == 'P') {
      std::string name(r.CString());
      local[name] = std::string(r.CString());
    } else if (u.type == 'B') {
      r.CString();  // portal
      const std::string* text = FindStatementText(local, stmts, std::string(r.CString()));
      if (text != nullptr) AddBind(*text, r.rest(), t);
    }
  }
}

void Router::AddBind(const std::string& text, absl::string_view bind_params, RoutedTxn* t) {
  wire::Reader r(bind_params);
  const int16_t nfmt = r.Int16();
  std::vector<int16_t> fmts(std::max<int16_t>(nfmt, 0));
  for (auto& f : fmts) f = r.Int16();
  const int16_t np = r.Int16();
  params_.clear();
  for (int16_t p = 0; p < np && r.ok(); ++p) {
    const int32_t len = r.Int32();
    const int16_t fmt = fmts.empty() ? 0 : (fmts.size() == 1 ? fmts[0] : fmts[p]);
    ParamValue v;
    if (len < 0) {
      v.is_null = true;
    } else {
      v.text = r.Bytes(len);
      if (fmt != 0) v.is_null = true;  // binary: no reference from it
    }
    params_.push_back(v);
  }
  if (!r.ok()) return;
  (void)extractor_->Extract(text, sched_.policy().extraction, ParamSpan(params_), &t->txn.refs,
                            &t->txn.ref_mult, &t->ref_texts);
}

absl::Status Router::CheckSyntax(absl::string_view sql) {
  RefVec scratch;
  absl::Status st = extractor_->Extract(sql, sched_.policy().extraction, &scratch);
  if (!st.ok() && SyntaxErrorPosition(st).has_value()) return st;
  return absl::OkStatus();
}

int Router::Route(RoutedTxn* t, bool want_affinity, bool* affinity, int num_queues) {
  t->txn.decision_start_ns = 0;
  t->txn.attempts = 1;
  *affinity = false;
  const QueueId q = want_affinity ? sched_.Route(t->txn, affinity) : sched_.Route(t->txn);
  return std::clamp<int>(q.value(), 0, num_queues - 1);
}

void Router::Finish(const RoutedTxn& t, scheduler::Outcome o) {
  if (o == scheduler::Outcome::kCommitted || o == scheduler::Outcome::kConflictAbort) {
    const std::vector<std::string>& texts = t.ref_texts;
    history::History::TextProvider provider = [&texts](size_t i) {
      return i < texts.size() ? texts[i] : std::string();
    };
    sched_.history().Record(t.txn.refs, o == scheduler::Outcome::kCommitted, &provider);
  } else {
    sched_.ReportOutcome(t.txn, o);
  }
}

}  // namespace proxy
}  // namespace corral
