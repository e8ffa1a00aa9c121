#include "collectors/trace_dir_watcher.h"

#include <filesystem>
#include <fstream>

#include "collectors/upload_journal.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

namespace fs = std::filesystem;

class TraceDirWatcherTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fleetprof-watch-XXXXXX";
    dir_ = mkdtemp(pattern);
  }
  void TearDown() override { fs::remove_all(dir_); }
  void Write(const std::string& relative, const std::string& text) {
    fs::create_directories(fs::path(dir_ + "/" + relative).parent_path());
    std::ofstream(dir_ + "/" + relative) << text;
  }
  int64_t Later(int64_t seconds) {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count() +
           seconds * 1'000'000'000;
  }
  std::string dir_;
};

TEST_F(TraceDirWatcherTest, HandsOutSettledTraceFilesOnceWithJobFromFolder) {
  Write("llama/a.pt.trace.json", "{}");
  Write("b.xplane.pb", "x");
  Write("llama/c.json.tmp", "{}");
  Write("llama/notes.txt", "x");
  TraceDirWatcher watcher({dir_}, "", 1000);
  EXPECT_TRUE(watcher.Scan(Later(5)).empty()) << "first sight: not yet known to be stable";
  auto files = watcher.Scan(Later(5));
  ASSERT_EQ(files.size(), 2u);
  std::map<std::string, std::string> job;
  for (const auto& f : files) job[fs::path(f.path).filename()] = f.job;
  EXPECT_EQ(job["a.pt.trace.json"], "llama");
  EXPECT_EQ(job["b.xplane.pb"], "unassigned");
  EXPECT_TRUE(watcher.Scan(Later(6)).empty()) << "each file once";
}

TEST_F(TraceDirWatcherTest, WaitsForAFileStillBeingWritten) {
  Write("x.json", "{");
  TraceDirWatcher watcher({dir_}, "fixed", 60'000);
  watcher.Scan(Later(0));
  EXPECT_TRUE(watcher.Scan(Later(0)).empty()) << "modified just now";
  auto files = watcher.Scan(Later(120));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].job, "fixed");
}

TEST_F(TraceDirWatcherTest, JournalRemembersUploadsAcrossRestarts) {
  TraceFile file{dir_ + "/t.json", dir_, "t.json", "j", 10, 99};
  {
    UploadJournal journal;
    ASSERT_TRUE(journal.Open(dir_ + "/journal").ok());
    EXPECT_FALSE(journal.Contains(file));
    ASSERT_TRUE(journal.Record(file, "p1").ok());
  }
  UploadJournal reopened;
  ASSERT_TRUE(reopened.Open(dir_ + "/journal").ok());
  EXPECT_TRUE(reopened.Contains(file));
  TraceFile changed = file;
  changed.size = 11;
  EXPECT_FALSE(reopened.Contains(changed)) << "a rewritten file is a new trace";
  EXPECT_EQ(UploadIdFor("s", "n", file), UploadIdFor("s", "n", file));
  EXPECT_NE(UploadIdFor("s", "n", file), UploadIdFor("s", "m", file));
  EXPECT_NE(UploadIdFor("s", "n", file), UploadIdFor("t", "n", file)) << "the secret keys the id";
  auto secret = LoadOrCreateUploadSecret(dir_ + "/secret");
  ASSERT_TRUE(secret.ok()) << secret.status();
  EXPECT_EQ(secret->size(), 64u);
  EXPECT_EQ(*LoadOrCreateUploadSecret(dir_ + "/secret"), *secret) << "kept across restarts";
}

}  // namespace
}  // namespace fleetprof
