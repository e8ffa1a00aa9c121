// Nsight Systems files in trace folders (agent/trace_uploader.h): a *.sqlite export goes up as
// it is; a *.nsys-rep report goes up as the SQLite export the node's nsys makes of it (here the
// stand-in, tests/agent/nsys_standin.py: not Nsight Systems), run as the report's owner, with
// nothing left behind; without --nsys the report is refused once with the reason, journaled so
// no later scan (or restart) tries it again.

#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>
#include <vector>

#include "agent/trace_uploader.h"
#include "collectors/command_runner.h"
#include "common/safe_paths.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "tests/agent/nsys_standin.h"
#include "tests/test_support.h"

namespace fleetprof {
namespace {

namespace fs = std::filesystem;
using ::fleetprof::testing::InstallNsysStandin;

constexpr char kExport[] = "nsys/saxpy_a100.sqlite.gz";

struct Sent {
  std::string file_name;
  std::string job;
  std::string bytes;
};

class TraceUploaderNsysTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH("/usr/bin/python3");
    FLEETPROF_REQUIRE_PATH(testing::CorpusPath(kExport));
    dir_ = (fs::path(::testing::TempDir()) / "nsys-").lexically_normal().string() + "uploads-" + std::to_string(::getpid()) + "-" +
           ::testing::UnitTest::GetInstance()->current_test_info()->name();
    fs::remove_all(dir_);
    fs::create_directories(dir_ + "/traces/train");
    ::chmod((dir_ + "/traces").c_str(), 0755);
    ::chmod((dir_ + "/traces/train").c_str(), 0755);  // no other user's: root's own files go up too
    drop_ = dir_ + "/drop";
    ASSERT_TRUE(EnsureSharedDropFolder(drop_).ok());
    absl::StatusOr<CommandOutcome> gunzip = RunCommand(
        {.argv = {"/bin/sh", "-c", "gzip -dc " + testing::CorpusPath(kExport) + " > " + dir_ + "/expected.sqlite"}});
    ASSERT_TRUE(gunzip.ok() && gunzip->ok());
    expected_ = testing::ReadSmallFile(dir_ + "/expected.sqlite");
  }
  void TearDown() override { fs::remove_all(dir_); }

  TraceUploaderOptions Options(NsysCli nsys) const {
    TraceUploaderOptions options;
    options.dirs = {dir_ + "/traces"};
    options.job_owners = std::make_shared<JobOwners>();
    options.node = "n1";
    options.journal_path = dir_ + "/uploaded.journal";
    options.scan_interval_ms = 50;
    options.settle_ms = 0;
    options.nsys = std::move(nsys);
    options.export_dir = drop_;
    return options;
  }
  // Runs an uploader until `done` holds (or 30 s), then stops it.
  void RunUntil(TraceUploaderOptions options, const std::function<bool(TraceUploader&)>& done) {
    Uploader upload = [this](const UploadOptions& o) -> absl::StatusOr<v1::UploadResponse> {
      std::ifstream in(o.path, std::ios::binary);
      std::lock_guard lock(mu_);
      sent_.push_back({o.file_name, o.job, std::string(std::istreambuf_iterator<char>(in), {})});
      v1::UploadResponse response;
      response.set_profile_id("p" + std::to_string(sent_.size()));
      return response;
    };
    TraceUploader uploader(std::move(options), upload, registry_);
    ASSERT_TRUE(uploader.Start().ok());
    for (int i = 0; i < 600 && !done(uploader); ++i) std::this_thread::sleep_for(std::chrono::milliseconds(50));
    uploader.Stop();
  }
  std::vector<Sent> sent() {
    std::lock_guard lock(mu_);
    return sent_;
  }
  void Drop(const std::string& name, const std::string& bytes, uid_t owner = 0) {
    const std::string path = dir_ + "/traces/train/" + name;
    std::ofstream(path + ".tmp", std::ios::binary) << bytes;
    ::chown((path + ".tmp").c_str(), owner, owner);
    fs::rename(path + ".tmp", path);
  }

