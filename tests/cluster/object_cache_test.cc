// The replica's object cache (storage/cluster/object_cache.h) over a folder store, with every
// request the cache lets through counted: what it keeps, what it drops, and its bound.

#include <stdlib.h>

#include <atomic>
#include <filesystem>
#include <functional>
#include <fstream>
#include <thread>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "common/clock.h"
#include "storage/cluster/object_cache.h"
#include "storage/cluster/object_client.h"

namespace fleetprof::cluster {
namespace {

// A folder store that counts the reads that reach it.
class CountingClient : public ObjectClient {
 public:
  explicit CountingClient(std::unique_ptr<ObjectClient> inner, std::map<std::string, int>* reads)
      : inner_(std::move(inner)), reads_(reads) {}
  std::string Describe() const override { return inner_->Describe(); }
  absl::Status Put(std::string_view key, std::string_view bytes) override { return inner_->Put(key, bytes); }
  absl::StatusOr<std::string> Get(std::string_view key, std::optional<ByteRange> range) override {
    ++(*reads_)[std::string(key)];
    return inner_->Get(key, range);
  }
  absl::StatusOr<int64_t> Size(std::string_view key) override {
    ++(*reads_)[std::string(key) + "#size"];
    return inner_->Size(key);
  }
  absl::Status Delete(std::string_view key) override { return inner_->Delete(key); }
  absl::Status List(std::string_view prefix, const ObjectVisitor& visit) override { return inner_->List(prefix, visit); }
  absl::StatusOr<std::unique_ptr<ObjectWriter>> NewWriter(std::string_view key) override {
    return inner_->NewWriter(key);
  }

 private:
  std::unique_ptr<ObjectClient> inner_;
  std::map<std::string, int>* reads_;
};

class ObjectCacheTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/fleetprof-object-cache-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    root_ = pattern;
    std::filesystem::create_directories(root_ / "store");
  }
  void TearDown() override {
    client_.reset();
    std::filesystem::remove_all(root_);
  }
  // A cache over the folder store, caching "summaries/" and "events/".
  ObjectClient& Open(int64_t max_bytes = 16 << 20, const std::function<void(ObjectCacheOptions&)>& adjust = nullptr) {
    client_.reset();
    auto folder = OpenObjectStore("file://" + (root_ / "store").string(), S3Settings());
    EXPECT_TRUE(folder.ok()) << folder.status();
    ObjectCacheOptions options;
    options.dir = (root_ / "cache").string();
    options.max_bytes = max_bytes;
    options.prefixes = {"summaries/", "events/"};
    options.on_lookup = [this](bool hit) { ++(hit ? hits_ : misses_); };
    if (adjust) adjust(options);
    auto cached = NewCachedObjectClient(std::make_unique<CountingClient>(*std::move(folder), &reads_), options);
    EXPECT_TRUE(cached.ok()) << cached.status();
    client_ = *std::move(cached);
    return *client_;
  }

  std::filesystem::path root_;
  std::map<std::string, int> reads_;
  int hits_ = 0;
  int misses_ = 0;
  std::unique_ptr<ObjectClient> client_;
};

TEST_F(ObjectCacheTest, WhatThisReplicaWroteOrReadOnceIsReadFromItsDisk) {
  ObjectClient& objects = Open();
  ASSERT_TRUE(objects.Put("summaries/p1", "summary bytes").ok());
  EXPECT_EQ(*objects.Get("summaries/p1"), "summary bytes");
  EXPECT_EQ(reads_["summaries/p1"], 0) << "kept when written";

  const std::string segment(10000, 'e');
  ASSERT_TRUE(objects.Put("events/p1", segment).ok());
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(*objects.Size("events/p1"), 10000);
    EXPECT_EQ(*objects.Get("events/p1", ByteRange{9000, 24}), segment.substr(9000, 24));
    EXPECT_EQ(*objects.Get("events/p1", ByteRange{100, 50}), segment.substr(100, 50));
  }
  EXPECT_EQ(reads_["events/p1#size"], 1);
  EXPECT_EQ(reads_["events/p1"], 2) << "each range once";

  // Raw parts are read once, by export: never kept.
  ASSERT_TRUE(objects.Put("raw/u1/0000000000000000", "part").ok());
  for (int i = 0; i < 2; ++i) EXPECT_EQ(*objects.Get("raw/u1/0000000000000000"), "part");
  EXPECT_EQ(reads_["raw/u1/0000000000000000"], 2);
  EXPECT_GT(hits_, 0);
  EXPECT_GT(misses_, 0);
}

TEST_F(ObjectCacheTest, ADeleteDropsEveryCopyAndAMissingObjectIsNeverKept) {
  ObjectClient& objects = Open();
  ASSERT_TRUE(objects.Put("events/p2", std::string(5000, 'x')).ok());
  ASSERT_TRUE(objects.Get("events/p2", ByteRange{0, 10}).ok());
  ASSERT_TRUE(objects.Size("events/p2").ok());
  ASSERT_TRUE(objects.Put("events/p20", "a longer name beside it").ok());
  ASSERT_TRUE(objects.Delete("events/p2").ok());
  EXPECT_TRUE(absl::IsNotFound(objects.Get("events/p2", ByteRange{0, 10}).status()));
  EXPECT_TRUE(absl::IsNotFound(objects.Size("events/p2").status()));
  EXPECT_EQ(*objects.Get("events/p20"), "a longer name beside it") << "only that object's copies go";
  // Written later by someone else (another replica): found, since absence was not remembered.
  EXPECT_TRUE(absl::IsNotFound(objects.Get("summaries/late").status()));
  auto other = OpenObjectStore("file://" + (root_ / "store").string(), S3Settings());
  ASSERT_TRUE(other.ok() && (*other)->Put("summaries/late", "late").ok());
  EXPECT_EQ(*objects.Get("summaries/late"), "late");
}

