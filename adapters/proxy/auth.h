// Password authentication helpers for both sides of the proxy: PostgreSQL's
// md5 scheme and a PgBouncer-style userlist ("user" "password" per line).
//
//   std::string reply = auth::Md5Response("alice", "secret", salt4);  // "md5..."
//   auto users = auth::ParseUserList(text);   // error names the bad line
//
// Thread-safety: stateless functions; thread-safe.
#ifndef CORRAL_ADAPTERS_PROXY_AUTH_H_
#define CORRAL_ADAPTERS_PROXY_AUTH_H_

#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace corral {
namespace proxy {
namespace auth {

std::string Md5Hex(absl::string_view data);
// What a client sends for AuthenticationMD5Password: "md5" +
// md5hex(md5hex(password + user) + salt). A password stored already as
// "md5<32 hex>" (pg_authid style) is used as the inner hash.
std::string Md5Response(absl::string_view user, absl::string_view password, absl::string_view salt);

// `"user" "password"` lines; blank lines and lines starting with ';' or '#'
// are skipped; a doubled quote inside quotes is a quote.
absl::StatusOr<std::map<std::string, std::string>> ParseUserList(absl::string_view text);

}  // namespace auth
}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_AUTH_H_
