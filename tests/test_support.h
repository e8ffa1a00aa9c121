#pragma once
// Helpers shared by fleetprof's tests.

#include <string>

#include "gtest/gtest.h"

namespace fleetprof::testing {

// Absolute path of the shared folder (corpus, spec) beside the checkout.
std::string SharedDir();
// SharedDir() + "/corpus/" + relative.
std::string CorpusPath(const std::string& relative);
// The folder holding the built binaries (fleetprof, fleetprof-server, fleetprof-agent).
std::string BinDir();
// True when CI=true: missing data or tools must fail the test, never skip it.
bool DataRequired();
// True when `path` exists.
bool PathExists(const std::string& path);
// Reads a whole small file (reference JSON, test output). Fails the test when unreadable.
std::string ReadSmallFile(const std::string& path);

}  // namespace fleetprof::testing

// Skips the test (or fails it under CI=true) unless `condition` holds; `what` says what is
// missing. The one way a test skips: under CI nothing turns green by skipping.
#define FLEETPROF_REQUIRE(condition, what)                                             \
  do {                                                                                 \
    if (!(condition)) {                                                                \
      if (::fleetprof::testing::DataRequired()) {                                      \
        FAIL() << "required for this test (CI=true): " << what;                        \
      } else {                                                                         \
        GTEST_SKIP() << "missing here: " << what;                                      \
      }                                                                                \
    }                                                                                  \
  } while (0)

// Skips the test (or fails it under CI=true) when `path` is missing.
#define FLEETPROF_REQUIRE_PATH(path) \
  FLEETPROF_REQUIRE(::fleetprof::testing::PathExists(path), "test input " << (path))
