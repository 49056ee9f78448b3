// A `main` for libFuzzer targets outside libFuzzer: every file of the corpus
// directories named on the command line becomes one gtest case that feeds the
// file to LLVMFuzzerTestOneInput. The targets abort() on a violated
// invariant, so a regression fails the test binary (fuzz/fuzz.bzl builds one
// per target as `<target>_replay_test` with its corpus as data).
//
//   wire_fuzzer_replay_test adapters/proxy/fuzz_corpus/wire_fuzzer
//
// Thread-safety: single-threaded test driver.
#include <dirent.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "gtest/gtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);
extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) __attribute__((weak));

namespace {

class ReplayTest : public testing::Test {
 public:
  explicit ReplayTest(std::string path) : path_(std::move(path)) {}
  void TestBody() override {
    std::ifstream in(path_, std::ios::binary);
    ASSERT_TRUE(in.good()) << "cannot read " << path_;
    const std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    // libFuzzer hands the target a buffer of exactly the input's size; so do
    // we (a heap copy, so a sanitizer build catches reads past its end).
    std::vector<uint8_t> buf(bytes.begin(), bytes.end());
    EXPECT_EQ(LLVMFuzzerTestOneInput(buf.data(), buf.size()), 0) << path_;
  }

 private:
  std::string path_;
};

std::vector<std::string> ListDir(const std::string& dir) {
  std::vector<std::string> out;
  DIR* d = opendir(dir.c_str());
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    const std::string name = e->d_name;
    if (name == "." || name == ".." || name[0] == '.') continue;
    out.push_back(name);
  }
  closedir(d);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  if (LLVMFuzzerInitialize != nullptr) LLVMFuzzerInitialize(&argc, &argv);
  int registered = 0;
  for (int i = 1; i < argc; ++i) {
    const std::string dir = argv[i];
    const std::string suite = "Corpus/" + dir.substr(dir.find_last_of('/') + 1);
    for (const std::string& name : ListDir(dir)) {
      const std::string path = dir + "/" + name;
      testing::RegisterTest(suite.c_str(), name.c_str(), nullptr, nullptr, __FILE__, __LINE__,
                            [path]() -> testing::Test* { return new ReplayTest(path); });
      ++registered;
    }
  }
  if (registered == 0) {
    std::fprintf(stderr, "replay: no corpus files under the given directories\n");
    return 1;
  }
  return RUN_ALL_TESTS();
}
