// The agent's link to the server (agent/server_link.h) against a stand-in AgentService on a real
// socket: a message posted (a device trigger's firing, from the NVML sampling thread) never waits
// on the stream, even while the server takes nothing; the queue stays bounded, dropping the
// oldest; what was kept goes out in order once the server reads again, and what was posted
// while the link was down goes out after the hello. The agent's /metrics counts the dropped
// ones (ServerLinkMetrics, agent/agent.h).

#include <algorithm>
#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "agent/agent.h"
#include "agent/server_link.h"
#include "fleetprof/v1/agent.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "prometheus/text_serializer.h"

namespace fleetprof {
namespace {

constexpr auto kPatience = absl::Seconds(30);

// Welcomes each agent, then reads nothing while stalled (a server that stopped taking the
// stream: the agent's writes fill the flow-control window and block), and the trigger firings'
// evidence in arrival order once it reads.
class StallableAgentService final : public v1::AgentService::Service {
 public:
  explicit StallableAgentService(bool stalled) : stalled_(stalled) {}

  grpc::Status Connect(grpc::ServerContext* context,
                       grpc::ServerReaderWriter<v1::ServerMessage, v1::AgentMessage>* stream) override {
    v1::AgentMessage message;
    if (!stream->Read(&message) || !message.has_hello()) return grpc::Status(grpc::INVALID_ARGUMENT, "no hello");
    v1::ServerMessage welcome;
    welcome.mutable_welcome()->set_heartbeat_interval_ms(20);
    stream->Write(welcome);
    {
      absl::MutexLock lock(&mu_);
      welcomed_ = true;
      const auto go_on = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return !stalled_ || context->IsCancelled(); };
      // IsCancelled is not a change under mu_: look again every 20 ms.
      while (!mu_.AwaitWithTimeout(absl::Condition(&go_on), absl::Milliseconds(20))) {
      }
    }
    while (stream->Read(&message)) {
      if (!message.has_trigger_firing()) continue;
      absl::MutexLock lock(&mu_);
      firings_.push_back(message.trigger_firing().evidence().substr(0, 16));
    }
    return grpc::Status::OK;
  }

  void Resume() {
    absl::MutexLock lock(&mu_);
    stalled_ = false;
  }
  bool WaitUntilWelcomed() {
    absl::MutexLock lock(&mu_);
    return mu_.AwaitWithTimeout(absl::Condition(&welcomed_), kPatience);
  }
  // The firings' evidence prefixes once `count` have arrived (what came by then otherwise).
  std::vector<std::string> WaitForFirings(size_t count) {
    absl::MutexLock lock(&mu_);
    const auto arrived = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return firings_.size() >= count; };
    mu_.AwaitWithTimeout(absl::Condition(&arrived), kPatience);
    return firings_;
  }

 private:
  absl::Mutex mu_;
  bool stalled_ ABSL_GUARDED_BY(mu_);
  bool welcomed_ ABSL_GUARDED_BY(mu_) = false;
  std::vector<std::string> firings_ ABSL_GUARDED_BY(mu_);
};

class ServerLinkTest : public ::testing::Test {
 protected:
  void Serve(bool stalled) {
    service_ = std::make_unique<StallableAgentService>(stalled);
    grpc::ServerBuilder builder;
    int port = 0;
    builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
    builder.RegisterService(service_.get());
    server_ = builder.BuildAndStart();
    ASSERT_NE(server_, nullptr);
    ASSERT_GT(port, 0);
    link_ = std::make_unique<ServerLink>(
        grpc::CreateChannel(absl::StrCat("127.0.0.1:", port), grpc::InsecureChannelCredentials()),
        [] {
          v1::AgentHello hello;
          hello.set_node("gpu-1");
          return hello;
        },
        [] { return v1::AgentHeartbeat(); }, nullptr);
  }
  void TearDown() override {
    if (link_) link_->Stop();  // cancels a write the stalled server holds
    if (server_) server_->Shutdown(std::chrono::system_clock::now() + std::chrono::seconds(5));
    link_.reset();
    server_.reset();
  }

  // A firing whose evidence starts with its number (16 characters) and is `bytes` long.
  static v1::AgentMessage Firing(int i, size_t bytes) {
    v1::AgentMessage message;
    std::string evidence = absl::StrCat(i);
    evidence.resize(16, ' ');
    evidence.resize(bytes, 'x');
    message.mutable_trigger_firing()->set_trigger_id("t1");
    message.mutable_trigger_firing()->set_job("train");
    message.mutable_trigger_firing()->set_evidence(evidence);
    return message;
  }
  static std::string Numbered(int i) {
    std::string s = absl::StrCat(i);
    s.resize(16, ' ');
    return s;
  }

