#include "client/duration_flag.h"

#include "absl/strings/numbers.h"

namespace fleetprof::cli {

bool ParseDurationFlag(const std::string& text, absl::Duration* out) {
  absl::Duration parsed;
  if (!text.empty() && text.back() == 'd') {
    int64_t days = 0;
    // At most ten years: beyond that a typo, never a period.
    if (!absl::SimpleAtoi(text.substr(0, text.size() - 1), &days) || days <= 0 || days > 3650) return false;
    parsed = absl::Hours(24 * days);
  } else if (!absl::ParseDuration(text, &parsed)) {
    return false;
  }
  if (parsed <= absl::ZeroDuration() || parsed == absl::InfiniteDuration()) return false;
  *out = parsed;
  return true;
}

}  // namespace fleetprof::cli
