// libFuzzer target for the wire protocol (wire.h): the input is the byte
// stream a client sends the proxy: startup-phase packets (SSLRequest,
// GSSENCRequest, CancelRequest, StartupMessage), then typed messages. It is
// split with NextStartup/NextFrame as the proxy reads its sockets, each
// message is decoded with wire::Reader as the protocol defines it, and the
// target abort()s when an invariant breaks:
//  - framing: the stream fed in small chunks yields the same messages as fed
//    whole, a message's raw bytes are its type + length + body, and a
//    message cut short is reported incomplete (never a different message);
//  - round trip: a message decoded completely (StartupMessage, Parse, Bind,
//    Describe, Close, Execute, Query, SASLInitialResponse) and written again
//    with BeginMessage/Put*/EndMessage gives back its exact bytes;
//  - every body read as ErrorResponse fields: the fields written again parse
//    the same, and ErrorSqlState agrees with ParseErrorFields;
//  - the writers (AppendError, AppendParameterStatus, AppendTextResult) fed
//    strings from the input produce messages that frame and decode back.
// Built for libFuzzer by scripts/fuzz.sh; its corpus is replayed by
// //adapters/proxy:wire_fuzzer_replay_test in the normal test run.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "fuzz/check.h"
#include "adapters/proxy/wire.h"

