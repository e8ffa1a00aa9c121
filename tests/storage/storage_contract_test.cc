// The storage seams' contracts, checked on every engine: the embedded RocksDB one and the
// in-memory one that unit tests use here; the cluster's (etcd catalog + S3 blob store, and the
// blob store on a folder) in cluster_storage_tests, which compiles this file again with
// FLEETPROF_CLUSTER_CONTRACT and starts the real engines (tests/cluster/cluster_engines.h).

#include <stdlib.h>

#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "common/gzip_member.h"
#include "gtest/gtest.h"
#include "storage/memory_engine.h"
#include "storage/rocks_engine.h"
#include "storage/storage.h"
#include "storage/upload_table.h"
#ifdef FLEETPROF_CLUSTER_CONTRACT
#include <random>

#include "absl/strings/str_cat.h"
#include "storage/cluster/cluster_engine.h"
#include "tests/cluster/cluster_engines.h"
#include "tests/test_support.h"
#endif

namespace fleetprof {
namespace {

std::string ReadAll(analysis::ByteSource& source) {
  std::string out;
  char buf[7];  // small on purpose: reads cross part boundaries
  while (true) {
    auto n = source.Read(buf, sizeof(buf));
    EXPECT_TRUE(n.ok()) << n.status();
    if (!n.ok() || *n == 0) return out;
    out.append(buf, *n);
  }
}

#ifdef FLEETPROF_CLUSTER_CONTRACT
// One etcd and one s3rver for the whole binary (each test gets prefixes of its own), stopped
// when the process exits.
struct SharedEngines {
  testing::EtcdCluster etcd;
  testing::S3rver s3;
  bool started = false;
};
SharedEngines* Engines() {
  static SharedEngines engines;
  if (!engines.started) engines.started = engines.etcd.Start(1) && engines.s3.Start();
  return engines.started ? &engines : nullptr;
}

std::string UniqueWord() {
  static std::mt19937_64 rng{std::random_device{}()};
  return absl::StrCat("t", rng() % 1000000000);
}
#endif

class StorageContractTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
#ifdef FLEETPROF_CLUSTER_CONTRACT
    cluster::ClusterStoreOptions options;
    const std::string word = UniqueWord();
    if (GetParam() == "etcd_s3") {
      FLEETPROF_REQUIRE_CLUSTER_ENGINES();
      SharedEngines* engines = Engines();
      ASSERT_NE(engines, nullptr) << "etcd or s3rver did not start";
      options.object_store = absl::StrCat("s3://", engines->s3.bucket(), "/", word);
      options.s3.endpoint = engines->s3.endpoint();
      options.s3.access_key = options.s3.secret_key = "S3RVER";
      options.etcd.endpoints = *cluster::ParseEtcdEndpoints(engines->etcd.Endpoints());
    } else {  // etcd_file: the blob store on a folder
      FLEETPROF_REQUIRE_PATH(testing::EtcdPath());
      SharedEngines* engines = Engines();
      ASSERT_NE(engines, nullptr) << "etcd or s3rver did not start";
      char pattern[] = "/tmp/fleetprof-contract-XXXXXX";
      ASSERT_NE(mkdtemp(pattern), nullptr);
      dir_ = pattern;
      options.object_store = "file://" + dir_.string();
      // The whole contract read through a replica's object cache (etcd_s3 reads without one).
      options.cache_dir = (dir_ / "object-cache").string();
      options.cache_bytes = 16 << 20;
      options.etcd.endpoints = *cluster::ParseEtcdEndpoints(engines->etcd.Endpoints());
    }
    options.etcd_prefix = absl::StrCat("/", word, "/");
    auto engine = cluster::OpenClusterEngine(options);
    ASSERT_TRUE(engine.ok()) << engine.status();
    storage_ = std::make_unique<Storage>(*std::move(engine));
    return;
#endif
    if (GetParam() == "memory") {
      storage_ = Storage::InMemory();
      return;
    }
    char pattern[] = "/tmp/fleetprof-contract-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    auto opened = Storage::Open(dir_.string());
    ASSERT_TRUE(opened.ok()) << opened.status();
    storage_ = *std::move(opened);
  }
  void TearDown() override {
    storage_.reset();
    if (!dir_.empty()) std::filesystem::remove_all(dir_);
  }
  Catalog& catalog() { return storage_->engine().catalog(); }
  BlobStore& blobs() { return storage_->engine().blobs(); }
  // Appends `text` to the upload as the server does: as it is, or as a gzip member of it.
  absl::Status Append(const std::string& id, v1::UploadRecord& record, std::string_view text) {
    const std::string stored = record.parts_encoding().empty() ? std::string(text) : GzipMember(text);
    return storage_->uploads().AppendRaw(id, record, stored, static_cast<int64_t>(text.size()));
  }

