#pragma once
// The bounds of an HTTP API call (common/call_bounds.h). HTTP says nothing of how long a
// client waits: a browser or Grafana gives up within a minute, so that is the bound, or less
// when a Connect client says so (Connect-Timeout-Ms, as Grafana's Pyroscope client sends).

#include <algorithm>
#include <cstdint>
#include <string_view>

#include "absl/strings/numbers.h"
#include "common/call_bounds.h"
#include "common/clock.h"
#include "server/http/http_message.h"

namespace fleetprof {

inline constexpr int64_t kHttpCallBoundNanos = int64_t{60} * 1'000'000'000;

inline CallBounds HttpCallBounds(const HttpRequest& req) {
  int64_t bound = kHttpCallBoundNanos;
  int64_t asked_ms = 0;
  if (const std::string_view header = req.Header("Connect-Timeout-Ms");
      !header.empty() && header.size() <= 10 && absl::SimpleAtoi(absl::string_view(header.data(), header.size()), &asked_ms) && asked_ms > 0) {
    bound = std::min(bound, asked_ms * 1'000'000);
  }
  CallBounds bounds;
  bounds.deadline_ns = RealClock()->MonotonicNanos() + bound;
  return bounds;
}

}  // namespace fleetprof
