// An upload that does not become a profile leaves no event blocks behind: truncated or
// corrupt traces, interrupted uploads, and stores written before a crash (deleted at start).

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <thread>
#include <string>
#include <vector>

#include "analysis/trace_analyzer.h"
#include "common/gzip_member.h"
#include "common/threads.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "common/clock.h"
#include "prometheus/registry.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/retention.h"
#include "server/ingest/ingestor.h"
#include "server/server_metrics.h"
#include "storage/storage.h"
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

// Sends its metadata, then nothing: Read waits until the server Abort()s the stream, as a
// stalled client's would (gRPC's Read returns false once the call is cancelled).
class StalledStream : public UploadStream {
 public:
  StalledStream(std::string id, std::string peer) : peer_(std::move(peer)) {
    first_.mutable_metadata()->set_upload_id(std::move(id));
    first_.mutable_metadata()->set_file_name("stalled.json");
  }
  bool Read(v1::UploadRequest* message) override {
    std::unique_lock lock(mu_);
    if (!sent_) {
      sent_ = true;
      *message = first_;
      return true;
    }
    aborted_cv_.wait(lock, [this] { return aborted_; });
    return false;
  }
  bool Cancelled() override {
    std::lock_guard lock(mu_);
    return aborted_;
  }
  std::string Peer() override { return peer_; }
  void Abort() override {
    {
      std::lock_guard lock(mu_);
      aborted_ = true;
    }
    aborted_cv_.notify_all();
  }

 private:
  v1::UploadRequest first_;
  std::string peer_;
  std::mutex mu_;
  std::condition_variable aborted_cv_;
  bool sent_ = false;
  bool aborted_ = false;
};

class IngestCleanupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("fleetprof_ingest_cleanup_" + std::to_string(::getpid()) + "_" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    auto store = Storage::Open(dir_.string());
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

  // Sends `members` as the chunks of an upload with chunk_encoding `encoding`.
  absl::StatusOr<v1::UploadResponse> UploadMembers(const std::string& id, std::vector<std::string> members,
                                                   const std::string& encoding = "gzip") {
    v1::UploadMetadata metadata;
    metadata.set_upload_id(id);
    metadata.set_job("j");
    metadata.set_file_name(id + ".json");
    metadata.set_chunk_encoding(encoding);
    ScriptedStream stream(metadata, std::move(members));
    return ingestor_->Upload(stream, Principal());
  }
  std::string Original(const v1::UploadResponse& response) {
    auto source = store_->uploads().ReadOriginal(response.profile().upload_id(), response.profile().size_bytes());
    std::string out(64 << 10, '\0'), all;
    for (;;) {
      auto got = source->Read(out.data(), out.size());
      EXPECT_TRUE(got.ok()) << got.status();
      if (!got.ok() || *got == 0) return all;
      all.append(out, 0, *got);
    }
  }

  fs::path dir_;
  ServerMetrics metrics_;
  std::unique_ptr<Storage> store_;
  std::unique_ptr<Ingestor> ingestor_;
};

std::string CorpusBytes(const std::string& relative);

int ThreadsOfThisProcess() {
  int n = 0;
  for ([[maybe_unused]] const auto& entry : fs::directory_iterator("/proc/self/task")) ++n;
  return n;
}

