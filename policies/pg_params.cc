#include "policies/pg_params.h"

#include <charconv>
#include <cstring>
#include <limits>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace corral {
namespace {

// Big-endian readers; callers check the size first.
inline uint16_t Be16(const char* p) {
  return static_cast<uint16_t>((static_cast<uint8_t>(p[0]) << 8) | static_cast<uint8_t>(p[1]));
}
inline uint32_t Be32(const char* p) {
  return (static_cast<uint32_t>(static_cast<uint8_t>(p[0])) << 24) |
         (static_cast<uint32_t>(static_cast<uint8_t>(p[1])) << 16) |
         (static_cast<uint32_t>(static_cast<uint8_t>(p[2])) << 8) | static_cast<uint32_t>(static_cast<uint8_t>(p[3]));
}
inline uint64_t Be64(const char* p) { return (static_cast<uint64_t>(Be32(p)) << 32) | Be32(p + 4); }

struct TypeName {
  const char* name;
  uint32_t oid;
};
// Canonical names first (TypeOidName takes the first match).
constexpr TypeName kTypeNames[] = {
    {"bool", pgoid::kBool},
    {"boolean", pgoid::kBool},
    {"name", pgoid::kName},
    {"int8", pgoid::kInt8},
    {"bigint", pgoid::kInt8},
    {"int2", pgoid::kInt2},
    {"smallint", pgoid::kInt2},
    {"int4", pgoid::kInt4},
    {"int", pgoid::kInt4},
    {"integer", pgoid::kInt4},
    {"text", pgoid::kText},
    {"oid", pgoid::kOid},
    {"bpchar", pgoid::kBpchar},
    {"char", pgoid::kBpchar},
    {"character", pgoid::kBpchar},
    {"varchar", pgoid::kVarchar},
    {"character varying", pgoid::kVarchar},
    {"date", pgoid::kDate},
    {"timestamp", pgoid::kTimestamp},
    {"timestamp without time zone", pgoid::kTimestamp},
    {"timestamptz", pgoid::kTimestamptz},
    {"timestamp with time zone", pgoid::kTimestamptz},
    {"numeric", pgoid::kNumeric},
    {"decimal", pgoid::kNumeric},
    {"uuid", pgoid::kUuid},
};

struct ArrayPair {
  uint32_t array, elem;
};
constexpr ArrayPair kArrays[] = {
    {pgoid::kBoolArray, pgoid::kBool},         {pgoid::kNameArray, pgoid::kName},
    {pgoid::kInt2Array, pgoid::kInt2},         {pgoid::kInt4Array, pgoid::kInt4},
    {pgoid::kTextArray, pgoid::kText},         {pgoid::kBpcharArray, pgoid::kBpchar},
    {pgoid::kVarcharArray, pgoid::kVarchar},   {pgoid::kInt8Array, pgoid::kInt8},
    {pgoid::kOidArray, pgoid::kOid},           {pgoid::kTimestampArray, pgoid::kTimestamp},
    {pgoid::kDateArray, pgoid::kDate},         {pgoid::kTimestamptzArray, pgoid::kTimestamptz},
    {pgoid::kNumericArray, pgoid::kNumeric},   {pgoid::kUuidArray, pgoid::kUuid},
};

uint32_t ArrayOfElement(uint32_t elem) {
  for (const ArrayPair& a : kArrays) {
    if (a.elem == elem) return a.array;
  }
  return 0;
}

// ---------------------------------------------------------------- dates

constexpr int64_t kUsecsPerDay = int64_t{86400} * 1000000;
constexpr int kPostgresEpochJdate = 2451545;  // 2000-01-01
constexpr int64_t kDateEndJulian = 2147483494;
constexpr int64_t kMinTimestamp = int64_t{-211813488000000000};
constexpr int64_t kEndTimestamp = int64_t{9223371331200000000};

// PostgreSQL's j2date (src/backend/utils/adt/datetime.c).
void J2Date(int jd, int* year, int* month, int* day) {
  unsigned int julian = static_cast<unsigned int>(jd);
  julian += 32044;
  unsigned int quad = julian / 146097;
  unsigned int extra = (julian - quad * 146097) * 4 + 3;
  julian += 60 + quad * 3 + extra / 146097;
  quad = julian / 1461;
  julian -= quad * 1461;
  int y = static_cast<int>(julian * 4 / 1461);
  julian = ((y != 0) ? ((julian + 305) % 365) : ((julian + 306) % 366)) + 123;
  y += static_cast<int>(quad * 4);
  *year = y - 4800;
  quad = julian * 2141 / 65536;
  *day = static_cast<int>(julian - 7834 * quad / 256);
  *month = static_cast<int>((quad + 10) % 12 + 1);
}

void AppendZeroPad(int64_t v, int width, std::string* out) {
  // Digits in a stack buffer (same text as StrCat): called per numeric digit
  // group and date field, so no heap string per call.
  char buf[24];
  const char* end = std::to_chars(buf, buf + sizeof(buf), v).ptr;
  for (int i = static_cast<int>(end - buf); i < width; ++i) out->push_back('0');
  out->append(buf, end - buf);
}

// "YYYY-MM-DD" (year as PostgreSQL prints it: BC years count from 1); returns
// whether the year is BC (the caller appends " BC" at the very end).
bool AppendIsoDate(int jd, std::string* out) {
  int y, m, d;
  J2Date(jd, &y, &m, &d);
  const bool bc = y <= 0;
  AppendZeroPad(bc ? -(y - 1) : y, 4, out);
  out->push_back('-');
  AppendZeroPad(m, 2, out);
  out->push_back('-');
  AppendZeroPad(d, 2, out);
  return bc;
}

bool AppendDate(absl::string_view b, std::string* out) {
  if (b.size() != 4) return false;
  const int32_t days = static_cast<int32_t>(Be32(b.data()));
  if (days == std::numeric_limits<int32_t>::min()) {
    out->append("-infinity");
    return true;
  }
  if (days == std::numeric_limits<int32_t>::max()) {
    out->append("infinity");
    return true;
  }
  const int64_t jd = int64_t{days} + kPostgresEpochJdate;
  if (jd < 0 || jd >= kDateEndJulian) return false;
  if (AppendIsoDate(static_cast<int>(jd), out)) out->append(" BC");
  return true;
}

bool AppendTimestamp(absl::string_view b, bool with_tz, std::string* out) {
  if (b.size() != 8) return false;
  const int64_t t = static_cast<int64_t>(Be64(b.data()));
  if (t == std::numeric_limits<int64_t>::min()) {
    out->append("-infinity");
    return true;
  }
  if (t == std::numeric_limits<int64_t>::max()) {
    out->append("infinity");
    return true;
  }
  if (t < kMinTimestamp || t >= kEndTimestamp) return false;
  int64_t date = t / kUsecsPerDay;
  int64_t time = t - date * kUsecsPerDay;
  if (time < 0) {
    time += kUsecsPerDay;
    date -= 1;
  }
  date += kPostgresEpochJdate;
  if (date < 0 || date > std::numeric_limits<int32_t>::max()) return false;
  const bool bc = AppendIsoDate(static_cast<int>(date), out);
  const int64_t secs = time / 1000000;
  const int64_t fsec = time % 1000000;
  out->push_back(' ');
  AppendZeroPad(secs / 3600, 2, out);
  out->push_back(':');
  AppendZeroPad(secs / 60 % 60, 2, out);
  out->push_back(':');
  AppendZeroPad(secs % 60, 2, out);
  if (fsec != 0) {
    // Six digits, trailing zeros trimmed in place (fsec != 0: one stays).
    out->push_back('.');
    AppendZeroPad(fsec, 6, out);
    while (out->back() == '0') out->pop_back();
  }
  if (with_tz) out->append("+00");
  if (bc) out->append(" BC");
  return true;
}

// ---------------------------------------------------------------- numeric

constexpr int kMaxNumericWeight = 250;   // ~1000 integer digits
constexpr int kMaxNumericDscale = 1000;  // NUMERIC_MAX_DISPLAY_SCALE

bool AppendNumeric(absl::string_view b, std::string* out) {
  if (b.size() < 8) return false;
  const int ndigits = static_cast<int16_t>(Be16(b.data()));
  const int weight = static_cast<int16_t>(Be16(b.data() + 2));
  const uint16_t sign = Be16(b.data() + 4);
  const int dscale = static_cast<int16_t>(Be16(b.data() + 6));
  if (ndigits < 0 || b.size() != 8 + 2 * static_cast<size_t>(ndigits)) return false;
  switch (sign) {
    case 0xC000:
      out->append("NaN");
      return true;
    case 0xD000:
      out->append("Infinity");
      return true;
    case 0xF000:
      out->append("-Infinity");
      return true;
    case 0x0000:
    case 0x4000:
      break;
    default:
      return false;
  }
  if (dscale < 0 || dscale > kMaxNumericDscale || weight > kMaxNumericWeight) return false;
  auto digit = [&](int d) -> int {
    return (d >= 0 && d < ndigits) ? Be16(b.data() + 8 + 2 * d) : 0;
  };
  for (int d = 0; d < ndigits; ++d) {
    if (digit(d) > 9999) return false;
  }
  const size_t start = out->size();
  std::string& s = *out;
  if (weight < 0) {
    s.push_back('0');
  } else {
    for (int d = 0; d <= weight; ++d) {
      const int v = digit(d);
      if (d == 0) {
        absl::StrAppend(&s, v);
      } else {
        AppendZeroPad(v, 4, &s);
      }
    }
  }
  if (dscale > 0) {
    s.push_back('.');
    const size_t end = s.size() + dscale;
    for (int d = weight + 1; s.size() < end; ++d) AppendZeroPad(digit(d), 4, &s);
    s.resize(end);  // digits the scale hides are truncated, as numeric_recv does
  }
  // Negative unless every shown digit is zero (PostgreSQL has no -0).
  if (sign == 0x4000 && s.find_first_of("123456789", start) != std::string::npos) s.insert(start, 1, '-');
  return true;
}

void AppendUuidHex(const unsigned char* p, std::string* out) {
  static const char kHex[] = "0123456789abcdef";
  for (int i = 0; i < 16; ++i) {
    if (i == 4 || i == 6 || i == 8 || i == 10) out->push_back('-');
    out->push_back(kHex[p[i] >> 4]);
    out->push_back(kHex[p[i] & 15]);
  }
}

int HexVal(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

// uuid_in's accepted forms: 32 hex digits, optionally in braces, with a '-'
// allowed after any group of four digits.
bool ParseUuidText(absl::string_view t, unsigned char* out16) {
  bool braces = !t.empty() && t.front() == '{';
  if (braces) {
    if (t.size() < 2 || t.back() != '}') return false;
    t = t.substr(1, t.size() - 2);
  }
  int n = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (t[i] == '-') {
      if (n == 0 || n % 4 != 0 || n == 32 || i + 1 == t.size() || t[i + 1] == '-') return false;
      continue;
    }
    const int h = HexVal(t[i]);
    if (h < 0 || n >= 32) return false;
    if (n % 2 == 0) {
      out16[n / 2] = static_cast<unsigned char>(h << 4);
    } else {
      out16[n / 2] |= static_cast<unsigned char>(h);
    }
    ++n;
  }
  return n == 32;
}

absl::string_view StripTrailingBlanks(absl::string_view s) {
  while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
  return s;
}

bool IsNumberOid(uint32_t oid) {
  return oid == pgoid::kInt2 || oid == pgoid::kInt4 || oid == pgoid::kInt8 || oid == pgoid::kOid ||
         oid == pgoid::kNumeric;
}

}  // namespace

