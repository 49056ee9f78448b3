#include "policies/sql_lexer.h"

#include <cstring>

namespace corral {
namespace {

// PostgreSQL 15's scanner (libpg_query 15) `space`: no vertical tab, which
// it rejects as a syntax error (a lexer that skipped it gave such a text the
// shape of a valid one; found by ref_extractor_fuzzer).
inline bool IsSpace(char c) {
  return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f';
}
// PostgreSQL's `newline` ([\n\r]): it ends a -- comment and lets 'a'
// 'b' continue a string ("--x\r-y" is a comment then -y; a lexer that
// waited for \n took it for one comment: found by ref_extractor_fuzzer).
inline bool IsNewline(char c) { return c == '\n' || c == '\r'; }
inline bool IsDigit(char c) { return c >= '0' && c <= '9'; }
inline bool IsIdentStart(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
         static_cast<unsigned char>(c) >= 0x80;
}
inline bool IsIdentCont(char c) { return IsIdentStart(c) || IsDigit(c) || c == '$'; }
inline bool IsOpChar(char c) { return c != '\0' && std::strchr("+-*/<>=~!@#%^&|`?", c) != nullptr; }
inline char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

// Skips a nested /* */ comment starting at s[i] == '/'. Returns the index after
// it, or npos when unterminated.
size_t SkipBlockComment(absl::string_view s, size_t i) {
  int depth = 0;
  size_t n = s.size();
  while (i < n) {
    if (s[i] == '/' && i + 1 < n && s[i + 1] == '*') {
      ++depth;
      i += 2;
    } else if (s[i] == '*' && i + 1 < n && s[i + 1] == '/') {
      --depth;
      i += 2;
      if (depth == 0) return i;
    } else {
      ++i;
    }
  }
  return absl::string_view::npos;
}

}  // namespace

namespace {

enum CharClass : uint8_t { kOther, kSpace, kIdent, kDigit, kOp };

struct Tables {
  uint8_t cls[256];
  bool ident_cont[256];
  char lower[256];
  Tables() {
    for (int c = 0; c < 256; ++c) {
      char ch = static_cast<char>(c);
      cls[c] = IsSpace(ch) ? kSpace : IsIdentStart(ch) ? kIdent : IsDigit(ch) ? kDigit : IsOpChar(ch) ? kOp : kOther;
      ident_cont[c] = IsIdentCont(ch);
      lower[c] = Lower(ch);
    }
  }
};

const Tables& T() {
  static const Tables t;
  return t;
}

}  // namespace

void LexSql(absl::string_view s, LexResult* out) {
  out->Clear();
  const Tables& tab = T();
  const size_t n = s.size();
  // The key is written through a raw pointer: it is at most 2n+4 bytes (each
  // token adds at most one separator; a literal's placeholder is no longer
  // than the literal, '' -> '?' aside, which its quotes pay for).
  out->key.resize(2 * n + 4);
  char* const kbeg = &out->key[0];
  char* k = kbeg;
  size_t i = 0;
  auto sep = [&]() {
    if (k != kbeg) *k++ = ' ';
  };
  auto finish = [&]() { out->key.resize(k - kbeg); };
  auto fail = [&]() {
    out->cacheable = false;
    finish();
  };
  // Operator characters since the last token of another kind (whitespace and
  // comments write nothing to the key, so they do not break the chain).
  const char* op_end = nullptr;  // the key's end after the last operator token
  uint32_t op_chain = 0;
  while (i < n) {
    const char c = s[i];
    const uint8_t cl = tab.cls[static_cast<unsigned char>(c)];
    if (cl == kSpace) {
      ++i;
      continue;
    }
    if (cl == kIdent) {
      const char c1 = i + 1 < n ? s[i + 1] : '\0';
      const char lc = tab.lower[static_cast<unsigned char>(c)];
      if (c1 == '\'') {
        if (lc == 'b' || lc == 'x' || lc == 'n') return fail();
      } else if (lc == 'u' && c1 == '&' && i + 2 < n && (s[i + 2] == '\'' || s[i + 2] == '"')) {
        return fail();
      }
      if (!(lc == 'e' && c1 == '\'')) {
        sep();
        size_t j = i;
        while (j < n && tab.ident_cont[static_cast<unsigned char>(s[j])]) {
          *k++ = tab.lower[static_cast<unsigned char>(s[j])];
          ++j;
        }
        i = j;
        continue;
      }
      // E'...' falls through to the string case.
    }
    if (c == '-' && i + 1 < n && s[i + 1] == '-') {
      while (i < n && !IsNewline(s[i])) ++i;
      continue;
    }
    if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t e = SkipBlockComment(s, i);
      if (e == absl::string_view::npos) return fail();
      i = e;
      continue;
    }
    if (c == '\'' || cl == kIdent) {  // cl == kIdent here only for E'
      const bool estring = c != '\'';
      LexedLiteral lit;
      lit.kind = LexedLiteral::Kind::kString;
      lit.offset = static_cast<uint32_t>(i);
      size_t j = i + (estring ? 2 : 1);
      const size_t body = j;
      bool needs_copy = estring;
      while (true) {
        if (j >= n) return fail();  // unterminated
        const char cj = s[j];
        if (cj == '\'') {
          if (j + 1 < n && s[j + 1] == '\'') {
            needs_copy = true;
            j += 2;
            continue;
          }
          break;
        }
        if (estring && cj == '\\') {
          if (j + 1 >= n) return fail();
          j += 2;
          continue;
        }
        ++j;
      }
      const size_t end = j;  // closing quote
      // PostgreSQL checks an escape string's bytes against the encoding
      // (E'\<0x8d>' is "invalid byte sequence for encoding UTF8") and the
      // shape key hides them: leave non-ASCII escape strings to libpg_query
      // (found by ref_extractor_fuzzer).
      if (estring) {
        for (size_t q = body; q < end; ++q) {
          if (static_cast<unsigned char>(s[q]) >= 0x80) return fail();
        }
      }
      if (!needs_copy) {
        lit.begin = static_cast<uint32_t>(body);
        lit.len = static_cast<uint32_t>(end - body);
      } else {
        lit.in_arena = true;
        lit.begin = static_cast<uint32_t>(out->arena.size());
        for (size_t q = body; q < end; ++q) {
          char ch = s[q];
          if (ch == '\'') {  // doubled quote
            out->arena.push_back('\'');
            ++q;
            continue;
          }
          if (estring && ch == '\\') {
            char e = s[++q];
            switch (e) {
              case 'b': out->arena.push_back('\b'); break;
              case 'f': out->arena.push_back('\f'); break;
              case 'n': out->arena.push_back('\n'); break;
              case 'r': out->arena.push_back('\r'); break;
              case 't': out->arena.push_back('\t'); break;
              case 'x': case 'u': case 'U':
                return fail();
              default:
                if (e >= '0' && e <= '7') return fail();
                out->arena.push_back(e);
            }
            continue;
          }
          out->arena.push_back(ch);
        }
        lit.len = static_cast<uint32_t>(out->arena.size() - lit.begin);
      }
      i = end + 1;
      // 'a'<newline>'b' is one literal in PostgreSQL: not handled here.
      size_t q = i;
      bool newline = false;
      while (q < n && IsSpace(s[q])) newline |= IsNewline(s[q++]);
      if (newline && q < n && s[q] == '\'') return fail();
      out->literals.push_back(lit);
      sep();
      *k++ = '\'';
      *k++ = '?';
      *k++ = '\'';
      continue;
    }
    if (c == '"') {
      size_t j = i + 1;
      while (true) {
        if (j >= n) return fail();
        if (s[j] == '"') {
          if (j + 1 < n && s[j + 1] == '"') {
            j += 2;
            continue;
          }
          break;
        }
        ++j;
      }
      sep();
      std::memcpy(k, s.data() + i, j + 1 - i);
      k += j + 1 - i;
      i = j + 1;
      continue;
    }
    if (cl == kDigit || (c == '.' && i + 1 < n && IsDigit(s[i + 1]))) {
      size_t j = i;
      while (j < n && IsDigit(s[j])) ++j;
      if (j < n && s[j] == '.' && !(j + 1 < n && s[j + 1] == '.')) {
        ++j;
        while (j < n && IsDigit(s[j])) ++j;
      }
      if (j < n && (s[j] == 'e' || s[j] == 'E')) {
        size_t q = j + 1;
        if (q < n && (s[q] == '+' || s[q] == '-')) ++q;
        if (q < n && IsDigit(s[q])) {
          while (q < n && IsDigit(s[q])) ++q;
          j = q;
        }
      }
      if (j < n && IsIdentStart(s[j])) return fail();  // "5abc", "1e"
      LexedLiteral lit;
      lit.kind = LexedLiteral::Kind::kNumber;
      lit.offset = static_cast<uint32_t>(i);
      lit.begin = static_cast<uint32_t>(i);
      lit.len = static_cast<uint32_t>(j - i);
      out->literals.push_back(lit);
      sep();
      *k++ = '?';
      i = j;
      continue;
    }
    if (c == '$') {
      if (i + 1 < n && IsDigit(s[i + 1])) {
        size_t j = i + 1;
        while (j < n && IsDigit(s[j])) ++j;
        if (j < n && IsIdentStart(s[j])) return fail();
        sep();
        std::memcpy(k, s.data() + i, j - i);
        k += j - i;
        i = j;
        continue;
      }
      return fail();  // dollar quoting
    }
    if (cl == kOp) {
      if (k != op_end) op_chain = 0;
      sep();
      size_t j = i;
      bool question = false;
      while (j < n && tab.cls[static_cast<unsigned char>(s[j])] == kOp) {
        // A '?' operator (jsonb `?`, geometric `?-|`) would read as a number's
        // placeholder in the key: `f(?, x)` (a syntax error) took the plan of
        // `f(5, x)` (found by ref_extractor_fuzzer). Rare: not cached (once
        // the run is measured).
        if (s[j] == '?') question = true;
        if (j > i && ((s[j] == '-' && j + 1 < n && s[j + 1] == '-') ||
                      (s[j] == '/' && j + 1 < n && s[j + 1] == '*'))) {
          break;
        }
        *k++ = s[j++];
      }
      op_chain += static_cast<uint32_t>(j - i);
      op_end = k;
      if (op_chain > out->longest_operator) out->longest_operator = op_chain;
      if (question) return fail();
      i = j;
      continue;
    }
    sep();
    if (c == ':' && i + 1 < n && (s[i + 1] == ':' || s[i + 1] == '=')) {
      *k++ = c;
      *k++ = s[i + 1];
      i += 2;
      continue;
    }
    *k++ = c;
    ++i;
  }
  finish();
}

