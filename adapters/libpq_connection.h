// The real PgConnection: one libpq connection (blocking calls).
//
//   absl::StatusOr<std::unique_ptr<PgConnection>> c =
//       ConnectLibpq("host=127.0.0.1 port=54329 user=postgres dbname=postgres");
//   if (!c.ok()) return c.status();
//   PgResult r = (*c)->Exec("SELECT 1");
#ifndef CORRAL_ADAPTERS_LIBPQ_CONNECTION_H_
#define CORRAL_ADAPTERS_LIBPQ_CONNECTION_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "adapters/pg_connection.h"

namespace corral {
namespace adapters {

struct LibpqOptions {
  // Used when the conninfo string does not set connect_timeout itself.
  int connect_timeout_s = 5;
};

// Opens a connection. `conninfo` is a libpq connection string or URI. Server
// notices (e.g. "there is no transaction in progress") are dropped, not printed.
// The returned connection is thread-compatible (see PgConnection).
absl::StatusOr<std::unique_ptr<PgConnection>> ConnectLibpq(const std::string& conninfo,
                                                           LibpqOptions options = {});

// "<pid>_<random hex>", fixed for this process: a part of the names of the
// databases and tables a process creates on a shared server. The pid alone
// is not unique: processes in their own pid namespace (Bazel's sandboxed
// tests) share pids, and two runs sharing a name drop each other's objects.
const std::string& PgProcessTag();

}  // namespace adapters
}  // namespace corral

#endif  // CORRAL_ADAPTERS_LIBPQ_CONNECTION_H_
