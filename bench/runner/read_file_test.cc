#include "bench/runner/read_file.h"

#include <cstdio>
#include <cstdlib>
#include <string>

#include "gtest/gtest.h"

namespace corral {
namespace bench {
namespace {

TEST(ReadWholeFile, ReadsEveryByte) {
  const std::string path = std::string(std::getenv("TEST_TMPDIR")) + "/read_file_test.bin";
  const std::string bytes("a\0b\nc\r\n", 7);
  FILE* f = std::fopen(path.c_str(), "wb");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(std::fwrite(bytes.data(), 1, bytes.size(), f), bytes.size());
  std::fclose(f);
  std::string out;
  ASSERT_TRUE(ReadWholeFile(path, &out));
  EXPECT_EQ(out, bytes);
}

TEST(ReadWholeFile, MissingFileLeavesOutAlone) {
  std::string out = "kept";
  EXPECT_FALSE(ReadWholeFile(std::string(std::getenv("TEST_TMPDIR")) + "/no-such-file", &out));
  EXPECT_EQ(out, "kept");
}

}  // namespace
}  // namespace bench
}  // namespace corral