// Before: nothing bounded uploads at once, and a client that stopped sending pinned its
// upload's threads forever (400 stalled uploads: 1,220 server threads). Now at most
// --max_concurrent_uploads run (--max_uploads_per_peer from one address), the others are told
// to retry, and a stalled one is broken off after --upload_idle_timeout_s, resumable.
TEST_F(IngestCleanupTest, UploadsAtOnceAreBoundedAndStalledOnesAreBrokenOff) {
  IngestLimits limits;
  limits.uploads.max_uploads = 3;
  limits.uploads.max_per_peer = 2;
  limits.uploads.idle_timeout = std::chrono::milliseconds(500);
  ingestor_ = std::make_unique<Ingestor>(store_.get(), &metrics_, limits, nullptr, nullptr);
  const int threads_before = ThreadsOfThisProcess();

  std::vector<std::unique_ptr<StalledStream>> stalled;
  stalled.push_back(std::make_unique<StalledStream>("a1", "ipv4:10.0.0.1"));
  stalled.push_back(std::make_unique<StalledStream>("a2", "ipv4:10.0.0.1"));
  stalled.push_back(std::make_unique<StalledStream>("b1", "ipv4:10.0.0.2"));
  std::vector<absl::StatusOr<v1::UploadResponse>> results(stalled.size(), absl::UnknownError("not run"));
  std::vector<std::thread> clients;
  const auto started = std::chrono::steady_clock::now();
  for (size_t i = 0; i < stalled.size(); ++i) {
    clients.emplace_back([&, i] { results[i] = ingestor_->Upload(*stalled[i], Principal()); });
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(150));  // all three admitted and waiting

  StalledStream third_from_a("a3", "ipv4:10.0.0.1");
  auto refused = ingestor_->Upload(third_from_a, Principal());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_NE(refused.status().message().find("--max_uploads_per_peer"), std::string::npos) << refused.status();
  StalledStream fourth("c1", "ipv4:10.0.0.3");
  refused = ingestor_->Upload(fourth, Principal());
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_NE(refused.status().message().find("--max_concurrent_uploads"), std::string::npos) << refused.status();

  for (auto& t : clients) t.join();
  const auto waited = std::chrono::steady_clock::now() - started;
  EXPECT_LT(waited, std::chrono::seconds(20));  // broken off, not pinned (the limit is 0.5 s)
  for (size_t i = 0; i < results.size(); ++i) {
    EXPECT_EQ(results[i].status().code(), absl::StatusCode::kAborted) << results[i].status();
    EXPECT_NE(results[i].status().message().find("--upload_idle_timeout_s"), std::string::npos) << results[i].status();
  }
  // Nothing of them holds a thread, and the places came back: a whole upload goes through.
  EXPECT_LE(ThreadsOfThisProcess(), threads_before);
  const std::string path = fleetprof::testing::CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string gz = CorpusBytes("kineto/mi250_rocm62.json.gz");
  auto good = Upload("good", gz, 4096, static_cast<int64_t>(gz.size()));
  EXPECT_TRUE(good.ok()) << good.status();
}

