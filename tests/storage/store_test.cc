#include "storage/storage.h"

#include <unistd.h>

#include <atomic>
#include <chrono>
#include <thread>
#include <cstdlib>
#include <filesystem>

#include "common/gzip_member.h"
#include "gtest/gtest.h"
#include "rocksdb/db.h"
#include "rocksdb/env.h"
#include "rocksdb/file_system.h"

namespace fleetprof {
namespace {

class StorageTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fleetprof-store-XXXXXX";
    dir_ = mkdtemp(pattern);
    Reopen();
  }
  void TearDown() override {
    store_.reset();
    std::system(("rm -rf " + dir_).c_str());
  }
  void Reopen() {
    store_.reset();
    auto opened = Storage::Open(dir_);
    ASSERT_TRUE(opened.ok()) << opened.status();
    store_ = *std::move(opened);
  }
  v1::ProfileInfo Info(const std::string& id, const std::string& job, int64_t t) {
    v1::ProfileInfo info;
    info.set_profile_id(id);
    info.set_job(job);
    info.set_ingested_at_ns(t);
    info.set_start_ns(t);
    info.set_end_ns(t + 10);
    return info;
  }
  std::string dir_;
  std::unique_ptr<Storage> store_;
};

TEST_F(StorageTest, ListsNewestFirstAndPagesWithoutGapsOrRepeats) {
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(store_->profiles().Commit(Info("p" + std::to_string(i), i % 2 ? "odd" : "even", 1000 + i),
                                      v1::ProfileSummary())
                    .ok());
  }
  v1::ListProfilesRequest request;
  request.set_page_size(10);
  std::vector<std::string> seen;
  do {
    auto page = store_->profiles().List(request);
    ASSERT_TRUE(page.ok());
    for (const auto& p : page->profiles) seen.push_back(p.profile_id());
    request.set_page_token(page->next_page_token);
  } while (!request.page_token().empty());
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_EQ(seen.front(), "p24");
  EXPECT_EQ(seen.back(), "p0");

  v1::ListProfilesRequest odd;
  odd.set_job("odd");
  auto page = store_->profiles().List(odd);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->profiles.size(), 12u);
}

TEST_F(StorageTest, PagingWithSeveralLabelsKeepsItsIndexAcrossPages) {
  for (int i = 0; i < 25; ++i) {
    v1::ProfileInfo info = Info("q" + std::to_string(i), "j", 2000 + i);
    (*info.mutable_labels())["team"] = "infra";
    (*info.mutable_labels())["zone"] = i % 5 == 0 ? "b" : "a";
    ASSERT_TRUE(store_->profiles().Commit(info, v1::ProfileSummary()).ok());
  }
  int found = 0;
  v1::ListProfilesRequest request;
  request.set_page_size(3);
  (*request.mutable_labels())["zone"] = "a";
  (*request.mutable_labels())["team"] = "infra";
  do {
    // A fresh request message per page, as each RPC parses one: map order may differ.
    v1::ListProfilesRequest page_request;
    page_request.CopyFrom(request);
    auto page = store_->profiles().List(page_request);
    ASSERT_TRUE(page.ok()) << page.status();
    found += static_cast<int>(page->profiles.size());
    request.set_page_token(page->next_page_token);
  } while (!request.page_token().empty());
  EXPECT_EQ(found, 20);
}

TEST_F(StorageTest, PartialUploadIsInvisibleAndResumable) {
  v1::UploadRecord record;
  record.mutable_metadata()->set_upload_id("u1");
  record.set_parts_encoding(std::string(UploadTable::kGzipParts));  // as the server keeps JSON
  ASSERT_TRUE(store_->uploads().Put("u1", record).ok());
  ASSERT_TRUE(store_->uploads().AppendRaw("u1", record, GzipMember("hello "), 6).ok());
  ASSERT_TRUE(store_->uploads().AppendRaw("u1", record, GzipMember("world"), 5).ok());
  Reopen();
  auto stored = store_->uploads().Get("u1");
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->received_bytes(), 11);
  auto raw = store_->uploads().ReadRaw("u1", **stored);
  std::string text(64, '\0');
  size_t have = 0;
  while (true) {
    auto got = raw->Read(text.data() + have, text.size() - have);
    ASSERT_TRUE(got.ok());
    if (*got == 0) break;
    have += *got;
  }
  EXPECT_EQ(text.substr(0, have), "hello world");
  auto list = store_->profiles().List(v1::ListProfilesRequest());
  EXPECT_TRUE(list->profiles.empty());
  ASSERT_TRUE(store_->uploads().Abort("u1").ok());
  EXPECT_FALSE(store_->uploads().Get("u1")->has_value());
}

