#pragma once
// One background job on a thread of its own, timed by a Clock (common/clock.h): `tick(now)`
// runs at once, then again at the time it returns, or sooner when Nudge() is called, until the
// loop is destroyed. Every background job of the server is one of these (capture deadlines,
// schedules, retention, the upload watchdog, storage health), so each is written as "what to
// do now, and when next" and tested by running a SimulatedClock forward.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"

namespace fleetprof {

class PeriodicLoop {
 public:
  // Returns the clock time (unix ns) at which to run next; a time already past runs again
  // at once. The loop waits that long on the monotonic clock, so a wall clock set back or
  // forward meanwhile neither stalls nor hurries it. Runs without any lock of the loop's held.
  using Tick = std::function<int64_t(int64_t now_ns)>;

  // UNAVAILABLE when the thread cannot start. `clock` must outlive the loop.
  static absl::StatusOr<std::unique_ptr<PeriodicLoop>> Start(const std::string& name, Clock* clock, Tick tick);
  // The same for a component that runs on without its loop: a failure is logged as
  // "`consequence`: why" and the answer is null.
  static std::unique_ptr<PeriodicLoop> StartOrLog(const std::string& name, Clock* clock, Tick tick,
                                                  const std::string& consequence);
  // Waits for a tick in progress, then joins the thread.
  ~PeriodicLoop();
  PeriodicLoop(const PeriodicLoop&) = delete;
  PeriodicLoop& operator=(const PeriodicLoop&) = delete;

  // Runs the tick as soon as the one in progress (if any) is done, whatever time it asked for.
  void Nudge();
  // Ticks run so far (a test waits for the one it caused).
  int64_t ticks() const;

 private:
  PeriodicLoop(Clock* clock, Tick tick) : clock_(clock), tick_(std::move(tick)) {}
  void Run();

  Clock* const clock_;
  const Tick tick_;
  mutable absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  bool nudged_ ABSL_GUARDED_BY(mu_) = false;
  int64_t ticks_ ABSL_GUARDED_BY(mu_) = 0;
  std::thread thread_;
};

}  // namespace fleetprof
