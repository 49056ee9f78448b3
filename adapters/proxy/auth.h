// Password authentication helpers for both sides of the proxy: PostgreSQL's
// md5 scheme, SCRAM-SHA-256 (RFC 5802/7677 as PostgreSQL uses it: user name
// taken from the startup packet, passwords not SASLprep'd) and
// SCRAM-SHA-256-PLUS with tls-server-end-point channel binding (RFC 5929)
// and a PgBouncer-style userlist ("user" "password" per line).
//
//   auth::ScramClient c("pw");          auth::ScramServer s("pw");
//   auto sf = s.ServerFirst(c.FirstMessage());
//   auto cf = c.FinalMessage(*sf);
//   auto v = s.ServerFinal(*cf);        // error: wrong password
//   CHECK_OK(c.VerifyServerFinal(*v));
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

std::string Base64(absl::string_view data);
absl::StatusOr<std::string> Unbase64(absl::string_view text);

// The client side of SCRAM-SHA-256 (the proxy logging in to the server);
// with cbind_data (the server certificate's tls-server-end-point hash),
// SCRAM-SHA-256-PLUS.
class ScramClient {
 public:
  // A server-first message asking for more than `max_iterations` PBKDF2
  // rounds is refused (so a hostile server cannot make the proxy spin).
  static constexpr int kDefaultMaxIterations = 1 << 20;
  explicit ScramClient(std::string password, std::string cbind_data = "",
                       int max_iterations = kDefaultMaxIterations);
  // Logs in with the keys instead of the password: a ClientKey a client
  // proved to ScramServer (client_key()) and the secret's ServerKey. The
  // server must hold that same secret (it came from its pg_shadow).
  static ScramClient WithKeys(std::string client_key, std::string server_key, std::string cbind_data = "");
  std::string FirstMessage();  // "n,,n=,r=<nonce>"
  absl::StatusOr<std::string> FinalMessage(absl::string_view server_first);
  absl::Status VerifyServerFinal(absl::string_view server_final) const;

 private:
  std::string password_, cbind_data_, nonce_, client_first_bare_, auth_message_;
  std::string client_key_, server_key_;  // from the password at FinalMessage, or given
  int max_iterations_;
};

// Whether a userlist / pg_shadow password is a stored hash ("md5" + 32
// hex, or a SCRAM secret) rather than the password itself.
bool IsStoredSecret(absl::string_view password);

// The parts of a PostgreSQL SCRAM secret
// ("SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>", pg_authid's
// form); InvalidArgument for anything else.
absl::Status ParseScramSecret(absl::string_view secret, int* iterations, std::string* salt, std::string* stored_key,
                              std::string* server_key);

// The server side (clients logging in to the proxy with a plain-text
// password from the userlist, or a SCRAM secret from it or from auth_query:
// then its salt and iterations are used and, after a successful proof,
// client_key() lets the proxy log in to the server as that client). cbind_data: the tls-server-end-point hash of
// the proxy's certificate when the client is on TLS (SCRAM-SHA-256-PLUS is
// offered), else empty.
class ScramServer {
 public:
  // `iterations`: the PBKDF2 rounds asked of clients (PostgreSQL's default
  // 4096; tests and the fuzz target use fewer to run fast).
  explicit ScramServer(std::string password, std::string cbind_data = "", int iterations = 4096);
  // plus: the client chose SCRAM-SHA-256-PLUS.
  absl::StatusOr<std::string> ServerFirst(absl::string_view client_first, bool plus = false);
  // Checks the proof; returns the server-final message ("v=...").
  absl::StatusOr<std::string> ServerFinal(absl::string_view client_final);
  // After a successful ServerFinal: the client's ClientKey, and the
  // ServerKey (for ScramClient::WithKeys).
  const std::string& client_key() const { return client_key_; }
  const std::string& server_key() const { return server_key_; }

 private:
  std::string password_, cbind_data_, expected_cbind_, salt_, nonce_, client_first_bare_, server_first_;
  std::string stored_key_, server_key_, client_key_;
  bool from_secret_ = false;
  int iterations_;
};

}  // namespace auth
}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_AUTH_H_
