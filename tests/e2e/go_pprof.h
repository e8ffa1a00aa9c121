#pragma once
// Reads a pprof file with the real client, `go tool pprof` (Debian's golang-go), the way a user
// would: what its -top view says the total is.

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "tests/test_support.h"

namespace fleetprof::testing {

// The `go` binary, or "" when Go is not installed.
std::string GoBinary();

// The total `go tool pprof -top -unit=ns -sample_index=INDEX FILE` prints ("… of N total"),
// with HOME and GOCACHE in a fresh temporary folder (go needs them writable).
absl::StatusOr<int64_t> GoPprofTotal(const std::string& file, const std::string& sample_index);

}  // namespace fleetprof::testing

// Skips the test when `go` is missing, or fails it under CI=true.
#define FLEETPROF_REQUIRE_GO() \
  FLEETPROF_REQUIRE(!::fleetprof::testing::GoBinary().empty(), "go (golang-go; scripts/install-deps.sh installs it)")