uint32_t ArrayElementOid(uint32_t array_oid) {
  for (const ArrayPair& a : kArrays) {
    if (a.array == array_oid) return a.elem;
  }
  return 0;
}

bool IsDecodableScalarOid(uint32_t oid) { return oid != 0 && ArrayOfElement(oid) != 0; }

uint32_t TypeOidByName(absl::string_view name) {
  std::string n = absl::AsciiStrToLower(absl::StripAsciiWhitespace(name));
  bool array = false;
  if (n.size() > 2 && n.compare(n.size() - 2, 2, "[]") == 0) {
    array = true;
    n.resize(n.size() - 2);
  } else if (n.size() > 1 && n[0] == '_') {
    array = true;
    n.erase(0, 1);
  }
  for (const TypeName& t : kTypeNames) {
    if (n == t.name) return array ? ArrayOfElement(t.oid) : t.oid;
  }
  return 0;
}

std::string TypeOidName(uint32_t oid) {
  const uint32_t elem = ArrayElementOid(oid);
  const uint32_t base = elem != 0 ? elem : oid;
  for (const TypeName& t : kTypeNames) {
    if (t.oid == base) return absl::StrCat(t.name, elem != 0 ? "[]" : "");
  }
  return absl::StrCat("type ", oid);
}

bool AppendBinaryScalarText(uint32_t oid, absl::string_view b, std::string* out) {
  switch (oid) {
    case pgoid::kBool:
      if (b.size() != 1) return false;
      out->append(b[0] != 0 ? "true" : "false");
      return true;
    case pgoid::kInt2:
      if (b.size() != 2) return false;
      absl::StrAppend(out, static_cast<int16_t>(Be16(b.data())));
      return true;
    case pgoid::kInt4:
      if (b.size() != 4) return false;
      absl::StrAppend(out, static_cast<int32_t>(Be32(b.data())));
      return true;
    case pgoid::kOid:
      if (b.size() != 4) return false;
      absl::StrAppend(out, Be32(b.data()));
      return true;
    case pgoid::kInt8:
      if (b.size() != 8) return false;
      absl::StrAppend(out, static_cast<int64_t>(Be64(b.data())));
      return true;
    case pgoid::kNumeric:
      return AppendNumeric(b, out);
    case pgoid::kText:
    case pgoid::kVarchar:
    case pgoid::kName:
      out->append(b.data(), b.size());
      return true;
    case pgoid::kBpchar: {
      absl::string_view s = StripTrailingBlanks(b);
      out->append(s.data(), s.size());
      return true;
    }
    case pgoid::kUuid:
      if (b.size() != 16) return false;
      AppendUuidHex(reinterpret_cast<const unsigned char*>(b.data()), out);
      return true;
    case pgoid::kDate:
      return AppendDate(b, out);
    case pgoid::kTimestamp:
      return AppendTimestamp(b, /*with_tz=*/false, out);
    case pgoid::kTimestamptz:
      return AppendTimestamp(b, /*with_tz=*/true, out);
    default:
      return false;
  }
}