TEST_F(ObjectCacheTest, StaysWithinItsBoundAndDeletingOrDamagingItLosesNothing) {
  const int64_t bound = 4 << 20;
  ObjectClient& objects = Open(bound);
  std::string value(64 << 10, 'v');
  for (int i = 0; i < 400; ++i) {  // 25 MiB through a 4 MiB cache
    value[i % value.size()] = static_cast<char>('a' + i % 26);
    ASSERT_TRUE(objects.Put(absl::StrCat("summaries/s", i), value).ok());
  }
  auto* usage = dynamic_cast<ObjectCacheUsage*>(client_.get());
  ASSERT_NE(usage, nullptr);
  // FIFO drops whole files once they pass the bound; the memtables (two of a sixteenth) come on
  // top. It drops them in the background: under load (a sanitizer build), give it 10 seconds.
  int64_t on_disk = 0, cache_bytes = 0;
  for (int wait = 0; wait < 200; ++wait) {
    on_disk = 0;
    for (const auto& entry : std::filesystem::recursive_directory_iterator(root_ / "cache")) {
      if (entry.is_regular_file() && entry.path().extension() == ".sst") on_disk += static_cast<int64_t>(entry.file_size());
    }
    cache_bytes = usage->CacheBytes();
    if (on_disk <= bound + (1 << 20) && cache_bytes <= bound + bound / 8 + (1 << 20)) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  EXPECT_LE(cache_bytes, bound + bound / 8 + (1 << 20));
  EXPECT_LE(on_disk, bound + (1 << 20));
  EXPECT_EQ(objects.Get("summaries/s0")->size(), value.size()) << "the oldest went from the cache, not the store";

  client_.reset();
  std::filesystem::remove_all(root_ / "cache");
  EXPECT_EQ(Open(bound).Get("summaries/s399")->size(), value.size());

  client_.reset();
  std::ofstream(root_ / "cache" / "CURRENT", std::ios::trunc) << "not a manifest name\n";
  ObjectClient& reopened = Open(bound);
  EXPECT_EQ(reopened.Get("summaries/s7")->size(), value.size()) << "a damaged cache starts over empty";
}


// A disk short of room (the seam stands for statvfs here; full_disk_test.cc fills a real
// one): the cache is put aside at open and every read goes to the store, said once; when room
// comes back, the next read after the retry time opens it again, empty, and it keeps reads
// again; a disk that fills while it works puts it aside before RocksDB writes to it.
TEST_F(ObjectCacheTest, ADiskWithoutRoomPutsTheCacheAsideUntilThereIsRoomAgain) {
  SimulatedClock clock;
  std::atomic<int64_t> free_bytes{int64_t{1} << 20};
  std::vector<bool> states;
  ObjectClient& objects = Open(16 << 20, [&](ObjectCacheOptions& o) {
    o.clock = &clock;
    o.free_bytes = [&](const std::string&) -> absl::StatusOr<int64_t> { return free_bytes.load(); };
    o.on_state = [&](bool working) { states.push_back(working); };
  });
  auto* usage = dynamic_cast<ObjectCacheUsage*>(client_.get());
  ASSERT_NE(usage, nullptr);
  EXPECT_NE(usage->Problem().find("1 MiB free"), std::string::npos) << usage->Problem();
  EXPECT_EQ(states, std::vector<bool>{false});

  ASSERT_TRUE(objects.Put("summaries/a", "summary a").ok());
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*objects.Get("summaries/a"), "summary a");
  EXPECT_EQ(reads_["summaries/a"], 3) << "put aside: every read from the store";

  clock.Advance(int64_t{10} * 1'000'000'000);
  free_bytes = int64_t{1} << 30;
  EXPECT_EQ(*objects.Get("summaries/a"), "summary a");
  EXPECT_EQ(reads_["summaries/a"], 4) << "not retried before its time";
  EXPECT_FALSE(usage->Problem().empty());

  clock.Advance(int64_t{21} * 1'000'000'000);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(*objects.Get("summaries/a"), "summary a");
  EXPECT_EQ(reads_["summaries/a"], 5) << "open again: read once, then kept";
  EXPECT_EQ(usage->Problem(), "");
  EXPECT_EQ(states, (std::vector<bool>{false, true}));

  // The disk fills while the cache works: the next write looks (at most once a second).
  free_bytes = int64_t{2} << 20;
  clock.Advance(int64_t{2} * 1'000'000'000);
  ASSERT_TRUE(objects.Put("summaries/b", "summary b").ok());
  EXPECT_EQ(states, (std::vector<bool>{false, true, false}));
  EXPECT_NE(usage->Problem().find("2 MiB free"), std::string::npos) << usage->Problem();
  for (int i = 0; i < 2; ++i) EXPECT_EQ(*objects.Get("summaries/b"), "summary b");
  EXPECT_EQ(reads_["summaries/b"], 2);
}

}  // namespace
}  // namespace fleetprof::cluster
