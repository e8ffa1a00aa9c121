#pragma once
// At most N callers at once inside a section; the others wait, up to a deadline. Bounds the
// memory of queries that hold a whole profile's events (diagnoses) whatever the number of
// clients.

#include <chrono>
#include <condition_variable>
#include <mutex>

namespace fleetprof {

class ConcurrencySlots {
 public:
  explicit ConcurrencySlots(int slots) : free_(slots) {}

  // Holds a slot while alive; ok() is false when none came free within the wait.
  class Held {
   public:
    Held(ConcurrencySlots* slots, std::chrono::milliseconds wait) : slots_(slots) {
      std::unique_lock lock(slots_->mu_);
      ok_ = slots_->freed_.wait_for(lock, wait, [&] { return slots_->free_ > 0; });
      if (ok_) --slots_->free_;
    }
    ~Held() {
      if (!ok_) return;
      {
        std::lock_guard lock(slots_->mu_);
        ++slots_->free_;
      }
      slots_->freed_.notify_one();
    }
    Held(const Held&) = delete;
    Held& operator=(const Held&) = delete;
    bool ok() const { return ok_; }

   private:
    ConcurrencySlots* slots_;
    bool ok_ = false;
  };

 private:
  std::mutex mu_;
  std::condition_variable freed_;
  int free_;
};

}  // namespace fleetprof