bool AppendTextScalar(uint32_t oid, absl::string_view t, std::string* out) {
  switch (oid) {
    case pgoid::kBool: {
      // boolin: t/tr/tru/true, y/ye/yes, on, 1 (and their negatives), blanks around.
      // Compared case-blind in place: no lowered copy per bound bool.
      const absl::string_view w = absl::StripAsciiWhitespace(t);
      auto is = [&](absl::string_view word) { return absl::EqualsIgnoreCase(w, word); };
      auto prefix_of = [&](absl::string_view full) { return !w.empty() && absl::StartsWithIgnoreCase(full, w); };
      if (is("1") || is("on") || prefix_of("true") || prefix_of("yes")) {
        out->append("true");
      } else if (is("0") || is("off") || is("of") || prefix_of("false") || prefix_of("no")) {
        // "o" alone is ambiguous (on/off) and rejected by PostgreSQL.
        out->append("false");
      } else {
        return false;
      }
      return true;
    }
    case pgoid::kBpchar: {
      absl::string_view s = StripTrailingBlanks(t);
      out->append(s.data(), s.size());
      return true;
    }
    case pgoid::kUuid: {
      unsigned char u[16];
      if (ParseUuidText(absl::StripAsciiWhitespace(t), u)) {
        AppendUuidHex(u, out);
      } else {
        out->append(t.data(), t.size());
      }
      return true;
    }
    default:
      if (IsNumberOid(oid)) t = absl::StripAsciiWhitespace(t);
      out->append(t.data(), t.size());
      return true;
  }
}