  std::unique_ptr<StallableAgentService> service_;
  std::unique_ptr<grpc::Server> server_;
  std::unique_ptr<ServerLink> link_;
};

TEST_F(ServerLinkTest, PostingNeverWaitsForAStalledServerAndKeepsTheNewestWithinItsBound) {
  Serve(/*stalled=*/true);
  link_->Start();
  ASSERT_TRUE(service_->WaitUntilWelcomed());
  // 64 MiB of firings against a server that reads nothing: far past what the flow-control
  // windows and socket buffers hold, so the link's writer blocks on the stream early on.
  constexpr int kPosted = 1024;
  constexpr size_t kBytes = 64 << 10;
  // Every post returns while the server reads nothing (it resumes only below): a Post that
  // waited on the stalled stream would hang here until ctest's timeout, with no clock to race.
  for (int i = 0; i < kPosted; ++i) link_->Post(Firing(i, kBytes));
  const int64_t dropped = link_->dropped_posts();
  EXPECT_GT(dropped, 0) << "the queue is bounded: a stalled server leaves no room";
  EXPECT_LE(dropped, kPosted - static_cast<int64_t>(ServerLink::kMaxPosted));

  // The server reads again: every firing not dropped arrives, in order, the newest among them.
  service_->Resume();
  const size_t kept = static_cast<size_t>(kPosted - dropped);
  const std::vector<std::string> arrived = service_->WaitForFirings(kept);
  ASSERT_EQ(arrived.size(), kept);
  EXPECT_EQ(arrived.back(), Numbered(kPosted - 1)) << "drop-oldest keeps the newest firing";
  for (size_t i = 1; i < arrived.size(); ++i) {
    EXPECT_LT(std::stoi(arrived[i - 1]), std::stoi(arrived[i])) << "out of order at " << i;
  }
}

// The dropped firings reach the agent's /metrics as a counter of the node: 0 before any drop
// (so rate() has a start), then exactly the link's count, each drop counted once however often
// the metrics follow the link.
TEST_F(ServerLinkTest, TheAgentsMetricsCountEveryDroppedFiringOnce) {
  prometheus::Registry registry;
  ServerLinkMetrics metrics(registry, "gpu-1");
  const auto dropped_metric = [&]() -> std::optional<double> {
    for (const auto& family : registry.Collect()) {
      if (family.name != "fleetprof_agent_trigger_firings_dropped_total") continue;
      EXPECT_EQ(family.type, prometheus::MetricType::Counter);
      if (family.metric.size() != 1 || family.metric[0].label.size() != 1) return std::nullopt;
      EXPECT_EQ(family.metric[0].label[0].name, "node");
      EXPECT_EQ(family.metric[0].label[0].value, "gpu-1");
      return family.metric[0].counter.value;
    }
    return std::nullopt;
  };
  Serve(/*stalled=*/true);
  link_->Start();
  ASSERT_TRUE(service_->WaitUntilWelcomed());
  metrics.Follow(*link_);
  EXPECT_EQ(dropped_metric(), 0.0);

  // Far more than the stalled stream and the queue hold (as above): the oldest are dropped.
  for (int i = 0; i < 1024; ++i) link_->Post(Firing(i, 64 << 10));
  const int64_t dropped = link_->dropped_posts();
  ASSERT_GT(dropped, 0);
  metrics.Follow(*link_);
  metrics.Follow(*link_);
  EXPECT_EQ(dropped_metric(), static_cast<double>(dropped));
  const std::string text = prometheus::TextSerializer().Serialize(registry.Collect());
  EXPECT_NE(text.find("# TYPE fleetprof_agent_trigger_firings_dropped_total counter"), std::string::npos) << text;
  EXPECT_NE(text.find("fleetprof_agent_trigger_firings_dropped_total{node=\"gpu-1\"} " + std::to_string(dropped)),
            std::string::npos)
      << text;

  // More drops later add to it.
  for (int i = 1024; i < 1024 + 300; ++i) link_->Post(Firing(i, 16));
  const int64_t more = link_->dropped_posts();
  ASSERT_GT(more, dropped);
  metrics.Follow(*link_);
  EXPECT_EQ(dropped_metric(), static_cast<double>(more));
}

TEST_F(ServerLinkTest, MessagesPostedWhileTheLinkIsDownGoOutAfterTheHello) {
  Serve(/*stalled=*/false);
  for (int i = 0; i < 3; ++i) link_->Post(Firing(i, 100));
  link_->Start();
  const std::vector<std::string> arrived = service_->WaitForFirings(3);
  EXPECT_EQ(arrived, (std::vector<std::string>{Numbered(0), Numbered(1), Numbered(2)}));
  EXPECT_EQ(link_->dropped_posts(), 0);
}

}  // namespace
}  // namespace fleetprof
