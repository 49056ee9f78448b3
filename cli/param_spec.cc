#include "cli/param_spec.h"

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "policies/pg_params.h"

namespace corral {
namespace cli {
namespace {

// Splits at commas outside {...} and "..." (a backslash escapes inside quotes).
absl::StatusOr<std::vector<std::string>> SplitTopLevel(absl::string_view list) {
  std::vector<std::string> items;
  std::string cur;
  int depth = 0;
  bool quoted = false;
  for (size_t i = 0; i < list.size(); ++i) {
    const char c = list[i];
    if (quoted) {
      cur.push_back(c);
      if (c == '\\' && i + 1 < list.size()) {
        cur.push_back(list[++i]);
      } else if (c == '"') {
        quoted = false;
      }
      continue;
    }
    if (c == '"') quoted = true;
    if (c == '{') ++depth;
    if (c == '}') --depth;
    if (c == ',' && depth == 0) {
      items.push_back(cur);
      cur.clear();
      continue;
    }
    cur.push_back(c);
  }
  if (quoted || depth != 0) return absl::InvalidArgumentError(absl::StrCat("unterminated quote or brace in '", list, "'"));
  items.push_back(cur);
  return items;
}

// The type prefix of an item: true and *oid if `prefix` names a type.
bool TypePrefix(absl::string_view prefix, uint32_t* oid) {
  if (prefix == "unknown") {
    *oid = 0;
    return true;
  }
  if (!prefix.empty() && absl::SimpleAtoi(prefix, oid)) return true;
  *oid = TypeOidByName(prefix);
  return *oid != 0;
}

}  // namespace

absl::StatusOr<std::vector<CliParam>> ParseParamSpecs(absl::string_view list) {
  std::vector<CliParam> out;
  if (absl::StripAsciiWhitespace(list).empty()) return out;
  absl::StatusOr<std::vector<std::string>> items = SplitTopLevel(list);
  if (!items.ok()) return items.status();
  for (const std::string& item : *items) {
    CliParam p;
    absl::string_view rest = item;
    const size_t colon = rest.find(':');
    uint32_t oid = 0;
    if (colon != absl::string_view::npos && TypePrefix(rest.substr(0, colon), &oid)) {
      p.oid = oid;
      rest.remove_prefix(colon + 1);
    }
    if (rest == "NULL") {
      p.is_null = true;
    } else if (p.oid != 0 && absl::StartsWith(rest, "b:")) {
      p.format = 1;
      std::string hex;
      for (char c : rest.substr(2)) {
        if (c != ' ') hex.push_back(c);
      }
      if (hex.size() % 2 != 0 || hex.find_first_not_of("0123456789abcdefABCDEF") != std::string::npos) {
        return absl::InvalidArgumentError(absl::StrCat("'", item, "': b: wants an even number of hex digits"));
      }
      p.bytes = absl::HexStringToBytes(hex);
    } else if (rest.size() >= 2 && rest.front() == '"' && rest.back() == '"' && ArrayElementOid(p.oid) == 0) {
      for (size_t i = 1; i + 1 < rest.size(); ++i) {
        if (rest[i] == '\\' && i + 2 < rest.size()) ++i;
        p.bytes.push_back(rest[i]);
      }
    } else {
      p.bytes = std::string(rest);
    }
    out.push_back(std::move(p));
  }
  return out;
}

absl::Status DecodeCliParams(const std::vector<CliParam>& params, BoundParams* out) {
  std::vector<uint32_t> oids;
  std::vector<int16_t> formats;
  std::vector<RawParam> raws;
  for (const CliParam& p : params) {
    oids.push_back(p.oid);
    formats.push_back(p.format);
    raws.push_back(RawParam{p.bytes, p.is_null});
  }
  return out->Decode(oids, formats, raws);
}

}  // namespace cli
}  // namespace corral
