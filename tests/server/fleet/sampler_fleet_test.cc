// SamplerFleetSource (server/fleet/sampler_fleet.h): a target's devices are NVML's view of its
// job on the node (shared among the job's targets there), else its job's last profile from that
// node, else 1; a job's labels are its newest profile's that has job labels; a pick starts a SAMPLED capture of that
// one target carrying its weight, and the target is then busy and in flight.

#include "server/fleet/sampler_fleet.h"

#include <map>

#include "common/clock.h"
#include "gtest/gtest.h"
#include "server/server_metrics.h"
#include "storage/storage.h"

namespace fleetprof {
namespace {

v1::Target XprofTarget(const std::string& job, const std::string& address) {
  v1::Target target;
  target.set_job(job);
  target.set_kind(v1::Target::xprof);
  target.set_address(address);
  return target;
}

TEST(SamplerFleetSource, DevicesComeFromNvmlThenTheLastProfileThenOne) {
  SimulatedClock clock;
  ServerMetrics metrics;
  auto store = Storage::InMemory();
  AgentRegistry registry(&store->agents(), &metrics, AgentLimits(), &clock);
  v1::AgentHello hello;
  hello.set_node("n1");
  *hello.add_targets() = XprofTarget("nvml", "10.0.0.1:1");
  *hello.add_targets() = XprofTarget("nvml", "10.0.0.1:2");
  *hello.add_targets() = XprofTarget("profiled", "10.0.0.1:3");
  *hello.add_targets() = XprofTarget("unknown", "10.0.0.1:4");
  ASSERT_TRUE(registry.Connected(hello, [](const v1::ServerMessage&) { return true; }, [] {}).ok());
  v1::AgentHeartbeat heartbeat;
  *heartbeat.mutable_targets() = hello.targets();
  for (int d = 0; d < 4; ++d) {
    v1::DeviceSample* sample = heartbeat.add_devices();
    sample->set_device(std::to_string(d));
    (*sample->mutable_job_memory_used_bytes())["nvml"] = int64_t{1} << 30;
    (*sample->mutable_job_memory_used_bytes())["gone"] = 0;  // holds nothing: not its device
  }
  ASSERT_TRUE(registry.Heartbeat("n1", heartbeat).ok());

  v1::ProfileInfo info;
  info.set_profile_id("p1");
  info.set_job("profiled");
  info.set_node("n1");
  info.set_ingested_at_ns(clock.Now());
  (*info.mutable_labels())["team"] = "vision";
  v1::ProfileSummary summary;
  for (int d = 0; d < 3; ++d) summary.add_devices()->set_device(std::to_string(d));
  ASSERT_TRUE(store->profiles().Commit(info, summary).ok());
  // A newer profile of the job from a (sampled) capture carries only per-upload labels: the
  // job's labels stay the ones its own uploads gave it, so a labelled policy keeps matching.
  clock.Advance(1'000'000'000);
  info.set_profile_id("p2");
  info.set_ingested_at_ns(clock.Now());
  info.clear_labels();
  (*info.mutable_labels())["capture_id"] = "c1";
  (*info.mutable_labels())["source"] = "xprof";
  ASSERT_TRUE(store->profiles().Commit(info, summary).ok());

  CaptureCoordinator captures(store.get(), &registry, &metrics, &clock);
  SamplerFleetSource source(&registry, &captures, &store->profiles(), &clock);
  SamplerFleet fleet = source.Fleet();
  std::map<std::string, SampledTarget> live;
  for (SampledTarget& t : fleet.live_targets()) live[t.target] = t;
  ASSERT_EQ(live.size(), 4u);
  EXPECT_EQ(live["xprof:10.0.0.1:1"].devices, 2) << "4 devices of the job, 2 targets of it on the node";
  EXPECT_EQ(live["xprof:10.0.0.1:2"].devices, 2);
  EXPECT_EQ(live["xprof:10.0.0.1:3"].devices, 3) << "the job's last profile from the node";
  EXPECT_EQ(live["xprof:10.0.0.1:3"].labels, (std::map<std::string, std::string>{{"team", "vision"}}));
  EXPECT_EQ(live["xprof:10.0.0.1:4"].devices, 1);
  EXPECT_EQ(fleet.sampled_in_flight(), 0);

  v1::SamplingPick pick;
  pick.set_node("n1");
  pick.set_target("xprof:10.0.0.1:1");
  pick.set_job("nvml");
  pick.set_devices(2);
  pick.set_inclusion_probability(0.25);
  pick.set_weight_device_ns(2 * int64_t{600} * 1'000'000'000 * 4);
  absl::StatusOr<std::string> id = fleet.start(pick, 1000);
  ASSERT_TRUE(id.ok()) << id.status();
  absl::StatusOr<v1::Capture> capture = captures.Get(*id);
  ASSERT_TRUE(capture.ok());
  EXPECT_EQ(capture->reason(), v1::Capture::SAMPLED);
  ASSERT_EQ(capture->targets_size(), 1) << "one target, not the job's every target";
  EXPECT_EQ(capture->targets(0).target(), "xprof:10.0.0.1:1");
  EXPECT_EQ(capture->targets(0).weight_device_ns(), pick.weight_device_ns());
  EXPECT_DOUBLE_EQ(capture->targets(0).inclusion_probability(), 0.25);
  EXPECT_EQ(capture->targets(0).devices(), 2);
  EXPECT_EQ(capture->request().duration_ms(), 1000);
  EXPECT_EQ(fleet.sampled_in_flight(), 1);
  for (SampledTarget& t : fleet.live_targets()) EXPECT_EQ(t.busy, t.target == "xprof:10.0.0.1:1") << t.target;

  pick.set_target("xprof:10.0.0.9:9");  // gone meanwhile
  EXPECT_FALSE(fleet.start(pick, 1000).ok());
}

}  // namespace
}  // namespace fleetprof
