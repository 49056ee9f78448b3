#include "adapters/proxy/metrics.h"

#include "absl/strings/match.h"
#include "gtest/gtest.h"

namespace corral {
namespace proxy {
namespace metrics {
namespace {

TEST(Metrics, TextCarriesCountersAndGauge) {
  Stats s;
  s.transactions = 10;
  s.commits = 7;
  s.aborts_40001 = 2;
  s.aborts_40P01 = 1;
  s.undecodable_params = 3;
  s.retries_routed = 6;
  s.retries_clean = 5;
  s.replays = 8;
  s.replay_mismatches = 2;
  s.replays_implicit = 3;
  s.restarts = 5;
  s.restart_wait_ns = 2500000;
  const std::string t = MetricsText(s, 4);
  EXPECT_TRUE(absl::StrContains(t, "# TYPE corral_replays_total counter\ncorral_replays_total 8\n"));
  EXPECT_TRUE(absl::StrContains(t, "corral_replay_mismatches_total 2\n"));
  EXPECT_TRUE(absl::StrContains(t, "corral_replays_implicit_total 3\n"));
  EXPECT_TRUE(absl::StrContains(t, "corral_replay_matches_total 0\n"));
  EXPECT_TRUE(absl::StrContains(t, "# TYPE corral_restarts_total counter\ncorral_restarts_total 5\n"));
  EXPECT_TRUE(absl::StrContains(t, "corral_restart_wait_ms_total 2\n"));
  EXPECT_TRUE(absl::StrContains(t, "corral_restart_mismatches_total 0\n"));
  EXPECT_TRUE(absl::StrContains(t, "# TYPE corral_retries_routed_total counter\ncorral_retries_routed_total 6\n"));
  EXPECT_TRUE(absl::StrContains(t, "corral_retries_clean_total 5\n"));
  EXPECT_TRUE(absl::StrContains(t, "# TYPE corral_undecodable_params_total counter\ncorral_undecodable_params_total 3\n"));
  EXPECT_TRUE(absl::StrContains(t, "# TYPE corral_transactions_total counter\ncorral_transactions_total 10\n"));
  EXPECT_TRUE(absl::StrContains(t, "corral_commits_total 7\n"));
  EXPECT_TRUE(absl::StrContains(t, "corral_conflict_aborts_total{sqlstate=\"40001\"} 2\n"));
  EXPECT_TRUE(absl::StrContains(t, "corral_conflict_aborts_total{sqlstate=\"40P01\"} 1\n"));
  EXPECT_TRUE(absl::StrContains(t, "# TYPE corral_clients gauge\ncorral_clients 4\n"));
}

TEST(Metrics, HttpAnswersMetricsAndNotFound) {
  EXPECT_FALSE(HttpRequestComplete("GET /metrics HTTP/1.0\r\n", false));
  EXPECT_TRUE(HttpRequestComplete("GET /metrics HTTP/1.0\r\n\r\n", false));
  EXPECT_TRUE(HttpRequestComplete("GET", true));
  EXPECT_TRUE(HttpRequestComplete(std::string(9000, 'x'), false));
  const std::string ok = HttpResponse("GET /metrics HTTP/1.0\r\n\r\n", [] { return std::string("abc\n"); });
  EXPECT_TRUE(absl::StartsWith(ok, "HTTP/1.0 200 OK\r\n"));
  EXPECT_TRUE(absl::StrContains(ok, "Content-Length: 4\r\n"));
  EXPECT_TRUE(absl::EndsWith(ok, "\r\n\r\nabc\n"));
  bool called = false;
  const std::string nf = HttpResponse("GET / HTTP/1.0\r\n\r\n", [&] {
    called = true;
    return std::string();
  });
  EXPECT_TRUE(absl::StartsWith(nf, "HTTP/1.0 404 Not Found"));
  EXPECT_FALSE(called);
}

}  // namespace
}  // namespace metrics
}  // namespace proxy
}  // namespace corral