// ---------------------------------------------------------------- array literals

bool ParseArrayLiteral(absl::string_view lit, std::string* unescaped, std::vector<ArrayLiteralElement>* out) {
  out->clear();
  unescaped->clear();
  unescaped->reserve(lit.size());  // never outgrown: views into it stay valid
  auto is_space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\v' || c == '\f'; };
  size_t i = 0;
  const size_t n = lit.size();
  auto skip_space = [&] {
    while (i < n && is_space(lit[i])) ++i;
  };
  skip_space();
  if (i < n && lit[i] == '[') {  // '[lo:hi]=' dimension decoration, one dimension
    while (i < n && lit[i] != ']') ++i;
    if (i >= n) return false;
    ++i;
    skip_space();
    if (i >= n || lit[i] != '=') return false;
    ++i;
    skip_space();
  }
  if (i >= n || lit[i] != '{') return false;
  ++i;
  skip_space();
  if (i < n && lit[i] == '}') {
    ++i;
    skip_space();
    return i == n;
  }
  for (;;) {
    skip_space();
    if (i >= n) return false;
    if (lit[i] == '{') return false;  // a nested dimension
    ArrayLiteralElement e;
    if (lit[i] == '"') {
      ++i;
      const size_t start = unescaped->size();
      bool closed = false;
      while (i < n) {
        char c = lit[i++];
        if (c == '"') {
          closed = true;
          break;
        }
        if (c == '\\') {
          if (i >= n) return false;
          c = lit[i++];
        }
        unescaped->push_back(c);
      }
      if (!closed) return false;
      e.text = absl::string_view(*unescaped).substr(start);
      skip_space();
    } else {
      const size_t begin = i;
      bool escaped = false;
      while (i < n && lit[i] != ',' && lit[i] != '}') {
        if (lit[i] == '"' || lit[i] == '{') return false;
        if (lit[i] == '\\') {
          escaped = true;
          if (++i >= n) return false;
        }
        ++i;
      }
      absl::string_view raw = lit.substr(begin, i - begin);
      // Trailing blanks of an unquoted element are dropped (unless escaped).
      while (!raw.empty() && is_space(raw.back()) && !(raw.size() >= 2 && raw[raw.size() - 2] == '\\')) {
        raw.remove_suffix(1);
      }
      if (raw.empty()) return false;
      if (escaped) {
        const size_t start = unescaped->size();
        for (size_t k = 0; k < raw.size(); ++k) {
          if (raw[k] == '\\' && k + 1 < raw.size()) ++k;
          unescaped->push_back(raw[k]);
        }
        e.text = absl::string_view(*unescaped).substr(start);
      } else {
        e.text = raw;
        e.is_null = absl::EqualsIgnoreCase(raw, "null");
      }
    }
    out->push_back(e);
    if (i >= n) return false;
    if (lit[i] == ',') {
      ++i;
      continue;
    }
    if (lit[i] != '}') return false;
    ++i;
    skip_space();
    return i == n;
  }
}

