// Helpers shared by the engine's tests (engine_test.cc, protocol_test.cc,
// planned_test.cc): running a procedure to the end through its retries,
// protocol test parameters ("orthrus/N" = N CC threads), and a one-table
// database of balances.
//
//   EngineExecutor ex(db.get(), 0);
//   ExecResult r = RunToEnd(ex, proc, Clock::now() + std::chrono::seconds(5));
//
// Thread-compatible (test code).
#ifndef CORRAL_ENGINE_ENGINE_TESTING_H_
#define CORRAL_ENGINE_ENGINE_TESTING_H_

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "engine/engine.h"
#include "gtest/gtest.h"

namespace corral {
namespace engine {
namespace engine_testing {

using scheduler::ExecResult;
using scheduler::Outcome;
using Clock = std::chrono::steady_clock;

// Runs `proc` until it does not conflict-abort (same logical txn: wait-die
// timestamp kept). Gives up after `deadline`.
template <typename F>
inline ExecResult RunToEnd(EngineExecutor& ex, F proc, Clock::time_point deadline, int* attempts = nullptr) {
  uint64_t ts = 0;
  int n = 0;
  for (;;) {
    ++n;
    ExecResult r = ex.Run(proc, &ts, n);
    if (r.outcome != Outcome::kConflictAbort || Clock::now() > deadline) {
      if (attempts) *attempts = n;
      return r;
    }
  }
}

// A test parameter: a protocol name, "orthrus/N" (N CC threads), or
// "qstore/P" (P: a placement, hash, range or learned, or an execution,
// speculative or conservative, or both joined by '+'; learned learns from
// the first kTestLearnTxns transactions, so a test's run switches placement
// part-way, through the drained batch boundary).
inline constexpr int64_t kTestLearnTxns = 64;
inline DatabaseOptions OptionsFor(const std::string& param) {
  DatabaseOptions o;
  o.protocol = param;
  const size_t slash = param.find('/');
  if (slash != std::string::npos) {
    o.protocol = param.substr(0, slash);
    if (o.protocol == "qstore") {
      std::string rest = param.substr(slash + 1);
      for (;;) {
        const size_t plus = rest.find('+');
        const std::string part = rest.substr(0, plus);
        if (part == "speculative" || part == "conservative") {
          o.qstore_execution = part;
        } else {
          o.qstore_placement = part;
        }
        if (plus == std::string::npos) break;
        rest = rest.substr(plus + 1);
      }
      o.qstore_learn_txns = kTestLearnTxns;
    } else {
      o.orthrus_cc_threads = std::stoi(param.substr(slash + 1));
    }
  }
  return o;
}

// Every protocol, plus the variants the suites also run: orthrus with
// several CC threads, qstore under each placement and speculative.
inline std::vector<std::string> ProtocolVariants(const std::string& orthrus_threads) {
  std::vector<std::string> p = ProtocolNames();
  p.push_back("orthrus/" + orthrus_threads);
  p.push_back("qstore/range");
  p.push_back("qstore/learned");
  p.push_back("qstore/speculative");
  return p;
}

inline std::string ParamName(const ::testing::TestParamInfo<std::string>& i) {
  std::string n = i.param;
  for (char& c : n) {
    if (c == '-' || c == '/' || c == '+') c = '_';
  }
  return n;
}

// One table "t" of int64 balances, created under a chosen protocol.
class OneTableDb {
 protected:
  void MakeDb(const DatabaseOptions& o, int keys, int64_t balance) {
    db_ = Database::Create(o).value();
    Schema s;
    bal_ = s.AddInt64("balance");
    t_ = db_->CreateTable("t", s, {}).value();
    for (int k = 0; k < keys; ++k) {
      ASSERT_TRUE(db_->Load(t_, k, [&](const Row& r) { r.SetInt(bal_, balance); }).ok());
    }
  }
  int64_t Peek(uint64_t key) {
    ConstRow r;
    EXPECT_TRUE(db_->Peek(t_, key, &r).ok());
    return r.valid() ? r.GetInt(bal_) : -1;
  }
  std::unique_ptr<Database> db_;
  Table* t_ = nullptr;
  int bal_ = 0;
};

}  // namespace engine_testing
}  // namespace engine
}  // namespace corral

#endif  // CORRAL_ENGINE_ENGINE_TESTING_H_
