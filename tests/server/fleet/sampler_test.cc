// The sampler's locks (server/fleet/sampler.h): the sampling status read and a trigger's budget
// reservation never wait behind a tick's I/O (the catalog's compare-and-set, which etcd answers
// over the network, or the capture starts); a tick that loses its compare-and-set to a
// reservation plans again on top of it; Disable still waits for a tick's starts; Stop waits for
// the tick in progress and no tick runs after it.

#include <chrono>
#include <functional>
#include <future>
#include <optional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "server/fleet/sampler.h"
#include "tests/server/fleet/gate.h"
#include "storage/storage.h"

namespace fleetprof {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;
constexpr int64_t kEveryMs = 60'000;

// The in-memory catalog, whose commits (the sampling state's compare-and-set) can be held.
class SlowCatalog : public Catalog {
 public:
  explicit SlowCatalog(Catalog* inner) : inner_(inner) {}
  absl::StatusOr<std::optional<std::string>> Get(CatalogTable table, std::string_view key) override {
    return inner_->Get(table, key);
  }
  absl::Status Scan(CatalogTable table, const CatalogScan& scan, const CatalogVisitor& visit) override {
    return inner_->Scan(table, scan, visit);
  }
  absl::Status Commit(const CatalogWrite& write) override {
    commit_gate.Pass();
    return inner_->Commit(write);
  }
  Gate commit_gate;

 private:
  Catalog* inner_;
};

// Ten one-device targets; every start is recorded, and one can be held.
struct StallableFleet {
  std::vector<SampledTarget> targets;
  absl::Mutex mu;
  std::vector<v1::SamplingPick> started ABSL_GUARDED_BY(mu);
  Gate start_gate;
  Gate listing_gate;

  StallableFleet() {
    for (int i = 0; i < 10; ++i) {
      SampledTarget t;
      t.node = absl::StrCat("node", i);
      t.target = absl::StrCat("kineto:pid=", 100 + i);
      t.job = "train";
      targets.push_back(t);
    }
  }
  SamplerFleet Bind() {
    SamplerFleet fleet;
    fleet.live_targets = [this] {
      listing_gate.Pass();
      return targets;
    };
    fleet.sampled_in_flight = [] { return 0; };
    fleet.start = [this](const v1::SamplingPick& pick, int64_t) -> absl::StatusOr<std::string> {
      start_gate.Pass();
      absl::MutexLock lock(&mu);
      started.push_back(pick);
      return absl::StrCat("capture-", started.size());
    };
    fleet.seed = [] { return uint64_t{7}; };
    return fleet;
  }
  size_t started_count() {
    absl::MutexLock lock(&mu);
    return started.size();
  }
};

// p = 1 (every target each period), well within a 50% budget: each period starts all ten.
v1::SetSamplingRequest EveryTargetPolicy() {
  v1::SetSamplingRequest policy;
  policy.set_every_ms(kEveryMs);
  policy.set_duration_ms(1000);
  policy.set_max_overhead(0.5);
  policy.set_max_concurrent(100);
  return policy;
}

Principal Tester() {
  Principal principal;
  principal.name = "test";
  return principal;
}

class SamplerTest : public ::testing::Test {
 protected:
  SamplerTest() : storage_(Storage::InMemory()), catalog_(&storage_->engine().catalog()) {}

  // Sets the policy and runs its first period (ten captures started).
  void SetAndRunFirstPeriod(Sampler& sampler) {
    ASSERT_TRUE(sampler.Set(EveryTargetPolicy(), Tester()).ok());
    sampler.Tick(clock_.Now());
    ASSERT_EQ(fleet_.started_count(), 10u);
  }
  // A call on a thread of its own: true when it answered within Gate::kPatience.
  static bool AnswersSoon(std::future<bool>& answer) {
    return answer.wait_for(Gate::kPatience) == std::future_status::ready;
  }