  std::string dir_;
  std::string drop_;
  std::string expected_;
  prometheus::Registry registry_;
  std::mutex mu_;
  std::vector<Sent> sent_;
};

TEST_F(TraceUploaderNsysTest, ASqliteExportIsUploadedAsItIs) {
  Drop("step1.sqlite", expected_);
  RunUntil(Options(NsysCli()), [](TraceUploader& u) { return u.uploaded() == 1; });
  ASSERT_EQ(sent().size(), 1u);
  EXPECT_EQ(sent()[0].file_name, "step1.sqlite");
  EXPECT_EQ(sent()[0].job, "train");
  EXPECT_TRUE(sent()[0].bytes == expected_);
}

TEST_F(TraceUploaderNsysTest, AReportIsExportedAsItsOwnerUploadedAndTheExportRemoved) {
  FLEETPROF_REQUIRE(::geteuid() == 0, "root, to own the report as uid 65534");
  const testing::NsysStandin standin = InstallNsysStandin(dir_ + "/nsys", testing::CorpusPath(kExport));
  Drop("run1.nsys-rep", expected_, 65534);  // the stand-in's "report" is the export itself
  RunUntil(Options(NsysCli(standin.program, RunCommand)), [](TraceUploader& u) { return u.uploaded() == 1; });
  ASSERT_EQ(sent().size(), 1u) << standin.Log();
  EXPECT_EQ(sent()[0].file_name, "run1.sqlite");
  EXPECT_TRUE(sent()[0].bytes == expected_);
  const std::string log = standin.Log();
  EXPECT_NE(log.find(R"("argv": ["export", "--type", "sqlite", "--output", ")" + drop_ + "/nsys-uid65534-"),
            std::string::npos)
      << log;
  EXPECT_NE(log.find(R"("uid": 65534, "gid": 65534, "groups": [])"), std::string::npos) << log;
  EXPECT_TRUE(fs::is_empty(drop_)) << "the export and its folder are gone";
  EXPECT_TRUE(fs::exists(dir_ + "/traces/train/run1.nsys-rep")) << "the report is the user's: kept";
}

TEST_F(TraceUploaderNsysTest, WithoutNsysAReportIsRefusedOnceWithTheReason) {
  Drop("run2.nsys-rep", "not read");
  RunUntil(Options(NsysCli()), [](TraceUploader& u) { return u.failed() == 1; });
  std::this_thread::sleep_for(std::chrono::milliseconds(300));  // more scans: nothing more
  EXPECT_TRUE(sent().empty());
  const std::string journal = testing::ReadSmallFile(dir_ + "/uploaded.journal");
  EXPECT_NE(journal.find("refused\t8\t"), std::string::npos) << journal;
  EXPECT_NE(std::string(kNoNsysReason).find("--nsys=PATH"), std::string::npos);
  EXPECT_NE(std::string(kNoNsysReason).find("nsys export --type sqlite"), std::string::npos);
  bool counted = false;
  for (const auto& family : registry_.Collect()) {
    if (family.name != "fleetprof_agent_trace_uploads_total") continue;
    for (const auto& metric : family.metric) {
      for (const auto& label : metric.label) {
        if (label.value == "refused") counted = metric.counter.value == 1;
      }
    }
  }
  EXPECT_TRUE(counted) << "fleetprof_agent_trace_uploads_total{result=\"refused\"} 1";

  // A restarted agent knows it from the journal.
  RunUntil(Options(NsysCli()), [start = std::chrono::steady_clock::now()](TraceUploader&) {
    return std::chrono::steady_clock::now() - start > std::chrono::milliseconds(500);
  });
  EXPECT_EQ(testing::ReadSmallFile(dir_ + "/uploaded.journal"), journal);
}

}  // namespace
}  // namespace fleetprof
