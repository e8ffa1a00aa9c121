#include "collectors/target_discovery.h"

#include <filesystem>
#include <fstream>
#include <thread>

#include "collectors/job_owners.h"
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
  // A process of `uid` that started at tick 1000 + pid, as /proc shows it.
  void Process(int pid, const std::string& environ, int uid = 0) {
    const std::string dir = root_ + "/" + std::to_string(pid);
    fs::create_directories(dir);
    std::ofstream(dir + "/environ") << environ;
    std::ofstream(dir + "/status") << "Name:\tpython\nUid:\t" << uid << "\t" << uid << "\t" << uid << "\t" << uid << "\n";
    std::ofstream(dir + "/stat") << pid << " (py thon) S 1 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 " << 1000 + pid
                                 << " 0 0\n";
  }
  std::vector<v1::Target> Discover() { return DiscoverXprofTargets(root_, owners_); }
  std::string root_;
  JobOwners owners_;
};

TEST_F(TargetDiscoveryTest, FindsXlaJobsByTheirEnvironment) {
  using namespace std::string_literals;
  Process(100, "PATH=/bin\0FLEETPROF_JOB=jax-train\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s);
  Process(101, "FLEETPROF_JOB=jax-train\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s);  // its child
  Process(200, "FLEETPROF_JOB=torch-only\0"s);                                    // no XLA server
  Process(300, "FLEETPROF_XPROF_ADDR=127.0.0.1:9999\0"s);                         // no job
  fs::create_directories(root_ + "/self");
  auto targets = Discover();
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].job(), "jax-train");
  EXPECT_EQ(targets[0].kind(), v1::Target::xprof);
  EXPECT_EQ(targets[0].pid(), 100);
  EXPECT_EQ(targets[0].address(), "127.0.0.1:9012");
  EXPECT_EQ(targets[0].start_ticks(), 1100u) << "pinned to its start time (stat field 22)";
}

// Issue 21: a job name was anyone's, so another user's process naming root's job (with a
// profiler server of its own) became a target of that job, and a capture of root's job
// traced the attacker's process and uploaded its answer as root's. The name is the uid's
// that holds it; the other's process is no target, this scan or the next.
TEST_F(TargetDiscoveryTest, AnotherUsersProcessNamingAHeldJobIsNoTarget) {
  using namespace std::string_literals;
  Process(100, "FLEETPROF_JOB=train\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s, 0);
  Process(101, "FLEETPROF_JOB=train\0FLEETPROF_XPROF_ADDR=127.0.0.1:9013\0"s, 1001);
  Process(102, "FLEETPROF_JOB=mine\0FLEETPROF_XPROF_ADDR=127.0.0.1:9014\0"s, 1001);
  for (int scan = 0; scan < 2; ++scan) {
    auto targets = Discover();
    ASSERT_EQ(targets.size(), 2u);
    EXPECT_EQ(targets[0].pid(), 100);
    EXPECT_EQ(targets[1].pid(), 102);
    EXPECT_EQ(targets[1].job(), "mine");
  }
  EXPECT_EQ(owners_.OwnerOf("train"), 0);
  EXPECT_EQ(owners_.conflicts(), 1) << "flagged once, not at every scan";
  // Held through a Kineto client's claim too: one binding for every kind of target.
  fs::remove_all(root_ + "/100");
  ASSERT_TRUE(owners_.Claim("train", 0, 7));
  EXPECT_TRUE(Discover().size() == 1u && Discover()[0].pid() == 102);
}

// Deduplication by address alone let a process of another user that names the job's address
// (with a lower pid) hide the job's own target.
TEST_F(TargetDiscoveryTest, AnotherUsersProcessNamingTheSameAddressDoesNotHideTheJob) {
  using namespace std::string_literals;
  Process(50, "FLEETPROF_JOB=decoy\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s, 1001);
  Process(100, "FLEETPROF_JOB=train\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s, 0);
  auto targets = Discover();
  ASSERT_EQ(targets.size(), 2u);
  EXPECT_EQ(targets[1].job(), "train");
  EXPECT_EQ(targets[1].pid(), 100);
}

// A process whose uid or start time cannot be read (gone meanwhile) is no target.
TEST_F(TargetDiscoveryTest, AProcessWithoutStatusOrStatIsSkipped) {
  using namespace std::string_literals;
  Process(100, "FLEETPROF_JOB=train\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s);
  fs::remove(root_ + "/100/stat");
  EXPECT_TRUE(Discover().empty());
}

TEST_F(TargetDiscoveryTest, HostileEnvironmentValuesAreRefused) {
  using namespace std::string_literals;
  Process(10, "FLEETPROF_JOB=a\0FLEETPROF_XPROF_ADDR=../../etc:1\0"s);
  Process(11, "FLEETPROF_JOB=b\0FLEETPROF_XPROF_ADDR=127.0.0.1:1/../../x\0"s);
  Process(12, "FLEETPROF_JOB=bad\xff\0FLEETPROF_XPROF_ADDR=127.0.0.1:2\0"s);
  Process(13, "FLEETPROF_JOB=c\nd\0FLEETPROF_XPROF_ADDR=127.0.0.1:3\0"s);
  Process(14, "FLEETPROF_JOB=../../tmp/evil\0FLEETPROF_XPROF_ADDR=127.0.0.1:4\0"s);  // a name, never a path
  auto targets = Discover();
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].pid(), 14);
}

TEST(JobOwnersTest, ANameIsTheFirstClaimersUntilItsProcessesStopClaimingIt) {
  JobOwners owners(std::chrono::milliseconds(200));
  EXPECT_TRUE(owners.Claim("train", 1000, 10));
  EXPECT_FALSE(owners.Claim("train", 1001, 11));
  EXPECT_TRUE(owners.Claim("train", 1000, 12));  // the holder's other processes
  EXPECT_TRUE(owners.Claim("unassigned", 1001, 11)) << "nobody's name";
  EXPECT_FALSE(owners.Claim("other", -1, 13)) << "an unknown uid holds nothing";
  std::this_thread::sleep_for(std::chrono::milliseconds(300));
  EXPECT_EQ(owners.OwnerOf("train"), std::nullopt);
  EXPECT_TRUE(owners.Claim("train", 1001, 11)) << "free again once uid 1000 stopped claiming it";
  EXPECT_FALSE(owners.Claim("train", 1000, 10));
  EXPECT_EQ(owners.conflicts(), 2);
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
