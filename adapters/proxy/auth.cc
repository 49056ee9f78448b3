#include "adapters/proxy/auth.h"

#include <openssl/evp.h>

#include <algorithm>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace corral {
namespace proxy {
namespace auth {

std::string Md5Hex(absl::string_view data) {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  EVP_Digest(data.data(), data.size(), md, &n, EVP_md5(), nullptr);
  static const char* kHex = "0123456789abcdef";
  std::string out;
  for (unsigned int i = 0; i < n; ++i) {
    out.push_back(kHex[md[i] >> 4]);
    out.push_back(kHex[md[i] & 15]);
  }
  return out;
}

std::string Md5Response(absl::string_view user, absl::string_view password, absl::string_view salt) {
  std::string inner;
  if (password.size() == 35 && password.substr(0, 3) == "md5") {
    inner = std::string(password.substr(3));
  } else {
    inner = Md5Hex(absl::StrCat(password, user));
  }
  return absl::StrCat("md5", Md5Hex(absl::StrCat(inner, salt)));
}

namespace {
// Reads one "quoted" token at *pos; false when there is none.
bool QuotedToken(absl::string_view line, size_t* pos, std::string* out) {
  while (*pos < line.size() && (line[*pos] == ' ' || line[*pos] == '\t')) ++*pos;
  if (*pos >= line.size() || line[*pos] != '"') return false;
  ++*pos;
  out->clear();
  while (*pos < line.size()) {
    const char c = line[(*pos)++];
    if (c == '"') {
      if (*pos < line.size() && line[*pos] == '"') {
        out->push_back('"');
        ++*pos;
        continue;
      }
      return true;
    }
    out->push_back(c);
  }
  return false;  // unterminated
}
}  // namespace

absl::StatusOr<std::map<std::string, std::string>> ParseUserList(absl::string_view text) {
  std::map<std::string, std::string> users;
  int lineno = 0;
  for (absl::string_view line : absl::StrSplit(text, '\n')) {
    ++lineno;
    absl::string_view t = absl::StripAsciiWhitespace(line);
    if (t.empty() || t[0] == ';' || t[0] == '#') continue;
    size_t pos = 0;
    std::string user, pass;
    if (!QuotedToken(t, &pos, &user) || !QuotedToken(t, &pos, &pass)) {
      return absl::InvalidArgumentError(
          absl::StrCat("auth file line ", lineno, ": expected \"user\" \"password\", got: ", t));
    }
    users[user] = pass;
  }
  return users;
}

}  // namespace auth
}  // namespace proxy
}  // namespace corral

// ---------------------------------------------------------------- SCRAM

#include <openssl/hmac.h>
#include <openssl/rand.h>
#include <openssl/sha.h>