// Before: an analysis thread that could not start threw std::system_error out of the upload
// and ended the server. Now the upload answers UNAVAILABLE, keeps its bytes and resumes.
TEST_F(IngestCleanupTest, AnUploadWhoseThreadCannotStartStaysResumable) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string gz = CorpusBytes("kineto/mi250_rocm62.json.gz");
  const int64_t total = static_cast<int64_t>(gz.size());
  FailThreadStartsForTesting(1);
  auto failed = Upload("no-thread", gz, 4096, total);
  FailThreadStartsForTesting(0);
  EXPECT_EQ(failed.status().code(), absl::StatusCode::kUnavailable) << failed.status();
  EXPECT_NE(failed.status().message().find("cannot start the analysis thread"), std::string::npos) << failed.status();
  EXPECT_EQ(store_->engine().CountEventBlocks(), 0);
  auto state = ingestor_->GetUploadState("no-thread", Principal());
  ASSERT_TRUE(state.ok()) << state.status();
  EXPECT_EQ(state->state(), v1::UploadState::PARTIAL);
  const int64_t kept = state->received_bytes();
  EXPECT_EQ(kept, 4096);  // the chunk that came before the analysis failed is kept

  // Resumed where it stopped: the stored bytes and the rest make the profile.
  v1::UploadMetadata metadata;
  metadata.set_upload_id("no-thread");
  metadata.set_job("j");
  metadata.set_file_name("no-thread.json.gz");
  metadata.set_total_bytes(total);
  metadata.set_resume_offset(kept);
  std::vector<std::string> rest;
  for (size_t at = static_cast<size_t>(kept); at < gz.size(); at += 4096) rest.push_back(gz.substr(at, 4096));
  ScriptedStream resume(metadata, rest);
  auto resumed = ingestor_->Upload(resume, Principal());
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  auto fresh = Upload("one-go", gz, 4096, total);
  ASSERT_TRUE(fresh.ok()) << fresh.status();
  EXPECT_EQ(resumed->profile().events(), fresh->profile().events());
  EXPECT_GT(resumed->profile().events(), 0);
}

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
  EXPECT_EQ(store_->engine().CountEventBlocks(), 0);
  // Corrupt gzip: bytes flipped in the middle of the stream.
  std::string corrupt = gz;
  for (size_t i = corrupt.size() / 2; i < corrupt.size() / 2 + 64; ++i) corrupt[i] = static_cast<char>(corrupt[i] ^ 0x5a);
  auto damaged = Upload("corrupt", corrupt, 4096, static_cast<int64_t>(corrupt.size()));
  EXPECT_FALSE(damaged.ok());
  EXPECT_EQ(store_->engine().CountEventBlocks(), 0);
  // Not a trace at all.
  auto not_trace = Upload("nottrace", "hello, this is not a trace", 5, 0);
  EXPECT_FALSE(not_trace.ok());
  EXPECT_EQ(store_->engine().CountEventBlocks(), 0);
  // Interrupted after every byte arrived (the client went away before the end of the stream):
  // resumable, but not a profile, so no blocks either.
  auto interrupted = Upload("interrupted", gz, 4096, static_cast<int64_t>(gz.size()), /*cancelled=*/true);
  EXPECT_TRUE(absl::IsAborted(interrupted.status())) << interrupted.status();
  EXPECT_EQ(store_->engine().CountEventBlocks(), 0);
  // Interrupted half way.
  auto half = Upload("half", gz.substr(0, gz.size() / 2), 4096, static_cast<int64_t>(gz.size()));
  EXPECT_TRUE(absl::IsAborted(half.status())) << half.status();
  EXPECT_EQ(store_->engine().CountEventBlocks(), 0);

  auto good = Upload("good", gz, 4096, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(good.ok()) << good.status();
  const int64_t keys = store_->engine().CountEventBlocks();
  EXPECT_GT(keys, 2);
  // The resumed upload completes and adds its own profile's blocks.
  auto resumed = Upload("half", gz, 4096, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(resumed.ok()) << resumed.status();
  EXPECT_EQ(store_->engine().CountEventBlocks(), keys * 2);
  EXPECT_EQ(*store_->CollectOrphans(), 0);
  EXPECT_EQ(store_->engine().CountEventBlocks(), keys * 2);
}

// Chunks sent as gzip members make the same profile as the plain file, are kept as they came
// (a ninth of the bytes), and the original reads back byte for byte. A file that is gzip already
// is kept as it is, whichever way it was sent.
TEST_F(IngestCleanupTest, GzipChunksMakeTheSameProfileAndKeepTheOriginalByteForByte) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string json = analysis::testing::ReadDecompressed(path);
  std::vector<std::string> members;
  for (size_t at = 0; at < json.size(); at += 100000) members.push_back(GzipMember(json.substr(at, 100000)));
  auto gzipped = UploadMembers("as-gzip", members);
  ASSERT_TRUE(gzipped.ok()) << gzipped.status();
  auto plain = Upload("as-plain", json, 100000, static_cast<int64_t>(json.size()));
  ASSERT_TRUE(plain.ok()) << plain.status();
  EXPECT_EQ(gzipped->profile().size_bytes(), static_cast<int64_t>(json.size()));
  EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(*store_->profiles().GetSummary(gzipped->profile_id()),
                                                                 *store_->profiles().GetSummary(plain->profile_id())));
  EXPECT_EQ(Original(*gzipped), json);
  EXPECT_EQ(Original(*plain), json);
  for (const char* id : {"as-gzip", "as-plain"}) {
    const v1::UploadRecord record = **store_->uploads().Get(id);
    EXPECT_EQ(record.parts_encoding(), "gzip") << id << ": plain chunks are compressed by the server";
    EXPECT_LT(record.stored_bytes(), static_cast<int64_t>(json.size()) / 4) << id;
    EXPECT_EQ(record.received_bytes(), static_cast<int64_t>(json.size())) << id;
  }

  const std::string gz = CorpusBytes("kineto/a100_alexnet.json.gz");
  auto gz_as_member = UploadMembers("gz-as-member", {GzipMember(gz)});
  ASSERT_TRUE(gz_as_member.ok()) << gz_as_member.status();
  auto gz_as_plain = Upload("gz-as-plain", gz, 4096, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(gz_as_plain.ok()) << gz_as_plain.status();
  for (const auto* response : {&*gz_as_member, &*gz_as_plain}) {
    EXPECT_EQ((*store_->uploads().Get(response->profile().upload_id()))->parts_encoding(), "")
        << "a .gz file is kept as it is";
    EXPECT_EQ(Original(*response), gz);
  }
}

