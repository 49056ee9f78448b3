// `corral refs`: prints each statement's references.
//
//   echo "UPDATE stock SET s_quantity=6 WHERE s_i_id=2 AND s_w_id=5" |
//     corral refs --refs=canonical --grouping=all --schema=schemas/tpcc.sql
//   # 1: UPDATE stock SET s_quantity=6 WHERE s_i_id=2 AND s_w_id=5
//   s_quantity=6
//   i_id=2 AND w_id=5
//
// Statements are `;`-separated, from --sql, the file argument or stdin. Each
// is printed as a `# N: text` line followed by its references, one per line.
// A statement that fails to parse is reported on stderr with its number, text
// and position; the rest still run, and the exit code is 1.
//
// The references of a Bind: --params gives $1, $2, ... with their types and
// wire formats (cli/param_spec.h), decoded as the proxy decodes a Bind
// (policies/pg_params.h); each parameter's decoded value is printed as a
// `# $i` line, an undecodable one as such (it yields no reference).
//
//   corral refs --schema=schemas/tpcc.sql \
//     --sql 'UPDATE warehouse SET w_ytd = w_ytd + $2 WHERE w_id = $1' \
//     --params 'int4:b:00000005,numeric:3.50'
//   # 1: UPDATE warehouse SET w_ytd = w_ytd + $2 WHERE w_id = $1
//   # $1 int4 binary: 5
//   # $2 numeric text: 3.50
//   w_id=5
#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "cli/param_spec.h"
#include "policies/pg_params.h"
#include "policies/policy.h"
#include "policies/ref_extractor.h"
#include "policies/schema.h"
#include "policies/sql_lexer.h"

ABSL_FLAG(std::string, refs, "canonical", "reference naming: literal | canonical");
ABSL_FLAG(std::string, grouping, "single", "reference grouping: single | all");
ABSL_FLAG(std::string, schema, "", "schema DDL file (CREATE TABLE with keys, CREATE FUNCTION)");
ABSL_FLAG(std::string, mapping, "", "mapping file: column=canonical per line, # comments");
ABSL_FLAG(std::string, sql, "", "the statement(s) to read, instead of FILE or stdin");
ABSL_FLAG(std::string, params, "",
          "bound parameters $1,$2,... as a Bind carries them, comma-separated: VALUE (untyped text), "
          "TYPE:VALUE (text format, e.g. int4:5, numeric:3.50, text:\"a,b\", int4[]:{1,2,3}), "
          "TYPE:b:HEX (binary format, e.g. int4:b:00000005), NULL. TYPE: int2 int4 int8 oid numeric bool "
          "text varchar bpchar name uuid date timestamp timestamptz, T[], unknown, or a type OID");

