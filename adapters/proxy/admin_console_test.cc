#include "adapters/proxy/admin_console.h"

#include <algorithm>
#include <string>
#include <tuple>
#include <vector>

#include "absl/strings/match.h"
#include "adapters/proxy/wire.h"
#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace {

class FakeSource : public AdminSource {
 public:
  const Stats& stats() const override { return stats_; }
  int64_t clients_now() const override { return 3; }
  std::vector<QueueRow> Queues() const override {
    QueueRow q;
    q.index = 1;
    q.server_pid = 4242;
    q.state = "active";
    q.client = "7";
    q.waiting = 2;
    return {q};
  }
  std::vector<ClientRow> Clients() const override {
    ClientRow c;
    c.id = 7;
    c.user = "alice";
    c.database = "shop";
    c.state = "active";
    c.queue = "1";
    return {c};
  }
  std::vector<HistoryRow> TopByAborts(size_t k) const override {
    last_k_ = k;
    return {{"w_id=5", 9, 1}};
  }
  std::vector<SplitRow> Splits() const override { return {{"shop", "w_id=5", 3, "1,4,6"}}; }
  LearnedSizes Learned() const override { return learned_; }
  AdminTable Databases() const override { return {{"name", "pools"}, {{"shop", "2"}, {"hr", "0"}}}; }
  AdminTable Pools() const override { return {{"database", "user"}, {{"shop", "alice"}}}; }
  AdminTable Users() const override { return {{"name"}, {{"alice"}, {"bob"}, {"carol"}}}; }
  std::string PolicyName() const override { return policy_; }
  std::string StealingName() const override { return "on"; }
  absl::Status SetPolicy(const std::string& name) override {
    if (name != "original") return absl::InvalidArgumentError("unknown policy 'bogus'");
    policy_ = name;
    return absl::OkStatus();
  }
  absl::Status Reload() override {
    ++reloads_;
    return reload_status_;
  }
  void Pause() override { ops_ += "pause "; }
  void Resume() override { ops_ += "resume "; }
  void Shutdown() override { ops_ += "shutdown "; }

  Stats stats_;
  LearnedSizes learned_;
  std::string policy_ = "count-max-canonical-single";
  mutable size_t last_k_ = 0;
  int reloads_ = 0;
  std::string ops_;
  absl::Status reload_status_ = absl::OkStatus();
};

// The messages of `out` as (type, body) pairs.
std::vector<std::pair<char, std::string>> Messages(const std::string& out) {
  std::vector<std::pair<char, std::string>> msgs;
  absl::string_view rest(out);
  while (!rest.empty()) {
    wire::Frame f;
    size_t used = 0;
    EXPECT_TRUE(wire::NextFrame(rest, 1 << 20, &f, &used).ok());
    if (used == 0) break;
    msgs.emplace_back(f.type, std::string(f.body));
    rest.remove_prefix(used);
  }
  return msgs;
}

std::string Query(AdminConsole& console, const std::string& sql) {
  std::string body = sql;
  body.push_back('\0');
  std::string out;
  console.OnMessage('Q', body, &out);
  return out;
}

