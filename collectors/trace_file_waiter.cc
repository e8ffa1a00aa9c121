#include "collectors/trace_file_waiter.h"

#include <sys/stat.h>

#include <algorithm>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fleetprof {
namespace {

constexpr int64_t kPollIntervalNs = 50'000'000;

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

absl::StatusOr<std::string> WaitForTraceFile(const std::string& path, int64_t deadline_ns, const Clock& clock,
                                             const std::function<bool()>& cancelled) {
  while (true) {
    if (IsRegularFile(path)) return path;
    if (cancelled && cancelled()) {
      return absl::CancelledError(absl::StrCat("stopped waiting for trace ", path));
    }
    const int64_t now = clock.MonotonicNanos();
    if (now >= deadline_ns) {
      return absl::DeadlineExceededError(
          absl::StrCat("job wrote no trace within the deadline (expected ", path, ")"));
    }
    SleepUntil(clock, std::min(now + kPollIntervalNs, deadline_ns));
  }
}

}  // namespace fleetprof