  std::vector<std::string> Keys(const CatalogScan& scan) {
    std::vector<std::string> keys;
    EXPECT_TRUE(catalog()
                    .Scan(CatalogTable::kIndex, scan,
                          [&](std::string_view key, std::string_view) {
                            keys.emplace_back(key);
                            return true;
                          })
                    .ok());
    return keys;
  }

  std::filesystem::path dir_;
  std::unique_ptr<Storage> storage_;
};

TEST_P(StorageContractTest, ScansKeepKeyOrderBothWaysAndResumeStrictlyAfterAKey) {
  CatalogWrite write;
  for (const char* key : {"a/1", "a/2", "a/3", "b/1", "a\xff", "\xff\xff"}) write.Put(CatalogTable::kIndex, key, "");
  ASSERT_TRUE(catalog().Commit(write).ok());
  CatalogScan a{"a/", "", false};
  EXPECT_EQ(Keys(a), (std::vector<std::string>{"a/1", "a/2", "a/3"}));
  a.after = "a/1";
  EXPECT_EQ(Keys(a), (std::vector<std::string>{"a/2", "a/3"}));
  CatalogScan back{"a/", "", true};
  EXPECT_EQ(Keys(back), (std::vector<std::string>{"a/3", "a/2", "a/1"}));
  back.after = "a/3";
  EXPECT_EQ(Keys(back), (std::vector<std::string>{"a/2", "a/1"}));
  EXPECT_EQ(Keys(CatalogScan{"\xff", "", true}), (std::vector<std::string>{"\xff\xff"})) << "a prefix of 0xff bytes";
  EXPECT_EQ(Keys(CatalogScan{"", "", true}).front(), "\xff\xff");
  int seen = 0;
  ASSERT_TRUE(catalog().Scan(CatalogTable::kIndex, CatalogScan(), [&](std::string_view, std::string_view) {
    return ++seen < 2;
  }).ok());
  EXPECT_EQ(seen, 2) << "a visitor's false stops the scan";
}

TEST_P(StorageContractTest, AConditionalCommitAppliesAllOrNothing) {
  CatalogWrite first;
  first.RequireAbsent(CatalogTable::kAgents, "n1");
  first.Put(CatalogTable::kAgents, "n1", "v1");
  first.Put(CatalogTable::kCaptures, "c1", "x");
  ASSERT_TRUE(catalog().Commit(first).ok());
  EXPECT_TRUE(absl::IsAborted(catalog().Commit(first))) << "n1 is no longer absent";

  CatalogWrite stale;
  stale.RequireValue(CatalogTable::kAgents, "n1", "v0");
  stale.Put(CatalogTable::kAgents, "n1", "v2");
  stale.Delete(CatalogTable::kCaptures, "c1");
  const absl::Status refused = catalog().Commit(stale);
  EXPECT_TRUE(absl::IsAborted(refused)) << refused;
  EXPECT_NE(refused.message().find("n1"), std::string_view::npos) << refused;
  EXPECT_EQ(**catalog().Get(CatalogTable::kAgents, "n1"), "v1") << "nothing of a refused commit is applied";
  EXPECT_TRUE(catalog().Get(CatalogTable::kCaptures, "c1")->has_value());

  CatalogWrite current;
  current.RequireValue(CatalogTable::kAgents, "n1", "v1");
  current.Put(CatalogTable::kAgents, "n1", "v2");
  current.Delete(CatalogTable::kCaptures, "c1");
  ASSERT_TRUE(catalog().Commit(current).ok());
  EXPECT_EQ(**catalog().Get(CatalogTable::kAgents, "n1"), "v2");
  EXPECT_FALSE(catalog().Get(CatalogTable::kCaptures, "c1")->has_value());
}

