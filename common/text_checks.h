#pragma once
// Checks for strings that arrive from other processes (environment variables, sockets)
// before they go into protos, logs or paths. A proto3 string must be valid UTF-8: one bad
// byte in a job name would make every heartbeat unparseable on the server.

#include <string_view>

#include "absl/status/status.h"

namespace fleetprof {

// Valid UTF-8 (no overlongs, no surrogates), no control characters, 1..`max_bytes` bytes.
bool IsPrintableUtf8(std::string_view text, size_t max_bytes);

// OK, or INVALID_ARGUMENT naming `what` when `text` is not IsPrintableUtf8(text, max_bytes).
absl::Status CheckPrintableText(std::string_view what, std::string_view text, size_t max_bytes);

// host:port or [v6]:port with a numeric port 1..65535 and host characters A-Z a-z 0-9 . - :
bool IsHostPort(std::string_view address);

}  // namespace fleetprof
