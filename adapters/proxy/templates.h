// Statement templates (issue 24): per first-statement shape, which shapes
// follow it in a transaction and how their parameters relate to the first
// statement's (equal to one of its parameters, that plus a constant
// integer offset, a constant, or unpredictable), learned from finished
// transactions; on a first statement, the later statements the learned
// mappings predict, so the proxy can route on their references before the
// first statement takes its snapshot.
//
// A statement is a shape and its parameter values: a simple Query's text
// with its numeric and quoted-string literals taken out (ShapeOf), or an
// extended-protocol statement's text (with $n) and its text parameters.
// Only the first statement's values feed predictions: a later statement's
// parameter that depends on another later statement (or on nothing seen
// so far) is unpredictable, and is rendered as kUnknownLiteral (references
// naming it must be dropped by the caller).
//
// Reliability: counts decayed by `decay` per observation of the template
// (a sliding window of about 1 / (1 - decay) transactions); a shape or a
// relation is used when observed at least `min_observations` times and
// right in at least `threshold` of its window. A mapping that stops
// holding loses its majority, is dropped (counted) and relearned from the
// new observations.
//
//   Templates t(Templates::Options{});
//   TxnTrace trace;  // the transaction's statements, in order
//   trace.push_back(Stmt::FromSimple("SELECT v FROM a WHERE id = 5"));
//   ...
//   t.Learn(trace);                                  // at its end
//   std::vector<std::string> sql = t.Predict(next_first);  // later statements
//
// Memory: at most max_templates first shapes (the least recently seen
// goes), kMaxPositions later statements each, kMaxParams parameters each.
//
// Thread safety: not thread-safe; the proxy's event loop owns one per
// database.
#ifndef CORRAL_ADAPTERS_PROXY_TEMPLATES_H_
#define CORRAL_ADAPTERS_PROXY_TEMPLATES_H_

#include <cstdint>
#include <list>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/string_view.h"
#include "policies/ref_extractor.h"

namespace corral {
namespace proxy {

// A literal that renders a parameter the template cannot predict.
inline constexpr absl::string_view kUnknownLiteral = "'corral_unpredicted'";

struct Stmt {
  std::string shape;                // literals / parameters as \x01 (simple) or $n (extended)
  std::vector<std::string> values;  // literal tokens (simple: with quotes) or text values
  bool extended = false;

  // A simple Query's statement: numeric and '...' literals taken out.
  static Stmt FromSimple(absl::string_view sql);
  // An extended-protocol statement: its text and text parameter values
  // (a binary or NULL value as kUnknownLiteral).
  static Stmt FromExtended(absl::string_view query, std::vector<std::string> values);
  // The statement's SQL with `values` in place (extended: numbers bare,
  // other values quoted; kUnknownLiteral as is).
  std::string Render(const std::vector<std::string>& vals) const;
};
using TxnTrace = std::vector<Stmt>;

// A shape for people (SHOW TEMPLATES, SHOW TEMPLATE_CAPS): its literal
// holes as '?'.
std::string DisplayShape(const std::string& shape);

class Templates {
 public:
  static constexpr size_t kMaxPositions = 8;
  static constexpr size_t kMaxParams = 16;

  struct Options {
    size_t max_templates = 1024;
    double threshold = 0.9;
    int min_observations = 20;
    double decay = 0.95;
  };
  struct Counters {
    int64_t learned = 0;          // transactions learned from
    int64_t predictions = 0;      // first statements with a prediction
    int64_t mappings_dropped = 0; // reliable shapes / relations that stopped holding
    int64_t evictions = 0;        // templates dropped for max_templates
  };

  explicit Templates(const Options& o) : opt_(o) {}

  // A finished transaction: its statements in order (trace[0] the first).
  // `complete` false (it failed part-way, e.g. by a conflict): only the
  // positions it reached are observed, a missing one is no evidence.
  void Learn(const TxnTrace& trace, bool complete = true);
  // The later statements the reliable mappings of first's template
  // predict, rendered as SQL (unpredictable parameters as kUnknownLiteral).
  std::vector<std::string> Predict(const Stmt& first);
  // Their references: each predicted statement extracted under `policy`,
  // those naming an unpredictable parameter dropped, each reference once,
  // appended to *out; returns how many were appended. (The proxy's Router
  // routes on them; the embedded runner with route_on = templates too.)
  size_t PredictRefs(const Stmt& first, RefExtractor& extractor, const ExtractionPolicy& policy,
                     RefVec* out);

  // One row per (template, position) for SHOW TEMPLATES: first shape,
  // observations, position, shape, relations ("=$1", "$1+1", "'x'", "?"),
  // reliability ("yes" / "no").
  std::vector<std::vector<std::string>> Rows() const;
  const Counters& counters() const { return counters_; }
  size_t size() const { return by_shape_.size(); }

 private:
  struct Relation {
    enum Kind { kNone, kEqual, kOffset, kConst } kind = kNone;
    int param = 0;        // of the first statement (kEqual, kOffset)
    int64_t delta = 0;    // kOffset
    std::string value;    // kConst
  };
  struct Tracked {  // a candidate and its decayed hits / misses
    double hits = 0, misses = 0;
    int64_t seen = 0;
    bool reliable = false;
  };
  struct Param {
    Relation rel;
    Tracked t;
    std::string last;  // the value seen last: a repeat that broke rel is a constant
  };
  struct Position {
    std::string shape;
    bool extended = false;
    Tracked t;
    std::vector<Param> params;
  };
  struct Template {
    std::string first_shape;
    int64_t observations = 0;
    std::vector<Position> positions;
    std::list<std::string>::iterator lru;
  };

  // Updates `t` with one observation; true when the candidate should be
  // replaced (it lost its majority). Counts a reliable one that stops being so.
  bool Observe(Tracked* t, bool held);
  bool Reliable(const Tracked& t) const;
  static bool Holds(const Relation& r, const Stmt& first, const std::string& v);
  static Relation Fresh(const Stmt& first, const std::string& v);
  static std::string Describe(const Relation& r);

  Options opt_;
  Counters counters_;
  absl::flat_hash_map<std::string, Template> by_shape_;
  std::list<std::string> order_;  // least recently seen first
};

}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_TEMPLATES_H_