TEST(AdminConsole, ShowStatsReadsCountersAndClients) {
  FakeSource src;
  src.stats_.commits = 12;
  src.stats_.aborts_40001 = 5;
  src.stats_.undecodable_params = 7;
  src.stats_.retries_clean = 4;
  src.stats_.replay_matches = 9;
  src.stats_.replays_implicit = 6;
  src.stats_.worker_key_cross_waits = 8;
  src.stats_.restart_matches = 11;
  src.stats_.restart_wait_ns = 3000000;
  src.stats_.free_reads = 13;
  AdminConsole console(&src);
  const std::string out = Query(console, "  show   STATS ; ");
  auto msgs = Messages(out);
  ASSERT_GE(msgs.size(), 3u);
  EXPECT_EQ(msgs.front().first, 'T');
  EXPECT_EQ(msgs.back().first, 'Z');
  EXPECT_TRUE(absl::StrContains(out, std::string("commits") + std::string("\0\0\0\x02", 4) + "12"));
  EXPECT_TRUE(absl::StrContains(out, "conflict_aborts_40001"));
  EXPECT_TRUE(absl::StrContains(out, std::string("clients") + std::string("\0\0\0\x01", 4) + "3"));
  EXPECT_TRUE(absl::StrContains(out, "failed_logins"));
  EXPECT_TRUE(absl::StrContains(out, "client_output_peak_bytes"));
  EXPECT_TRUE(absl::StrContains(out, "SELECT 96"));  // one row per counter
  EXPECT_TRUE(absl::StrContains(out, std::string("free_reads") + std::string("\0\0\0\x02", 4) + "13"));
  EXPECT_TRUE(absl::StrContains(out, std::string("restart_matches") + std::string("\0\0\0\x02", 4) + "11"));
  EXPECT_TRUE(absl::StrContains(out, std::string("restart_wait_ms") + std::string("\0\0\0\x01", 4) + "3"));
  EXPECT_TRUE(absl::StrContains(out, "restart_mismatches"));
  EXPECT_TRUE(absl::StrContains(out, "restart_gate_txns"));
  EXPECT_TRUE(absl::StrContains(out, "restart_gate_early"));
  EXPECT_TRUE(absl::StrContains(out, "restart_cluster_relocks"));
  EXPECT_TRUE(absl::StrContains(out, "restart_cluster_retakes"));
  EXPECT_TRUE(absl::StrContains(out, "restart_held_waits"));
  EXPECT_TRUE(absl::StrContains(out, "restart_hold_timeouts"));
  EXPECT_TRUE(absl::StrContains(out, std::string("worker_key_cross_waits") + std::string("\0\0\0\x01", 4) + "8"));
  EXPECT_TRUE(absl::StrContains(out, "template_cap_wait_ms"));
  EXPECT_TRUE(absl::StrContains(out, "replay_matches"));
  EXPECT_TRUE(absl::StrContains(out, "cluster_unlocks_folded"));
  EXPECT_TRUE(absl::StrContains(out, "cluster_lock_waits"));
  EXPECT_TRUE(absl::StrContains(out, std::string("retries_clean") + std::string("\0\0\0\x01", 4) + "4"));
  EXPECT_TRUE(absl::StrContains(out, "retries_behind_holder"));
  EXPECT_TRUE(absl::StrContains(out, std::string("replay_matches") + std::string("\0\0\0\x01", 4) + "9"));
  EXPECT_TRUE(absl::StrContains(out, "replay_overflows"));
  EXPECT_TRUE(absl::StrContains(out, std::string("replays_implicit") + std::string("\0\0\0\x01", 4) + "6"));
  EXPECT_TRUE(absl::StrContains(out, std::string("undecodable_params") + std::string("\0\0\0\x01", 4) + "7"));
  EXPECT_TRUE(absl::StrContains(out, "describes_injected"));
  EXPECT_TRUE(absl::StrContains(out, "tls_handshake_failures"));
}

// The learned tables' fill (is the History full, does the State evict?) is
// read from the source, each figure in its own row.
TEST(AdminConsole, ShowStatsReadsLearnedTableSizes) {
  FakeSource src;
  src.learned_.history_entries = 301234;
  src.learned_.history_max_entries = 4194304;
  src.learned_.history_dropped_full = 17;
  src.learned_.history_unadmitted_commits = 912345;
  src.learned_.state_entries = 23;
  src.learned_.state_max_entries = 1048576;
  src.learned_.state_evictions = 5;
  src.learned_.split_references = 2;
  src.learned_.split_max_k = 3;
  AdminConsole console(&src);
  const std::string out = Query(console, "SHOW STATS");
  auto cell = [](const char* name, const std::string& v) {
    return std::string(name) + std::string("\0\0\0", 3) + static_cast<char>(v.size()) + v;
  };
  EXPECT_TRUE(absl::StrContains(out, cell("history_entries", "301234")));
  EXPECT_TRUE(absl::StrContains(out, cell("history_max_entries", "4194304")));
  EXPECT_TRUE(absl::StrContains(out, cell("history_dropped_full", "17")));
  EXPECT_TRUE(absl::StrContains(out, cell("history_unadmitted_commits", "912345")));
  EXPECT_TRUE(absl::StrContains(out, cell("state_entries", "23")));
  EXPECT_TRUE(absl::StrContains(out, cell("state_max_entries", "1048576")));
  EXPECT_TRUE(absl::StrContains(out, cell("state_evictions", "5")));
  EXPECT_TRUE(absl::StrContains(out, cell("split_references", "2")));
  EXPECT_TRUE(absl::StrContains(out, cell("split_max_k", "3")));
}

TEST(AdminConsole, ShowQueuesClientsHistoryPolicy) {
  FakeSource src;
  AdminConsole console(&src);
  std::string out = Query(console, "SHOW QUEUES");
  EXPECT_TRUE(absl::StrContains(out, "4242"));
  EXPECT_TRUE(absl::StrContains(out, "active"));
  EXPECT_TRUE(absl::StrContains(out, "SELECT 1"));
  out = Query(console, "show clients");
  EXPECT_TRUE(absl::StrContains(out, "alice"));
  EXPECT_TRUE(absl::StrContains(out, "shop"));
  out = Query(console, "show history");
  EXPECT_TRUE(absl::StrContains(out, "w_id=5"));
  EXPECT_EQ(src.last_k_, 20u);
  out = Query(console, "show policy");
  EXPECT_TRUE(absl::StrContains(out, "count-max-canonical-single"));
  out = Query(console, "SHOW SPLITS");
  for (const char* cell : {"database", "backends", "shop", "w_id=5", "1,4,6"}) {
    EXPECT_TRUE(absl::StrContains(out, cell)) << cell;
  }
}