namespace corral {
namespace proxy {
namespace wire {
namespace {

constexpr size_t kMaxStartup = 10000;  // what the proxy allows (proxy.cc)
constexpr size_t kMaxMessage = 1 << 20;

void Check(bool ok, const char* what, absl::string_view detail = "") {
  fuzz::Check(ok, "wire_fuzzer", what, detail);
}

void PutCString(std::string* out, absl::string_view s) {
  out->append(s.data(), s.size());
  out->push_back('\0');
}

std::string NoNul(absl::string_view s) {
  std::string out;
  for (char c : s) out.push_back(c == '\0' ? '0' : c);
  return out;
}

struct Message {
  bool startup;  // an untyped startup-phase packet
  char type;     // a typed message's type (a client may send any byte, '\0' too)
  std::string raw;
};

// Splits `stream` as the proxy does: startup packets until a StartupMessage
// (or a CancelRequest / unknown code, which end the connection), then typed
// messages until the end or a framing error. `chunk` > 0 feeds the bytes in
// pieces of that size, as short socket reads would.
std::vector<Message> Split(absl::string_view stream, size_t chunk, bool* framing_error) {
  std::vector<Message> out;
  *framing_error = false;
  std::string buf;
  size_t fed = 0;
  bool startup = true;
  for (;;) {
    absl::string_view view(buf);
    size_t used = 0;
    if (startup) {
      absl::string_view body;
      absl::Status st = NextStartup(view, kMaxStartup, &body, &used);
      if (!st.ok()) {
        *framing_error = true;
        return out;
      }
      if (used > 0) {
        Check(body.size() + 4 == used, "startup body size");
        Check(body.data() == view.data() + 4, "startup body position");
        out.push_back({true, 0, std::string(view.substr(0, used))});
        Reader r(body);
        const int32_t code = r.Int32();
        if (code == kProtocol3) {
          startup = false;
        } else if (code != kSslRequest && code != kGssEncRequest) {
          return out;  // CancelRequest or unsupported: the proxy closes
        }
      }
    } else {
      Frame f;
      absl::Status st = NextFrame(view, kMaxMessage, &f, &used);
      if (!st.ok()) {
        *framing_error = true;
        return out;
      }
      if (used > 0) {
        Check(f.raw.size() == used && f.raw.data() == view.data(), "frame raw bounds");
        Check(f.body.size() + 5 == used && f.body.data() == view.data() + 5, "frame body bounds");
        Check(f.type == view[0], "frame type");
        Check(GetInt32(view.data() + 1) == static_cast<int32_t>(used - 1), "frame length");
        out.push_back({false, f.type, std::string(f.raw)});
      }
    }
    if (used > 0) {
      buf.erase(0, used);
      continue;
    }
    if (fed == stream.size()) return out;  // incomplete tail: wait for more
    const size_t n = chunk == 0 ? stream.size() - fed : std::min(chunk, stream.size() - fed);
    buf.append(stream.data() + fed, n);
    fed += n;
  }
}

// A message cut anywhere before its end is "incomplete", never an error or
// another message (unless its header itself is already invalid, which the
// full message would have reported too).
void CheckTruncations(const Message& m) {
  const size_t cuts[] = {0, 1, 3, 4, m.raw.size() / 2, m.raw.size() - 1};
  for (size_t cut : cuts) {
    if (cut >= m.raw.size()) continue;
    absl::string_view part(m.raw.data(), cut);
    size_t used = 1;
    absl::Status st;
    if (m.startup) {
      absl::string_view body;
      st = NextStartup(part, kMaxStartup, &body, &used);
    } else {
      Frame f;
      st = NextFrame(part, kMaxMessage, &f, &used);
    }
    Check(st.ok() && used == 0, "truncated message not reported incomplete",
          absl::StrCat("cut ", cut, " of ", m.raw.size(), ": ", st.ToString(), " used ", used));
  }
}

// Decodes the body of a message as its type defines it and re-encodes it;
// when the decode used every byte exactly, the encoding must be the raw bytes.
void CheckRoundTrip(const Message& m) {
  absl::string_view body = absl::string_view(m.raw).substr(m.startup ? 4 : 5);
  Reader r(body);
  std::string out;
  if (!m.startup && m.type == '\0') out.push_back('\0');  // BeginMessage(0) is untyped
  const size_t at = BeginMessage(&out, m.type);
  switch (m.startup ? -1 : m.type) {
    case -1: {
      const int32_t code = r.Int32();
      PutInt32(&out, code);
      if (code == kCancelRequest) {
        PutInt32(&out, r.Int32());
        PutInt32(&out, r.Int32());
      } else if (code == kProtocol3) {
        std::map<std::string, std::string> params;
        while (r.ok()) {
          absl::string_view k = r.CString();
          if (!r.ok()) break;
          PutCString(&out, k);
          if (k.empty()) break;
          absl::string_view v = r.CString();
          PutCString(&out, v);
          params[std::string(k)] = std::string(v);
        }
      }
      break;
    }
    case 'P': {  // Parse: name, query, parameter type OIDs
      PutCString(&out, r.CString());
      PutCString(&out, r.CString());
      const int16_t n = r.Int16();
      PutInt16(&out, n);
      for (int i = 0; i < n && r.ok(); ++i) PutInt32(&out, r.Int32());
      break;
    }
    case 'B': {  // Bind: portal, statement, formats, parameters, result formats
      PutCString(&out, r.CString());
      PutCString(&out, r.CString());
      const int16_t nf = r.Int16();
      PutInt16(&out, nf);
      for (int i = 0; i < nf && r.ok(); ++i) PutInt16(&out, r.Int16());
      const int16_t np = r.Int16();
      PutInt16(&out, np);
      for (int i = 0; i < np && r.ok(); ++i) {
        const int32_t len = r.Int32();
        PutInt32(&out, len);
        if (len > 0) {
          absl::string_view v = r.Bytes(static_cast<size_t>(len));
          Check(!r.ok() || v.size() == static_cast<size_t>(len), "Reader::Bytes size");
          out.append(v.data(), v.size());
        }
      }
      const int16_t nr = r.Int16();
      PutInt16(&out, nr);
      for (int i = 0; i < nr && r.ok(); ++i) PutInt16(&out, r.Int16());
      break;
    }
    case 'D':
    case 'C': {  // Describe / Close: 'S' or 'P', then a name
      out.push_back(static_cast<char>(r.Byte()));
      PutCString(&out, r.CString());
      break;
    }
    case 'E': {  // Execute: portal, row limit
      PutCString(&out, r.CString());
      PutInt32(&out, r.Int32());
      break;
    }
    case 'Q':
      PutCString(&out, r.CString());
      break;
    case 'p': {  // SASLInitialResponse (its length -1: no data)
      PutCString(&out, r.CString());
      const int32_t len = r.Int32();
      PutInt32(&out, len);
      if (len >= 0) {
        absl::string_view v = r.Bytes(static_cast<size_t>(len));
        out.append(v.data(), v.size());
      }
      break;
    }
    default: {  // opaque: Sync, Flush, Terminate, CopyData, FunctionCall, ...
      absl::string_view v = r.Bytes(body.size());
      out.append(v.data(), v.size());
      break;
    }
  }
  Check(r.pos() <= body.size(), "Reader position past the end");
  Check(r.rest().size() == body.size() - r.pos(), "Reader::rest size");
  EndMessage(&out, at);
  if (r.ok() && r.rest().empty()) {
    Check(out == m.raw, "decoded message re-encodes differently", absl::string_view(&m.type, 1));
  }
}

void CheckErrorFields(absl::string_view body) {
  const std::map<char, std::string> fields = ParseErrorFields(body);
  std::string again;
  for (const auto& [code, value] : fields) {
    Check(code != 0, "error field with code 0");
    again.push_back(code);
    PutCString(&again, value);
  }
  again.push_back('\0');
  Check(ParseErrorFields(again) == fields, "error fields do not round-trip");
  auto it = fields.find('C');
  Check(ErrorSqlState(again) == (it == fields.end() ? "" : absl::string_view(it->second)),
        "ErrorSqlState disagrees with ParseErrorFields");
  // On the raw body ErrorSqlState takes the first 'C' field: present iff the
  // map has one (whose value is the last 'C', so only presence is compared).
  const absl::string_view first = ErrorSqlState(body);
  if (!first.empty()) Check(it != fields.end(), "ErrorSqlState found a field ParseErrorFields lost");
}

// The writers, fed strings taken from the input.
void CheckWriters(absl::string_view data) {
  const std::string a = NoNul(data.substr(0, data.size() / 3));
  const std::string b = NoNul(data.substr(data.size() / 3, data.size() / 3));
  const std::string c = NoNul(data.substr(2 * (data.size() / 3)));

  std::string out;
  AppendError(&out, "ERROR", a, b, c);
  AppendParameterStatus(&out, b, c);
  AppendTextResult(&out, {a, b}, {{c, a}, {b, ""}});
  AppendReadyForQuery(&out, 'I');

  std::vector<Frame> frames;
  absl::string_view rest(out);
  while (!rest.empty()) {
    Frame f;
    size_t used = 0;
    Check(NextFrame(rest, kMaxMessage, &f, &used).ok() && used > 0, "written message does not frame");
    frames.push_back(f);
    rest.remove_prefix(used);
  }
  Check(frames.size() == 7, "written message count");
  Check(frames[0].type == 'E', "AppendError type");
  auto fields = ParseErrorFields(frames[0].body);
  Check(fields['S'] == "ERROR" && fields['V'] == "ERROR" && fields['C'] == a && fields['M'] == b,
        "AppendError fields");
  Check(c.empty() ? fields.count('D') == 0 : fields['D'] == c, "AppendError detail");
  Check(ErrorSqlState(frames[0].body) == a, "AppendError SQLSTATE");

  Reader ps(frames[1].body);
  Check(frames[1].type == 'S' && ps.CString() == b && ps.CString() == c && ps.ok() && ps.rest().empty(),
        "AppendParameterStatus");

  Reader rd(frames[2].body);
  Check(frames[2].type == 'T' && rd.Int16() == 2, "RowDescription count");
  for (const std::string& col : {a, b}) {
    Check(rd.CString() == col, "RowDescription name");
    rd.Bytes(18);
  }
  Check(rd.ok() && rd.rest().empty(), "RowDescription size");
  const std::vector<std::vector<std::string>> rows = {{c, a}, {b, ""}};
  for (int i = 0; i < 2; ++i) {
    Reader dr(frames[3 + i].body);
    Check(frames[3 + i].type == 'D' && dr.Int16() == 2, "DataRow count");
    for (const std::string& v : rows[i]) {
      const int32_t len = dr.Int32();
      Check(len == static_cast<int32_t>(v.size()) && dr.Bytes(len) == v, "DataRow value");
    }
    Check(dr.ok() && dr.rest().empty(), "DataRow size");
  }
  Reader cc(frames[5].body);
  Check(frames[5].type == 'C' && cc.CString() == "SELECT 2" && cc.rest().empty(), "CommandComplete");
  Check(frames[6].type == 'Z' && frames[6].body == "I", "ReadyForQuery");
}

}  // namespace
}  // namespace wire
}  // namespace proxy
}  // namespace corral

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace corral::proxy::wire;  // NOLINT
  const absl::string_view stream(reinterpret_cast<const char*>(data), size);
  bool whole_error = false;
  const std::vector<Message> whole = Split(stream, 0, &whole_error);
  bool chunked_error = false;
  const std::vector<Message> chunked = Split(stream, 1 + size % 13, &chunked_error);
  Check(whole_error == chunked_error && whole.size() == chunked.size(), "chunked split differs");
  for (size_t i = 0; i < whole.size(); ++i) {
    Check(whole[i].startup == chunked[i].startup && whole[i].type == chunked[i].type &&
              whole[i].raw == chunked[i].raw,
          "chunked message differs");
  }
  size_t total = 0;
  for (const Message& m : whole) {
    total += m.raw.size();
    CheckTruncations(m);
    CheckRoundTrip(m);
    if (!m.startup) {
      Check(IsFrontendType(m.type) == (absl::string_view("QPBDESHCXFdcfp").find(m.type) !=
                                       absl::string_view::npos),
            "IsFrontendType");
      CheckErrorFields(absl::string_view(m.raw).substr(5));
    }
  }
  Check(total <= size, "messages longer than the input");
  CheckWriters(stream);
  return 0;
}
