#include "common/worker_pool.h"

#include "absl/strings/str_cat.h"
#include "common/threads.h"

namespace fleetprof {

absl::StatusOr<std::unique_ptr<WorkerPool>> WorkerPool::Start(const std::string& name, int threads) {
  std::unique_ptr<WorkerPool> pool(new WorkerPool());
  for (int i = 0; i < threads; ++i) {
    auto thread = StartThread(absl::StrCat("worker ", i + 1, " of ", name), [p = pool.get()] { p->Run(); });
    if (!thread.ok()) return thread.status();  // the destructor joins those already started
    pool->threads_.push_back(*std::move(thread));
  }
  return pool;
}

WorkerPool::~WorkerPool() { Stop(); }

void WorkerPool::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::Post(std::function<void()> task) {
  {
    absl::MutexLock lock(&mu_);
    tasks_.push_back(std::move(task));
  }
}

void WorkerPool::Run() {
  const auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_ || !tasks_.empty(); };
  mu_.Lock();
  for (;;) {
    mu_.Await(absl::Condition(&ready));
    if (tasks_.empty()) break;  // stopping, and nothing left to run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    mu_.Unlock();
    task();  // without the lock: Post from a task, or from anyone, never waits for it
    mu_.Lock();
  }
  mu_.Unlock();
}

}  // namespace fleetprof
