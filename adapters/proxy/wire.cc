#include "adapters/proxy/wire.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace corral {
namespace proxy {
namespace wire {

int32_t GetInt32(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<int32_t>((uint32_t{u[0]} << 24) | (uint32_t{u[1]} << 16) |
                              (uint32_t{u[2]} << 8) | uint32_t{u[3]});
}
int16_t GetInt16(const char* p) {
  const auto* u = reinterpret_cast<const unsigned char*>(p);
  return static_cast<int16_t>((u[0] << 8) | u[1]);
}
void PutInt32(std::string* out, int32_t v) {
  const uint32_t u = static_cast<uint32_t>(v);
  char b[4] = {static_cast<char>(u >> 24), static_cast<char>(u >> 16), static_cast<char>(u >> 8),
               static_cast<char>(u)};
  out->append(b, 4);
}
void PutInt16(std::string* out, int16_t v) {
  const uint16_t u = static_cast<uint16_t>(v);
  char b[2] = {static_cast<char>(u >> 8), static_cast<char>(u)};
  out->append(b, 2);
}

absl::Status NextFrame(absl::string_view buf, size_t max_len, Frame* f, size_t* used) {
  *used = 0;
  if (buf.size() < 5) return absl::OkStatus();
  const int32_t len = GetInt32(buf.data() + 1);
  if (len < 4 || static_cast<uint64_t>(len) > max_len) {
    return absl::InvalidArgumentError(absl::StrCat("invalid message length ", len, " for message type '",
                                                   absl::string_view(buf.data(), 1), "' (limit ",
                                                   max_len, " bytes)"));
  }
  if (buf.size() < static_cast<size_t>(len) + 1) return absl::OkStatus();
  f->type = buf[0];
  f->body = buf.substr(5, len - 4);
  f->raw = buf.substr(0, len + 1);
  *used = len + 1;
  return absl::OkStatus();
}

absl::Status NextStartup(absl::string_view buf, size_t max_len, absl::string_view* body,
                         size_t* used) {
  *used = 0;
  if (buf.size() < 4) return absl::OkStatus();
  const int32_t len = GetInt32(buf.data());
  if (len < 8 || static_cast<uint64_t>(len) > max_len) {
    return absl::InvalidArgumentError(absl::StrCat("invalid startup packet length ", len));
  }
  if (buf.size() < static_cast<size_t>(len)) return absl::OkStatus();
  *body = buf.substr(4, len - 4);
  *used = len;
  return absl::OkStatus();
}

bool IsFrontendType(char t) {
  switch (t) {
    case 'Q': case 'P': case 'B': case 'D': case 'E': case 'S': case 'H': case 'C':
    case 'X': case 'F': case 'd': case 'c': case 'f': case 'p':
      return true;
    default:
      return false;
  }
}

size_t BeginMessage(std::string* out, char type) {
  if (type != 0) out->push_back(type);
  const size_t at = out->size();
  PutInt32(out, 0);
  return at;
}

void EndMessage(std::string* out, size_t start) {
  const uint32_t len = static_cast<uint32_t>(out->size() - start);
  (*out)[start] = static_cast<char>(len >> 24);
  (*out)[start + 1] = static_cast<char>(len >> 16);
  (*out)[start + 2] = static_cast<char>(len >> 8);
  (*out)[start + 3] = static_cast<char>(len);
}

namespace {
void PutCString(std::string* out, absl::string_view s) {
  out->append(s.data(), s.size());
  out->push_back('\0');
}
}  // namespace

void AppendError(std::string* out, absl::string_view severity, absl::string_view sqlstate,
                 absl::string_view message, absl::string_view detail, absl::string_view routine) {
  const size_t at = BeginMessage(out, 'E');
  out->push_back('S');
  PutCString(out, severity);
  out->push_back('V');
  PutCString(out, severity);
  out->push_back('C');
  PutCString(out, sqlstate);
  out->push_back('M');
  PutCString(out, message);
  if (!detail.empty()) {
    out->push_back('D');
    PutCString(out, detail);
  }
  if (!routine.empty()) {
    out->push_back('R');
    PutCString(out, routine);
  }
  out->push_back('\0');
  EndMessage(out, at);
}

void AppendReadyForQuery(std::string* out, char status) {
  const size_t at = BeginMessage(out, 'Z');
  out->push_back(status);
  EndMessage(out, at);
}

void AppendCommandComplete(std::string* out, absl::string_view tag) {
  const size_t at = BeginMessage(out, 'C');
  PutCString(out, tag);
  EndMessage(out, at);
}

void AppendParameterStatus(std::string* out, absl::string_view name, absl::string_view value) {
  const size_t at = BeginMessage(out, 'S');
  PutCString(out, name);
  PutCString(out, value);
  EndMessage(out, at);
}

void AppendBackendKeyData(std::string* out, int32_t pid, int32_t secret) {
  const size_t at = BeginMessage(out, 'K');
  PutInt32(out, pid);
  PutInt32(out, secret);
  EndMessage(out, at);
}

void AppendAuth(std::string* out, int32_t code, absl::string_view extra) {
  const size_t at = BeginMessage(out, 'R');
  PutInt32(out, code);
  out->append(extra.data(), extra.size());
  EndMessage(out, at);
}

void AppendEmpty(std::string* out, char type) {
  const size_t at = BeginMessage(out, type);
  EndMessage(out, at);
}

void AppendQuery(std::string* out, absl::string_view sql) {
  const size_t at = BeginMessage(out, 'Q');
  out->append(sql.data(), sql.size());
  out->push_back('\0');
  EndMessage(out, at);
}

namespace {
// Parse and Bind: two C strings, then a raw tail.
void AppendTwoNames(std::string* out, char type, absl::string_view first, absl::string_view second,
                    absl::string_view tail) {
  const size_t at = BeginMessage(out, type);
  PutCString(out, first);
  PutCString(out, second);
  out->append(tail.data(), tail.size());
  EndMessage(out, at);
}
}  // namespace

void AppendParse(std::string* out, absl::string_view name, absl::string_view query,
                 absl::string_view types) {
  AppendTwoNames(out, 'P', name, query, types);
}

void AppendBind(std::string* out, absl::string_view portal, absl::string_view stmt,
                absl::string_view rest) {
  AppendTwoNames(out, 'B', portal, stmt, rest);
}

void AppendTextResult(std::string* out, const std::vector<std::string>& columns,
                      const std::vector<std::vector<std::string>>& rows) {
  size_t at = BeginMessage(out, 'T');
  PutInt16(out, static_cast<int16_t>(columns.size()));
  for (const std::string& c : columns) {
    PutCString(out, c);
    PutInt32(out, 0);     // table oid
    PutInt16(out, 0);     // column
    PutInt32(out, 25);    // text
    PutInt16(out, -1);    // typlen
    PutInt32(out, -1);    // typmod
    PutInt16(out, 0);     // text format
  }
  EndMessage(out, at);
  for (const auto& row : rows) {
    at = BeginMessage(out, 'D');
    PutInt16(out, static_cast<int16_t>(row.size()));
    for (const std::string& v : row) {
      PutInt32(out, static_cast<int32_t>(v.size()));
      out->append(v);
    }
    EndMessage(out, at);
  }
  AppendCommandComplete(out, absl::StrCat("SELECT ", rows.size()));
}

int32_t Reader::Int32() {
  if (pos_ + 4 > b_.size()) {
    ok_ = false;
    pos_ = b_.size();
    return 0;
  }
  const int32_t v = GetInt32(b_.data() + pos_);
  pos_ += 4;
  return v;
}
int16_t Reader::Int16() {
  if (pos_ + 2 > b_.size()) {
    ok_ = false;
    pos_ = b_.size();
    return 0;
  }
  const int16_t v = GetInt16(b_.data() + pos_);
  pos_ += 2;
  return v;
}
uint8_t Reader::Byte() {
  if (pos_ + 1 > b_.size()) {
    ok_ = false;
    return 0;
  }
  return static_cast<uint8_t>(b_[pos_++]);
}
absl::string_view Reader::CString() {
  if (pos_ >= b_.size()) {
    ok_ = false;
    return {};
  }
  const void* nul = std::memchr(b_.data() + pos_, '\0', b_.size() - pos_);
  if (nul == nullptr) {
    ok_ = false;
    pos_ = b_.size();
    return {};
  }
  const size_t end = static_cast<const char*>(nul) - b_.data();
  absl::string_view s = b_.substr(pos_, end - pos_);
  pos_ = end + 1;
  return s;
}
absl::string_view Reader::Bytes(size_t n) {
  if (pos_ + n > b_.size()) {
    ok_ = false;
    pos_ = b_.size();
    return {};
  }
  absl::string_view s = b_.substr(pos_, n);
  pos_ += n;
  return s;
}

std::map<char, std::string> ParseErrorFields(absl::string_view body) {
  std::map<char, std::string> out;
  Reader r(body);
  while (r.ok()) {
    const uint8_t code = r.Byte();
    if (!r.ok() || code == 0) break;
    absl::string_view v = r.CString();
    if (!r.ok()) break;
    out[static_cast<char>(code)] = std::string(v);
  }
  return out;
}

absl::string_view ErrorSqlState(absl::string_view body) {
  Reader r(body);
  while (r.ok()) {
    const uint8_t code = r.Byte();
    if (!r.ok() || code == 0) break;
    absl::string_view v = r.CString();
    if (code == 'C') return v;
  }
  return {};
}

}  // namespace wire
}  // namespace proxy
}  // namespace corral
