// What agents may make the server hold (server/agent_registry.h, AgentLimits): before, node
// count, targets and message sizes were unlimited and the per-node history was capped by count,
// not bytes, so heartbeats could grow server memory without bound.

#include "server/fleet/agent_registry.h"
#include "storage/storage.h"



#include "common/clock.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

class AgentRegistryTest : public ::testing::Test {
 protected:
  // The registry's records in the in-memory engine: no disk for a unit test.
  void SetUp() override { store_ = Storage::InMemory(); }
  static v1::AgentHello Hello(const std::string& node, int targets = 1) {
    v1::AgentHello hello;
    hello.set_node(node);
    for (int i = 0; i < targets; ++i) hello.add_targets()->set_job("job" + std::to_string(i));
    return hello;
  }
  absl::StatusOr<int64_t> Connect(AgentRegistry& registry, const v1::AgentHello& hello) {
    return registry.Connected(hello, [](const v1::ServerMessage&) { return true; }, [] {});
  }

  SimulatedClock clock_;
  ServerMetrics metrics_;
  std::unique_ptr<Storage> store_;
};

TEST_F(AgentRegistryTest, NodesTargetsAndMessageSizesAreBounded) {
  AgentLimits limits;
  limits.max_agents = 3;
  limits.max_targets_per_agent = 4;
  limits.max_message_bytes = 4096;
  AgentRegistry registry(&store_->agents(), &metrics_, limits, &clock_);
  for (const char* node : {"n1", "n2", "n3"}) ASSERT_TRUE(Connect(registry, Hello(node)).ok());
  auto refused = Connect(registry, Hello("n4"));
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(refused.status().message().find("--max_agents"), std::string::npos) << refused.status();
  EXPECT_TRUE(Connect(registry, Hello("n2")).ok()) << "a known node always comes back";
  EXPECT_TRUE(registry.CheckHello(Hello("n3")).ok());

  absl::Status too_many = registry.CheckHello(Hello("n1", 5));
  EXPECT_NE(too_many.message().find("--max_targets_per_agent"), std::string::npos) << too_many;
  v1::AgentHeartbeat big;
  for (int i = 0; i < 100; ++i) big.add_devices()->set_model(std::string(100, 'm'));
  absl::Status oversized = registry.Heartbeat("n1", big);
  EXPECT_EQ(oversized.code(), absl::StatusCode::kResourceExhausted);
  EXPECT_NE(oversized.message().find("--max_agent_message_kb"), std::string::npos) << oversized;
  EXPECT_TRUE(registry.Heartbeat("n1", v1::AgentHeartbeat()).ok());
}

TEST_F(AgentRegistryTest, DeviceHistoryIsBoundedInBytes) {
  AgentLimits limits;
  limits.max_history_bytes = 64 << 10;
  AgentRegistry registry(&store_->agents(), &metrics_, limits, &clock_);
  ASSERT_TRUE(Connect(registry, Hello("node")).ok());
  const int64_t now = clock_.Now();
  int64_t sent_bytes = 0;
  for (int beat = 0; beat < 2000; ++beat) {
    v1::AgentHeartbeat heartbeat;
    for (int d = 0; d < 8; ++d) {
      v1::DeviceSample* sample = heartbeat.add_devices();
      sample->set_device(std::to_string(d));
      sample->set_uuid("GPU-0123456789abcdef");
      sample->set_sampled_at_ns(now + beat);
      sent_bytes += static_cast<int64_t>(sample->ByteSizeLong());
    }
    ASSERT_TRUE(registry.Heartbeat("node", heartbeat).ok());
  }
  std::vector<v1::DeviceSample> kept = registry.DeviceHistory("node", 0, now + 10'000);
  int64_t kept_bytes = 0;
  for (const auto& s : kept) kept_bytes += static_cast<int64_t>(s.ByteSizeLong());
  EXPECT_LE(kept_bytes, limits.max_history_bytes);
  EXPECT_GT(kept_bytes, limits.max_history_bytes - 1024);  // the newest fill the budget
  EXPECT_GT(sent_bytes, 4 * kept_bytes);
  EXPECT_EQ(kept.back().sampled_at_ns(), now + 1999);
}

}  // namespace
}  // namespace fleetprof
