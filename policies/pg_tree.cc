// Accessors over libpg_query's JSON parse tree (see pg_tree.h).
// Thread-safety: pure functions; safe from any thread.
#include "policies/pg_tree.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace corral {
namespace ref_internal {

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

}  // namespace ref_internal
}  // namespace corral
