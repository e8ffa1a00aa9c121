#pragma once
// Starting a thread is where a process meets its thread limit (RLIMIT_NPROC, a cgroup's
// pids.max, address space for stacks), and std::thread throws std::system_error there. Every
// thread fleetprof starts for a request goes through StartThread, which answers UNAVAILABLE
// instead: the request that needed the thread fails and can be retried, and the process keeps
// serving.

#include <string_view>
#include <system_error>
#include <thread>
#include <utility>

#include "absl/status/statusor.h"

namespace fleetprof {

namespace threads_internal {
// True (once per failure asked for) while a test wants thread starts to fail.
bool TakeInjectedFailure();
absl::Status CannotStart(std::string_view purpose, const std::system_error& error);
}  // namespace threads_internal

// Runs `body` on a new thread. `purpose` names the thread in the error ("the analysis thread
// of trace.json").
template <typename Body>
absl::StatusOr<std::thread> StartThread(std::string_view purpose, Body&& body) {
  try {
    if (threads_internal::TakeInjectedFailure()) {
      throw std::system_error(std::make_error_code(std::errc::resource_unavailable_try_again), "injected by a test");
    }
    return std::thread(std::forward<Body>(body));
  } catch (const std::system_error& e) {
    return threads_internal::CannotStart(purpose, e);
  }
}

// For tests: the next `count` StartThread calls fail as if the system had no threads left.
void FailThreadStartsForTesting(int count);

}  // namespace fleetprof