// Compare-and-set is what cluster replicas rely on: two writers that each read, add one and
// commit only if the value is still what they read never lose an update.
TEST_P(StorageContractTest, CompareAndSetLosesNoUpdateUnderConcurrentWriters) {
  ASSERT_TRUE(catalog().Commit([] {
    CatalogWrite w;
    w.Put(CatalogTable::kSchedules, "counter", "0");
    return w;
  }()).ok());
  constexpr int kEach = 200;
  std::atomic<int> conflicts{0};
  auto add = [&] {
    for (int done = 0; done < kEach;) {
      const std::string seen = **catalog().Get(CatalogTable::kSchedules, "counter");
      CatalogWrite w;
      w.RequireValue(CatalogTable::kSchedules, "counter", seen);
      w.Put(CatalogTable::kSchedules, "counter", std::to_string(std::stoi(seen) + 1));
      absl::Status s = catalog().Commit(w);
      if (s.ok()) {
        ++done;
      } else {
        ASSERT_TRUE(absl::IsAborted(s)) << s;
        ++conflicts;
      }
    }
  };
  std::thread a(add), b(add);
  a.join();
  b.join();
  EXPECT_EQ(**catalog().Get(CatalogTable::kSchedules, "counter"), std::to_string(2 * kEach))
      << conflicts.load() << " conflicts were retried";
}

TEST_P(StorageContractTest, BytesPastTheRecordedLengthAreNeverReadAndAResumeReplacesThem) {
  v1::UploadRecord record;
  ASSERT_TRUE(storage_->uploads().Put("u", record).ok());
  ASSERT_TRUE(Append("u", record, "hello ").ok());
  // A crash between a part and the record's update: the part is there, the record does not count it.
  ASSERT_TRUE(blobs().PutPart("u", record.received_bytes(), "garbage that never counted").ok());
  EXPECT_EQ(ReadAll(*storage_->uploads().ReadRaw("u", record)), "hello ");
  ASSERT_TRUE(Append("u", record, "world").ok());
  EXPECT_EQ(ReadAll(*storage_->uploads().ReadRaw("u", record)), "hello world");
  EXPECT_EQ((*storage_->uploads().Get("u"))->received_bytes(), 11);
  ASSERT_TRUE(storage_->uploads().Abort("u").ok());
  EXPECT_FALSE(storage_->uploads().Get("u")->has_value());
  EXPECT_EQ(ReadAll(*storage_->uploads().ReadRaw("u", record)), "") << "an aborted upload's bytes are gone";
}

// The same with the parts kept as one gzip member per append: offsets still count the file's
// bytes, and what is read back is the file.
TEST_P(StorageContractTest, GzipPartsReadBackAsTheFileAndAResumeReplacesBytesPastTheRecord) {
  v1::UploadRecord record;
  record.set_parts_encoding(std::string(UploadTable::kGzipParts));
  ASSERT_TRUE(storage_->uploads().Put("u", record).ok());
  ASSERT_TRUE(Append("u", record, "hello ").ok());
  EXPECT_EQ(record.received_bytes(), 6);
  EXPECT_EQ(record.stored_bytes(), static_cast<int64_t>(GzipMember("hello ").size()));
  ASSERT_TRUE(blobs().PutPart("u", record.stored_bytes(), GzipMember("garbage that never counted")).ok());
  EXPECT_EQ(ReadAll(*storage_->uploads().ReadRaw("u", record)), "hello ");
  ASSERT_TRUE(Append("u", record, "world").ok());
  EXPECT_EQ(ReadAll(*storage_->uploads().ReadRaw("u", record)), "hello world");
  EXPECT_EQ(ReadAll(*storage_->uploads().ReadOriginal("u", 11)), "hello world");
  EXPECT_EQ((*storage_->uploads().Get("u"))->received_bytes(), 11);
}

