#include "collectors/trace_file_waiter.h"

#include <sys/stat.h>

#include <algorithm>
#include <thread>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace fleetprof {
namespace {

constexpr std::chrono::milliseconds kPollInterval{50};

bool IsRegularFile(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

}  // namespace

absl::StatusOr<std::string> WaitForTraceFile(const std::string& path,
                                             std::chrono::steady_clock::time_point deadline,
                                             const std::function<bool()>& cancelled) {
  while (true) {
    if (IsRegularFile(path)) return path;
    if (cancelled && cancelled()) {
      return absl::CancelledError(absl::StrCat("stopped waiting for trace ", path));
    }
    const auto now = std::chrono::steady_clock::now();
    if (now >= deadline) {
      return absl::DeadlineExceededError(
          absl::StrCat("job wrote no trace within the deadline (expected ", path, ")"));
    }
    std::this_thread::sleep_for(
        std::min<std::chrono::steady_clock::duration>(kPollInterval, deadline - now));
  }
}

}  // namespace fleetprof
