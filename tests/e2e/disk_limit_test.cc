// --max_disk_mb as an operator checks it: `du -sk` of the whole --data_dir (RocksDB's tables,
// blob files, write-ahead logs, LOG and MANIFEST, uploads in progress) at most the limit once
// retention has run after the last upload, through the real server and CLI. The scenario of
// issue 43: 50 labelled uploads of the A100 NCCL trace (about 1 MiB on disk each) under 40 MiB.

#include <unistd.h>

#include <algorithm>
#include <iostream>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

constexpr int64_t kLimitMb = 40;
constexpr int64_t kLimitKb = kLimitMb << 10;
constexpr int kUploads = 50;
constexpr const char* kDu = "/usr/bin/du";

// `du -sk DIR`: KiB of disk the folder takes, preallocated room included; -1 when du fails.
int64_t DuKb(const std::string& dir) {
  CommandResult r = RunCommand({kDu, "-sk", dir});
  if (r.exit_code != 0) return -1;
  return std::stoll(r.out);
}

bool Listed(TestCluster& cluster, const std::string& id) {
  return cluster.Cli({"profiles", "--json", "--limit", "1000"}).out.find(id) != std::string::npos;
}

TEST(RetentionDiskLimitTest, DuOfTheWholeDataDirEndsWithinMaxDiskMbAfterFiftyUploads) {
  const std::string trace = CorpusPath("kineto/a100_nccl_rank0.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  FLEETPROF_REQUIRE_PATH(kDu);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer("127.0.0.1:0", {"--max_disk_mb=" + std::to_string(kLimitMb)}))
      << cluster.ServerLog();
  const std::string dir = cluster.root() + "/server";

  std::vector<std::string> ids;
  int64_t peak_kb = 0;
  for (int i = 1; i <= kUploads; ++i) {
    CommandResult r = cluster.Cli({"upload", trace, "--job", "nccl", "--label", "i=" + std::to_string(i), "--json"});
    ASSERT_EQ(r.exit_code, 0) << "upload " << i << ": " << r.err << cluster.ServerLog();
    ids.push_back(JsonStringField(r.out, "profile_id"));
    ASSERT_FALSE(ids.back().empty()) << r.out;
    peak_kb = std::max(peak_kb, DuKb(dir));
  }
  // Retention runs after every commit; 60 s is for a loaded machine (it takes about 1 s here).
  int64_t after_kb = -1;
  const bool under = Eventually(60, [&] { return (after_kb = DuKb(dir)) >= 0 && after_kb <= kLimitKb; });
  ASSERT_TRUE(under) << "du -sk " << dir << ": " << after_kb << " KiB, over --max_disk_mb=" << kLimitMb << "\n"
                     << RunCommand({"/usr/bin/ls", "-ls", dir}).out << cluster.ServerLog();
  // Where the issue measures it: 15 s after the last upload, and not a dip on the way.
  sleep(15);
  const int64_t settled_kb = DuKb(dir);
  EXPECT_LE(settled_kb, kLimitKb) << RunCommand({"/usr/bin/ls", "-ls", dir}).out;

  // The newest went last: what is left is the newest uploads, each whole and labelled.
  std::vector<bool> kept;
  for (const std::string& id : ids) kept.push_back(Listed(cluster, id));
  ASSERT_TRUE(kept.back()) << "the newest profile was deleted";
  ASSERT_FALSE(kept.front()) << "nothing was deleted: the limit is not enforced";
  const size_t first_kept = std::find(kept.begin(), kept.end(), true) - kept.begin();
  for (size_t i = first_kept; i < kept.size(); ++i) EXPECT_TRUE(kept[i]) << "profile " << i << " deleted out of order";
  const int64_t kept_count = static_cast<int64_t>(kept.size() - first_kept);
  CommandResult newest = cluster.Cli({"profiles", "--label", "i=" + std::to_string(kUploads), "--json"});
  EXPECT_NE(newest.out.find(ids.back()), std::string::npos) << newest.out;
  CommandResult ops = cluster.Cli({"ops", ids[first_kept], "--json"});
  EXPECT_EQ(ops.exit_code, 0) << ops.err;

  // Not many more went than the limit asked for. Retention measures once flushes and
  // compactions end, but on a loaded machine (CI runs this beside other tests) one may still be
  // giving space back when it measures, and it deletes one more: a fresh-clone CI run kept 37
  // profiles in 38,704 KiB. Four more of the same size would not fit.
  const int64_t per_profile_kb = settled_kb / kept_count;
  EXPECT_GT(settled_kb + 4 * per_profile_kb, kLimitKb)
      << kept_count << " profiles kept in " << settled_kb << " KiB: retention deleted more than the limit needs";
  std::cout << "du -sk of --data_dir: at most " << peak_kb << " KiB right after an upload, " << settled_kb
            << " KiB 15 s after the last (--max_disk_mb=" << kLimitMb << ": " << kLimitKb << " KiB); " << kept_count
            << " of " << kUploads << " profiles kept\n";
}

}  // namespace
}  // namespace fleetprof::testing
