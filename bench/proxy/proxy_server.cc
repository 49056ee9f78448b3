// A bare `corral proxy` for the benchmark script (bench/proxy/run.sh), so the
// benchmark builds only what it runs: proxy_server CONFIG_FILE [key=value...].
// Runs until SIGINT/SIGTERM.
#include <csignal>
#include <cstdio>
#include <string>

#include <unistd.h>

#include "adapters/proxy/config.h"
#include "adapters/proxy/proxy.h"

namespace {
volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }
}  // namespace

int main(int argc, char** argv) {
  using corral::proxy::Options;
  if (argc < 2) {
    std::fprintf(stderr, "usage: proxy_server CONFIG_FILE [key=value ...]\n");
    return 2;
  }
  Options o;
  if (auto st = corral::proxy::LoadConfigFile(argv[1], &o); !st.ok()) {
    std::fprintf(stderr, "proxy_server: %s\n", std::string(st.message()).c_str());
    return 2;
  }
  for (int i = 2; i < argc; ++i) {
    std::string kv = argv[i];
    const size_t eq = kv.find('=');
    auto st = eq == std::string::npos ? absl::InvalidArgumentError("expected key=value")
                                      : corral::proxy::ApplyConfigLine(kv.substr(0, eq), kv.substr(eq + 1), &o);
    if (!st.ok()) {
      std::fprintf(stderr, "proxy_server: %s: %s\n", argv[i], std::string(st.message()).c_str());
      return 2;
    }
  }
  auto p = corral::proxy::Proxy::Create(o);
  if (!p.ok()) {
    std::fprintf(stderr, "proxy_server: %s\n", std::string(p.status().message()).c_str());
    return 2;
  }
  if (auto st = (*p)->Start(); !st.ok()) {
    std::fprintf(stderr, "proxy_server: %s\n", std::string(st.message()).c_str());
    return 1;
  }
  std::signal(SIGINT, OnSignal);
  std::signal(SIGTERM, OnSignal);
  std::signal(SIGPIPE, SIG_IGN);
  std::fprintf(stderr, "proxy_server: listening on port %d\n", (*p)->port());
  while (!g_stop) pause();
  const auto& s = (*p)->stats();
  std::fprintf(stderr,
               "proxy_server: commits %lld, 40001 %lld, 40P01 %lld, user errors %lld, queue waits %lld, "
               "steals %lld (affine %lld), affine transactions %lld of %lld, retries remembered %lld routed %lld "
               "behind holder %lld clean %lld, template predictions %lld refs %lld hits %lld behind holder %lld "
               "dropped %lld\n",
               (long long)s.commits.load(), (long long)s.aborts_40001.load(), (long long)s.aborts_40P01.load(),
               (long long)s.user_errors.load(), (long long)s.queue_waits.load(), (long long)s.steals.load(),
               (long long)s.steals_affine.load(), (long long)s.affine_txns.load(),
               (long long)s.transactions.load(), (long long)s.retries_remembered.load(),
               (long long)s.retries_routed.load(), (long long)s.retries_behind_holder.load(),
               (long long)s.retries_clean.load(), (long long)s.template_predictions.load(),
               (long long)s.template_predicted_refs.load(), (long long)s.template_predicted_hits.load(),
               (long long)s.template_behind_holder.load(), (long long)s.template_mappings_dropped.load());
  (*p)->Stop();
  return 0;
}
