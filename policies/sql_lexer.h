// A small PostgreSQL lexer for the cache-hit path of reference extraction.
//
// It turns a statement into its *shape key* (the token stream with number
// literals replaced by `?`, string literals by `'?'`, whitespace and comments
// dropped, unquoted words lower-cased) and the literal values in order, without
// calling libpg_query. Two statements with the same key parse to the same tree
// shape, so the extraction plan compiled for one serves the other.
//
// Handled: '..' strings with '' escapes, E'..' strings (\n \t \b \f \r \\ \'
// and backslash-anything-else), numbers (int, decimal, exponent), $n
// parameters, identifiers, "quoted" identifiers, -- and nested /* */
// comments, operators. Not handled (the result is marked not cacheable and the
// caller takes the libpg_query path every time): dollar quoting, B''/X''/U&''/
// N'' strings, E'' octal/hex/unicode escapes, string continuation across a
// newline, unterminated strings or comments, a number running into a word.
//
//   LexResult lx;                     // reuse across calls: no allocation once warm
//   LexSql("UPDATE t SET a=5 WHERE b='x'", &lx);
//   lx.key == "update t set a = ? where b = '?'";  lx.literals.size() == 2
//   lx.Value(lx.literals[1], sql) == "x"
//
// Thread-safety: LexSql is reentrant; a LexResult belongs to one thread.
#ifndef CORRAL_POLICIES_SQL_LEXER_H_
#define CORRAL_POLICIES_SQL_LEXER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"

namespace corral {

struct LexedLiteral {
  enum class Kind : uint8_t { kNumber, kString };
  Kind kind = Kind::kNumber;
  bool in_arena = false;  // value lives in LexResult::arena, else in the input
  uint32_t offset = 0;    // byte offset of the token in the input (libpg_query's location)
  uint32_t begin = 0;     // value bytes [begin, begin+len) in input or arena
  uint32_t len = 0;
};

struct LexResult {
  std::string key;
  std::vector<LexedLiteral> literals;
  std::string arena;  // unescaped string values
  bool cacheable = true;
  // The most operator characters (`+-*/<>=~!@#%^&|`?`) in a row outside
  // strings, whitespace and comments between them not counted (`+ + +` and
  // `+/**/++` are 3), up to where the lexer stopped (dollar quoting and the
  // like stop it; see above). Such a chain is one operator or a chain of
  // prefix operators, each nesting the rest one level deeper in the parse
  // tree; and libpg_query's lexer takes time quadratic in an unbroken run
  // (PostgreSQL's scan.l rescans it after dropping each trailing + or -).
  // Reference extraction refuses a statement whose chain is over
  // kMaxOperatorRun before parsing it.
  uint32_t longest_operator = 0;

  void Clear() {
    key.clear();
    literals.clear();
    arena.clear();
    cacheable = true;
    longest_operator = 0;
  }
  // The literal's value: number text as written, or the unescaped string.
  absl::string_view Value(const LexedLiteral& l, absl::string_view input) const {
    return l.in_arena ? absl::string_view(arena).substr(l.begin, l.len) : input.substr(l.begin, l.len);
  }
};

// PostgreSQL's longest operator name (NAMEDATALEN - 1): a longer chain of
// operator characters is either "operator too long" or a chain of prefix
// operators (`1 ++++...+ 2`, `1 + + + ... 2`), which only hostile SQL writes.
inline constexpr uint32_t kMaxOperatorRun = 63;

void LexSql(absl::string_view sql, LexResult* out);

// One statement of a `;`-separated script.
struct StatementSpan {
  size_t offset = 0;       // byte offset of `text` in the script
  absl::string_view text;  // without the `;`, leading/trailing whitespace trimmed
};
// Splits at top-level `;` (not inside strings, quoted identifiers, comments
// or dollar quotes). Empty statements are dropped.
std::vector<StatementSpan> SplitStatements(absl::string_view script);

}  // namespace corral

#endif  // CORRAL_POLICIES_SQL_LEXER_H_
