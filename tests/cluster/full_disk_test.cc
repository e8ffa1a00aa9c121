// A replica's object cache on a disk that is really full: a small tmpfs mounted in a mount
// namespace of this test's own (root only; under CI=true not being able to is a failure), filled
// to the last byte. RocksDB aborts on some writes to a full disk, so the cache must never get
// that far: it is put aside, reads go to the object store and answer right, and it comes back
// when there is room again. The replica restarts on such a disk and answers as before.

#include <fcntl.h>
#include <sched.h>
#include <sys/mount.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "gtest/gtest.h"
#include "storage/cluster/object_cache.h"
#include "storage/cluster/object_client.h"
#include "tests/cluster/cluster_engines.h"
#include "tests/e2e/process_runner.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

// Why this process cannot mount a tmpfs of its own ("" when it can): set by main() before any
// thread starts, since a mount namespace entered later would hold only the calling thread.
std::string& NamespaceProblem() {
  static std::string problem;
  return problem;
}

// Mounts a tmpfs of `mib` MiB on `dir` (created), in this process's own mount namespace.
bool MountTmpfs(const std::string& dir, int mib) {
  std::filesystem::create_directories(dir);
  const std::string size = absl::StrCat("size=", mib, "m");
  if (mount("fleetprof-test", dir.c_str(), "tmpfs", 0, size.c_str()) != 0) {
    ADD_FAILURE() << "mount tmpfs on " << dir << ": " << std::strerror(errno);
    return false;
  }
  return true;
}

// Writes zeros to `path` until the disk says it is full; the bytes written.
int64_t FillDisk(const std::string& path) {
  const int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return -1;
  const std::string block(64 << 10, '\0');
  int64_t written = 0;
  for (;;) {
    const ssize_t n = write(fd, block.data(), block.size());
    if (n <= 0) break;
    written += n;
  }
  // The last bytes, one at a time, so that nothing at all is left.
  while (write(fd, block.data(), 1) == 1) ++written;
  close(fd);
  return written;
}

int64_t FreeBytes(const std::string& dir) { return static_cast<int64_t>(std::filesystem::space(dir).available); }

class FullDiskTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE(NamespaceProblem().empty(), "a mount namespace of the test's own: " << NamespaceProblem());
    root_ = MakeTempDir();
  }
  void TearDown() override {
    if (root_.empty()) return;
    Unmount();
    std::filesystem::remove_all(root_);
  }
  void Unmount() {
    for (const std::string& dir : mounted_) umount2(dir.c_str(), MNT_DETACH);
    mounted_.clear();
  }
  std::string Mount(const std::string& dir, int mib) {
    if (MountTmpfs(dir, mib)) mounted_.push_back(dir);
    return dir;
  }

  std::string root_;
  std::vector<std::string> mounted_;
};

