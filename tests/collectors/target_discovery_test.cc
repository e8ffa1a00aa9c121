#include "collectors/target_discovery.h"

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <fstream>
#include <thread>
#include <utility>
#include <vector>

#include "collectors/job_owners.h"
#include "collectors/process_jobs.h"
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
  // A process of `uid` that started at tick 1000 + pid (or `start`), as /proc shows it.
  void Process(int pid, const std::string& environ, int uid = 0, uint64_t start = 0,
               const std::string& command = "py thon") {
    const std::string dir = root_ + "/" + std::to_string(pid);
    fs::create_directories(dir);
    std::ofstream(dir + "/environ") << environ;
    std::ofstream(dir + "/status") << "Name:\tpython\nUid:\t" << uid << "\t" << uid << "\t" << uid << "\t" << uid << "\n";
    std::ofstream(dir + "/stat") << pid << " (" << command << ") S 1 1 1 0 -1 0 0 0 0 0 7 3 0 0 20 0 1 0 "
                                 << (start != 0 ? start : 1000 + pid) << " 0 0\n";
  }
  // One discovery for the whole test, as the agent keeps one: scans share its cache.
  std::vector<v1::Target> Discover() {
    if (!discovery_) discovery_ = std::make_unique<XprofTargetDiscovery>(root_, &owners_);
    return discovery_->Scan();
  }
  std::string root_;
  JobOwners owners_;
  std::unique_ptr<XprofTargetDiscovery> discovery_;
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

