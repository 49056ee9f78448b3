// libFuzzer target for the login exchange's parsers and checks (auth.h), fed
// adversarial messages against a fixed server secret. The first input byte
// picks a mode; the rest is split at NUL bytes into fields:
//  0  a client with no password: client-first, client-final sent as is to a
//     ScramServer. Accepting the final message is a bug (no proof can be
//     forged without the secret).
//  1  an honest ScramClient with password field 0, whose client-first gets
//     field 1 appended and whose client-final is edited by field 2 (byte 0:
//     position, the rest spliced in). The server must accept exactly the
//     unedited exchange with the right password, and the client must accept
//     the server's final message then.
//  2  a ScramClient against a hostile server: field 0 is the server-first
//     (the client's nonce is spliced in after a leading "r="), field 1 the
//     server-final, which the client must never accept.
//  3  md5: Md5Response(user, password, salt) has PostgreSQL's form, and a
//     password stored as "md5" + md5(password + user) answers the same.
//  4  a userlist file (the rest of the input): parsed, written back, parsed
//     the same.
//  5  base64: Unbase64(Base64(x)) == x, and whatever Unbase64 accepts
//     re-encodes to the same number of bytes.
// Built for libFuzzer by scripts/fuzz.sh; its corpus is replayed by
// //adapters/proxy:auth_fuzzer_replay_test in the normal test run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "fuzz/check.h"
#include "adapters/proxy/auth.h"

namespace corral {
namespace proxy {
namespace auth {
namespace {

constexpr char kSecret[] = "fuzz-secret";
constexpr int kServerIterations = 2;     // PBKDF2 rounds: cheap, same code path
constexpr int kClientMaxIterations = 64;

void Check(bool ok, const char* what, absl::string_view detail = "") {
  fuzz::Check(ok, "auth_fuzzer", what, detail);
}

bool IsHex32(absl::string_view s) {
  if (s.size() != 32) return false;
  for (char c : s) {
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

void ScramNoPassword(const std::vector<absl::string_view>& f) {
  ScramServer server(kSecret, /*cbind_data=*/"", kServerIterations);
  auto first = server.ServerFirst(f[0]);
  if (!first.ok()) return;
  Check(absl::StartsWith(*first, "r="), "server-first form", *first);
  auto final_msg = server.ServerFinal(f[1]);
  Check(!final_msg.ok(), "server accepted a client-final without the password", f[1]);
}

void ScramHonestClient(const std::vector<absl::string_view>& f) {
  const std::string password(f[0]);
  ScramClient client(password, /*cbind_data=*/"", kClientMaxIterations);
  ScramServer server(kSecret, /*cbind_data=*/"", kServerIterations);
  const std::string first = client.FirstMessage();
  const std::string sent_first = absl::StrCat(first, f[1]);
  auto server_first = server.ServerFirst(sent_first);
  if (!server_first.ok()) {
    Check(!f[1].empty(), "server refused an honest client-first", server_first.status().message());
    return;
  }
  auto final_msg = client.FinalMessage(*server_first);
  Check(final_msg.ok(), "client refused the server's own server-first", *server_first);
  std::string sent_final = *final_msg;
  if (!f[2].empty()) {
    const size_t at = static_cast<uint8_t>(f[2][0]) % (sent_final.size() + 1);
    sent_final.replace(at, f[2].size() > 1 ? 1 : 0, f[2].substr(1).data(), f[2].size() - 1);
  }
  auto server_final = server.ServerFinal(sent_final);
  const bool right = password == kSecret;
  const size_t p = sent_final.rfind(",p=");
  const bool signed_part_intact =
      p != std::string::npos && sent_final.substr(0, p) == final_msg->substr(0, final_msg->rfind(",p="));
  if (!server_final.ok()) {
    Check(!(right && f[1].empty() && sent_final == *final_msg), "server refused the right password");
    return;
  }
  Check(right, "server accepted a wrong password", password);
  Check(signed_part_intact, "server accepted a client-final whose signed part was changed", sent_final);
  Check(client.VerifyServerFinal(*server_final).ok(), "client refused the server's proof", *server_final);
}

void ScramHostileServer(const std::vector<absl::string_view>& f) {
  ScramClient client(kSecret, /*cbind_data=*/"", kClientMaxIterations);
  const std::string first = client.FirstMessage();
  const std::string cnonce = first.substr(first.find(",r=") + 3);
  std::string server_first(f[0]);
  if (absl::StartsWith(server_first, "r=")) server_first.insert(2, cnonce.data(), cnonce.size());
  auto final_msg = client.FinalMessage(server_first);
  if (!final_msg.ok()) return;
  Check(absl::StartsWith(*final_msg, "c=biws,r=") && final_msg->find(",p=") != std::string::npos,
        "client-final form", *final_msg);
  Check(!client.VerifyServerFinal(f[1]).ok(), "client accepted a forged server-final", f[1]);
}

void Md5(const std::vector<absl::string_view>& f) {
  const std::string r = Md5Response(f[0], f[1], f[2]);
  Check(absl::StartsWith(r, "md5") && IsHex32(r.substr(3)), "md5 response form", r);
  Check(IsHex32(Md5Hex(f[0])), "Md5Hex form");
  if (f[1].size() == 35 && absl::StartsWith(f[1], "md5")) return;  // already stored form
  const std::string stored = absl::StrCat("md5", Md5Hex(absl::StrCat(f[1], f[0])));
  Check(Md5Response(f[0], stored, f[2]) == r, "stored md5 password answers differently");
}

std::string Quote(absl::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

void UserList(absl::string_view text) {
  auto users = ParseUserList(text);
  if (!users.ok()) {
    Check(absl::StrContains(users.status().message(), "line "), "userlist error names no line");
    return;
  }
  std::string again;
  for (const auto& [user, pass] : *users) absl::StrAppend(&again, Quote(user), " ", Quote(pass), "\n");
  auto reparsed = ParseUserList(again);
  Check(reparsed.ok() && *reparsed == *users, "userlist does not round-trip", again);
}

void Base64Codec(absl::string_view data) {
  const std::string enc = Base64(data);
  Check(enc.size() == 4 * ((data.size() + 2) / 3), "Base64 length");
  auto dec = Unbase64(enc);
  Check(dec.ok() && *dec == data, "Unbase64(Base64(x)) != x");
  auto any = Unbase64(data);
  if (any.ok()) {
    Check(any->size() <= data.size() / 4 * 3, "Unbase64 longer than its input allows");
    auto again = Unbase64(Base64(*any));
    Check(again.ok() && *again == *any, "Unbase64 result does not round-trip");
  }
}

}  // namespace
}  // namespace auth
}  // namespace proxy
}  // namespace corral

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::proxy::auth;  // NOLINT
  if (size == 0) return 0;
  const absl::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  std::vector<absl::string_view> f = absl::StrSplit(rest, absl::ByChar('\0'));
  while (f.size() < 3) f.push_back({});
  switch (data[0] % 6) {
    case 0: ScramNoPassword(f); break;
    case 1: ScramHonestClient(f); break;
    case 2: ScramHostileServer(f); break;
    case 3: Md5(f); break;
    case 4: UserList(rest); break;
    case 5: Base64Codec(rest); break;
  }
  return 0;
}
