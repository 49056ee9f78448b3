// `corral refs --params`: a Bind's parameters written on the command line,
// turned into the (type OIDs, format codes, raw values) a Bind message
// carries, for policies/pg_params.h's BoundParams::Decode.
//
// A list is comma-separated (commas inside {...} or "..." do not split);
// each item is
//   VALUE                 untyped text (type 0), as psql/pgbench send it
//   TYPE:VALUE            text format with a type: int4:5, numeric:3.50,
//                         text:"a,b" (double quotes protect commas; a
//                         backslash escapes " and itself), int4[]:{1,2,3},
//                         date:2024-01-31
//   TYPE:b:HEX            binary format, the value's bytes in hex:
//                         int4:b:00000005, numeric:b:0001000000000000 0005
//                         (blanks in HEX are ignored)
//   NULL  or  TYPE:NULL   SQL NULL
// TYPE is a name policies/pg_params.h knows (int2 int4 int8 oid numeric bool
// text varchar bpchar name uuid date timestamp timestamptz, their SQL aliases
// and T[]), "unknown" (type 0), or a numeric type OID (701).
//
//   absl::StatusOr<std::vector<CliParam>> p = ParseParamSpecs("int4:b:00000005,numeric:3.50");
//
// Thread-safety: pure functions.
#ifndef CORRAL_CLI_PARAM_SPEC_H_
#define CORRAL_CLI_PARAM_SPEC_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "policies/pg_params.h"

namespace corral {
namespace cli {

struct CliParam {
  uint32_t oid = 0;    // 0: unspecified
  int16_t format = 0;  // 0 text, 1 binary
  std::string bytes;   // the value as a Bind would carry it
  bool is_null = false;
};

// InvalidArgument naming the item for an unknown type with "b:", bad hex, or
// an unterminated quote or brace.
absl::StatusOr<std::vector<CliParam>> ParseParamSpecs(absl::string_view list);

// Decodes the parameters as the proxy decodes a Bind carrying them (one
// format code per value); the Status of BoundParams::Decode.
absl::Status DecodeCliParams(const std::vector<CliParam>& params, BoundParams* out);

}  // namespace cli
}  // namespace corral

#endif  // CORRAL_CLI_PARAM_SPEC_H_
