#include "common/threads.h"

#include <atomic>
#include <string>

#include "absl/strings/str_cat.h"

namespace fleetprof {
namespace {

std::atomic<int> failures_to_inject{0};

}  // namespace

namespace threads_internal {

bool TakeInjectedFailure() {
  int left = failures_to_inject.load(std::memory_order_relaxed);
  while (left > 0) {
    if (failures_to_inject.compare_exchange_weak(left, left - 1)) return true;
  }
  return false;
}

absl::Status CannotStart(std::string_view purpose, const std::system_error& error) {
  return absl::UnavailableError(absl::StrCat("cannot start ", std::string(purpose), ": ", error.what(),
                                             " (the system is out of threads); try again later"));
}

}  // namespace threads_internal

void FailThreadStartsForTesting(int count) { failures_to_inject.store(count); }

}  // namespace fleetprof
