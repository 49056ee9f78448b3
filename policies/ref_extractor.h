// Reference extraction: SQL text (or a prepared statement's text plus its
// bound parameters) -> the transaction's references under an
// ExtractionPolicy (Literal|Canonical x Single|All), as RefIds appended to a
// RefVec and, on request, as texts ("w_id=5", "i_id=2 AND w_id=5").
//
// What yields a reference (per statement; a string may hold several):
//  - WHERE / JOIN ... ON equalities `col = const|$n` in AND trees (either
//    side); a predicate under NOT yields nothing from that subtree;
//    `col = col`, ranges, LIKE, IS NULL, `<>` and other operators yield nothing.
//  - `col IN (v1, v2, ...)`, `col = ANY(ARRAY[v1, v2])`, `col = ANY('{v1,v2}')`,
//    `col = ANY($n)` (an array parameter: ParamValue::is_array, or a text
//    array literal) and OR-chains of such equalities on one column
//    (`a = 1 OR a = 2 OR a IN (3, 4)`) are all one IN list: one reference per
//    element (NULL elements yield nothing). An OR whose disjuncts name
//    different columns, or hold anything but such equalities, yields
//    nothing. Under All
//    each element of the conjunction's first IN list makes its own
//    conjunction with the equalities (`IN (1,2)` and `w_id=5` -> `i_id=1 AND
//    w_id=5`, `i_id=2 AND w_id=5`); further IN lists of the same conjunction
//    are left out under All.
//  - UPDATE `SET col = const|$n`: each its own reference in both groupings
//    (only for foreign-key-class columns under InsertRefs::kForeignKeys, as
//    for INSERT).
//  - INSERT (col, ...) VALUES (...), (...): col=value per column (only the
//    foreign-key-class columns when the Schema says InsertRefs::kForeignKeys
//    and the table has such columns); under All
//    one conjunction per row. Without a column list, the schema's column order.
//  - `SELECT f(args)`, `SELECT * FROM f(args)`, `CALL p(args)` for functions
//    the schema knows: argument i yields `<param name>=<value>` (named
//    arguments by name); under All the arguments of one call are one
//    conjunction.
//  - Sub-selects (FROM subqueries, IN/EXISTS/scalar sublinks under AND, CTEs,
//    UNION arms) contribute their own conjunctions.
//  - NULL values, expressions (`s_quantity - 5`) and unbound parameters yield
//    nothing; nor does an array parameter bound where a scalar is compared. DDL, SET, SHOW, BEGIN/COMMIT, ... yield nothing.
// Values follow policies/ref_value.h (numbers canonical, strings quoted).
// Parameters are ParamValues (policies/param_value.h): text as sent, or typed
// values decoded from a Bind's text or binary formats by BoundParams
// (policies/pg_params.h), which give the same references.
// Names: the column as written (qualifier dropped; alias and table resolved
// through FROM), `table.column` where the schema has the column name in
// several tables; Canonical uses Schema::CanonicalName. Without a schema
// (empty Schema) both namings are the column name as written.
// A reference whose RefId is already in the output RefVec is not appended
// again (a transaction's references are a set).
//
// Cost: a statement's *shape* (policies/sql_lexer.h) is parsed with
// libpg_query once and compiled into a plan that says which literal slot or
// parameter feeds which reference; later statements of the shape only lex and
// fill values in (no allocation for RefIds once the thread's scratch is warm).
// A statement whose exact text the thread has seen before (a prepared
// template with parameters, or a statement without literals) skips even the
// lexer: a per-thread 256-entry direct-mapped cache keyed by a hash of the
// raw text (each hit verified byte for byte) holds its plan and its own
// literal values.
// The plan cache is bounded (clock eviction) and sharded; a lookup takes one
// shard's reader lock only. In front of it each thread keeps a 64-entry
// direct-mapped cache of plan pointers, so a repeated shape is found with no
// lock and no shared write at all.
//
//   auto schema = ...;  // std::shared_ptr<const Schema>, see policies/schema.h
//   RefExtractor ex(schema);
//   RefVec ids;
//   std::vector<std::string> texts;
//   absl::Status st = ex.Extract("UPDATE stock SET s_quantity=$1 WHERE s_i_id=$2 AND s_w_id=$3",
//                                {RefNaming::kCanonical, RefGrouping::kAll},
//                                {ParamValue{"6"}, ParamValue{"2"}, ParamValue{"5"}}, &ids, &texts);
//   // texts: "s_quantity=6", "i_id=2 AND w_id=5"
//
// Thread-safety: RefExtractor is thread-safe; share one across threads.
#ifndef CORRAL_POLICIES_REF_EXTRACTOR_H_
#define CORRAL_POLICIES_REF_EXTRACTOR_H_

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "absl/types/span.h"
#include "common/ids.h"
#include "policies/param_value.h"
#include "policies/policy.h"
#include "policies/ref_texts.h"
#include "policies/schema.h"

