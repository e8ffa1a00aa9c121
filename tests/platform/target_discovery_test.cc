#include "collectors/target_discovery.h"

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace fleetprof {
namespace {

namespace fs = std::filesystem;

class TargetDiscoveryTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fleetprof-proc-XXXXXX";
    root_ = mkdtemp(pattern);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Process(int pid, const std::string& environ) {
    fs::create_directories(root_ + "/" + std::to_string(pid));
    std::ofstream(root_ + "/" + std::to_string(pid) + "/environ") << environ;
  }
  std::string root_;
};

TEST_F(TargetDiscoveryTest, FindsXlaJobsByTheirEnvironment) {
  using namespace std::string_literals;
  Process(100, "PATH=/bin\0FLEETPROF_JOB=jax-train\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s);
  Process(101, "FLEETPROF_JOB=jax-train\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s);  // its child
  Process(200, "FLEETPROF_JOB=torch-only\0"s);                                    // no XLA server
  Process(300, "FLEETPROF_XPROF_ADDR=127.0.0.1:9999\0"s);                         // no job
  fs::create_directories(root_ + "/self");
  auto targets = DiscoverXprofTargets(root_);
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].job(), "jax-train");
  EXPECT_EQ(targets[0].kind(), v1::Target::xprof);
  EXPECT_EQ(targets[0].pid(), 100);
  EXPECT_EQ(targets[0].address(), "127.0.0.1:9012");
}

TEST_F(TargetDiscoveryTest, HostileEnvironmentValuesAreRefused) {
  using namespace std::string_literals;
  Process(10, "FLEETPROF_JOB=a\0FLEETPROF_XPROF_ADDR=../../etc:1\0"s);
  Process(11, "FLEETPROF_JOB=b\0FLEETPROF_XPROF_ADDR=127.0.0.1:1/../../x\0"s);
  Process(12, "FLEETPROF_JOB=bad\xff\0FLEETPROF_XPROF_ADDR=127.0.0.1:2\0"s);
  Process(13, "FLEETPROF_JOB=c\nd\0FLEETPROF_XPROF_ADDR=127.0.0.1:3\0"s);
  Process(14, "FLEETPROF_JOB=../../tmp/evil\0FLEETPROF_XPROF_ADDR=127.0.0.1:4\0"s);  // a name, never a path
  auto targets = DiscoverXprofTargets(root_);
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].pid(), 14);
}

TEST(TargetFlagTest, ParsesJobAndAddressInAnyOrder) {
  auto target = ParseTargetFlag("xprof=10.0.0.5:6009,job=llama");
  ASSERT_TRUE(target.ok()) << target.status();
  EXPECT_EQ(target->job(), "llama");
  EXPECT_EQ(target->address(), "10.0.0.5:6009");
  EXPECT_EQ(target->kind(), v1::Target::xprof);
}

TEST(TargetFlagTest, RejectsIncompleteOrUnknownKeys) {
  EXPECT_FALSE(ParseTargetFlag("job=llama").ok());
  EXPECT_FALSE(ParseTargetFlag("xprof=host:1").ok());
  EXPECT_FALSE(ParseTargetFlag("job=a,xprof=nohostport").ok());
  EXPECT_NE(ParseTargetFlag("job=a,xprof=h:1,color=red").status().message().find("unknown key 'color'"),
            std::string::npos);
}

}  // namespace
}  // namespace fleetprof