TEST_P(StorageContractTest, AfterLostGzipPartsTheRecordCountsTheFileBytesTheSurvivingMembersHold) {
  v1::UploadRecord record;
  record.set_parts_encoding(std::string(UploadTable::kGzipParts));
  ASSERT_TRUE(storage_->uploads().Put("u", record).ok());
  ASSERT_TRUE(Append("u", record, "hello ").ok());
  const int64_t first = record.stored_bytes();
  ASSERT_TRUE(blobs().PutPart("u", first + 25, GzipMember("stranded")).ok());  // "world" was lost
  record.set_received_bytes(19);
  record.set_stored_bytes(first + 25 + static_cast<int64_t>(GzipMember("stranded").size()));
  ASSERT_TRUE(storage_->uploads().Put("u", record).ok());

  auto repaired = storage_->uploads().RepairPartial();
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  EXPECT_EQ(*repaired, 1);
  v1::UploadRecord resumed = **storage_->uploads().Get("u");
  EXPECT_EQ(resumed.received_bytes(), 6);
  EXPECT_EQ(resumed.stored_bytes(), first);
  ASSERT_TRUE(Append("u", resumed, "world, again").ok());
  EXPECT_EQ(ReadAll(*storage_->uploads().ReadRaw("u", resumed)), "hello world, again");
  ASSERT_TRUE(blobs().FinishParts("u").ok());
}

// Gzip parts that no longer inflate (damaged on disk) after a crash lost some: the upload starts
// again from its first byte, on none of the old parts.
TEST_P(StorageContractTest, DamagedGzipPartsAfterACrashStartTheUploadAgain) {
  v1::UploadRecord record;
  record.set_parts_encoding(std::string(UploadTable::kGzipParts));
  ASSERT_TRUE(storage_->uploads().Put("u", record).ok());
  std::string damaged = GzipMember("hello, this member will not inflate");
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x55);
  ASSERT_TRUE(storage_->uploads().AppendRaw("u", record, damaged, 35).ok());
  record.set_stored_bytes(record.stored_bytes() + 100);  // a later part the crash lost
  record.set_received_bytes(record.received_bytes() + 50);
  ASSERT_TRUE(storage_->uploads().Put("u", record).ok());

  ASSERT_TRUE(storage_->uploads().RepairPartial().ok());
  v1::UploadRecord resumed = **storage_->uploads().Get("u");
  EXPECT_EQ(resumed.received_bytes(), 0);
  EXPECT_EQ(resumed.stored_bytes(), 0);
  ASSERT_TRUE(Append("u", resumed, "hello again").ok());
  EXPECT_EQ(ReadAll(*storage_->uploads().ReadRaw("u", resumed)), "hello again");
}

