#include "bench/runner/read_file.h"

#include <fstream>
#include <sstream>

namespace corral {
namespace bench {

bool ReadWholeFile(const std::string& path, std::string* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::stringstream ss;
  ss << in.rdbuf();
  *out = ss.str();
  return true;
}

}  // namespace bench
}  // namespace corral
