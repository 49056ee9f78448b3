#include "adapters/pg_test_server.h"

#include <atomic>
#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "adapters/libpq_connection.h"

namespace corral {
namespace adapters {
namespace {

struct Probe {
  bool ok = false;
  std::string conninfo;
  std::string reason;
};

const Probe& GetProbe() {
  static const Probe* const probe = [] {
    auto* p = new Probe;
    const char* env = std::getenv("CORRAL_PG_CONNINFO");
    if (env == nullptr || *env == '\0') {
      p->reason =
          "CORRAL_PG_CONNINFO is not set: start a server with `eval \"$(bash scripts/pg.sh "
          "start)\"` and pass --test_env=CORRAL_PG_CONNINFO (scripts/test.sh does both)";
      return p;
    }
    LibpqOptions o;
    o.connect_timeout_s = 3;
    auto c = ConnectLibpq(env, o);
    if (!c.ok()) {
      p->reason = absl::StrCat("PostgreSQL server unreachable: ", c.status().message());
      return p;
    }
    p->ok = true;
    p->conninfo = env;
    return p;
  }();
  return *probe;
}

}  // namespace

bool PgTestServer(std::string* conninfo) {
  const Probe& p = GetProbe();
  if (p.ok) *conninfo = p.conninfo;
  return p.ok;
}

std::string PgTestSkipReason() { return GetProbe().reason; }

std::string PgUniqueName(const std::string& prefix) {
  static std::atomic<int> counter{0};
  return absl::StrCat(prefix, "_", PgProcessTag(), "_", counter.fetch_add(1));
}

}  // namespace adapters
}  // namespace corral
