#include "jobtrace/agent_clock.h"

#include <cstdlib>

#include "analysis/trace_events.h"
#include "absl/strings/numbers.h"
#include "common/clock_sync_labels.h"

namespace fleetprof::jobtrace {
namespace {

bool Label(const google::protobuf::Map<std::string, std::string>& labels, const char* key, int64_t* out) {
  auto it = labels.find(key);
  return it != labels.end() && absl::SimpleAtoi(it->second, out) && analysis::WithinTickBound(*out);
}

}  // namespace

std::optional<TraceToServer> AgentClockOf(const google::protobuf::Map<std::string, std::string>& labels,
                                          int64_t trace_start_ns) {
  int64_t offset = 0, uncertainty = 0, capture_start = 0, window = 0;
  if (!Label(labels, kClockOffsetLabel, &offset) || !Label(labels, kClockUncertaintyLabel, &uncertainty) ||
      !Label(labels, kCaptureStartLabel, &capture_start) || !Label(labels, kCaptureWindowLabel, &window) ||
      uncertainty < 0 || window < 0 || !analysis::WithinTickBound(trace_start_ns)) {
    return std::nullopt;
  }
  TraceToServer out;
  int64_t trace_to_wall = 0, extra = 0;
  if (std::llabs(trace_start_ns - capture_start) > kWallClockSlackNs) {
    // Not wall time: the trace's first event falls inside the capture window, so its start
    // reads the window's start to within the window's length.
    trace_to_wall = capture_start - trace_start_ns;
    extra = window;
  }
  const __int128 to_server = static_cast<__int128>(trace_to_wall) + offset;
  const __int128 doubt = static_cast<__int128>(uncertainty) + extra;
  if (!analysis::WithinTickBound(to_server) || !analysis::WithinTickBound(doubt)) return std::nullopt;
  out.to_server_ns = static_cast<int64_t>(to_server);
  out.uncertainty_ns = static_cast<int64_t>(doubt);
  return out;
}

}  // namespace fleetprof::jobtrace