TEST_F(StorageTest, CommitMarksTheUploadCommitted) {
  v1::UploadRecord record;
  ASSERT_TRUE(store_->uploads().Put("u2", record).ok());
  v1::ProfileInfo info = Info("p1", "j", 5);
  info.set_upload_id("u2");
  (*info.mutable_labels())["team"] = "infra";
  ASSERT_TRUE(store_->profiles().Commit(info, v1::ProfileSummary()).ok());
  EXPECT_EQ((*store_->uploads().Get("u2"))->profile_id(), "p1");
  v1::ListProfilesRequest by_label;
  (*by_label.mutable_labels())["team"] = "infra";
  EXPECT_EQ(store_->profiles().List(by_label)->profiles.size(), 1u);
  (*by_label.mutable_labels())["team"] = "other";
  EXPECT_EQ(store_->profiles().List(by_label)->profiles.size(), 0u);
}

TEST_F(StorageTest, StaleUploadsAreCleaned) {
  v1::UploadRecord old_record;
  old_record.set_updated_at_ns(100);
  ASSERT_TRUE(store_->uploads().Put("old", old_record).ok());
  v1::UploadRecord fresh;
  fresh.set_updated_at_ns(1000);
  ASSERT_TRUE(store_->uploads().Put("fresh", fresh).ok());
  auto cleaned = store_->uploads().CleanStale(500);
  ASSERT_TRUE(cleaned.ok());
  EXPECT_EQ(*cleaned, 1);
  EXPECT_TRUE(store_->uploads().Get("fresh")->has_value());
}

TEST_F(StorageTest, RejectsForeignPageToken) {
  v1::ListProfilesRequest request;
  request.set_page_token("zz");
  EXPECT_FALSE(store_->profiles().List(request).ok());
}

// Fails every new table file with "no space" while `fail` is set, as a full disk would. (Other
// I/O errors of a flush, a failed log file among them, are fatal to RocksDB: only reopening
// the database recovers from those, and Health() then stays NOT serving.)
class FailingFileSystem : public rocksdb::FileSystemWrapper {
 public:
  FailingFileSystem() : rocksdb::FileSystemWrapper(rocksdb::FileSystem::Default()) {}
  const char* Name() const override { return "FailingFileSystem"; }
  rocksdb::IOStatus NewWritableFile(const std::string& name, const rocksdb::FileOptions& options,
                                    std::unique_ptr<rocksdb::FSWritableFile>* file,
                                    rocksdb::IODebugContext* debug) override {
    if (fail.load() && name.ends_with(".sst")) return rocksdb::IOStatus::NoSpace("injected: cannot create " + name);
    return rocksdb::FileSystemWrapper::NewWritableFile(name, options, file, debug);
  }
  std::atomic<bool> fail{false};
};

v1::AgentInfo Agent(const std::string& node) {
  v1::AgentInfo agent;
  agent.set_node(node);
  return agent;
}