// Parts are written without a log: a crash may lose the latest ones, or (after a gap) keep
// some. At start the record is cut back to the bytes left from offset 0, and what follows a gap
// is dropped, so a resumed upload reads back exactly what its client sends again.
TEST_P(StorageContractTest, AfterLostPartsAnUploadResumesFromTheBytesThatSurvived) {
  v1::UploadRecord record;
  ASSERT_TRUE(storage_->uploads().Put("u", record).ok());
  ASSERT_TRUE(Append("u", record, "hello ").ok());
  ASSERT_TRUE(blobs().PutPart("u", 11, "stranded").ok());  // "world" at 6 was lost
  record.set_received_bytes(19);                          // the record counted all three
  ASSERT_TRUE(storage_->uploads().Put("u", record).ok());
  v1::UploadRecord whole;
  ASSERT_TRUE(storage_->uploads().Put("whole", whole).ok());
  ASSERT_TRUE(Append("whole", whole, "intact").ok());

  auto repaired = storage_->uploads().RepairPartial();
  ASSERT_TRUE(repaired.ok()) << repaired.status();
  EXPECT_EQ(*repaired, 1);
  EXPECT_EQ((*storage_->uploads().Get("u"))->received_bytes(), 6);
  EXPECT_EQ((*storage_->uploads().Get("whole"))->received_bytes(), 6);
  v1::UploadRecord resumed = **storage_->uploads().Get("u");
  ASSERT_TRUE(Append("u", resumed, "world, again").ok());
  EXPECT_EQ(ReadAll(*storage_->uploads().ReadRaw("u", resumed)), "hello world, again");
  ASSERT_TRUE(blobs().FinishParts("u").ok());
}

TEST_P(StorageContractTest, SegmentsReadBackBlockByBlockAndDeleteWhole) {
  auto writer = blobs().NewSegment("p1");
  ASSERT_TRUE(writer->Append("b1", "one").ok());
  ASSERT_TRUE(writer->Append("b2", std::string(1 << 20, 'x')).ok());
  ASSERT_TRUE(writer->Finish().ok());
  auto other = blobs().NewSegment("p10");  // a name that extends another must stay apart
  ASSERT_TRUE(other->Append("b1", "ten").ok());
  ASSERT_TRUE(other->Finish().ok());
  auto reader = blobs().OpenSegment("p1");
  EXPECT_EQ(*reader->Read("b1"), "one");
  EXPECT_EQ(reader->Read("b2")->size(), size_t{1} << 20);
  EXPECT_TRUE(absl::IsNotFound(reader->Read("b3").status()));
  std::vector<std::string> names;
  ASSERT_TRUE(blobs().ListSegments([&](std::string_view name) {
    names.emplace_back(name);
    return true;
  }).ok());
  EXPECT_EQ(names, (std::vector<std::string>{"p1", "p10"}));
  ASSERT_TRUE(blobs().DeleteSegment("p1", Reclaim::kNow).ok());
  EXPECT_TRUE(absl::IsNotFound(blobs().OpenSegment("p1")->Read("b1").status()));
  EXPECT_EQ(*blobs().OpenSegment("p10")->Read("b1"), "ten");
}

v1::ProfileInfo Profile(const std::string& id, const std::string& upload_id) {
  v1::ProfileInfo info;
  info.set_profile_id(id);
  info.set_job("j");
  info.set_upload_id(upload_id);
  info.set_ingested_at_ns(1000);
  return info;
}

TEST_P(StorageContractTest, AProfileCommitsOnceAndOnlyOverTheUploadItRead) {
  v1::UploadRecord record;
  ASSERT_TRUE(storage_->uploads().Put("u", record).ok());
  v1::ProfileSummary summary;
  summary.set_events(7);
  ASSERT_TRUE(storage_->profiles().Commit(Profile("p", "u"), summary).ok());
  EXPECT_EQ(storage_->profiles().GetSummary("p")->events(), 7);
  EXPECT_EQ((*storage_->uploads().Get("u"))->profile_id(), "p");
  EXPECT_TRUE(absl::IsAborted(storage_->profiles().Commit(Profile("p", ""), summary)))
      << "a profile id is committed once";
  ASSERT_EQ(storage_->profiles().List(v1::ListProfilesRequest())->profiles.size(), 1u);
}

