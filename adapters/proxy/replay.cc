#include "adapters/proxy/replay.h"

#include <functional>
#include <string_view>

#include "absl/strings/match.h"

namespace corral {
namespace proxy {
namespace {

// CommandComplete tags after which a rolled-back re-execution is not the
// transaction the client saw: savepoints (ROLLBACK TO has the ROLLBACK
// tag), the end of a transaction inside a multi-statement Query, session
// changes, COPY.
bool UnreplayableTag(absl::string_view tag) {
  for (absl::string_view t : {"SAVEPOINT", "RELEASE", "ROLLBACK", "COMMIT", "PREPARE", "SET", "RESET", "DISCARD",
                              "LISTEN", "UNLISTEN", "DEALLOCATE", "COPY"}) {
    if (absl::StartsWith(tag, t) && (tag.size() == t.size() || tag[t.size()] == ' ' || tag[t.size()] == '\0')) {
      return true;
    }
  }
  return false;
}

}  // namespace

uint64_t ReplayLog::Digest(char type, absl::string_view raw) {
  // `raw` is the whole message (type, length, body); the type is mixed in
  // again for callers passing a body.
  const uint64_t h = std::hash<std::string_view>()(std::string_view(raw.data(), raw.size()));
  return h ^ (static_cast<uint64_t>(static_cast<unsigned char>(type)) * 0x9E3779B97F4A7C15ull);
}

void ReplayLog::Start(bool enabled, size_t max_bytes, absl::string_view begin) {
  Clear();
  if (!enabled) return;
  phase_ = Phase::kRecording;
  max_bytes_ = max_bytes;
  begin_ = std::string(begin);
  Add(begin_.size());
}

void ReplayLog::Clear() {
  phase_ = Phase::kOff;
  unreplayable_ = false;
  overflowed_ = false;
  bytes_ = 0;
  begin_.clear();
  queries_.clear();
  unnamed_.clear();
  digests_.clear();
  current_start_ = 0;
  extended_ = false;
  completions_ = 0;
  trailing_rows_ = 0;
  split_ = 0;
  later_from_ = 0;
  behind_ = 0;
  sync_before_split_ = false;
  implicit_ = false;
  wrapped_ = false;
  compare_from_ = 0;
  at_error_ = 0;
  pos_ = 0;
  original_error.clear();
  original_state.clear();
  original_status = 'E';
  attempts = 0;
  outstanding = 0;
  absorbed = 0;
  last_sent = false;
  conflict_again = false;
  commit_sent = false;
  wait_for = nullptr;
  holders_waited = 0;
  restart = false;
}

void ReplayLog::Add(size_t n) {
  bytes_ += n;
  if (bytes_ > max_bytes_ && !overflowed_) {
    overflowed_ = true;
    // Nothing more is kept: the transaction is not replayable.
    queries_.clear();
    queries_.shrink_to_fit();
    unnamed_.clear();
    unnamed_.shrink_to_fit();
    digests_.clear();
    digests_.shrink_to_fit();
    current_start_ = 0;
  }
}

void ReplayLog::OnClientMessage(char type, absl::string_view raw, bool may_change_session,
                                const PreparedDef* unnamed) {
  if (phase_ != Phase::kRecording || unreplayable_ || overflowed_) return;
  // Simple Query and the extended protocol's messages; a Close is kept
  // (the loop marks a named statement's as changing what names mean).
  static constexpr absl::string_view kKept("QPBDECSH");
  if (kKept.find(type) == absl::string_view::npos || may_change_session) {
    unreplayable_ = true;
    return;
  }
  Add(raw.size() + (unnamed != nullptr ? unnamed->query.size() + unnamed->key.size() : 0));
  if (overflowed_) return;
  if (unnamed != nullptr) unnamed_.emplace_back(queries_.size(), *unnamed);
  queries_.emplace_back(raw);
  if (type == 'Q') {
    current_start_ = digests_.size();
    completions_ = 0;
    trailing_rows_ = 0;
  } else {
    extended_ = true;
  }
}

void ReplayLog::OnReady() {
  if (phase_ != Phase::kRecording) return;
  current_start_ = digests_.size();
  completions_ = 0;
  trailing_rows_ = 0;
}

const PreparedDef* ReplayLog::unnamed_at(size_t i) const {
  for (const auto& [at, d] : unnamed_) {
    if (at == i) return &d;
  }
  return nullptr;
}

bool ReplayLog::SplitFailedUnit(bool in_block, int behind) {
  const size_t n = queries_.size();
  if (n == 0 || trailing_rows_ > 0) return false;
  auto ends_unit = [this](size_t i) { return queries_[i][0] == 'S' || queries_[i][0] == 'Q'; };
  if (!ends_unit(n - 1)) return false;  // the unit must be whole (its Sync sent)
  // The failed unit's Sync / Query: `behind` units before the log's last.
  size_t end = n - 1;
  for (int k = 0; k < behind; ++k) {
    do {
      if (end == 0) return false;
      --end;
    } while (!ends_unit(end));
  }
  // A simple Query behind it (sent before the failed unit answered) reset
  // the count of the failed unit's results (OnClientMessage): not replayed.
  for (size_t i = end + 1; i < n; ++i) {
    if (queries_[i][0] == 'Q') return false;
  }
  size_t unit = end;  // its first message
  while (unit > 0 && !ends_unit(unit - 1)) --unit;
  later_from_ = end + 1;
  behind_ = behind;
  if (queries_[end][0] == 'Q') {
    // A simple Query after extended-protocol messages: it is the unit.
    if (unit != end || results_in_current() > 0) return false;
    split_ = unit;
    sync_before_split_ = false;
    return in_block;
  }
  // The (completions_ + 1)-th Execute of the unit failed.
  int executes = 0;
  size_t at = end;
  for (size_t i = unit; i < end; ++i) {
    if (queries_[i][0] == 'E' && executes++ == completions_) {
      at = i;
      break;
    }
  }
  if (at == end) return false;
  split_ = at;
  sync_before_split_ = at > unit;
  // Without a transaction block the proxy's Sync would end (commit) an
  // implicit transaction.
  return in_block;
}

bool ReplayLog::SplitImplicitUnit() {
  const size_t n = queries_.size();
  if (n == 0) return false;
  const char last = queries_.back()[0];
  if (last != 'S' && last != 'Q') return false;  // the unit must be whole (its Sync sent)
  size_t unit = n - 1;                            // its first message
  if (last == 'Q') {
    // Extended-protocol messages without their Sync before it: not a unit.
    if (n > 1 && queries_[n - 2][0] != 'S' && queries_[n - 2][0] != 'Q') return false;
  } else {
    while (unit > 0 && queries_[unit - 1][0] != 'S' && queries_[unit - 1][0] != 'Q') --unit;
  }
  split_ = unit;
  later_from_ = n;
  behind_ = 0;
  sync_before_split_ = false;
  implicit_ = true;
  compare_from_ = current_start_;
  wrapped_ = digests_.size() > current_start_;
  return true;
}

void ReplayLog::Record(char type, absl::string_view raw) {
  if (unreplayable_ || overflowed_) return;
  switch (type) {
    case 'C':
      if (raw.size() > 5 && UnreplayableTag(raw.substr(5))) {
        unreplayable_ = true;
        return;
      }
      break;
    case 'T':
    case 'I':
    case '1':  // ParseComplete, BindComplete, CloseComplete, NoData,
    case '2':  // ParameterDescription, PortalSuspended
    case '3':
    case 'n':
    case 't':
    case 's':
      break;
    case 'D':
      break;
    case 'S':  // ParameterStatus, Notice, Notification, ReadyForQuery: not results
    case 'N':
    case 'A':
    case 'Z':
      return;
    default:  // an error the client saw, COPY, anything else
      unreplayable_ = true;
      return;
  }
  Add(sizeof(uint64_t));
  if (overflowed_) return;
  digests_.push_back(Digest(type, raw));
  trailing_rows_ = type == 'D' ? trailing_rows_ + 1 : 0;
  if (type == 'C' || type == 'I' || type == 's') ++completions_;
}

ReplayLog::Match ReplayLog::Compare(char type, absl::string_view raw) {
  const uint64_t d = Digest(type, raw);
  if (pos_ < digests_.size()) return digests_[pos_++] == d ? kMatch : kMismatch;
  // Past what the client received: a new result, forwarded and kept.
  Record(type, raw);
  pos_ = digests_.size();
  return kNew;
}

}  // namespace proxy
}  // namespace corral
