// Server-free parts of the PostgreSQL backend; the runs against a real
// server are in tests/pg/pg_backend_run_test.cc.
#include "bench/pgbackend/pg_backend.h"

#include <string>

#include "bench/workloads/factory.h"
#include "gtest/gtest.h"

namespace corral {
namespace bench {
namespace {

TEST(ConninfoWithDatabase, KeywordFormAppendsDbnameThatOverrides) {
  EXPECT_EQ(ConninfoWithDatabase("host=h port=5 dbname=postgres", "run_1"),
            "host=h port=5 dbname=postgres dbname=run_1");
}

TEST(ConninfoWithDatabase, UriFormReplacesThePath) {
  EXPECT_EQ(ConninfoWithDatabase("postgresql://u@h:5/postgres?sslmode=disable", "r"),
            "postgresql://u@h:5/r?sslmode=disable");
  EXPECT_EQ(ConninfoWithDatabase("postgres://h:5", "r"), "postgres://h:5/r");
}

TEST(BackendSelector, UnknownBackendIsRefused) {
  auto w = workloads::MakeWorkload("smallbank");
  ASSERT_TRUE(w.ok());
  BenchConfig c;
  c.backend = "oracle";
  auto inst = MakeBackendSelector({})->Open(c, **w);
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(inst.status().message()).find("oracle"), std::string::npos);
}

TEST(PgBackend, OpenWithoutConninfoIsInvalidArgument) {
  auto w = workloads::MakeWorkload("smallbank");
  ASSERT_TRUE(w.ok());
  BenchConfig c;
  c.backend = "postgres";
  auto inst = MakeBackendSelector({})->Open(c, **w);
  ASSERT_FALSE(inst.ok());
  EXPECT_EQ(inst.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(std::string(inst.status().message()).find("conninfo"), std::string::npos);
}

}  // namespace
}  // namespace bench
}  // namespace corral
