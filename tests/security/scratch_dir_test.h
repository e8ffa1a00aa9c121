#pragma once
// A test fixture with a folder of its own, removed after each test, for the files a test hands
// to the code under test (tokens, keys, certificates).

#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <optional>
#include <string>

#include "gtest/gtest.h"
#include "tests/e2e/process_runner.h"

namespace fleetprof::testing {

class ScratchDirTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Writes `text` to dir_/name, with `mode` when given (else the umask's); returns the path.
  std::string WriteFile(const std::string& name, const std::string& text, std::optional<mode_t> mode = std::nullopt) {
    const std::string path = dir_ + "/" + name;
    std::ofstream(path) << text;
    if (mode) EXPECT_EQ(::chmod(path.c_str(), *mode), 0) << path;
    return path;
  }
  std::string dir_;
};

}  // namespace fleetprof::testing
