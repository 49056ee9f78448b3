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
  digests_.clear();
  current_start_ = 0;
  pos_ = 0;
  original_error.clear();
  original_state.clear();
  original_status = 'E';
  attempts = 0;
  outstanding = 0;
  last_sent = false;
  conflict_again = false;
  wait_for = nullptr;
  holders_waited = 0;
}

void ReplayLog::Add(size_t n) {
  bytes_ += n;
  if (bytes_ > max_bytes_ && !overflowed_) {
    overflowed_ = true;
    // Nothing more is kept: the transaction is not replayable.
    queries_.clear();
    queries_.shrink_to_fit();
    digests_.clear();
    digests_.shrink_to_fit();
    current_start_ = 0;
  }
}

void ReplayLog::OnClientMessage(char type, absl::string_view raw, bool may_change_session) {
  if (phase_ != Phase::kRecording || unreplayable_ || overflowed_) return;
  if (type != 'Q' || may_change_session) {
    unreplayable_ = true;
    return;
  }
  Add(raw.size());
  if (overflowed_) return;
  queries_.emplace_back(raw);
  current_start_ = digests_.size();
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
    case 'D':
    case 'I':
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