namespace corral {
namespace cli {
namespace {

bool ReadAll(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace

// Declared in cli/commands.h.
int RunRefs(const std::vector<char*>& args) {
  ExtractionPolicy policy;
  std::string naming = absl::AsciiStrToLower(absl::GetFlag(FLAGS_refs));
  std::string grouping = absl::AsciiStrToLower(absl::GetFlag(FLAGS_grouping));
  if (naming == "literal") {
    policy.naming = RefNaming::kLiteral;
  } else if (naming == "canonical") {
    policy.naming = RefNaming::kCanonical;
  } else {
    std::fprintf(stderr, "corral refs: --refs must be literal or canonical, not '%s'\n", naming.c_str());
    return 2;
  }
  if (grouping == "single") {
    policy.grouping = RefGrouping::kSingle;
  } else if (grouping == "all") {
    policy.grouping = RefGrouping::kAll;
  } else {
    std::fprintf(stderr, "corral refs: --grouping must be single or all, not '%s'\n", grouping.c_str());
    return 2;
  }

  SchemaBuilder builder;
  for (const auto& [flag, is_ddl] : {std::pair<std::string, bool>{absl::GetFlag(FLAGS_schema), true},
                                     std::pair<std::string, bool>{absl::GetFlag(FLAGS_mapping), false}}) {
    if (flag.empty()) continue;
    std::string text;
    if (!ReadAll(flag, &text)) {
      std::fprintf(stderr, "corral refs: cannot read %s\n", flag.c_str());
      return 2;
    }
    absl::Status st = is_ddl ? builder.AddDdl(text) : builder.AddMappingText(text);
    if (!st.ok()) {
      std::fprintf(stderr, "corral refs: %s: %s\n", flag.c_str(), std::string(st.message()).c_str());
      return 2;
    }
  }
  absl::StatusOr<std::shared_ptr<const Schema>> schema = builder.Build();
  if (!schema.ok()) {
    std::fprintf(stderr, "corral refs: schema: %s\n", std::string(schema.status().message()).c_str());
    return 2;
  }

  absl::StatusOr<std::vector<CliParam>> specs = ParseParamSpecs(absl::GetFlag(FLAGS_params));
  if (!specs.ok()) {
    std::fprintf(stderr, "corral refs: --params: %s\n", std::string(specs.status().message()).c_str());
    return 2;
  }
  BoundParams bound;
  if (absl::Status st = DecodeCliParams(*specs, &bound); !st.ok()) {
    std::fprintf(stderr, "corral refs: --params: %s\n", std::string(st.message()).c_str());
    return 2;
  }
  std::vector<std::string> param_lines;
  for (size_t i = 0; i < specs->size(); ++i) {
    const ParamValue& v = bound.params()[i];
    std::string line = absl::StrCat("# $", i + 1, " ", (*specs)[i].oid == 0 ? "unknown" : TypeOidName((*specs)[i].oid),
                                    (*specs)[i].format == 1 ? " binary: " : " text: ");
    if (bound.outcomes()[i] == DecodeOutcome::kUndecodable) {
      absl::StrAppend(&line, "undecodable (no reference)");
    } else if (v.is_null) {
      absl::StrAppend(&line, "NULL");
    } else if (v.is_array) {
      absl::StrAppend(&line, "array of ", v.num_elements, ":");
      for (uint32_t k = 0; k < v.num_elements; ++k) {
        absl::StrAppend(&line, " ", v.elements[k].is_null ? "NULL" : absl::StrCat("[", v.elements[k].text, "]"));
      }
    } else {
      absl::StrAppend(&line, v.text);
    }
    param_lines.push_back(std::move(line));
  }

  std::string input;
  if (!absl::GetFlag(FLAGS_sql).empty()) {
    input = absl::GetFlag(FLAGS_sql);
  } else if (args.size() >= 2) {
    if (!ReadAll(args[1], &input)) {
      std::fprintf(stderr, "corral refs: cannot read %s\n", args[1]);
      return 2;
    }
  } else {
    std::stringstream ss;
    ss << std::cin.rdbuf();
    input = ss.str();
  }

  RefExtractor extractor(*schema);
  int failed = 0, n = 0;
  for (const StatementSpan& stmt : SplitStatements(input)) {
    ++n;
    std::string one_line = absl::StrReplaceAll(stmt.text, {{"\n", " "}, {"\r", " "}});
    RefVec ids;
    std::vector<std::string> texts;
    absl::Status st = extractor.Extract(stmt.text, policy, bound.params(), &ids, &texts);
    if (!st.ok()) {
      ++failed;
      std::fprintf(stderr, "statement %d (%s): %s\n", n, one_line.c_str(), std::string(st.message()).c_str());
      continue;
    }
    std::printf("# %d: %s\n", n, one_line.c_str());
    for (const std::string& l : param_lines) std::printf("%s\n", l.c_str());
    for (const std::string& t : texts) std::printf("%s\n", t.c_str());
  }
  std::fflush(stdout);
  return failed > 0 ? 1 : 0;
}

}  // namespace cli
}  // namespace corral
