#include "collectors/trace_dir_watcher.h"

#include <sys/stat.h>

#include <chrono>
#include <filesystem>
#include <fstream>

#include "collectors/job_owners.h"
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

TEST_F(TraceDirWatcherTest, HandsOutSettledTraceFilesOnceWithTheirFolder) {
  Write("llama/a.pt.trace.json", "{}");
  Write("b.xplane.pb", "x");
  Write("llama/c.json.tmp", "{}");
  Write("llama/notes.txt", "x");
  TraceDirWatcher watcher({dir_}, 1000);
  EXPECT_TRUE(watcher.Scan(Later(5)).empty()) << "first sight: not yet known to be stable";
  auto files = watcher.Scan(Later(5));
  ASSERT_EQ(files.size(), 2u);
  std::map<std::string, std::string> folder;
  for (const auto& f : files) folder[fs::path(f.path).filename()] = f.folder;
  EXPECT_EQ(folder["a.pt.trace.json"], "llama");
  EXPECT_EQ(folder["b.xplane.pb"], "");
  EXPECT_TRUE(watcher.Scan(Later(6)).empty()) << "each file once";
}

// Issue 41: Nsight Systems' SQLite exports go up as they are, its reports to be exported by
// the agent's nsys first; a SQLite journal or WAL beside an export being written does not.
TEST_F(TraceDirWatcherTest, NsightSystemsExportsAndReportsAreTraceFiles) {
  for (const char* name : {"run.sqlite", "run.sqlite.gz", "run.nsys-rep", "llama/profile_1.nsys-rep"}) {
    EXPECT_TRUE(IsTraceFileName(fs::path(name).filename())) << name;
  }
  for (const char* name : {"run.sqlite-journal", "run.sqlite-wal", "run.nsys-rep.tmp", ".run.sqlite", "run.qdstrm",
                           "run.sqlite.tmp"}) {
    EXPECT_FALSE(IsTraceFileName(name)) << name;
  }
  Write("llama/run.nsys-rep", "x");
  Write("llama/run.sqlite", "x");
  Write("llama/run.sqlite-journal", "x");
  TraceDirWatcher watcher({dir_}, 1000);
  watcher.Scan(Later(5));
  EXPECT_EQ(watcher.Scan(Later(5)).size(), 2u);
}

TEST_F(TraceDirWatcherTest, WaitsForAFileStillBeingWritten) {
  Write("x.json", "{");
  TraceDirWatcher watcher({dir_}, 60'000);
  watcher.Scan(Later(0));
  EXPECT_TRUE(watcher.Scan(Later(0)).empty()) << "modified just now";
  EXPECT_EQ(watcher.Scan(Later(120)).size(), 1u);
}

// Issue 39, finding 4: a folder or file name with a newline forged lines of the agent's log
// (and could have forged records of its upload journal). Such a file is never handed out.
TEST_F(TraceDirWatcherTest, NamesThatAreNotPrintableAreNeverHandedOut) {
  Write("job\nFAKE LOG LINE/a.json", "{}");
  Write("ok/b\x1b[31m.json", "{}");
  Write("ok/c.json", "{}");
  TraceDirWatcher watcher({dir_}, 1000);
  watcher.Scan(Later(5));
  auto files = watcher.Scan(Later(5));
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].relative, "ok/c.json");
}

// Issue 39, finding 4: whoever may write a watched folder made <dir>/prodjob2/x.json and it was
// filed as job prodjob2. A folder names the file's job only when the file's owner may use it.
TEST_F(TraceDirWatcherTest, AFoldersJobIsTheFilesOnlyWhenItsOwnerMayUseIt) {
  const std::string owners_file = dir_ + "/job_owners";
  std::ofstream(owners_file) << "1002 prodjob2\n";
  ASSERT_EQ(::chmod(owners_file.c_str(), 0644), 0);
  JobOwners owners(std::chrono::seconds(60), {}, owners_file);
  ASSERT_TRUE(owners.LoadAssignments().ok());
  const auto in = [&](const std::string& folder) { return TraceFile{"p", dir_, folder + "/x.json", folder, 1, 1}; };
  const auto job_of = [&](const std::string& folder, int64_t uid) { return JobOfTraceFile(in(folder), "", uid, owners); };

  EXPECT_EQ(job_of("prodjob2", 1002).job, "prodjob2") << "its uid";
  EXPECT_EQ(job_of("prodjob2", 0).job, "prodjob2") << "root may use any job";
  const TraceFileJob squatted = job_of("prodjob2", 1001);
  EXPECT_EQ(squatted.job, "unassigned");
  EXPECT_EQ(squatted.claimed_job, "prodjob2") << "the claim is kept as a label, never as the job";
  EXPECT_EQ(job_of("open-job", 1001).job, "open-job") << "an unlisted job is open to any uid";
  EXPECT_EQ(job_of("open-job", 1001).claimed_job, "");
  EXPECT_EQ(job_of("prodjob2", -1).job, "unassigned") << "an owner we could not tell";
  EXPECT_EQ(job_of(std::string(254, 'j'), 1001).claimed_job, std::string(254, 'j')) << "too long for a job name";
  EXPECT_EQ(JobOfTraceFile(in(""), "", 1001, owners).job, "unassigned") << "directly in the watched folder";
  EXPECT_EQ(JobOfTraceFile(in("prodjob2"), "fixed", 1001, owners).job, "fixed") << "--job: the operator's word";
}

TEST_F(TraceDirWatcherTest, JournalRemembersUploadsAcrossRestarts) {
  TraceFile file{dir_ + "/t.json", dir_, "t.json", "", 10, 99};
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
