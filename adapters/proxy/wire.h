// PostgreSQL frontend/backend protocol v3: message framing and the few
// messages the proxy writes itself. Everything else is forwarded as bytes.
//
//   std::string out;
//   wire::AppendError(&out, "ERROR", "08P01", "bad message");
//   wire::AppendReadyForQuery(&out, 'I');
//   wire::Frame f;
//   size_t used = 0;
//   absl::Status st = wire::NextFrame(buf, /*max_len=*/1 << 26, &f, &used);
//   // OK + used > 0: f.type / f.body hold one message; used == 0: need more.
//
// Thread-safety: stateless functions and value types; thread-compatible.
#ifndef CORRAL_ADAPTERS_PROXY_WIRE_H_
#define CORRAL_ADAPTERS_PROXY_WIRE_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace corral {
namespace proxy {
namespace wire {

inline constexpr int32_t kProtocol3 = 196608;      // 3.0
inline constexpr int32_t kSslRequest = 80877103;
inline constexpr int32_t kGssEncRequest = 80877104;
inline constexpr int32_t kCancelRequest = 80877102;

// One typed message: body excludes the type byte and the length field.
struct Frame {
  char type = 0;
  absl::string_view body;
  absl::string_view raw;  // type byte + length + body
};

// Splits the next typed message off `buf`. Returns OK with *used == 0 when the
// message is incomplete; InvalidArgument for a length below 4 or above
// `max_len` (the connection cannot be resynchronized after that).
absl::Status NextFrame(absl::string_view buf, size_t max_len, Frame* f, size_t* used);
// The same for an untyped startup-phase packet (length + body).
absl::Status NextStartup(absl::string_view buf, size_t max_len, absl::string_view* body,
                         size_t* used);

// True for the message types a client may send after startup.
bool IsFrontendType(char t);

void PutInt32(std::string* out, int32_t v);
void PutInt16(std::string* out, int16_t v);
int32_t GetInt32(const char* p);
int16_t GetInt16(const char* p);

// Starts a message of `type` (0: untyped startup packet); returns the offset
// of its length field for EndMessage.
size_t BeginMessage(std::string* out, char type);
void EndMessage(std::string* out, size_t start);

// `routine` (field R, the server function that raised it) only where a
// client reads it (asyncpg: RevalidateCachedQuery).
void AppendError(std::string* out, absl::string_view severity, absl::string_view sqlstate,
                 absl::string_view message, absl::string_view detail = "", absl::string_view routine = "");
void AppendReadyForQuery(std::string* out, char status);
void AppendCommandComplete(std::string* out, absl::string_view tag);
void AppendParameterStatus(std::string* out, absl::string_view name, absl::string_view value);
void AppendBackendKeyData(std::string* out, int32_t pid, int32_t secret);
void AppendAuth(std::string* out, int32_t code, absl::string_view extra = "");
void AppendEmpty(std::string* out, char type);  // ParseComplete '1', BindComplete '2', ...
// Frontend messages the proxy builds itself: a Query of `sql`; a Parse of
// statement `name` whose `types` is the raw tail (Int16 count, then OIDs).
void AppendQuery(std::string* out, absl::string_view sql);
void AppendParse(std::string* out, absl::string_view name, absl::string_view query,
                 absl::string_view types);
// A Bind of portal `portal` to statement `stmt`; `rest` is the raw tail of a
// client's Bind after its two names (formats, values, result formats).
void AppendBind(std::string* out, absl::string_view portal, absl::string_view stmt,
                absl::string_view rest);
// RowDescription of text columns, then DataRows (a "" value is sent as is,
// NULLs are not used), then CommandComplete "SELECT n".
void AppendTextResult(std::string* out, const std::vector<std::string>& columns,
                      const std::vector<std::vector<std::string>>& rows);

// Sequential reader over a message body; a short read sets ok() false.
class Reader {
 public:
  explicit Reader(absl::string_view b) : b_(b) {}
  int32_t Int32();
  int16_t Int16();
  uint8_t Byte();
  absl::string_view CString();  // without the terminating NUL
  absl::string_view Bytes(size_t n);
  size_t pos() const { return pos_; }
  absl::string_view rest() const { return b_.substr(pos_ > b_.size() ? b_.size() : pos_); }
  bool ok() const { return ok_; }

 private:
  absl::string_view b_;
  size_t pos_ = 0;
  bool ok_ = true;
};

// ErrorResponse / NoticeResponse fields by code ('C' SQLSTATE, 'M', 'D', ...).
std::map<char, std::string> ParseErrorFields(absl::string_view body);
// The SQLSTATE of an ErrorResponse body ("" if absent), without allocating a map.
absl::string_view ErrorSqlState(absl::string_view body);

}  // namespace wire
}  // namespace proxy
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PROXY_WIRE_H_
