#include "common/periodic_loop.h"

#include <algorithm>

#include "common/threads.h"
#include "spdlog/spdlog.h"

namespace fleetprof {

absl::StatusOr<std::unique_ptr<PeriodicLoop>> PeriodicLoop::Start(const std::string& name, Clock* clock, Tick tick) {
  std::unique_ptr<PeriodicLoop> loop(new PeriodicLoop(clock, std::move(tick)));
  absl::StatusOr<std::thread> thread = StartThread(name, [raw = loop.get()] { raw->Run(); });
  if (!thread.ok()) return thread.status();
  loop->thread_ = *std::move(thread);
  return loop;
}

std::unique_ptr<PeriodicLoop> PeriodicLoop::StartOrLog(const std::string& name, Clock* clock, Tick tick,
                                                       const std::string& consequence) {
  absl::StatusOr<std::unique_ptr<PeriodicLoop>> loop = Start(name, clock, std::move(tick));
  if (loop.ok()) return *std::move(loop);
  spdlog::error("{}: {}", consequence, std::string(loop.status().message()));
  return nullptr;
}

PeriodicLoop::~PeriodicLoop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void PeriodicLoop::Nudge() {
  absl::MutexLock lock(&mu_);
  nudged_ = true;
}

int64_t PeriodicLoop::ticks() const {
  absl::MutexLock lock(&mu_);
  return ticks_;
}

void PeriodicLoop::Run() {
  for (;;) {
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      nudged_ = false;
    }
    const int64_t next = tick_(clock_->Now());
    // Measured after the tick: time that passed while it ran counts toward its wait (a tick that
    // took longer than its period runs again at once, never a whole period late).
    const int64_t wait = std::max<int64_t>(0, next - clock_->Now());
    const int64_t deadline = clock_->MonotonicNanos() + wait;
    absl::MutexLock lock(&mu_);
    ++ticks_;
    const auto woken = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || nudged_; };
    clock_->WaitUntil(&mu_, absl::Condition(&woken), deadline);
  }
}

}  // namespace fleetprof