TEST_F(FullDiskTest, TheCacheOnAFullDiskIsPutAsideAndComesBackWhenThereIsRoom) {
  const std::string disk = Mount(root_ + "/disk", 8);
  ASSERT_GT(FillDisk(disk + "/filler"), 0);
  ASSERT_EQ(FreeBytes(disk), 0);
  auto store = cluster::OpenObjectStore("file://" + root_ + "/store", cluster::S3Settings());
  ASSERT_TRUE(store.ok()) << store.status();
  ASSERT_TRUE((*store)->Put("summaries/p", "the summary").ok());

  SimulatedClock clock;
  std::vector<bool> states;
  cluster::ObjectCacheOptions options;
  options.dir = disk + "/object-cache";
  options.max_bytes = 16 << 20;  // memtables of 1 MiB: 3 MiB of room needed
  options.prefixes = {"summaries/"};
  options.clock = &clock;
  options.on_state = [&](bool working) { states.push_back(working); };
  int hits = 0;
  options.on_lookup = [&](bool hit) { hits += hit ? 1 : 0; };
  auto cached = cluster::NewCachedObjectClient(*std::move(store), options);
  ASSERT_TRUE(cached.ok()) << cached.status();
  auto* usage = dynamic_cast<cluster::ObjectCacheUsage*>(cached->get());
  EXPECT_EQ(states, std::vector<bool>{false});
  EXPECT_NE(usage->Problem().find("0 MiB free"), std::string::npos) << usage->Problem();
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*(*cached)->Get("summaries/p"), "the summary");
  EXPECT_EQ(hits, 0);

  std::filesystem::remove(disk + "/filler");
  clock.Advance(int64_t{31} * 1'000'000'000);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*(*cached)->Get("summaries/p"), "the summary");
  EXPECT_EQ(states, (std::vector<bool>{false, true}));
  EXPECT_EQ(hits, 2) << "opened again on the next read, then kept it";
  EXPECT_EQ(usage->Problem(), "");

  // The disk fills again while the cache works: put aside before RocksDB writes to it.
  ASSERT_GT(FillDisk(disk + "/filler"), 0);
  clock.Advance(int64_t{2} * 1'000'000'000);
  for (int i = 0; i < 20; ++i) {
    const std::string key = absl::StrCat("summaries/q", i);
    ASSERT_TRUE((*cached)->Put(key, std::string(100 << 10, static_cast<char>('a' + i))).ok());
    EXPECT_EQ((*cached)->Get(key)->size(), size_t{100} << 10);
  }
  EXPECT_EQ(states, (std::vector<bool>{false, true, false}));
  EXPECT_EQ(*(*cached)->Get("summaries/p"), "the summary");
}

TEST_F(FullDiskTest, AReplicaRestartsOnAFullCacheDiskAndAnswersRight) {
  FLEETPROF_REQUIRE_CLUSTER_ENGINES();
  EtcdCluster etcd;
  ASSERT_TRUE(etcd.Start(1)) << etcd.Log(0);
  S3rver s3;
  ASSERT_TRUE(s3.Start());
  const std::string credentials = s3.root() + "/credentials";
  std::ofstream(credentials) << "[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n";
  const std::vector<std::string> flags = {"--object_store=s3://" + s3.bucket() + "/cluster", "--s3_endpoint=" + s3.endpoint(),
                                          "--s3_credentials_file=" + credentials, "--etcd_endpoints=" + etcd.Endpoints(),
                                          "--etcd_prefix=/cluster/"};
  const std::string trace = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);

  TestCluster replica;
  ASSERT_TRUE(replica.StartServer("127.0.0.1:0", flags)) << replica.ServerLog();
  CommandResult uploaded = replica.Cli({"upload", trace, "--job", "resnet", "--json"});
  ASSERT_EQ(uploaded.exit_code, 0) << uploaded.err;
  const std::string id = JsonStringField(uploaded.out, "profile_id");
  auto query = [&] {
    CommandResult kernels = replica.Cli({"kernels", id, "--json"});
    EXPECT_EQ(kernels.exit_code, 0) << kernels.err;
    CommandResult window = replica.Cli({"trace", id, "--json"});
    EXPECT_EQ(window.exit_code, 0) << window.err;
    return kernels.out + window.out;
  };
  const std::string before = query();
  ASSERT_EQ(replica.StopServer(), 0);

  const std::string cache = Mount(replica.root() + "/server/object-cache", 8);
  ASSERT_GT(FillDisk(cache + "/filler"), 0);
  ASSERT_TRUE(replica.StartServer("127.0.0.1:0", flags)) << replica.ServerLog();
  EXPECT_EQ(query(), before);
  const std::string health = HttpGet(replica.http_addr(), "/healthz");
  EXPECT_TRUE(health.starts_with("degraded\n")) << health;
  EXPECT_NE(health.find("object cache"), std::string::npos) << health;
  EXPECT_NE(HttpGet(replica.http_addr(), "/metrics").find("fleetprof_server_object_cache_working 0"), std::string::npos);
  EXPECT_EQ(replica.StopServer(), 0) << replica.ServerLog();
  Unmount();  // before the replica's folder goes
}

}  // namespace
}  // namespace fleetprof::testing

int main(int argc, char** argv) {
  ::testing::InitGoogleTest(&argc, argv);
  // Before any thread: the namespace, and mounts private to it (none reaches the host's).
  if (unshare(CLONE_NEWNS) != 0) {
    fleetprof::testing::NamespaceProblem() = absl::StrCat("unshare(CLONE_NEWNS): ", std::strerror(errno));
  } else if (mount("none", "/", nullptr, MS_REC | MS_PRIVATE, nullptr) != 0) {
    fleetprof::testing::NamespaceProblem() = absl::StrCat("mount --make-rprivate /: ", std::strerror(errno));
  }
  return RUN_ALL_TESTS();
}
