#include "adapters/proxy/auth.h"

#include <openssl/evp.h>

#include "absl/strings/ascii.h"
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