  std::unique_ptr<Storage> storage_;
  SlowCatalog catalog_;
  StallableFleet fleet_;
  SimulatedClock clock_;
};

TEST_F(SamplerTest, StatusAndReservationsDoNotWaitForATicksSlowCompareAndSet) {
  Sampler sampler(&catalog_, fleet_.Bind(), &clock_, nullptr);
  SetAndRunFirstPeriod(sampler);
  clock_.Advance(kEveryMs * 1'000'000);  // the second period is due
  catalog_.commit_gate.HoldNext();
  std::future<int64_t> tick = std::async(std::launch::async, [&] { return sampler.Tick(clock_.Now()); });
  ASSERT_TRUE(catalog_.commit_gate.WaitUntilHeld()) << "the tick never wrote the state";

  std::future<bool> status = std::async(std::launch::async, [&] {
    auto got = sampler.Get();
    return got.ok() && got->periods() == 1;  // the tick's write has not landed
  });
  std::future<bool> reserved = std::async(std::launch::async, [&] { return sampler.ReserveTriggered(kSecondNs); });
  const bool status_answered = AnswersSoon(status), reservation_answered = AnswersSoon(reserved);
  catalog_.commit_gate.Release();
  EXPECT_TRUE(status_answered) << "the status read waited for the tick's compare-and-set";
  EXPECT_TRUE(reservation_answered) << "the reservation waited for the tick's compare-and-set";
  EXPECT_TRUE(status.get());
  EXPECT_TRUE(reserved.get()) << "one device-second fits the first period's budget";
  tick.get();

  // The reservation won the race; the tick planned again on top of it and ran its period.
  auto after = sampler.Get();
  ASSERT_TRUE(after.ok());
  EXPECT_EQ(after->periods(), 2);
  EXPECT_EQ(fleet_.started_count(), 20u);
}

TEST_F(SamplerTest, StatusAndReservationsDoNotWaitForATicksCaptureStartsButDisableDoes) {
  Sampler sampler(&catalog_, fleet_.Bind(), &clock_, nullptr);
  SetAndRunFirstPeriod(sampler);
  clock_.Advance(kEveryMs * 1'000'000);
  fleet_.start_gate.HoldNext();
  std::future<int64_t> tick = std::async(std::launch::async, [&] { return sampler.Tick(clock_.Now()); });
  ASSERT_TRUE(fleet_.start_gate.WaitUntilHeld()) << "the tick started no capture";

  std::future<bool> status = std::async(std::launch::async, [&] {
    auto got = sampler.Get();
    return got.ok() && got->periods() == 2;  // stored before its starts
  });
  std::future<bool> reserved = std::async(std::launch::async, [&] { return sampler.ReserveTriggered(kSecondNs); });
  std::future<bool> disabled = std::async(std::launch::async, [&] { return sampler.Disable().ok(); });
  const bool status_answered = AnswersSoon(status), reservation_answered = AnswersSoon(reserved);
  // Sampling off waits for the starts in progress: once it answers, none of its policy starts.
  const bool disable_waited = disabled.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout;
  fleet_.start_gate.Release();
  EXPECT_TRUE(status_answered) << "the status read waited for the tick's capture starts";
  EXPECT_TRUE(reservation_answered) << "the reservation waited for the tick's capture starts";
  EXPECT_TRUE(disable_waited) << "sampling off answered while the tick was still starting captures";
  EXPECT_TRUE(status.get());
  EXPECT_TRUE(reserved.get());
  EXPECT_TRUE(disabled.get());
  tick.get();
  EXPECT_EQ(fleet_.started_count(), 20u);
  clock_.Advance(kEveryMs * 1'000'000);
  sampler.Tick(clock_.Now());
  EXPECT_EQ(fleet_.started_count(), 20u) << "sampling is off";
}

TEST_F(SamplerTest, StatusDoesNotWaitForATicksFleetListing) {
  Sampler sampler(&catalog_, fleet_.Bind(), &clock_, nullptr);
  SetAndRunFirstPeriod(sampler);
  clock_.Advance(kEveryMs * 1'000'000);
  fleet_.listing_gate.HoldNext();
  std::future<int64_t> tick = std::async(std::launch::async, [&] { return sampler.Tick(clock_.Now()); });
  ASSERT_TRUE(fleet_.listing_gate.WaitUntilHeld()) << "the tick listed no targets";
  std::future<bool> status = std::async(std::launch::async, [&] { return sampler.Get().ok(); });
  std::future<bool> reserved = std::async(std::launch::async, [&] { return sampler.ReserveTriggered(kSecondNs); });
  const bool status_answered = AnswersSoon(status), reservation_answered = AnswersSoon(reserved);
  fleet_.listing_gate.Release();
  EXPECT_TRUE(status_answered) << "the status read waited for the tick's fleet listing";
  EXPECT_TRUE(reservation_answered) << "the reservation waited for the tick's fleet listing";
  EXPECT_TRUE(status.get());
  EXPECT_TRUE(reserved.get());
  tick.get();
  EXPECT_EQ(fleet_.started_count(), 20u);
}

TEST_F(SamplerTest, StopWaitsForTheTickInProgressAndNoTickRunsAfter) {
  Sampler sampler(&catalog_, fleet_.Bind(), &clock_, nullptr);
  ASSERT_TRUE(sampler.Set(EveryTargetPolicy(), Tester()).ok());
  fleet_.start_gate.HoldNext();
  sampler.Start();  // the loop's first tick runs at once and is held at its first start
  ASSERT_TRUE(fleet_.start_gate.WaitUntilHeld()) << "the loop's tick started no capture";
  std::future<void> stopped = std::async(std::launch::async, [&] { sampler.Stop(); });
  const bool stop_waited = stopped.wait_for(std::chrono::milliseconds(200)) == std::future_status::timeout;
  fleet_.start_gate.Release();
  stopped.get();
  EXPECT_TRUE(stop_waited) << "Stop returned while a tick was still starting captures";
  EXPECT_EQ(fleet_.started_count(), 10u) << "the tick in progress finished its starts";

  // No loop after Stop: a period coming due starts nothing, a restart is refused, and the
  // policy can still be read and changed (the server drains through these).
  sampler.Start();
  clock_.Advance(3 * kEveryMs * 1'000'000);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_EQ(fleet_.started_count(), 10u);
  auto status = sampler.Get();
  ASSERT_TRUE(status.ok());
  EXPECT_EQ(status->periods(), 1);
  EXPECT_TRUE(sampler.Disable().ok());
}

}  // namespace
}  // namespace fleetprof