// Issue 41: a job started under `nsys launch --session-new=NAME` (FLEETPROF_NSYS_SESSION) is a
// target of kind nsys named by its session: `nsys launch` and its program are one target, an XLA
// job under a session is a target of each kind, and a name nsys's command line could take for
// something else is refused.
TEST_F(TargetDiscoveryTest, FindsNsysSessionsByTheirEnvironment) {
  using namespace std::string_literals;
  Process(100, "FLEETPROF_JOB=sim\0FLEETPROF_NSYS_SESSION=sim-1\0"s);  // nsys launch
  Process(101, "FLEETPROF_JOB=sim\0FLEETPROF_NSYS_SESSION=sim-1\0"s);  // the program it runs
  Process(200, "FLEETPROF_JOB=jax\0FLEETPROF_NSYS_SESSION=jax.2\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s);
  Process(300, "FLEETPROF_NSYS_SESSION=no-job\0"s);
  Process(400, "FLEETPROF_JOB=bad\0FLEETPROF_NSYS_SESSION=--output=/etc/passwd\0"s);
  Process(401, "FLEETPROF_JOB=bad\0FLEETPROF_NSYS_SESSION=a b\0"s);
  Process(402, "FLEETPROF_JOB=bad\0FLEETPROF_NSYS_SESSION=.hidden\0"s);
  auto targets = Discover();
  ASSERT_EQ(targets.size(), 3u);
  EXPECT_EQ(targets[0].kind(), v1::Target::nsys);
  EXPECT_EQ(targets[0].job(), "sim");
  EXPECT_EQ(targets[0].pid(), 100);
  EXPECT_EQ(targets[0].address(), "sim-1");
  EXPECT_EQ(targets[0].start_ticks(), 1100u);
  EXPECT_EQ(targets[1].kind(), v1::Target::xprof);
  EXPECT_EQ(targets[1].address(), "127.0.0.1:9012");
  EXPECT_EQ(targets[2].kind(), v1::Target::nsys);
  EXPECT_EQ(targets[2].address(), "jax.2");
  EXPECT_EQ(targets[2].pid(), 200);
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

// Issue 39, finding 6: every scan read every process's whole environment, so 150 processes
// sharing a 5 MiB one cost the root agent a core at --discover_interval_ms=1000. A process is
// read once; a new one under its pid (another start time) or an exec (another command name)
// is read again, and a process gone is forgotten.
TEST_F(TargetDiscoveryTest, AnUnchangedProcessIsReadOnceAndAReplacedOneAgain) {
  using namespace std::string_literals;
  Process(100, "FLEETPROF_JOB=first\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s);
  Process(200, "PATH=/bin\0"s);  // no job: remembered as such, not read again either
  ASSERT_EQ(Discover().at(0).job(), "first");
  EXPECT_EQ(discovery_->environ_reads(), 2);
  Process(100, "FLEETPROF_JOB=second\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s);
  for (int scan = 0; scan < 3; ++scan) EXPECT_EQ(Discover().at(0).job(), "first");
  EXPECT_EQ(discovery_->environ_reads(), 2) << "the same process (pid, start time, command) is not read again";
  Process(100, "FLEETPROF_JOB=second\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s, 0, 5000);
  EXPECT_EQ(Discover().at(0).job(), "second") << "a new process under a reused pid";
  Process(100, "FLEETPROF_JOB=third\0FLEETPROF_XPROF_ADDR=127.0.0.1:9012\0"s, 0, 5000, "python3");
  EXPECT_EQ(Discover().at(0).job(), "third") << "the launcher exec'd the job: its environment is read again";
  EXPECT_EQ(discovery_->environ_reads(), 4);
  fs::remove_all(root_ + "/200");
  Discover();
  EXPECT_EQ(discovery_->cached(), 1u) << "a process gone is forgotten";
}

// A process's environment is its owner's to size: at most its first 256 KiB is read, and a
// variable the bound cuts is not seen at all (never a shortened name or address).
TEST_F(TargetDiscoveryTest, ReadsOnlyTheFirst256KiBOfAnEnvironment) {
  using namespace std::string_literals;
  const auto pad = [](size_t bytes) { return "PAD=" + std::string(bytes - 5, 'x') + '\0'; };
  const std::string job = "FLEETPROF_JOB=j\0"s;
  const std::string addr = "FLEETPROF_XPROF_ADDR=127.0.0.1:9013\0"s;
  Process(100, job + addr + pad(5 << 20));  // early variables, then 5 MiB
  Process(101, pad(300 << 10) + job + addr);
  // The address entry starts 34 bytes before the bound: cut there it would read 127.0.0.1:901.
  Process(102, job + pad(kMaxEnvironBytes - job.size() - 34) + addr);
  const std::vector<v1::Target> targets = Discover();
  ASSERT_EQ(targets.size(), 1u);
  EXPECT_EQ(targets[0].pid(), 100);
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

// Issue 21: a user who started a process naming root's job before it ran held the name, and
// root's processes were then flagged (and their metrics replaced by the squatter's). No user
// can start a process as root, so root's claim moves the name.
TEST(JobOwnersTest, RootsProcessesTakeANameAnotherUidHolds) {
  JobOwners owners(std::chrono::seconds(60));
  EXPECT_TRUE(owners.Claim("rootjob", 1001, 20)) << "the squatter came first";
  EXPECT_TRUE(owners.Claim("rootjob", 0, 21));
  EXPECT_EQ(owners.OwnerOf("rootjob"), 0);
  EXPECT_FALSE(owners.Claim("rootjob", 1001, 20)) << "from now on the squatter's process is flagged";
  EXPECT_TRUE(owners.Claim("rootjob", 0, 22));
  EXPECT_EQ(owners.conflicts(), 1);
}

class JobOwnersFileTest : public ::testing::Test {
 protected:
  void Write(const std::string& text) {
    // A new file renamed over the old one, as a prolog's `sed -i` does: a new inode.
    const std::string next = path_ + ".next";
    std::ofstream(next) << text;
    ASSERT_EQ(::chmod(next.c_str(), 0644), 0);
    ASSERT_EQ(::rename(next.c_str(), path_.c_str()), 0);
  }
  void SetUp() override {
    char pattern[] = "/tmp/fleetprof-owners-XXXXXX";
    dir_ = mkdtemp(pattern);
    path_ = dir_ + "/job_owners";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string dir_;
  std::string path_;
};

// The scheduler's word (--job_owners_file) outranks who came first: a listed job is its uid's
// and root's only, even when another uid's process named it first.
TEST_F(JobOwnersFileTest, AListedJobIsItsUidsWhoeverClaimedItFirst) {
  Write("# written by the Slurm prolog\n1000 4242\n1002   llama 70b pretrain  \n\n");
  JobOwners owners(std::chrono::seconds(60), {}, path_);
  ASSERT_TRUE(owners.LoadAssignments().ok());
  EXPECT_FALSE(owners.Claim("4242", 1001, 30)) << "squatter of a listed Slurm job id";
  EXPECT_TRUE(owners.Claim("4242", 1000, 31));
  EXPECT_TRUE(owners.Claim("4242", 0, 32)) << "root may carry any job";
  EXPECT_TRUE(owners.Claim("llama 70b pretrain", 1002, 33)) << "the name is the rest of the line";
  EXPECT_EQ(owners.OwnerOf("llama 70b pretrain"), 1002);
  EXPECT_TRUE(owners.Claim("free", 1001, 34)) << "an unlisted name: the first claimer's";
  // The prolog of the next job: the file changes, and a claim a second later sees it.
  EXPECT_TRUE(owners.Claim("4243", 1001, 35)) << "not listed yet: the first claimer's";
  Write("1000 4242\n1003 4243\n");
  std::this_thread::sleep_for(std::chrono::milliseconds(1100));
  EXPECT_FALSE(owners.Claim("4243", 1001, 35)) << "listed now: the squatter loses it";
  EXPECT_TRUE(owners.Claim("4243", 1003, 36));
  EXPECT_TRUE(owners.Claim("llama 70b pretrain", 1001, 37)) << "no longer listed";
}

TEST_F(JobOwnersFileTest, AFileThatIsWrongKeepsTheAssignmentsInForce) {
  Write("1000 4242\n");
  JobOwners owners(std::chrono::seconds(60), {}, path_);
  ASSERT_TRUE(owners.LoadAssignments().ok());
  for (const auto& [text, error] : std::vector<std::pair<std::string, std::string>>{
           {"1000 4242\n1001 4242\n", "line 2: job '4242' is already given to a uid on line 1"},
           {"alice 4242\n", "line 1: expected \"UID JOB\" with a numeric uid"},
           {"-1 4242\n", "numeric uid"},
           {"1000\n", "numeric uid"},
           {"1000 unassigned\n", "not \"unassigned\""},
           {"1000 bad\x01name\n", "printable UTF-8"}}) {
    Write(text);
    absl::Status loaded = owners.LoadAssignments();
    EXPECT_NE(loaded.message().find(error), std::string::npos) << text << ": " << loaded;
    EXPECT_EQ(owners.OwnerOf("4242"), 1000) << "the assignments read before stay: " << text;
  }
  // Whoever may write the file could give themselves any job: it is the operator's alone.
  Write("1001 4242\n");
  ASSERT_EQ(::chmod(path_.c_str(), 0666), 0);
  absl::Status writable = owners.LoadAssignments();
  EXPECT_NE(writable.message().find("writable by its group or others (mode 0666)"), std::string::npos) << writable;
  EXPECT_EQ(owners.OwnerOf("4242"), 1000);
  if (::geteuid() == 0) {
    ASSERT_EQ(::chmod(path_.c_str(), 0644), 0);
    ASSERT_EQ(::chown(path_.c_str(), 1001, 1001), 0);
    absl::Status foreign = owners.LoadAssignments();
    EXPECT_NE(foreign.message().find("belongs to uid 1001"), std::string::npos) << foreign;
  }
  // A FIFO is refused at once, never waited on.
  ASSERT_EQ(::unlink(path_.c_str()), 0);
  ASSERT_EQ(::mkfifo(path_.c_str(), 0600), 0);
  absl::Status fifo = owners.LoadAssignments();
  EXPECT_NE(fifo.message().find("is not a regular file"), std::string::npos) << fifo;
  EXPECT_EQ(owners.OwnerOf("4242"), 1000);
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
