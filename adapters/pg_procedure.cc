#include "adapters/pg_procedure.h"

#include "absl/strings/str_cat.h"

namespace corral {
namespace adapters {

absl::Status PgCatalog::Add(std::string name, std::string sql) {
  if (name.empty()) return absl::InvalidArgumentError("PgCatalog: empty template name");
  auto [it, inserted] = sql_.emplace(std::move(name), std::move(sql));
  if (!inserted) {
    return absl::AlreadyExistsError(absl::StrCat("PgCatalog: duplicate template '", it->first, "'"));
  }
  return absl::OkStatus();
}

const std::string* PgCatalog::Find(absl::string_view name) const {
  auto it = sql_.find(name);
  return it == sql_.end() ? nullptr : &it->second;
}

PgStatementSequence::PgStatementSequence(std::vector<PgStep> steps)
    : next_([steps = std::move(steps)](const std::vector<PgResult>& so_far)
                -> absl::StatusOr<absl::optional<PgStep>> {
        if (so_far.size() >= steps.size()) return absl::optional<PgStep>();
        return absl::optional<PgStep>(steps[so_far.size()]);
      }) {}

absl::Status PgStatementSequence::Run(PgSession& s) {
  results_.clear();
  for (;;) {
    absl::StatusOr<absl::optional<PgStep>> step = next_(results_);
    if (!step.ok()) return step.status();
    if (!step->has_value()) return absl::OkStatus();
    const PgStep& st = **step;
    absl::StatusOr<PgResult> r;
    if (st.stmt.name.empty()) {
      if (!st.params.empty()) {
        return absl::InvalidArgumentError("PgStep: parameters need a named template");
      }
      r = s.ExecSql(st.stmt.sql);
    } else {
      r = s.ExecTemplate(st.stmt, st.params);
    }
    if (!r.ok()) return r.status();
    results_.push_back(*std::move(r));
  }
}

}  // namespace adapters
}  // namespace corral
