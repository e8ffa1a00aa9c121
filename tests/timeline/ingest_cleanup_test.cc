// An upload that does not become a profile leaves no event blocks behind: truncated or
// corrupt traces, interrupted uploads, and stores written before a crash (deleted at start).

#include <filesystem>
#include <string>
#include <vector>

#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"
#include "server/ingestor.h"
#include "server/server_metrics.h"
#include "storage/profile_store.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/test_support.h"
#include "timeline/timeline_builder.h"

namespace fleetprof {
namespace {

namespace fs = std::filesystem;

class ScriptedStream : public UploadStream {
 public:
  ScriptedStream(v1::UploadMetadata metadata, std::vector<std::string> chunks, bool cancelled = false)
      : cancelled_(cancelled) {
    v1::UploadRequest first;
    *first.mutable_metadata() = std::move(metadata);
    messages_.push_back(first);
    for (std::string& chunk : chunks) {
      v1::UploadRequest m;
      m.set_chunk(std::move(chunk));
      messages_.push_back(std::move(m));
    }
  }
  bool Read(v1::UploadRequest* message) override {
    if (next_ >= messages_.size()) return false;
    *message = messages_[next_++];
    return true;
  }
  bool Cancelled() override { return cancelled_; }

 private:
  std::vector<v1::UploadRequest> messages_;
  size_t next_ = 0;
  bool cancelled_;
};

class IngestCleanupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fleetprof_ingest_cleanup_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto store = ProfileStore::Open(dir_.string());
    ASSERT_TRUE(store.ok()) << store.status();
    store_ = *std::move(store);
    ingestor_ = std::make_unique<Ingestor>(store_.get(), &metrics_, IngestLimits(), nullptr, nullptr);
  }
  void TearDown() override {
    ingestor_.reset();
    store_.reset();
    fs::remove_all(dir_);
  }

  absl::StatusOr<v1::UploadResponse> Upload(const std::string& id, const std::string& bytes, size_t chunk,
                                            int64_t total_bytes, bool cancelled = false) {
    v1::UploadMetadata metadata;
    metadata.set_upload_id(id);
    metadata.set_job("j");
    metadata.set_file_name(id + ".json");
    metadata.set_total_bytes(total_bytes);
    std::vector<std::string> chunks;
    for (size_t at = 0; at < bytes.size(); at += chunk) chunks.push_back(bytes.substr(at, chunk));
    ScriptedStream stream(metadata, chunks, cancelled);
    return ingestor_->Upload(stream, Principal());
  }

  fs::path dir_;
  ServerMetrics metrics_;
  std::unique_ptr<ProfileStore> store_;
  std::unique_ptr<Ingestor> ingestor_;
};

std::string CorpusBytes(const std::string& relative) {
  return fleetprof::testing::ReadSmallFile(fleetprof::testing::CorpusPath(relative));
}

