#pragma once
// Durations as users type them on the command line: "45s", "5m", "2h", "7d", "1h30m", "500ms"
// (absl's syntax, plus whole days, which absl does not read). One parser for every flag that
// takes a duration (--every, --since, --cooldown).

#include <string>

#include "absl/time/time.h"

namespace fleetprof::cli {

// False for an empty, malformed, zero or negative duration.
bool ParseDurationFlag(const std::string& text, absl::Duration* out);

}  // namespace fleetprof::cli