// ---------------------------------------------------------------- BoundParams

bool BoundParams::DecodeBinaryArray(uint32_t want_elem, absl::string_view b, Slot* slot) {
  if (b.size() < 12) return false;
  const int32_t ndim = static_cast<int32_t>(Be32(b.data()));
  const int32_t flags = static_cast<int32_t>(Be32(b.data() + 4));
  const uint32_t elem = Be32(b.data() + 8);
  if (flags != 0 && flags != 1) return false;
  if (!IsDecodableScalarOid(elem)) return false;
  if (want_elem != 0 && elem != want_elem) return false;
  slot->is_array = true;
  slot->elem_begin = static_cast<uint32_t>(elem_slots_.size());
  slot->elem_count = 0;
  if (ndim == 0) return b.size() == 12;
  if (ndim != 1 || b.size() < 20) return false;
  const int32_t dim = static_cast<int32_t>(Be32(b.data() + 12));
  // b.data()+16: lower bound, irrelevant to the elements' values.
  size_t pos = 20;
  // Each element takes at least its 4-byte length: bounds the count by the bytes present.
  if (dim < 0 || static_cast<size_t>(dim) > (b.size() - pos) / 4) return false;
  for (int32_t k = 0; k < dim; ++k) {
    if (b.size() - pos < 4) return false;
    const int32_t len = static_cast<int32_t>(Be32(b.data() + pos));
    pos += 4;
    Slot e;
    if (len == -1) {
      e.is_null = true;
    } else {
      if (len < 0 || static_cast<size_t>(len) > b.size() - pos) return false;
      e.begin = static_cast<uint32_t>(arena_.size());
      if (!AppendBinaryScalarText(elem, b.substr(pos, len), &arena_)) return false;
      e.len = static_cast<uint32_t>(arena_.size()) - e.begin;
      pos += len;
    }
    elem_slots_.push_back(e);
    ++slot->elem_count;
  }
  return pos == b.size();
}