// Before: no listener and no Resume, so a failed flush left the database read-only until
// a restart, and nothing said so. Now the error is counted, Health() says NOT serving with
// RocksDB's reason, and TryResume brings writes back once the cause is gone.
TEST_F(StorageTest, BackgroundErrorStopsWritesUntilResume) {
  store_.reset();
  auto fs = std::make_shared<FailingFileSystem>();
  std::unique_ptr<rocksdb::Env> env = rocksdb::NewCompositeEnv(fs);
  std::vector<std::string> reasons;
  StoreOptions options;
  options.env = env.get();
  options.on_background_error = [&reasons](const std::string& reason) { reasons.push_back(reason); };
  auto opened = Storage::Open(dir_, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  std::unique_ptr<Storage> store = *std::move(opened);
  ASSERT_TRUE(store->agents().Put(Agent("before")).ok());
  EXPECT_TRUE(store->engine().Health().serving);

  fs->fail = true;
  EXPECT_FALSE(store->engine().Flush().ok());
  StoreHealth health = store->engine().Health();
  EXPECT_FALSE(health.serving);
  EXPECT_GE(health.background_errors, 1);
  EXPECT_NE(health.error.find("injected"), std::string::npos) << health.error;
  ASSERT_FALSE(reasons.empty());
  EXPECT_EQ(reasons[0], "flush");
  EXPECT_FALSE(store->agents().Put(Agent("during")).ok());  // writes stop
  EXPECT_FALSE(store->engine().TryResume());                      // the cause is still there

  fs->fail = false;
  // RocksDB retries a full disk by itself (then Resume answers Busy); either way it recovers.
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (!store->engine().TryResume() && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(store->engine().Health().serving);
  ASSERT_TRUE(store->agents().Put(Agent("after")).ok());
  ASSERT_TRUE(store->engine().Flush().ok());
  auto agents = store->agents().List();
  ASSERT_TRUE(agents.ok());
  std::vector<std::string> nodes;
  for (const auto& a : *agents) nodes.push_back(a.node());
  EXPECT_EQ(nodes, (std::vector<std::string>{"after", "before"}));
  store.reset();
}

int OpenTableFiles() {
  int n = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/fd")) {
    std::error_code ec;
    const std::filesystem::path target = std::filesystem::read_symlink(entry.path(), ec);
    if (!ec && target.extension() == ".sst") ++n;
  }
  return n;
}

// Before: max_open_files -1 kept every table file open, so a large database met the fd limit.
TEST_F(StorageTest, OpenTableFilesStayBounded) {
  // 3 flushes of 8 column families: 24 table files, below RocksDB's compaction trigger (4).
  for (int round = 0; round < 3; ++round) {
    for (int i = 0; i < 5; ++i) {
      const std::string id = "p" + std::to_string(round * 5 + i);
      ASSERT_TRUE(store_->profiles().Commit(Info(id, "job", 1000 + round * 5 + i), v1::ProfileSummary()).ok());
      ASSERT_TRUE(store_->agents().Put(Agent(id)).ok());
      v1::Capture capture;
      capture.set_capture_id(id);
      ASSERT_TRUE(store_->captures().Put(capture).ok());
      v1::Schedule schedule;
      schedule.set_schedule_id(id);
      ASSERT_TRUE(store_->schedules().Put(schedule).ok());
      v1::UploadRecord record;
      ASSERT_TRUE(store_->uploads().Put("u" + id, record).ok());
      ASSERT_TRUE(store_->uploads().AppendRaw("u" + id, record, "bytes", 5).ok());
    }
    ASSERT_TRUE(store_->engine().Flush().ok());
  }
  store_.reset();
  StoreOptions options;
  options.max_open_files = 20;  // RocksDB keeps 10 of them for its own files
  auto opened = Storage::Open(dir_, options);
  ASSERT_TRUE(opened.ok()) << opened.status();
  store_ = *std::move(opened);
  // Read every family, so every table file has been opened once.
  v1::ListProfilesRequest all;
  all.set_page_size(1000);
  auto page = store_->profiles().List(all);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->profiles.size(), 15u);
  EXPECT_EQ(store_->agents().List()->size(), 15u);
  EXPECT_EQ(store_->captures().List("", 1000)->size(), 15u);
  EXPECT_EQ(store_->schedules().List()->size(), 15u);
  int tables = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir_)) tables += entry.path().extension() == ".sst";
  // RocksDB's table cache holds max_open_files - 10 files, spread over 64 shards: a bound of
  // about max_open_files, not an exact count. Before, every table file stayed open.
  ASSERT_GE(tables, 24) << "the test needs more table files than may be open";
  const int open = OpenTableFiles();
  EXPECT_LT(open, tables);
  EXPECT_LE(open, 20) << "of " << tables << " table files";

  StoreOptions too_few;
  too_few.max_open_files = 5;
  EXPECT_EQ(Storage::Open(dir_ + "-other", too_few).status().code(), absl::StatusCode::kInvalidArgument);
}

// Before: ListProfiles and the agent, capture and schedule lists skipped a record that did
// not parse, in silence. Now a profile is listed as unreadable and the others are counted.
TEST_F(StorageTest, UnparsableRecordsAreReported) {
  ASSERT_TRUE(store_->profiles().Commit(Info("good", "job", 1000), v1::ProfileSummary()).ok());
  ASSERT_TRUE(store_->profiles().Commit(Info("bad", "job", 1001), v1::ProfileSummary()).ok());
  ASSERT_TRUE(store_->agents().Put(Agent("node")).ok());
  store_.reset();
  {
    // Damage two records behind the store's back, as a bug or a bad disk would.
    std::vector<rocksdb::ColumnFamilyDescriptor> families;
    std::vector<std::string> names;
    ASSERT_TRUE(rocksdb::DB::ListColumnFamilies(rocksdb::DBOptions(), dir_, &names).ok());
    for (const auto& n : names) families.emplace_back(n, rocksdb::ColumnFamilyOptions());
    std::vector<rocksdb::ColumnFamilyHandle*> handles;
    rocksdb::DB* raw = nullptr;
    ASSERT_TRUE(rocksdb::DB::Open(rocksdb::DBOptions(), dir_, families, &handles, &raw).ok());
    for (size_t i = 0; i < names.size(); ++i) {
      const char* key = names[i] == "profiles" ? "bad" : names[i] == "agents" ? "node" : nullptr;
      if (key != nullptr) {
        ASSERT_TRUE(raw->Put(rocksdb::WriteOptions(), handles[i], key, "\xff\xff\xff").ok());
      }
    }
    for (auto* h : handles) raw->DestroyColumnFamilyHandle(h);
    delete raw;
  }
  Reopen();
  auto page = store_->profiles().List(v1::ListProfilesRequest());
  ASSERT_TRUE(page.ok());
  ASSERT_EQ(page->profiles.size(), 1u);
  EXPECT_EQ(page->profiles[0].profile_id(), "good");
  ASSERT_EQ(page->unreadable.size(), 1u);
  EXPECT_EQ(page->unreadable[0].key, "bad");
  EXPECT_NE(page->unreadable[0].error.find("does not parse"), std::string::npos);
  EXPECT_TRUE(store_->agents().List()->empty());
  EXPECT_EQ(store_->UnreadableRecords(), 1);
}

}  // namespace
}  // namespace fleetprof
