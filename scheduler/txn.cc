#include "scheduler/txn.h"

namespace corral {
namespace scheduler {

const char* AbortCauseName(AbortCause c) {
  switch (c) {
    case AbortCause::kNone: return "none";
    case AbortCause::kValidation: return "validation";
    case AbortCause::kLockConflict: return "lock_conflict";
    case AbortCause::kWaitDie: return "wait_die";
    case AbortCause::kDeadlock: return "deadlock";
    case AbortCause::kLockTimeout: return "lock_timeout";
    case AbortCause::kSerialization: return "serialization_40001";
    case AbortCause::kDeadlockDetected: return "deadlock_40P01";
    case AbortCause::kCascade: return "cascade";
    case AbortCause::kTimestampTooOld: return "timestamp_too_old";
    case AbortCause::kRangeEmpty: return "range_empty";
    case AbortCause::kCount: break;
  }
  return "unknown";
}

const char* OutcomeName(Outcome o) {
  switch (o) {
    case Outcome::kCommitted: return "committed";
    case Outcome::kConflictAbort: return "conflict_abort";
    case Outcome::kUserAbort: return "user_abort";
    case Outcome::kFailed: return "failed";
  }
  return "unknown";
}

}  // namespace scheduler
}  // namespace corral