TEST_P(StorageContractTest, OrphanBlobsAreCollectedAndOwnedOnesStay) {
  v1::UploadRecord record;
  ASSERT_TRUE(storage_->uploads().Put("kept-upload", record).ok());
  ASSERT_TRUE(Append("kept-upload", record, "bytes").ok());
  auto kept = storage_->events().NewWriter("kept");
  ASSERT_TRUE(kept->PutBlock(0, 0, 0, "block").ok());
  ASSERT_TRUE(kept->PutDirectory("dir").ok());
  ASSERT_TRUE(storage_->profiles().Commit(Profile("kept", "kept-upload"), v1::ProfileSummary()).ok());
  // What a process that died mid-ingest or mid-delete leaves: blobs with no catalog record.
  auto lost = storage_->events().NewWriter("lost");
  ASSERT_TRUE(lost->PutBlock(0, 0, 0, "block").ok());
  ASSERT_TRUE(lost->PutDirectory("dir").ok());
  ASSERT_TRUE(blobs().PutObject("lost", "summary").ok());
  ASSERT_TRUE(blobs().PutPart("lost-upload", 0, "bytes").ok());

  auto collected = storage_->CollectOrphans();
  ASSERT_TRUE(collected.ok()) << collected.status();
  EXPECT_EQ(*collected, 3);
  EXPECT_EQ(storage_->engine().CountEventBlocks(), 2) << "the kept profile's block and directory";
  EXPECT_TRUE(absl::IsNotFound(blobs().GetObject("lost").status()));
  EXPECT_TRUE(storage_->profiles().GetSummary("kept").ok());
  EXPECT_EQ(ReadAll(*storage_->uploads().ReadOriginal("kept-upload", 5)), "bytes");
  EXPECT_EQ(*storage_->CollectOrphans(), 0);
}

// A cluster's collector: a blob goes only when it was unowned in the previous pass too, so an
// ingest in flight (blobs first, catalog record last) is never collected under it.
TEST_P(StorageContractTest, TheTwoPassCollectorTakesOnlyBlobsOrphanedInBothPasses) {
  ASSERT_TRUE(blobs().PutObject("early", "summary").ok());
  Storage::Orphans seen;
  EXPECT_EQ(*storage_->CollectOrphansSeenTwice(&seen), 0) << "the first pass only notes";
  EXPECT_TRUE(blobs().GetObject("early").ok());
  ASSERT_TRUE(blobs().PutObject("late", "summary").ok());
  auto in_flight = storage_->events().NewWriter("late");  // its profile commits after the pass
  ASSERT_TRUE(in_flight->PutDirectory("dir").ok());
  EXPECT_EQ(*storage_->CollectOrphansSeenTwice(&seen), 1) << "'early' was an orphan in both passes";
  EXPECT_TRUE(absl::IsNotFound(blobs().GetObject("early").status()));
  ASSERT_TRUE(storage_->profiles().Commit(Profile("late", ""), v1::ProfileSummary()).ok());
  EXPECT_EQ(*storage_->CollectOrphansSeenTwice(&seen), 0) << "'late' got its owner in between";
  EXPECT_TRUE(storage_->profiles().GetSummary("late").ok());
}

TEST_P(StorageContractTest, ARecordThatDoesNotParseIsReportedNotSkippedInSilence) {
  ASSERT_TRUE(storage_->agents().Put([] {
    v1::AgentInfo a;
    a.set_node("good");
    return a;
  }()).ok());
  CatalogWrite damage;
  damage.Put(CatalogTable::kAgents, "bad", "\xff\xff\xff");
  ASSERT_TRUE(catalog().Commit(damage).ok());
  auto agents = storage_->agents().List();
  ASSERT_TRUE(agents.ok());
  ASSERT_EQ(agents->size(), 1u);
  EXPECT_EQ((*agents)[0].node(), "good");
  EXPECT_EQ(storage_->UnreadableRecords(), 1);
}

#ifdef FLEETPROF_CLUSTER_CONTRACT
INSTANTIATE_TEST_SUITE_P(Engines, StorageContractTest, ::testing::Values("etcd_s3", "etcd_file"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
#else
INSTANTIATE_TEST_SUITE_P(Engines, StorageContractTest, ::testing::Values("rocksdb", "memory"),
                         [](const ::testing::TestParamInfo<std::string>& info) { return info.param; });
#endif

}  // namespace
}  // namespace fleetprof
