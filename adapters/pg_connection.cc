#include "adapters/pg_connection.h"


#include "absl/strings/ascii.h"
#include "absl/strings/cord.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace corral {
namespace adapters {

PgResult PgResult::Rows(std::vector<std::string> columns,
                        std::vector<std::vector<absl::optional<std::string>>> rows,
                        std::string command_tag) {
  PgResult r;
  r.columns_ = std::move(columns);
  r.rows_ = std::move(rows);
  r.command_tag_ = std::move(command_tag);
  return r;
}

PgResult PgResult::Error(std::string sqlstate, std::string message, std::string detail,
                         std::string hint) {
  PgResult r;
  r.kind_ = Kind::kError;
  r.sqlstate_ = std::move(sqlstate);
  r.message_ = std::move(message);
  r.detail_ = std::move(detail);
  r.hint_ = std::move(hint);
  return r;
}

PgResult PgResult::Lost(std::string message) {
  PgResult r;
  r.kind_ = Kind::kConnectionLost;
  r.message_ = std::move(message);
  return r;
}

int64_t PgResult::affected_rows() const {
  // The count is the last word of the tag ("INSERT 0 5", "UPDATE 3").
  size_t sp = command_tag_.rfind(' ');
  if (sp == std::string::npos) return -1;
  int64_t n;
  if (!absl::SimpleAtoi(absl::string_view(command_tag_).substr(sp + 1), &n)) return -1;
  return n;
}

const std::string& PgResult::Get(int row, int col) const {
  static const std::string* const kEmpty = new std::string();
  const auto& v = rows_[row][col];
  return v.has_value() ? *v : *kEmpty;
}

absl::StatusOr<int64_t> PgResult::GetInt(int row, int col) const {
  if (row < 0 || row >= num_rows() || col < 0 || col >= num_columns()) {
    return absl::OutOfRangeError(absl::StrCat("no value at row ", row, " column ", col, " (",
                                              num_rows(), "x", num_columns(), " result)"));
  }
  if (IsNull(row, col)) return absl::InvalidArgumentError("value is NULL");
  int64_t v;
  if (!absl::SimpleAtoi(Get(row, col), &v)) {
    return absl::InvalidArgumentError(absl::StrCat("not an integer: '", Get(row, col), "'"));
  }
  return v;
}

absl::StatusOr<double> PgResult::GetDouble(int row, int col) const {
  if (row < 0 || row >= num_rows() || col < 0 || col >= num_columns()) {
    return absl::OutOfRangeError(absl::StrCat("no value at row ", row, " column ", col));
  }
  if (IsNull(row, col)) return absl::InvalidArgumentError("value is NULL");
  double v;
  if (!absl::SimpleAtod(Get(row, col), &v)) {
    return absl::InvalidArgumentError(absl::StrCat("not a number: '", Get(row, col), "'"));
  }
  return v;
}

absl::Status PgResult::ToStatus(absl::string_view what) const {
  if (ok()) return absl::OkStatus();
  std::string msg;
  if (kind_ == Kind::kConnectionLost) {
    msg = absl::StrCat("connection lost: ", absl::StripAsciiWhitespace(message_));
  } else {
    msg = absl::StrCat("SQLSTATE ", sqlstate_.empty() ? "(none)" : sqlstate_, ": ",
                       absl::StripAsciiWhitespace(message_));
    if (!detail_.empty()) absl::StrAppend(&msg, "; DETAIL: ", detail_);
    if (!hint_.empty()) absl::StrAppend(&msg, "; HINT: ", hint_);
  }
  if (!what.empty()) absl::StrAppend(&msg, " [in ", what, "]");
  absl::StatusCode code = kind_ == Kind::kConnectionLost ? absl::StatusCode::kUnavailable
                                                         : StatusCodeForSqlState(sqlstate_);
  absl::Status s(code, msg);
  if (!sqlstate_.empty()) s.SetPayload(kSqlStatePayloadUrl, absl::Cord(sqlstate_));
  return s;
}

std::string SqlStateOf(const absl::Status& s) {
  absl::optional<absl::Cord> p = s.GetPayload(kSqlStatePayloadUrl);
  return p.has_value() ? std::string(*p) : std::string();
}

absl::StatusCode StatusCodeForSqlState(absl::string_view st) {
  if (st.size() != 5) return absl::StatusCode::kInternal;
  absl::string_view cls = st.substr(0, 2);
  if (cls == "40" || st == kSqlStateLockNotAvailable) return absl::StatusCode::kAborted;
  if (st == kSqlStateUniqueViolation) return absl::StatusCode::kAlreadyExists;
  if (cls == "23") return absl::StatusCode::kFailedPrecondition;
  if (cls == "42" || cls == "22") return absl::StatusCode::kInvalidArgument;
  if (st == kSqlStateQueryCanceled) return absl::StatusCode::kDeadlineExceeded;
  if (cls == "08" || st.substr(0, 4) == "57P0") return absl::StatusCode::kUnavailable;
  return absl::StatusCode::kInternal;
}

}  // namespace adapters
}  // namespace corral