std::vector<StatementSpan> SplitStatements(absl::string_view s) {
  std::vector<StatementSpan> out;
  const size_t n = s.size();
  size_t start = 0, i = 0;
  auto flush = [&](size_t end) {
    size_t b = start, e = end;
    while (b < e && IsSpace(s[b])) ++b;
    while (e > b && IsSpace(s[e - 1])) --e;
    if (e > b) out.push_back(StatementSpan{b, s.substr(b, e - b)});
  };
  while (i < n) {
    char c = s[i];
    if (c == '-' && i + 1 < n && s[i + 1] == '-') {
      while (i < n && !IsNewline(s[i])) ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t e = SkipBlockComment(s, i);
      i = e == absl::string_view::npos ? n : e;
    } else if (c == '\'' || c == '"') {
      bool esc = c == '\'' && i > 0 && Lower(s[i - 1]) == 'e' &&
                 !(i > 1 && IsIdentCont(s[i - 2]));
      size_t j = i + 1;
      while (j < n) {
        if (esc && s[j] == '\\') {
          j += 2;
          continue;
        }
        if (s[j] == c) {
          if (j + 1 < n && s[j + 1] == c) {
            j += 2;
            continue;
          }
          break;
        }
        ++j;
      }
      i = j < n ? j + 1 : n;
    } else if (c == '$' && !(i > 0 && IsIdentCont(s[i - 1])) && !(i + 1 < n && IsDigit(s[i + 1]))) {
      // $tag$ ... $tag$
      size_t j = i + 1;
      while (j < n && IsIdentCont(s[j]) && s[j] != '$') ++j;
      if (j < n && s[j] == '$') {
        absl::string_view tag = s.substr(i, j + 1 - i);
        size_t e = s.find(tag, j + 1);
        i = e == absl::string_view::npos ? n : e + tag.size();
      } else {
        ++i;
      }
    } else if (c == ';') {
      flush(i);
      start = ++i;
    } else if (IsIdentStart(c)) {
      while (i < n && IsIdentCont(s[i])) ++i;
    } else {
      ++i;
    }
  }
  flush(n);
  return out;
}

}  // namespace corral