bool BoundParams::DecodeTextArray(uint32_t elem, absl::string_view text, Slot* slot) {
  if (!ParseArrayLiteral(text, &unescape_, &literal_elems_)) return false;
  slot->is_array = true;
  slot->elem_begin = static_cast<uint32_t>(elem_slots_.size());
  slot->elem_count = 0;
  for (const ArrayLiteralElement& le : literal_elems_) {
    Slot e;
    if (le.is_null) {
      e.is_null = true;
    } else {
      e.begin = static_cast<uint32_t>(arena_.size());
      if (!AppendTextScalar(elem, le.text, &arena_)) return false;
      e.len = static_cast<uint32_t>(arena_.size()) - e.begin;
    }
    elem_slots_.push_back(e);
    ++slot->elem_count;
  }
  return true;
}

DecodeOutcome BoundParams::DecodeOne(uint32_t oid, int16_t format, const RawParam& value, Slot* slot) {
  if (value.is_null) {
    slot->is_null = true;
    return DecodeOutcome::kNull;
  }
  const size_t arena_mark = arena_.size();
  const size_t elem_mark = elem_slots_.size();
  bool ok;
  const uint32_t elem = ArrayElementOid(oid);
  slot->begin = static_cast<uint32_t>(arena_.size());
  if (format == 0) {
    if (oid == pgoid::kUnspecified || (elem == 0 && !IsDecodableScalarOid(oid))) {
      arena_.append(value.bytes.data(), value.bytes.size());  // text as sent
      ok = true;
    } else if (elem != 0) {
      ok = DecodeTextArray(elem, value.bytes, slot);
    } else {
      ok = AppendTextScalar(oid, value.bytes, &arena_);
    }
  } else if (elem != 0) {
    ok = DecodeBinaryArray(elem, value.bytes, slot);
  } else {
    ok = AppendBinaryScalarText(oid, value.bytes, &arena_);
  }
  if (!ok) {
    arena_.resize(arena_mark);
    elem_slots_.resize(elem_mark);
    *slot = Slot();
    slot->is_null = true;
    return DecodeOutcome::kUndecodable;
  }
  slot->len = static_cast<uint32_t>(arena_.size()) - slot->begin;
  return DecodeOutcome::kValue;
}

