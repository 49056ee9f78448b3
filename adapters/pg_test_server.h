// Test helpers for tests that need a real PostgreSQL server (started by
// scripts/pg.sh and passed to Bazel with --test_env=CORRAL_PG_CONNINFO).
//
//   std::string conninfo;
//   if (!PgTestServer(&conninfo)) GTEST_SKIP() << PgTestSkipReason();
//   std::string table = PgUniqueName("acct");   // "acct_<pid>_<random hex>_<n>"
#ifndef CORRAL_ADAPTERS_PG_TEST_SERVER_H_
#define CORRAL_ADAPTERS_PG_TEST_SERVER_H_

#include <string>

namespace corral {
namespace adapters {

// True when CORRAL_PG_CONNINFO is set and a connection succeeds (within a few
// seconds); stores the conninfo. The answer is computed once per process.
bool PgTestServer(std::string* conninfo);
// Why PgTestServer() said no.
std::string PgTestSkipReason();
// A name unique to this process and call, usable as a table or schema name.
std::string PgUniqueName(const std::string& prefix);

}  // namespace adapters
}  // namespace corral

#endif  // CORRAL_ADAPTERS_PG_TEST_SERVER_H_
