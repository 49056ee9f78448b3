#include "adapters/proxy/templates.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace corral {
namespace proxy {
namespace {

constexpr char kHole = '\x01';

bool IdentChar(char c) { return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '$'; }

bool AsInt(absl::string_view v, int64_t* out) { return absl::SimpleAtoi(v, out); }

// Whether an operand (not an operator) comes next after `shape`: its last
// non-space character is an operator or an opening parenthesis / comma.
bool SignedHere(const std::string& shape) {
  size_t k = shape.size();
  while (k > 0 && shape[k - 1] == ' ') --k;
  if (k == 0) return true;
  const char p = shape[k - 1];
  return !(IdentChar(p) || p == ')' || p == kHole || p == '"' || p == ']');
}

}  // namespace

std::string DisplayShape(const std::string& shape) {
  std::string s = shape;
  std::replace(s.begin(), s.end(), kHole, '?');
  return s;
}

Stmt Stmt::FromSimple(absl::string_view sql) {
  Stmt s;
  absl::string_view in = absl::StripAsciiWhitespace(sql);
  while (!in.empty() && (in.back() == ';' || absl::ascii_isspace(in.back()))) in.remove_suffix(1);
  s.shape.reserve(in.size());
  size_t i = 0;
  bool space = false;
  while (i < in.size()) {
    const char c = in[i];
    if (absl::ascii_isspace(c)) {
      space = true;
      ++i;
      continue;
    }
    if (space && !s.shape.empty()) s.shape.push_back(' ');
    space = false;
    if (c == '\'') {  // a string literal, '' inside
      size_t j = i + 1;
      while (j < in.size()) {
        if (in[j] == '\'' && j + 1 < in.size() && in[j + 1] == '\'') {
          j += 2;
        } else if (in[j] == '\'') {
          break;
        } else {
          ++j;
        }
      }
      j = std::min(j + 1, in.size());
      s.values.emplace_back(in.substr(i, j - i));
      s.shape.push_back(kHole);
      i = j;
    } else if (c == '"') {  // a quoted identifier: part of the shape
      size_t j = in.find('"', i + 1);
      j = j == absl::string_view::npos ? in.size() : j + 1;
      s.shape.append(in.data() + i, j - i);
      i = j;
    } else if ((absl::ascii_isdigit(c) && (i == 0 || !IdentChar(in[i - 1]))) ||
               (c == '-' && i + 1 < in.size() && absl::ascii_isdigit(in[i + 1]) && SignedHere(s.shape))) {
      // A number; a '-' right before it is its sign where an operand is
      // expected (pgbench's "v - -37" and "v - 37" are one shape).
      size_t j = c == '-' ? i + 1 : i;
      while (j < in.size() && (absl::ascii_isdigit(in[j]) || in[j] == '.')) ++j;
      s.values.emplace_back(in.substr(i, j - i));
      s.shape.push_back(kHole);
      i = j;
    } else if (IdentChar(c)) {
      size_t j = i;
      while (j < in.size() && IdentChar(in[j])) ++j;
      for (size_t k = i; k < j; ++k) s.shape.push_back(absl::ascii_tolower(static_cast<unsigned char>(in[k])));
      i = j;
    } else {
      s.shape.push_back(c);
      ++i;
    }
  }
  return s;
}

Stmt Stmt::FromExtended(absl::string_view query, std::vector<std::string> values) {
  Stmt s;
  s.shape = std::string(query);
  s.values = std::move(values);
  s.extended = true;
  return s;
}

std::string Stmt::Render(const std::vector<std::string>& vals) const {
  auto literal = [&](size_t k) -> std::string {
    if (k >= vals.size()) return std::string(kUnknownLiteral);
    const std::string& v = vals[k];
    if (!extended || v == kUnknownLiteral) return v;
    double d = 0;
    if (absl::SimpleAtod(v, &d) && !v.empty() && (absl::ascii_isdigit(v[0]) || v[0] == '-')) return v;
    std::string q = "'";
    for (char c : v) {
      if (c == '\'') q.push_back('\'');
      q.push_back(c);
    }
    q.push_back('\'');
    return q;
  };
  std::string out;
  if (!extended) {
    size_t k = 0;
    for (char c : shape) {
      if (c == kHole) {
        out += literal(k++);
      } else {
        out.push_back(c);
      }
    }
    return out;
  }
  for (size_t i = 0; i < shape.size(); ++i) {
    if (shape[i] == '$' && i + 1 < shape.size() && absl::ascii_isdigit(shape[i + 1]) &&
        (i == 0 || !IdentChar(shape[i - 1]))) {
      size_t j = i + 1;
      while (j < shape.size() && absl::ascii_isdigit(shape[j])) ++j;
      int n = 0;
      if (absl::SimpleAtoi(absl::string_view(shape).substr(i + 1, j - i - 1), &n) && n >= 1) {
        out += literal(static_cast<size_t>(n - 1));
        i = j - 1;
        continue;
      }
    }
    out.push_back(shape[i]);
  }
  return out;
}

bool Templates::Reliable(const Tracked& t) const {
  const double n = t.hits + t.misses;
  return t.seen >= opt_.min_observations && n > 0 && t.hits / n >= opt_.threshold;
}

bool Templates::Observe(Tracked* t, bool held) {
  t->hits = t->hits * opt_.decay + (held ? 1 : 0);
  t->misses = t->misses * opt_.decay + (held ? 0 : 1);
  ++t->seen;
  const bool now = Reliable(*t);
  if (t->reliable && !now) ++counters_.mappings_dropped;
  t->reliable = now;
  return t->misses > t->hits;
}

bool Templates::Holds(const Relation& r, const Stmt& first, const std::string& v) {
  switch (r.kind) {
    case Relation::kNone:
      return false;
    case Relation::kConst:
      return v == r.value;
    case Relation::kEqual:
      return r.param < static_cast<int>(first.values.size()) && first.values[r.param] == v;
    case Relation::kOffset: {
      int64_t a = 0, b = 0;
      return r.param < static_cast<int>(first.values.size()) && AsInt(first.values[r.param], &a) &&
             AsInt(v, &b) && b - a == r.delta;
    }
  }
  return false;
}

Templates::Relation Templates::Fresh(const Stmt& first, const std::string& v) {
  Relation r;
  for (size_t q = 0; q < first.values.size() && q < kMaxParams; ++q) {
    if (first.values[q] == v) {
      r.kind = Relation::kEqual;
      r.param = static_cast<int>(q);
      return r;
    }
  }
  int64_t b = 0;
  if (AsInt(v, &b)) {
    int64_t best = -1;
    for (size_t q = 0; q < first.values.size() && q < kMaxParams; ++q) {
      int64_t a = 0;
      if (!AsInt(first.values[q], &a)) continue;
      const int64_t d = std::llabs(b - a);
      if (best < 0 || d < best) {
        best = d;
        r.kind = Relation::kOffset;
        r.param = static_cast<int>(q);
        r.delta = b - a;
      }
    }
    if (r.kind == Relation::kOffset) return r;
  }
  r.kind = Relation::kConst;
  r.value = v;
  return r;
}

void Templates::Learn(const TxnTrace& trace, bool complete) {
  if (trace.empty() || opt_.max_templates == 0) return;
  const Stmt& first = trace[0];
  const std::string key = first.shape;
  auto it = by_shape_.find(key);
  if (it == by_shape_.end()) {
    while (by_shape_.size() >= opt_.max_templates) {
      by_shape_.erase(order_.front());
      order_.pop_front();
      ++counters_.evictions;
    }
    Template t;
    t.first_shape = key;
    t.lru = order_.insert(order_.end(), key);
    it = by_shape_.emplace(key, std::move(t)).first;
  } else {
    order_.splice(order_.end(), order_, it->second.lru);
  }
  Template& t = it->second;
  ++t.observations;
  ++counters_.learned;
  const size_t n = std::min(trace.size() - 1, kMaxPositions);
  if (t.positions.size() < n) t.positions.resize(n);
  for (size_t j = 0; j < t.positions.size(); ++j) {
    Position& p = t.positions[j];
    const Stmt* s = j + 1 < trace.size() ? &trace[j + 1] : nullptr;
    if (s == nullptr && !complete) break;
    const bool same = s != nullptr && s->shape == p.shape && s->extended == p.extended;
    if (Observe(&p.t, same) || p.shape.empty()) {
      // The shape lost its majority (or is new): relearn from this one.
      if (s == nullptr) continue;
      p.shape = s->shape;
      p.extended = s->extended;
      p.t = Tracked{1, 0, 1, false};
      p.params.clear();
      for (size_t k = 0; k < s->values.size() && k < kMaxParams; ++k) {
        p.params.push_back(Param{Fresh(first, s->values[k]), Tracked{1, 0, 1, false}, s->values[k]});
      }
      continue;
    }
    if (!same) continue;
    for (size_t k = 0; k < p.params.size() && k < s->values.size(); ++k) {
      Param& pr = p.params[k];
      const std::string& v = s->values[k];
      if (Observe(&pr.t, Holds(pr.rel, first, v))) {
        if (v == pr.last) {
          pr.rel = Relation{Relation::kConst, 0, 0, v};
        } else {
          pr.rel = Fresh(first, v);
        }
        pr.t = Tracked{1, 0, 1, false};
      }
      pr.last = v;
    }
  }
}

std::vector<std::string> Templates::Predict(const Stmt& first) {
  std::vector<std::string> out;
  auto it = by_shape_.find(first.shape);
  if (it == by_shape_.end()) return out;
  for (const Position& p : it->second.positions) {
    if (!p.t.reliable) continue;
    std::vector<std::string> vals;
    bool any = false;
    for (const Param& pr : p.params) {
      std::string v(kUnknownLiteral);
      if (pr.t.reliable) {
        switch (pr.rel.kind) {
          case Relation::kConst:
            v = pr.rel.value;
            break;
          case Relation::kEqual:
            if (pr.rel.param < static_cast<int>(first.values.size())) v = first.values[pr.rel.param];
            break;
          case Relation::kOffset: {
            int64_t a = 0;
            if (pr.rel.param < static_cast<int>(first.values.size()) && AsInt(first.values[pr.rel.param], &a)) {
              v = absl::StrCat(a + pr.rel.delta);
            }
            break;
          }
          case Relation::kNone:
            break;
        }
      }
      if (v != kUnknownLiteral) any = true;
      vals.push_back(std::move(v));
    }
    if (!any && !p.params.empty()) continue;  // nothing of it is predictable
    Stmt shape;
    shape.shape = p.shape;
    shape.extended = p.extended;
    out.push_back(shape.Render(vals));
  }
  if (!out.empty()) ++counters_.predictions;
  return out;
}

std::string Templates::Describe(const Relation& r) {
  switch (r.kind) {
    case Relation::kEqual:
      return absl::StrCat("=p", r.param + 1);
    case Relation::kOffset:
      return absl::StrCat("p", r.param + 1, r.delta >= 0 ? "+" : "", r.delta);
    case Relation::kConst:
      return r.value;
    case Relation::kNone:
      break;
  }
  return "?";
}

std::vector<std::vector<std::string>> Templates::Rows() const {
  std::vector<std::vector<std::string>> rows;
  for (const std::string& key : order_) {
    const Template& t = by_shape_.at(key);
    for (size_t j = 0; j < t.positions.size(); ++j) {
      const Position& p = t.positions[j];
      std::string rels;
      for (const Param& pr : p.params) {
        if (!rels.empty()) rels += ", ";
        rels += pr.t.reliable ? Describe(pr.rel) : "?";
      }
      rows.push_back({DisplayShape(t.first_shape), std::to_string(t.observations), std::to_string(j + 2),
                      DisplayShape(p.shape), rels, p.t.reliable ? "yes" : "no"});
    }
  }
  return rows;
}

size_t Templates::PredictRefs(const Stmt& first, RefExtractor& extractor, const ExtractionPolicy& policy,
                              RefVec* out) {
  const size_t before = out->size();
  RefVec refs;
  RefMult mult;
  std::vector<std::string> texts;
  for (const std::string& sql : Predict(first)) {
    refs.clear();
    mult.clear();
    texts.clear();
    (void)extractor.Extract(sql, policy, ParamSpan(), &refs, &mult, &texts);
    for (size_t i = 0; i < refs.size(); ++i) {
      const bool unknown = i < texts.size() && texts[i].find("corral_unpredicted") != std::string::npos;
      if (!unknown && std::find(out->begin() + static_cast<std::ptrdiff_t>(before), out->end(), refs[i]) == out->end()) {
        out->push_back(refs[i]);
      }
    }
  }
  return out->size() - before;
}

}  // namespace proxy
}  // namespace corral
