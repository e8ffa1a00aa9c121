// common/worker_pool.h: tasks run in the order posted, on the pool's threads only; the
// destructor runs what is queued; threads that cannot start are an error, not an exception.

#include "common/worker_pool.h"

#include <atomic>
#include <mutex>
#include <set>
#include <thread>
#include <vector>

#include "common/threads.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

TEST(WorkerPoolTest, RunsEveryTaskOnItsThreadsAndDrainsWhenDestroyed) {
  std::mutex mu;
  std::vector<int> order;
  std::set<std::thread::id> threads;
  {
    auto pool = WorkerPool::Start("test pool", 1);
    ASSERT_TRUE(pool.ok()) << pool.status();
    for (int i = 0; i < 1000; ++i) {
      (*pool)->Post([&, i] {
        std::lock_guard lock(mu);
        order.push_back(i);
        threads.insert(std::this_thread::get_id());
      });
    }
  }
  ASSERT_EQ(order.size(), 1000u);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(order[i], i);  // one thread: in the order posted
  EXPECT_EQ(threads.size(), 1u);
  EXPECT_EQ(threads.count(std::this_thread::get_id()), 0u);
}

TEST(WorkerPoolTest, SeveralThreadsShareTheWork) {
  std::atomic<int> done{0};
  {
    auto pool = WorkerPool::Start("test pool", 4);
    ASSERT_TRUE(pool.ok()) << pool.status();
    EXPECT_EQ((*pool)->size(), 4u);
    for (int i = 0; i < 10000; ++i) (*pool)->Post([&] { done.fetch_add(1); });
  }
  EXPECT_EQ(done.load(), 10000);
}

TEST(WorkerPoolTest, ThreadsThatCannotStartAreAnError) {
  FailThreadStartsForTesting(1);
  auto pool = WorkerPool::Start("the upload workers", 3);
  FailThreadStartsForTesting(0);
  ASSERT_FALSE(pool.ok());
  EXPECT_EQ(pool.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_NE(pool.status().message().find("cannot start worker 1 of the upload workers"), std::string::npos)
      << pool.status();
}

}  // namespace
}  // namespace fleetprof