namespace corral {
namespace proxy {
namespace auth {
namespace {

std::string Hmac(absl::string_view key, absl::string_view data) {
  unsigned char out[EVP_MAX_MD_SIZE];
  unsigned int n = 0;
  HMAC(EVP_sha256(), key.data(), static_cast<int>(key.size()),
       reinterpret_cast<const unsigned char*>(data.data()), data.size(), out, &n);
  return std::string(reinterpret_cast<char*>(out), n);
}

std::string Sha256(absl::string_view data) {
  unsigned char out[SHA256_DIGEST_LENGTH];
  SHA256(reinterpret_cast<const unsigned char*>(data.data()), data.size(), out);
  return std::string(reinterpret_cast<char*>(out), sizeof(out));
}

std::string SaltedPassword(absl::string_view password, absl::string_view salt, int iterations) {
  unsigned char out[32];
  PKCS5_PBKDF2_HMAC(password.data(), static_cast<int>(password.size()),
                    reinterpret_cast<const unsigned char*>(salt.data()), static_cast<int>(salt.size()),
                    iterations, EVP_sha256(), sizeof(out), out);
  return std::string(reinterpret_cast<char*>(out), sizeof(out));
}

std::string Xor(absl::string_view a, absl::string_view b) {
  std::string out(a);
  for (size_t i = 0; i < out.size() && i < b.size(); ++i) out[i] ^= b[i];
  return out;
}

std::string Nonce() {
  unsigned char raw[18];
  RAND_bytes(raw, sizeof(raw));
  return Base64(absl::string_view(reinterpret_cast<char*>(raw), sizeof(raw)));
}

// The value of attribute `key` ("r", "s", "i", "p", "v", ...) in a SCRAM message.
absl::string_view Attr(absl::string_view msg, char key) {
  for (absl::string_view part : absl::StrSplit(msg, ',')) {
    if (part.size() >= 2 && part[0] == key && part[1] == '=') return part.substr(2);
  }
  return {};
}

}  // namespace

std::string Base64(absl::string_view data) {
  std::string out(4 * ((data.size() + 2) / 3) + 1, '\0');
  const int n = EVP_EncodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(data.data()), static_cast<int>(data.size()));
  out.resize(n);
  return out;
}

absl::StatusOr<std::string> Unbase64(absl::string_view text) {
  if (text.size() % 4 != 0) return absl::InvalidArgumentError("bad base64 length");
  std::string out(text.size() / 4 * 3 + 1, '\0');
  const int n = EVP_DecodeBlock(reinterpret_cast<unsigned char*>(&out[0]),
                                reinterpret_cast<const unsigned char*>(text.data()), static_cast<int>(text.size()));
  if (n < 0) return absl::InvalidArgumentError("bad base64");
  size_t pad = 0;
  while (pad < 2 && pad < text.size() && text[text.size() - 1 - pad] == '=') ++pad;
  out.resize(n - pad);
  return out;
}

ScramClient::ScramClient(std::string password, std::string cbind_data, int max_iterations)
    : password_(std::move(password)), cbind_data_(std::move(cbind_data)), max_iterations_(max_iterations) {}

std::string ScramClient::FirstMessage() {
  nonce_ = Nonce();
  client_first_bare_ = absl::StrCat("n=,r=", nonce_);
  return absl::StrCat(cbind_data_.empty() ? "n,," : "p=tls-server-end-point,,", client_first_bare_);
}

absl::StatusOr<std::string> ScramClient::FinalMessage(absl::string_view server_first) {
  const absl::string_view nonce = Attr(server_first, 'r');
  auto salt = Unbase64(Attr(server_first, 's'));
  int iterations = 0;
  if (!absl::StartsWith(nonce, nonce_) || !salt.ok() ||
      !absl::SimpleAtoi(Attr(server_first, 'i'), &iterations) || iterations <= 0) {
    return absl::PermissionDeniedError("SCRAM: malformed server-first message");
  }
  if (iterations > max_iterations_) {
    return absl::PermissionDeniedError(
        absl::StrCat("SCRAM: the server asks for ", iterations, " iterations (limit ", max_iterations_, ")"));
  }
  if (client_key_.empty()) {
    const std::string salted = SaltedPassword(password_, *salt, iterations);
    client_key_ = Hmac(salted, "Client Key");
    server_key_ = Hmac(salted, "Server Key");
  }
  const std::string cbind =
      cbind_data_.empty() ? "biws" : Base64(absl::StrCat("p=tls-server-end-point,,", cbind_data_));
  const std::string without_proof = absl::StrCat("c=", cbind, ",r=", nonce);
  auth_message_ = absl::StrCat(client_first_bare_, ",", server_first, ",", without_proof);
  const std::string signature = Hmac(Sha256(client_key_), auth_message_);
  return absl::StrCat(without_proof, ",p=", Base64(Xor(client_key_, signature)));
}

absl::Status ScramClient::VerifyServerFinal(absl::string_view server_final) const {
  const std::string expected = Base64(Hmac(server_key_, auth_message_));
  if (Attr(server_final, 'v') != expected) {
    return absl::PermissionDeniedError("SCRAM: the server's signature does not match");
  }
  return absl::OkStatus();
}

bool IsStoredSecret(absl::string_view password) {
  if (absl::StartsWith(password, "SCRAM-SHA-256$")) return true;
  return password.size() == 35 && absl::StartsWith(password, "md5") &&
         std::all_of(password.begin() + 3, password.end(), [](char ch) { return absl::ascii_isxdigit(ch); });
}

ScramClient ScramClient::WithKeys(std::string client_key, std::string server_key, std::string cbind_data) {
  ScramClient c("", std::move(cbind_data));
  c.client_key_ = std::move(client_key);
  c.server_key_ = std::move(server_key);
  return c;
}

absl::Status ParseScramSecret(absl::string_view secret, int* iterations, std::string* salt, std::string* stored_key,
                              std::string* server_key) {
  // SCRAM-SHA-256$<iterations>:<salt>$<StoredKey>:<ServerKey>, base64 parts.
  const absl::Status bad = absl::InvalidArgumentError("not a SCRAM-SHA-256 secret");
  if (!absl::StartsWith(secret, "SCRAM-SHA-256$")) return bad;
  std::vector<absl::string_view> parts = absl::StrSplit(secret.substr(14), absl::ByAnyChar("$:"));
  if (parts.size() != 4 || !absl::SimpleAtoi(parts[0], iterations) || *iterations <= 0) return bad;
  auto s = Unbase64(parts[1]);
  auto st = Unbase64(parts[2]);
  auto sv = Unbase64(parts[3]);
  if (!s.ok() || !st.ok() || !sv.ok() || st->size() != 32 || sv->size() != 32) return bad;
  *salt = *s;
  *stored_key = *st;
  *server_key = *sv;
  return absl::OkStatus();
}

ScramServer::ScramServer(std::string password, std::string cbind_data, int iterations)
    : password_(std::move(password)), cbind_data_(std::move(cbind_data)), iterations_(iterations) {
  int it = 0;
  if (ParseScramSecret(password_, &it, &salt_, &stored_key_, &server_key_).ok()) {
    iterations_ = it;
    from_secret_ = true;
  }
}

absl::StatusOr<std::string> ScramServer::ServerFirst(absl::string_view client_first, bool plus) {
  // The gs2 header: "p=tls-server-end-point," (SCRAM-SHA-256-PLUS), "n,"
  // (the client does not bind) or "y," (the client could, but thinks the
  // server cannot: a downgrade when the server offered -PLUS), then authzid.
  const size_t first = client_first.find(',');
  if (first == absl::string_view::npos) return absl::PermissionDeniedError("SCRAM: malformed client-first");
  const absl::string_view flag = client_first.substr(0, first);
  if (plus) {
    if (flag != "p=tls-server-end-point" || cbind_data_.empty()) {
      return absl::PermissionDeniedError(
          "SCRAM-SHA-256-PLUS: only channel binding type tls-server-end-point over TLS is supported");
    }
  } else if (flag == "y" && !cbind_data_.empty()) {
    return absl::PermissionDeniedError(
        "SCRAM channel binding negotiation error: the client supports binding, and the server offered it");
  } else if (flag != "n" && flag != "y") {
    return absl::PermissionDeniedError("SCRAM: channel binding needs the mechanism SCRAM-SHA-256-PLUS");
  }
  const size_t second = client_first.find(',', first + 1);
  if (second == absl::string_view::npos) return absl::PermissionDeniedError("SCRAM: malformed client-first");
  expected_cbind_ = Base64(absl::StrCat(client_first.substr(0, second + 1), plus ? cbind_data_ : ""));
  client_first_bare_ = std::string(client_first.substr(second + 1));
  const absl::string_view cnonce = Attr(client_first_bare_, 'r');
  if (cnonce.empty()) return absl::PermissionDeniedError("SCRAM: no client nonce");
  if (!from_secret_) {
    unsigned char raw[16];
    RAND_bytes(raw, sizeof(raw));
    salt_ = std::string(reinterpret_cast<char*>(raw), sizeof(raw));
    const std::string salted = SaltedPassword(password_, salt_, iterations_);
    stored_key_ = Sha256(Hmac(salted, "Client Key"));
    server_key_ = Hmac(salted, "Server Key");
  }
  nonce_ = absl::StrCat(cnonce, Nonce());
  server_first_ = absl::StrCat("r=", nonce_, ",s=", Base64(salt_), ",i=", iterations_);
  return server_first_;
}

absl::StatusOr<std::string> ScramServer::ServerFinal(absl::string_view client_final) {
  // RFC 5802 / PostgreSQL: "c=" comes first and must be the base64 of the
  // client-first's gs2 header ("biws" for "n,,", "eSws" for "y,,"), with
  // the certificate hash appended for -PLUS; then "r=" with our nonce. A c=
  // anywhere else, or one that does not echo the header the client-first
  // sent (a client that claimed "y,," but binds nothing, or a rewritten
  // header), fails. Nothing is accepted before a successful ServerFirst.
  if (nonce_.empty()) return absl::PermissionDeniedError("SCRAM: client-final before server-first");
  const size_t p = client_final.rfind(",p=");
  const absl::string_view attrs = client_final.substr(0, p == absl::string_view::npos ? 0 : p);
  const size_t c_end = attrs.find(',');
  const absl::string_view after_c = c_end == absl::string_view::npos ? "" : attrs.substr(c_end + 1);
  const absl::string_view r_attr = after_c.substr(0, after_c.find(','));  // extensions may follow
  if (p == absl::string_view::npos || !absl::StartsWith(attrs, "c=") || !absl::StartsWith(r_attr, "r=") ||
      r_attr.substr(2) != nonce_) {
    return absl::PermissionDeniedError("SCRAM: malformed client-final message");
  }
  if (attrs.substr(2, c_end - 2) != expected_cbind_) {
    return absl::PermissionDeniedError("SCRAM channel binding check failed");
  }
  auto proof = Unbase64(client_final.substr(p + 3));
  if (!proof.ok()) return absl::PermissionDeniedError("SCRAM: malformed proof");
  const std::string auth_message =
      absl::StrCat(client_first_bare_, ",", server_first_, ",", client_final.substr(0, p));
  const std::string client_key = Xor(*proof, Hmac(stored_key_, auth_message));
  if (proof->size() != 32 || Sha256(client_key) != stored_key_) {
    return absl::PermissionDeniedError("SCRAM: wrong password");
  }
  client_key_ = client_key;
  return absl::StrCat("v=", Base64(Hmac(server_key_, auth_message)));
}

}  // namespace auth
}  // namespace proxy
}  // namespace corral