// What a client's member costs in storage is bounded by its content, whatever its header
// carries: a member padded with a long comment is stored as the server would have made it, and
// a chunk of no bytes stores nothing.
TEST_F(IngestCleanupTest, AGzipChunkTakesNoMoreRoomThanItsContentAllows) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string json = analysis::testing::ReadDecompressed(path);
  std::vector<std::string> members;
  for (size_t at = 0; at < json.size(); at += 100000) {
    const std::string content = json.substr(at, 100000);
    std::string padded = GzipMember(content);
    // FLG.FCOMMENT: a zero-terminated comment right after the 10-byte header.
    padded[3] = static_cast<char>(padded[3] | 0x10);
    padded.insert(10, std::string(500000, 'c') + '\0');
    std::string check;
    ASSERT_TRUE(GunzipMember(padded, 1 << 20, &check).ok()) << "a valid member";
    members.push_back(std::move(padded));
    members.push_back(GzipMember(""));  // a chunk of no bytes
  }
  auto stored = UploadMembers("padded", members);
  ASSERT_TRUE(stored.ok()) << stored.status();
  EXPECT_EQ(Original(*stored), json);
  const v1::UploadRecord record = **store_->uploads().Get("padded");
  EXPECT_EQ(record.received_bytes(), static_cast<int64_t>(json.size()));
  EXPECT_LT(record.stored_bytes(), static_cast<int64_t>(json.size()) / 4) << "the comments were not kept";
}

// A gzip chunk is checked whole before any of it is stored or analysed: damaged, cut short,
// followed by other bytes, or inflating past the chunk limit, the upload is refused and leaves
// nothing; so is an encoding the server does not know.
TEST_F(IngestCleanupTest, ABadGzipChunkIsRefusedAndLeavesNothing) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string json = analysis::testing::ReadDecompressed(path);
  const std::string first = GzipMember(json.substr(0, 100000));
  std::string damaged = GzipMember(json.substr(100000, 100000));
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x40);
  const std::string bomb = GzipMember(std::string(IngestLimits().max_chunk_bytes + 1, ' '));
  const std::vector<std::pair<std::string, std::vector<std::string>>> bad = {
      {"damaged", {first, damaged}},
      {"cut", {first, first.substr(0, first.size() - 4)}},
      {"trailing", {first + "{}"}},
      {"plain", {json.substr(0, 100000)}},
  };
  for (const auto& [id, chunks] : bad) {
    auto refused = UploadMembers(id, chunks);
    EXPECT_TRUE(absl::IsInvalidArgument(refused.status())) << id << ": " << refused.status();
    EXPECT_FALSE(store_->uploads().Get(id)->has_value()) << id;
  }
  auto over = UploadMembers("bomb", {first, bomb});
  EXPECT_TRUE(absl::IsResourceExhausted(over.status())) << over.status();
  EXPECT_FALSE(store_->uploads().Get("bomb")->has_value());
  auto unknown = UploadMembers("zstd", {first}, "zstd");
  EXPECT_TRUE(absl::IsInvalidArgument(unknown.status())) << unknown.status();
  EXPECT_NE(unknown.status().message().find("chunk_encoding"), std::string::npos) << unknown.status();
  EXPECT_EQ(store_->engine().CountEventBlocks(), 0);
  EXPECT_EQ(*store_->CollectOrphans(), 0) << "no uploaded bytes left behind";
}

TEST_F(IngestCleanupTest, BlocksOfAProfileNeverCommittedAreDeletedAtStart) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  // What a crash between writing the blocks and committing leaves.
  std::unique_ptr<timeline::TimelineWriter> writer = store_->events().NewWriter("00000000deadbeef");
  timeline::TimelineSink sink(writer.get());
  ASSERT_TRUE(analysis::AnalyzeTraceFile(path, &sink).ok());
  writer.reset();
  ASSERT_GT(store_->engine().CountEventBlocks(), 0);
  auto good = Upload("good", CorpusBytes("kineto/mi250_rocm62.json.gz"), 1 << 20, 0);
  ASSERT_TRUE(good.ok()) << good.status();
  const int64_t with_orphan = store_->engine().CountEventBlocks();
  EXPECT_EQ(*store_->CollectOrphans(), 1);
  EXPECT_EQ(store_->engine().CountEventBlocks() * 2, with_orphan);
}

