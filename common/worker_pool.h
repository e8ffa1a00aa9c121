#pragma once
// A fixed number of threads running posted tasks in the order they were posted. For work that
// must not run on gRPC's callback threads (it writes to the store or waits for an analysis)
// but needs no thread of its own while it waits for a client.

#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/statusor.h"

namespace fleetprof {

class WorkerPool {
 public:
  // UNAVAILABLE when the threads cannot be started.
  static absl::StatusOr<std::unique_ptr<WorkerPool>> Start(const std::string& name, int threads);
  // Runs the tasks already posted, then joins the threads.
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  // Queues `task`; a free thread runs it. The caller bounds how many are queued.
  void Post(std::function<void()> task);
  size_t size() const { return threads_.size(); }

 private:
  WorkerPool() = default;
  void Run();
  void Stop();

  absl::Mutex mu_;
  std::deque<std::function<void()>> tasks_ ABSL_GUARDED_BY(mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::thread> threads_;
};

}  // namespace fleetprof
