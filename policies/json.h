// A minimal JSON reader for libpg_query's parse-tree output.
//
// pg_query_parse returns the parse tree as JSON; this reads it into a small
// DOM. Numbers are kept as their text. Not a general-purpose JSON library:
// no writer, no \u surrogate pairs beyond the BMP (pg_query emits UTF-8).
//
//   absl::StatusOr<Json> j = ParseJson(R"({"a":[1,"x"]})");
//   const Json* a = j->Get("a");          // nullptr when absent
//   for (const Json& e : a->items()) ...
//
// Thread-safety: a Json is a plain value; const use from many threads is safe.
#ifndef CORRAL_POLICIES_JSON_H_
#define CORRAL_POLICIES_JSON_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace corral {

class Json {
 public:
  enum class Type { kNull, kBool, kNumber, kString, kArray, kObject };

  Type type() const { return type_; }
  bool is_object() const { return type_ == Type::kObject; }
  bool is_array() const { return type_ == Type::kArray; }
  bool is_string() const { return type_ == Type::kString; }
  bool is_number() const { return type_ == Type::kNumber; }
  bool is_bool() const { return type_ == Type::kBool; }

  // String contents, or a number's text.
  const std::string& str() const { return str_; }
  bool boolean() const { return bool_; }
  // Array elements (or object values, in order).
  const std::vector<Json>& items() const { return values_; }
  const std::vector<std::string>& keys() const { return keys_; }
  // Object member by key; nullptr when absent or not an object.
  const Json* Get(absl::string_view key) const;

  // pg_query nodes are one-member objects {"NodeType": {...}}: the member's
  // name ("" when not such a node) and its body (nullptr when not a node).
  absl::string_view NodeType() const;
  const Json* NodeBody() const;

 private:
  friend class JsonParser;
  Type type_ = Type::kNull;
  bool bool_ = false;
  std::string str_;
  std::vector<std::string> keys_;
  std::vector<Json> values_;
};

// The deepest nesting of arrays and objects ParseJson reads (it recurses once
// per level, and so do the tree's readers).
inline constexpr int kMaxJsonDepth = 2000;

// InvalidArgument for malformed JSON; ResourceExhausted for JSON nested more
// than kMaxJsonDepth deep (well-formed but too deep to read: a caller whose
// JSON comes from its own input, as libpg_query's tree of a statement, reports
// that input as too deeply nested).
absl::StatusOr<Json> ParseJson(absl::string_view text);

}  // namespace corral

#endif  // CORRAL_POLICIES_JSON_H_
