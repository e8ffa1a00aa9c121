#include "tests/test_support.h"

#include <sys/stat.h>

#include <cstdlib>
#include <fstream>
#include <sstream>

namespace fleetprof::testing {

std::string SharedDir() {
  if (const char* env = std::getenv("FLEETPROF_SHARED_DIR"); env != nullptr && *env != '\0') {
    return env;
  }
  return FLEETPROF_SHARED_DIR;
}

std::string CorpusPath(const std::string& relative) { return SharedDir() + "/corpus/" + relative; }

std::string BinDir() { return FLEETPROF_BIN_DIR; }

bool DataRequired() {
  const char* ci = std::getenv("CI");
  return ci != nullptr && std::string(ci) == "true";
}

bool PathExists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

std::string ReadSmallFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot read " << path;
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace fleetprof::testing
