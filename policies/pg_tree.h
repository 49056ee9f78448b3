// Internal to the `refs` library: small accessors over libpg_query's JSON
// parse tree (read by policies/json.h) used by the plan compiler.
// Thread-safety: pure functions over const Json; safe from any thread.
#ifndef CORRAL_POLICIES_PG_TREE_H_
#define CORRAL_POLICIES_PG_TREE_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "policies/json.h"

namespace corral {
namespace ref_internal {

// The `sval`s of a list of String nodes ("*" for any other node).
std::vector<std::string> StringList(const Json* list);
// `j[key]` as text, "" when absent.
std::string Str(const Json* j, absl::string_view key);
// A node body's "location" (byte offset), -1 when absent.
int Location(const Json* body);
// Maps a ParseJson error on libpg_query's output to the status we report.
absl::Status TreeError(const absl::Status& st);

}  // namespace ref_internal
}  // namespace corral

#endif  // CORRAL_POLICIES_PG_TREE_H_
