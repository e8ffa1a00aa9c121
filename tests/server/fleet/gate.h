#pragma once
// A test's stand-in for something slow (a network write, a stalled capture start): the next
// Pass() after HoldNext() waits until Release(), so a test can check what does not wait for it.

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace fleetprof {

class Gate {
 public:
  // Real time a call that must not wait for the held one may take before the test says it did.
  static constexpr std::chrono::seconds kPatience{10};

  // The next Pass() (only that one) waits until Release().
  void HoldNext() {
    absl::MutexLock lock(&mu_);
    hold_next_ = true;
  }
  void Pass() {
    absl::MutexLock lock(&mu_);
    if (!hold_next_) return;
    hold_next_ = false;
    held_ = true;
    mu_.Await(absl::Condition(&released_));
  }
  // True once a Pass() is being held; false after kPatience without one.
  bool WaitUntilHeld() {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&held_), absl::FromChrono(kPatience));
  }
  void Release() {
    absl::MutexLock lock(&mu_);
    released_ = true;
  }

 private:
  absl::Mutex mu_;
  bool hold_next_ ABSL_GUARDED_BY(mu_) = false;
  bool held_ ABSL_GUARDED_BY(mu_) = false;
  bool released_ ABSL_GUARDED_BY(mu_) = false;
};

}  // namespace fleetprof
