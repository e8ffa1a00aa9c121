// Retention through the real server: over --max_disk_mb the oldest profiles go and the
// database folder ends under the limit (measured with the file sizes, as du would); profiles
// past their job's retention go, others stay; old captures and departed agents expire.

#include <filesystem>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;

int64_t FolderBytes(const std::string& dir) {
  int64_t total = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec); !ec && it != fs::recursive_directory_iterator();
       it.increment(ec)) {
    std::error_code e;
    if (it->is_regular_file(e)) total += static_cast<int64_t>(it->file_size(e));
  }
  return total;
}

std::string Upload(TestCluster& cluster, const std::string& file, const std::string& job) {
  CommandResult r = cluster.Cli({"upload", file, "--job", job, "--json"});
  EXPECT_EQ(r.exit_code, 0) << r.err;
  return JsonStringField(r.out, "profile_id");
}

bool Listed(TestCluster& cluster, const std::string& id) {
  return cluster.Cli({"profiles", "--json", "--limit", "1000"}).out.find(id) != std::string::npos;
}

TEST(RetentionTest, OverMaxDiskTheOldestProfilesGoAndTheFolderStaysUnderTheLimit) {
  const std::string trace = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  constexpr int64_t kLimitMb = 12;
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer("127.0.0.1:0", {"--max_disk_mb=" + std::to_string(kLimitMb)}))
      << cluster.ServerLog();
  const std::string dir = cluster.root() + "/server";
  std::vector<std::string> ids;
  int64_t largest = 0;
  for (int i = 0; i < 16; ++i) {
    ids.push_back(Upload(cluster, trace, "big"));
    ASSERT_FALSE(ids.back().empty());
    // Retention runs after each commit; the folder must come back under the limit.
    ASSERT_TRUE(Eventually(30, [&] { return FolderBytes(dir) <= (kLimitMb << 20); }))
        << "upload " << i << ": " << FolderBytes(dir) << " bytes\n" << cluster.ServerLog();
    largest = std::max(largest, FolderBytes(dir));
  }
  std::cout << "database folder at most " << largest << " bytes after each upload (limit " << (kLimitMb << 20) << ")\n";
  // The oldest went first: what is left is the newest uploads, each whole.
  std::vector<bool> kept;
  for (const std::string& id : ids) kept.push_back(Listed(cluster, id));
  ASSERT_TRUE(kept.back());
  ASSERT_FALSE(kept.front()) << "nothing was deleted: the limit is not enforced";
  const size_t first_kept = std::find(kept.begin(), kept.end(), true) - kept.begin();
  std::cout << "the " << first_kept << " oldest of " << ids.size() << " uploads were deleted\n";
  for (size_t i = first_kept; i < kept.size(); ++i) {
    EXPECT_TRUE(kept[i]) << "profile " << i << " deleted while an older one stays";
    CommandResult ops = cluster.Cli({"ops", ids[i], "--json"});
    EXPECT_EQ(ops.exit_code, 0) << ops.err;
    CommandResult window = cluster.Cli({"trace", ids[i], "--json"});
    EXPECT_EQ(window.exit_code, 0) << window.err;
  }
  for (size_t i = 0; i < first_kept; ++i) {
    CommandResult gone = cluster.Cli({"ops", ids[i]});
    EXPECT_NE(gone.err.find("not found"), std::string::npos) << gone.err;
  }
}

TEST(RetentionTest, ProfilesCapturesAndAgentsPastTheirAgeGo) {
  const std::string trace = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  TestCluster cluster;
  // 0.00005 days = 4.32 s; job "keep" is kept whatever its age.
  ASSERT_TRUE(cluster.StartServer("127.0.0.1:0", {"--retention_days=0.00005", "--job_retention_days=keep=0",
                                                  "--capture_retention_days=0.00005", "--agent_expiry_days=0.00005",
                                                  "--retention_check_s=1"}))
      << cluster.ServerLog();
  const std::string old_id = Upload(cluster, trace, "scratch");
  const std::string kept_id = Upload(cluster, trace, "keep");
  ASSERT_GE(cluster.StartAgent({"--node=departing"}), 0);
  ASSERT_TRUE(Eventually(15, [&] { return cluster.Cli({"agents", "--json"}).out.find("departing") != std::string::npos; }));
  cluster.Cli({"capture", "--job", "nobody", "--json"});  // fails at once: no such target
  ASSERT_NE(cluster.Cli({"captures", "--json"}).out.find("capture_id"), std::string::npos);
  cluster.StopAgent(0);

  EXPECT_TRUE(Eventually(30, [&] { return !Listed(cluster, old_id); })) << cluster.ServerLog();
  EXPECT_TRUE(Listed(cluster, kept_id));
  EXPECT_TRUE(Eventually(30, [&] { return cluster.Cli({"captures", "--json"}).out == "{\"captures\":[]}\n"; }))
      << cluster.Cli({"captures", "--json"}).out;
  EXPECT_TRUE(Eventually(30, [&] { return cluster.Cli({"agents", "--json"}).out == "{\"agents\":[]}\n"; }))
      << cluster.Cli({"agents", "--json"}).out;
}

TEST(RetentionTest, BadRetentionFlagsStopTheServerWithTheReason) {
  for (const std::string& flag : {"--retention_days=-1", "--retention_days=soon", "--job_retention_days=train",
                                  "--max_disk_mb=-5", "--retention_check_s=0"}) {
    CommandResult r = RunCommand({BinDir() + "/fleetprof-server", "--grpc_addr=127.0.0.1:0", "--http_addr=127.0.0.1:0",
                                  "--data_dir=/nonexistent-fleetprof-test", flag});
    EXPECT_EQ(r.exit_code, 2) << flag << ": " << r.err;
    EXPECT_NE(r.err.find(flag.substr(2, flag.find('=') - 2)), std::string::npos) << r.err;
  }
}

}  // namespace
}  // namespace fleetprof::testing