// SHOW DATABASES / POOLS / USERS print the source's tables, one DataRow
// per row, for stats_users too.
TEST(AdminConsole, ShowDatabasesPoolsUsers) {
  FakeSource src;
  AdminConsole console(&src);
  for (const auto& [sql, rows, needle] : std::vector<std::tuple<std::string, int, std::string>>{
           {"SHOW DATABASES", 2, "hr"}, {"show pools;", 1, "alice"}, {"SHOW USERS", 3, "carol"}}) {
    std::string body = sql;
    body.push_back('\0');
    std::string out;
    console.OnMessage('Q', body, &out, /*may_change=*/false);
    auto msgs = Messages(out);
    EXPECT_EQ(msgs.front().first, 'T') << sql;
    EXPECT_EQ(std::count_if(msgs.begin(), msgs.end(), [](const auto& m) { return m.first == 'D'; }), rows) << sql;
    EXPECT_TRUE(absl::StrContains(out, needle)) << sql;
  }
}

TEST(AdminConsole, SetPolicyAndReloadReportErrors) {
  FakeSource src;
  AdminConsole console(&src);
  std::string out = Query(console, "SET POLICY 'original'");
  EXPECT_EQ(src.policy_, "original");
  EXPECT_TRUE(absl::StrContains(out, "SET"));
  EXPECT_EQ(Messages(out).front().first, 'C');
  out = Query(console, "set policy bogus");
  EXPECT_EQ(src.policy_, "original");
  auto msgs = Messages(out);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[0].first, 'E');
  EXPECT_EQ(wire::ErrorSqlState(msgs[0].second), "22023");
  src.reload_status_ = absl::NotFoundError("no such file");
  out = Query(console, "RELOAD;");
  EXPECT_EQ(src.reloads_, 1);
  EXPECT_TRUE(absl::StrContains(out, "RELOAD failed: no such file"));
}

TEST(AdminConsole, StatsUsersMayOnlyShow) {
  FakeSource src;
  AdminConsole console(&src);
  std::string out;
  console.Query("SET POLICY original", &out, /*may_change=*/false);
  auto msgs = Messages(out);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(wire::ErrorSqlState(msgs[0].second), "42501");
  EXPECT_NE(src.policy_, "original");
  out.clear();
  console.Query("RELOAD", &out, /*may_change=*/false);
  EXPECT_EQ(src.reloads_, 0);
  EXPECT_EQ(wire::ErrorSqlState(Messages(out)[0].second), "42501");
  out.clear();
  console.Query("SHOW POLICY", &out, /*may_change=*/false);
  EXPECT_EQ(Messages(out).front().first, 'T');
  out.clear();
  console.Query("PAUSE", &out, /*may_change=*/false);
  EXPECT_EQ(wire::ErrorSqlState(Messages(out)[0].second), "42501");
  EXPECT_EQ(src.ops_, "");
}

TEST(AdminConsole, PauseResumeShutdownReachTheSource) {
  FakeSource src;
  AdminConsole console(&src);
  for (const char* q : {"PAUSE", "resume;", " Shutdown "}) {
    auto msgs = Messages(Query(console, q));
    ASSERT_EQ(msgs.size(), 2u) << q;
    EXPECT_EQ(msgs[0].first, 'C') << q;
    EXPECT_EQ(msgs[1].first, 'Z') << q;
  }
  EXPECT_EQ(src.ops_, "pause resume shutdown ");
  EXPECT_TRUE(absl::StrContains(Query(console, "PAUSE now"), "42601"));
}

TEST(AdminConsole, UnknownCommandAndExtendedProtocol) {
  FakeSource src;
  AdminConsole console(&src);
  std::string out = Query(console, "DROP TABLE x");
  auto msgs = Messages(out);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(wire::ErrorSqlState(msgs[0].second), "42601");
  EXPECT_EQ(msgs[1].first, 'Z');
  out.clear();
  console.OnMessage('P', std::string("\0select 1\0\0\0", 12), &out);
  msgs = Messages(out);
  ASSERT_EQ(msgs.size(), 1u);  // no ReadyForQuery before the Sync
  EXPECT_EQ(wire::ErrorSqlState(msgs[0].second), "0A000");
  out.clear();
  console.OnMessage('S', "", &out);
  msgs = Messages(out);
  ASSERT_EQ(msgs.size(), 2u);
  EXPECT_EQ(msgs[1].first, 'Z');
}

}  // namespace
}  // namespace proxy
}  // namespace corral