absl::Status BoundParams::Decode(absl::Span<const uint32_t> declared_oids, absl::Span<const int16_t> format_codes,
                                 absl::Span<const RawParam> values) {
  arena_.clear();
  slots_.clear();
  elem_slots_.clear();
  params_.clear();
  elements_.clear();
  outcomes_.clear();
  undecodable_ = 0;
  if (format_codes.size() > 1 && format_codes.size() != values.size()) {
    return absl::InvalidArgumentError(absl::StrCat("Bind has ", format_codes.size(), " parameter format codes for ",
                                                   values.size(), " parameters"));
  }
  for (int16_t f : format_codes) {
    if (f != 0 && f != 1) return absl::InvalidArgumentError(absl::StrCat("invalid parameter format code ", f));
  }
  slots_.resize(values.size());
  outcomes_.resize(values.size());
  for (size_t i = 0; i < values.size(); ++i) {
    const uint32_t oid = i < declared_oids.size() ? declared_oids[i] : pgoid::kUnspecified;
    const int16_t fmt = format_codes.empty() ? 0 : format_codes.size() == 1 ? format_codes[0] : format_codes[i];
    outcomes_[i] = DecodeOne(oid, fmt, values[i], &slots_[i]);
    if (outcomes_[i] == DecodeOutcome::kUndecodable) ++undecodable_;
  }
  // Views are taken only now: the arena has stopped moving.
  const absl::string_view arena(arena_);
  elements_.resize(elem_slots_.size());
  for (size_t i = 0; i < elem_slots_.size(); ++i) {
    const Slot& s = elem_slots_[i];
    elements_[i].is_null = s.is_null;
    if (!s.is_null) elements_[i].text = arena.substr(s.begin, s.len);
  }
  params_.resize(slots_.size());
  for (size_t i = 0; i < slots_.size(); ++i) {
    const Slot& s = slots_[i];
    ParamValue& p = params_[i];
    p.is_null = s.is_null;
    if (s.is_null) continue;
    if (s.is_array) {
      p.is_array = true;
      p.elements = elements_.data() + s.elem_begin;
      p.num_elements = s.elem_count;
    } else {
      p.text = arena.substr(s.begin, s.len);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<uint32_t>> ParseParameterDescription(absl::string_view body) {
  if (body.size() < 2) return absl::InvalidArgumentError("ParameterDescription: short body");
  const int16_t count = static_cast<int16_t>(Be16(body.data()));
  if (count < 0) return absl::InvalidArgumentError("ParameterDescription: negative count");
  if (body.size() != 2 + 4 * static_cast<size_t>(count)) {
    return absl::InvalidArgumentError(absl::StrCat("ParameterDescription: ", count, " types in ", body.size(), " bytes"));
  }
  std::vector<uint32_t> oids(count);
  for (int i = 0; i < count; ++i) oids[i] = Be32(body.data() + 2 + 4 * i);
  return oids;
}

namespace {

// Bounds-checked big-endian reader over a message body; after any failed
// read ok() is false and further reads return zero values.
class BodyReader {
 public:
  explicit BodyReader(absl::string_view b) : b_(b) {}
  bool ok() const { return ok_; }
  bool done() const { return ok_ && pos_ == b_.size(); }
  int16_t Int16() {
    if (!Need(2)) return 0;
    pos_ += 2;
    return static_cast<int16_t>(Be16(b_.data() + pos_ - 2));
  }
  int32_t Int32() {
    if (!Need(4)) return 0;
    pos_ += 4;
    return static_cast<int32_t>(Be32(b_.data() + pos_ - 4));
  }
  absl::string_view CString() {
    const size_t nul = ok_ ? b_.find('\0', pos_) : absl::string_view::npos;
    if (nul == absl::string_view::npos) {
      ok_ = false;
      return {};
    }
    absl::string_view s = b_.substr(pos_, nul - pos_);
    pos_ = nul + 1;
    return s;
  }
  absl::string_view Bytes(size_t n) {
    if (!Need(n)) return {};
    pos_ += n;
    return b_.substr(pos_ - n, n);
  }
  size_t remaining() const { return ok_ ? b_.size() - pos_ : 0; }

 private:
  bool Need(size_t n) {
    if (!ok_ || b_.size() - pos_ < n) ok_ = false;
    return ok_;
  }
  absl::string_view b_;
  size_t pos_ = 0;
  bool ok_ = true;
};

}  // namespace

absl::StatusOr<std::vector<uint32_t>> ParseParseMessageOids(absl::string_view body) {
  BodyReader r(body);
  r.CString();  // statement name
  r.CString();  // query
  const int16_t n = r.Int16();
  if (!r.ok() || n < 0 || r.remaining() != 4 * static_cast<size_t>(n)) {
    return absl::InvalidArgumentError("malformed Parse message");
  }
  std::vector<uint32_t> oids(n);
  for (auto& o : oids) o = static_cast<uint32_t>(r.Int32());
  return oids;
}

absl::Status ParseBindMessage(absl::string_view body, BindMessage* out) {
  BodyReader r(body);
  out->param_formats.clear();
  out->values.clear();
  out->portal = r.CString();
  out->statement = r.CString();
  const int16_t nfmt = r.Int16();
  // Each count is bounded by the bytes left before anything is reserved.
  if (!r.ok() || nfmt < 0 || r.remaining() < 2 * static_cast<size_t>(nfmt)) {
    return absl::InvalidArgumentError("malformed Bind message (parameter formats)");
  }
  for (int16_t i = 0; i < nfmt; ++i) out->param_formats.push_back(r.Int16());
  const int16_t np = r.Int16();
  if (!r.ok() || np < 0 || r.remaining() < 4 * static_cast<size_t>(np)) {
    return absl::InvalidArgumentError("malformed Bind message (parameter count)");
  }
  for (int16_t i = 0; i < np && r.ok(); ++i) {
    const int32_t len = r.Int32();
    RawParam p;
    if (len == -1) {
      p.is_null = true;
    } else if (len < 0) {
      return absl::InvalidArgumentError("malformed Bind message (negative length)");
    } else {
      p.bytes = r.Bytes(static_cast<size_t>(len));
    }
    out->values.push_back(p);
  }
  const int16_t nres = r.Int16();
  if (r.ok() && nres >= 0) {
    for (int16_t i = 0; i < nres; ++i) r.Int16();
  }
  if (!r.done() || nres < 0) return absl::InvalidArgumentError("malformed Bind message");
  return absl::OkStatus();
}

}  // namespace corral