namespace corral {

// The byte position (1-based, into the statement text) carried by a syntax
// error from RefExtractor, if any.
absl::optional<int> SyntaxErrorPosition(const absl::Status& status);

// What Extract tells about a statement text beside its references.
struct StatementFacts {
  // In: append no references for a plain read (its caller will not route it).
  bool skip_plain_read = false;
  // Out: every statement of the text is a SELECT that only reads: no FOR
  // UPDATE / SHARE, no INTO, no data-modifying WITH, and no function call
  // but of a fixed set of built-ins that neither write, lock nor wait
  // (count, sum, lower, now, ...; never one the schema knows as the
  // database's own). Outside a transaction block at READ COMMITTED such a
  // statement can neither fail with nor cause a serialization failure.
  // False when the text did not parse.
  bool plain_read = false;
};

class RefExtractor {
 public:
  struct Options {
    size_t max_shapes = 8192;  // cached statement shapes, all shards together
    int shards = 16;
    // Tests only: replaces the hash of a statement's raw text that keys the
    // per-thread raw-text cache (to force collisions). Null: the default.
    uint64_t (*text_hash_for_testing)(absl::string_view) = nullptr;
  };
  struct Stats {
    uint64_t misses = 0;  // shapes compiled and inserted (libpg_query runs)
    size_t entries = 0;   // shapes in the shared cache now
  };

  // `schema` may be null (no schema: names as written).
  explicit RefExtractor(std::shared_ptr<const Schema> schema);
  RefExtractor(std::shared_ptr<const Schema> schema, Options options);
  ~RefExtractor();
  RefExtractor(const RefExtractor&) = delete;
  RefExtractor& operator=(const RefExtractor&) = delete;

  // Appends the statement's references to *ids (skipping ids already there)
  // and, if `texts` is non-null, their texts in the same order. A syntax error
  // returns InvalidArgument with the position (SyntaxErrorPosition) and
  // appends nothing.
  absl::Status Extract(absl::string_view sql, ExtractionPolicy policy, ParamSpan params, RefVec* ids,
                       TextSink texts = nullptr) {
    return Extract(sql, policy, params, ids, nullptr, texts);
  }
  // As above; `mult` (may be null) is kept parallel to *ids and counts the
  // statements naming each reference: a reference appended gets 1, one
  // already in *ids from an earlier statement is counted up once
  // (saturating at 65535), however often this statement names it. Entries
  // of *ids without a count yet (mult shorter than ids) count as 1 first.
  // `facts` (may be null): see StatementFacts.
  absl::Status Extract(absl::string_view sql, ExtractionPolicy policy, ParamSpan params, RefVec* ids,
                       RefMult* mult, TextSink texts = nullptr, StatementFacts* facts = nullptr);
  absl::Status Extract(absl::string_view sql, ExtractionPolicy policy, RefVec* ids,
                       TextSink texts = nullptr) {
    return Extract(sql, policy, ParamSpan(), ids, texts);
  }
  // The same without the cache: libpg_query every time, values taken from the
  // parse tree (the reference the cache is tested against).
  absl::Status ExtractUncached(absl::string_view sql, ExtractionPolicy policy, ParamSpan params,
                               RefVec* ids, TextSink texts = nullptr) const {
    return ExtractUncached(sql, policy, params, ids, nullptr, texts);
  }
  absl::Status ExtractUncached(absl::string_view sql, ExtractionPolicy policy, ParamSpan params,
                               RefVec* ids, RefMult* mult, TextSink texts = nullptr,
                               StatementFacts* facts = nullptr) const;

  // A statement template prepared once, as a driver's Parse: the text, its
  // compiled shape and its own literal values. ExtractPrepared then costs
  // only the parameters' values: no hashing or comparing of the text, no
  // cache lookup (what the runner does for a workload's constant templates,
  // and a proxy can do per client prepared statement). Immutable and
  // shareable across threads; it keeps its plan alive.
  class Prepared;
  // A syntax error returns InvalidArgument as Extract does.
  absl::StatusOr<std::shared_ptr<const Prepared>> Prepare(absl::string_view sql);
  // As Extract(prepared text, ...), with the same results.
  absl::Status ExtractPrepared(const Prepared& prepared, ExtractionPolicy policy, ParamSpan params,
                               RefVec* ids, RefMult* mult = nullptr, TextSink texts = nullptr,
                               StatementFacts* facts = nullptr) const;

  Stats stats() const;
  const Schema& schema() const { return *schema_; }

  struct Plan;  // a compiled statement shape (ref_extractor.cc)

 private:
  class Cache;
  uint64_t TextHash(absl::string_view sql) const;
  const uint64_t id_;  // tags this extractor's entries in the per-thread front caches
  uint64_t (*const text_hash_)(absl::string_view);
  std::shared_ptr<const Schema> schema_;
  std::unique_ptr<Cache> cache_;
};

}  // namespace corral

#endif  // CORRAL_POLICIES_REF_EXTRACTOR_H_
