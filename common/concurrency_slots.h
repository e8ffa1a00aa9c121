#pragma once
// At most N callers at once inside a section; the others wait, up to a deadline. Bounds the
// memory of queries that hold a whole profile's events (diagnoses) whatever the number of
// clients.

#include <chrono>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace fleetprof {

class ConcurrencySlots {
 public:
  explicit ConcurrencySlots(int slots) : free_(slots) {}

  // Holds a slot while alive; ok() is false when none came free within the wait.
  class Held {
   public:
    Held(ConcurrencySlots* slots, std::chrono::milliseconds wait) : slots_(slots) {
      absl::MutexLock lock(&slots_->mu_);
      const auto free = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(slots_->mu_) { return slots_->free_ > 0; };
      ok_ = slots_->mu_.AwaitWithTimeout(absl::Condition(&free), absl::FromChrono(wait));
      if (ok_) --slots_->free_;
    }
    ~Held() {
      if (!ok_) return;
      absl::MutexLock lock(&slots_->mu_);
      ++slots_->free_;
    }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    bool ok() const { return ok_; }

   private:
    ConcurrencySlots* slots_;
    bool ok_ = false;
  };

 private:
  absl::Mutex mu_;
  int free_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fleetprof