TEST_F(IngestCleanupTest, ACommittedUploadKeepsItsBlocksAndBadOnesLeaveNone) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string gz = CorpusBytes("kineto/a100_alexnet.json.gz");
  const std::string json = analysis::testing::ReadDecompressed(path);

  // Truncated JSON (the end of the file never came, but the client said it was all).
  auto truncated = Upload("truncated", json.substr(0, json.size() * 2 / 3), 64 << 10, 0);
  EXPECT_TRUE(absl::IsInvalidArgument(truncated.status())) << truncated.status();
  EXPECT_EQ(store_->CountTimelineKeys(), 0);
  // Corrupt gzip: bytes flipped in the middle of the stream.
  std::string corrupt = gz;
  for (size_t i = corrupt.size() / 2; i < corrupt.size() / 2 + 64; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  auto damaged = Upload("corrupt", corrupt, 4096, static_cast<int64_t>(corrupt.size()));
  EXPECT_FALSE(damaged.ok());
  EXPECT_EQ(store_->CountTimelineKeys(), 0);
  // Not a trace at all.
  auto not_trace = Upload("nottrace", "hello, this is not a trace", 5, 0);
  EXPECT_FALSE(not_trace.ok());
  EXPECT_EQ(store_->CountTimelineKeys(), 0);
  // Interrupted after every byte arrived (the client went away before the end of the stream):
  // resumable, but not a profile, so no blocks either.
  auto interrupted = Upload("interrupted", gz, 4096, static_cast<int64_t>(gz.size()), /*cancelled=*/true);
  EXPECT_TRUE(absl::IsAborted(interrupted.status())) << interrupted.status();
  EXPECT_EQ(store_->CountTimelineKeys(), 0);
  // Interrupted half way.
  auto half = Upload("half", gz.substr(0, gz.size() / 2), 4096, static_cast<int64_t>(gz.size()));
  EXPECT_TRUE(absl::IsAborted(half.status())) << half.status();
  EXPECT_EQ(store_->CountTimelineKeys(), 0);

  auto good = Upload("good", gz, 4096, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(good.ok()) << good.status();
  const int64_t keys = store_->CountTimelineKeys();
  EXPECT_GT(keys, 2);
  // The resumed upload completes and adds its own profile's blocks.
  auto resumed = Upload("half", gz, 4096, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(store_->CountTimelineKeys(), keys * 2);
  EXPECT_EQ(*store_->DeleteOrphanTimelines(), 0);
  EXPECT_EQ(store_->CountTimelineKeys(), keys * 2);
}

TEST_F(IngestCleanupTest, BlocksOfAProfileNeverCommittedAreDeletedAtStart) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  // What a crash between writing the blocks and committing leaves.
  std::unique_ptr<timeline::TimelineWriter> writer = store_->NewTimelineWriter("00000000deadbeef");
  timeline::TimelineSink sink(writer.get());
  ASSERT_TRUE(analysis::AnalyzeTraceFile(path, &sink).ok());
  writer.reset();
  ASSERT_GT(store_->CountTimelineKeys(), 0);
  auto good = Upload("good", CorpusBytes("kineto/mi250_rocm62.json.gz"), 1 << 20, 0);
  ASSERT_TRUE(good.ok()) << good.status();
  const int64_t with_orphan = store_->CountTimelineKeys();
  EXPECT_EQ(*store_->DeleteOrphanTimelines(), 1);
  EXPECT_EQ(store_->CountTimelineKeys() * 2, with_orphan);
}

TEST_F(IngestCleanupTest, DeletingAProfileRemovesEveryRecordOfIt) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string gz = CorpusBytes("kineto/a100_alexnet.json.gz");
  auto kept = Upload("kept", gz, 4096, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(kept.ok()) << kept.status();
  const int64_t one_profile = store_->CountTimelineKeys();
  auto gone = Upload("gone", gz, 4096, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(gone.ok()) << gone.status();
  const std::string id = gone->profile_id();
  ASSERT_EQ(store_->CountTimelineKeys(), one_profile * 2);

  ASSERT_TRUE(store_->DeleteProfile(id).ok());
  EXPECT_TRUE(absl::IsNotFound(store_->GetProfile(id).status()));
  EXPECT_TRUE(absl::IsNotFound(store_->GetSummary(id).status()));
  EXPECT_EQ(store_->CountTimelineKeys(), one_profile);  // the other profile's blocks stay
  auto upload = store_->GetUpload("gone");
  ASSERT_TRUE(upload.ok());
  EXPECT_FALSE(upload->has_value());
  char byte;
  auto raw = store_->ReadRaw("gone")->Read(&byte, 1);
  ASSERT_TRUE(raw.ok());
  EXPECT_EQ(*raw, 0u);
  auto listed = store_->ListProfiles(v1::ListProfilesRequest());
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->profiles.size(), 1u);
  EXPECT_EQ(listed->profiles[0].profile_id(), kept->profile_id());
  v1::ListProfilesRequest by_job;
  by_job.set_job("j");
  EXPECT_EQ(store_->ListProfiles(by_job)->profiles.size(), 1u);
  EXPECT_TRUE(absl::IsNotFound(store_->DeleteProfile(id)));
  // The upload id is free again: the same file makes a new profile.
  auto again = Upload("gone", gz, 4096, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_FALSE(again->already_existed());
  EXPECT_NE(again->profile_id(), id);
}

TEST_F(IngestCleanupTest, DeletingGivesTheDiskBack) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/a100_nccl_rank0.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string gz = CorpusBytes("kineto/a100_nccl_rank0.json.gz");
  auto stored = Upload("nccl", gz, 1 << 20, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(stored.ok()) << stored.status();
  ASSERT_TRUE(store_->Flush().ok());
  EXPECT_GT(store_->RawDiskBytes(), static_cast<int64_t>(gz.size()) / 2);
  EXPECT_GT(store_->TimelineDiskBytes(), 0);
  ASSERT_TRUE(store_->DeleteProfile(stored->profile_id()).ok());
  EXPECT_EQ(store_->RawDiskBytes(), 0);
  EXPECT_EQ(store_->TimelineDiskBytes(), 0);
}

}  // namespace
}  // namespace fleetprof
