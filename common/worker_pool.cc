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
    std::lock_guard lock(mu_);
    stopping_ = true;
  }
  changed_.notify_all();
  for (std::thread& t : threads_) t.join();
}

void WorkerPool::Post(std::function<void()> task) {
  {
    std::lock_guard lock(mu_);
    tasks_.push_back(std::move(task));
  }
  changed_.notify_one();
}

void WorkerPool::Run() {
  std::unique_lock lock(mu_);
  for (;;) {
    changed_.wait(lock, [this] { return stopping_ || !tasks_.empty(); });
    if (tasks_.empty()) return;  // stopping, and nothing left to run
    std::function<void()> task = std::move(tasks_.front());
    tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace fleetprof
