// Internal to session_params (adapters/proxy): what its two source files
// share. session_params.cc keeps the client and backend models and the
// attach / detach SQL; session_statements.cc classifies statements
// (libpg_query) into Effects and Refusals.
//
//   std::vector<session_detail::Effect> effects;
//   if (auto refusal = session_detail::StatementEffectsOf(sql, in_txn, &effects)) ...
//
// Thread-safety: stateless functions.
#ifndef CORRAL_ADAPTERS_PROXY_SESSION_DETAIL_H_
#define CORRAL_ADAPTERS_PROXY_SESSION_DETAIL_H_

#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "absl/types/optional.h"
#include "adapters/proxy/session_params.h"

namespace corral {
namespace proxy {
namespace session_detail {

// ---- statement effects (libpg_query) ----

enum class Kind {
  kSet,
  kReset,
  kResetAll,
  kDiscardAll,
  kSavepoint,
  kRollbackTo,
  kRelease,
  kListen,
  kBegin,
  kEnd,
};

struct Effect {
  Kind kind;
  std::string name;
  std::string value;
};

// The effects of every statement in `sql` (one Query's text), in order;
// `in_block`: the client is inside a transaction block. Returns the first
// refusal (the effects are then not to be applied). Unparsable SQL: no
// effects (the server rejects it).
absl::optional<Refusal> StatementEffectsOf(absl::string_view sql, bool in_block, std::vector<Effect>* out);

std::string Lower(absl::string_view s);
// GUC_LIST_QUOTE parameters (search_path, ...).
bool IsListQuote(absl::string_view lower);
// 1 true, 0 false, -1 not a boolean (PostgreSQL's parse_bool, full words).
int ParseBool(absl::string_view v);
// PostgreSQL's quote_identifier, minus the keyword check.
std::string QuoteIdent(absl::string_view s);

}  // namespace session_detail
}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_SESSION_DETAIL_H_