TEST_F(IngestCleanupTest, DeletingAProfileRemovesEveryRecordOfIt) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string gz = CorpusBytes("kineto/a100_alexnet.json.gz");
  auto kept = Upload("kept", gz, 4096, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(kept.ok()) << kept.status();
  const int64_t one_profile = store_->engine().CountEventBlocks();
  auto gone = Upload("gone", gz, 4096, static_cast<int64_t>(gz.size()));
  ASSERT_TRUE(gone.ok()) << gone.status();
  const std::string id = gone->profile_id();
  ASSERT_EQ(store_->engine().CountEventBlocks(), one_profile * 2);

  ASSERT_TRUE(store_->profiles().Delete(id).ok());
  EXPECT_TRUE(absl::IsNotFound(store_->profiles().Get(id).status()));
  EXPECT_TRUE(absl::IsNotFound(store_->profiles().GetSummary(id).status()));
  EXPECT_EQ(store_->engine().CountEventBlocks(), one_profile);  // the other profile's blocks stay
  auto upload = store_->uploads().Get("gone");
  ASSERT_TRUE(upload.ok());
  EXPECT_FALSE(upload->has_value());
  char byte;
  auto raw = store_->uploads().ReadOriginal("gone", static_cast<int64_t>(gz.size()))->Read(&byte, 1);
  EXPECT_TRUE(absl::IsNotFound(raw.status())) << raw.status();
  auto parts = store_->engine().blobs().ReadParts("gone", static_cast<int64_t>(gz.size()))->Read(&byte, 1);
  ASSERT_TRUE(parts.ok()) << parts.status();
  EXPECT_EQ(*parts, 0u) << "its parts are gone too";
  auto listed = store_->profiles().List(v1::ListProfilesRequest());
  ASSERT_TRUE(listed.ok());
  ASSERT_EQ(listed->profiles.size(), 1u);
  EXPECT_EQ(listed->profiles[0].profile_id(), kept->profile_id());
  v1::ListProfilesRequest by_job;
  by_job.set_job("j");
  EXPECT_EQ(store_->profiles().List(by_job)->profiles.size(), 1u);
  EXPECT_TRUE(absl::IsNotFound(store_->profiles().Delete(id)));
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
  ASSERT_TRUE(store_->engine().Flush().ok());
  EXPECT_GT(store_->engine().Usage().raw_disk_bytes, static_cast<int64_t>(gz.size()) / 2);
  EXPECT_GT(store_->engine().Usage().event_disk_bytes, 0);
  ASSERT_TRUE(store_->profiles().Delete(stored->profile_id()).ok());
  EXPECT_EQ(store_->engine().Usage().raw_disk_bytes, 0);
  EXPECT_EQ(store_->engine().Usage().event_disk_bytes, 0);
}

// Retention ages a profile on the clock that stamped it at ingest (issue 40): on simulated
// time a test moves a day on, and the profile goes as it would after a real day.
TEST_F(IngestCleanupTest, RetentionAgesAnIngestedProfileOnSimulatedTime) {
  const std::string path = fleetprof::testing::CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  SimulatedClock clock;
  ingestor_ = std::make_unique<Ingestor>(store_.get(), &metrics_, IngestLimits(), nullptr, nullptr, &clock);
  const std::string json = analysis::testing::ReadDecompressed(path);
  auto uploaded = Upload("aged", json, 64 << 10, static_cast<int64_t>(json.size()));
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  const std::string id = uploaded->profile_id();
  RetentionPolicy policy;
  policy.retention_days = 1;
  policy.check_every_s = 60;
  prometheus::Registry registry;
  AgentRegistry agents(&store_->agents(), &metrics_, AgentLimits(), &clock);
  Retention retention(
      policy, store_.get(), &agents, [&](const std::string& gone) { return store_->profiles().Delete(gone); }, &registry,
      &clock);
  std::this_thread::sleep_for(std::chrono::milliseconds(50));  // the first pass runs at once
  EXPECT_TRUE(store_->profiles().Get(id).ok()) << "a day is not up";
  clock.Advance(int64_t{24 * 3600 + 61} * 1'000'000'000);
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = !store_->profiles().Get(id).ok();
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "aged a day on the ingest's clock";
}

}  // namespace
}  // namespace fleetprof
