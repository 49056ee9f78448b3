#include "engine/schema.h"

#include <vector>

#include "gtest/gtest.h"

namespace corral {
namespace engine {
namespace {

TEST(SchemaTest, OffsetsAreAlignedAndRowSizeRoundsUp) {
  Schema s;
  int a = s.AddInt64("a");
  int name = s.AddString("name", 10);
  int d = s.AddDouble("d");
  EXPECT_EQ(s.column(a).offset, 0u);
  EXPECT_EQ(s.column(name).offset, 8u);
  EXPECT_EQ(s.column(d).offset, 8u + 16u);  // 2 + 10 rounded to 16
  EXPECT_EQ(s.row_size(), 32u);
  EXPECT_EQ(s.Find("d"), d);
  EXPECT_EQ(s.Find("nope"), -1);
}

TEST(SchemaTest, RowAccessorsRoundTripAndTruncate) {
  Schema s;
  int a = s.AddInt64("a");
  int str = s.AddString("s", 4);
  int d = s.AddDouble("d");
  std::vector<char> buf(s.row_size(), 0);
  Row r(&s, buf.data(), 42);
  r.SetInt(a, -7);
  r.SetDouble(d, 2.5);
  r.SetString(str, "abcdef");
  EXPECT_EQ(r.key(), 42u);
  EXPECT_EQ(r.GetInt(a), -7);
  EXPECT_EQ(r.GetDouble(d), 2.5);
  EXPECT_EQ(std::string(r.GetString(str)), "abcd");
  r.AddInt(a, 10);
  r.AddDouble(d, 1.0);
  EXPECT_EQ(r.GetInt(a), 3);
  EXPECT_EQ(r.GetDouble(d), 3.5);
  r.SetString(str, "");
  EXPECT_TRUE(r.GetString(str).empty());
}

TEST(SchemaTest, KeyPackerOrdersLexicographically) {
  uint64_t k1 = KeyPacker().Add(1, 16).Add(9, 8).Add(5, 32).key();
  uint64_t k2 = KeyPacker().Add(1, 16).Add(10, 8).Add(0, 32).key();
  uint64_t k3 = KeyPacker().Add(2, 16).Add(0, 8).Add(0, 32).key();
  EXPECT_LT(k1, k2);
  EXPECT_LT(k2, k3);
  EXPECT_EQ(KeyPacker().Add(0x1ff, 8).key(), 0xffu);  // masked
}

}  // namespace
}  // namespace engine
}  // namespace corral
