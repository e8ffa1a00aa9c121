#include "storage/profile_store.h"

#include <cstdlib>

#include "gtest/gtest.h"

namespace fleetprof {
namespace {

class ProfileStoreTest : public ::testing::Test {
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
    auto opened = ProfileStore::Open(dir_);
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
  std::unique_ptr<ProfileStore> store_;
};

TEST_F(ProfileStoreTest, ListsNewestFirstAndPagesWithoutGapsOrRepeats) {
  for (int i = 0; i < 25; ++i) {
    ASSERT_TRUE(store_->CommitProfile(Info("p" + std::to_string(i), i % 2 ? "odd" : "even", 1000 + i),
                                      v1::ProfileSummary())
                    .ok());
  }
  v1::ListProfilesRequest request;
  request.set_page_size(10);
  std::vector<std::string> seen;
  do {
    auto page = store_->ListProfiles(request);
    ASSERT_TRUE(page.ok());
    for (const auto& p : page->profiles) seen.push_back(p.profile_id());
    request.set_page_token(page->next_page_token);
  } while (!request.page_token().empty());
  ASSERT_EQ(seen.size(), 25u);
  EXPECT_EQ(seen.front(), "p24");
  EXPECT_EQ(seen.back(), "p0");

  v1::ListProfilesRequest odd;
  odd.set_job("odd");
  auto page = store_->ListProfiles(odd);
  ASSERT_TRUE(page.ok());
  EXPECT_EQ(page->profiles.size(), 12u);
}

TEST_F(ProfileStoreTest, PagingWithSeveralLabelsKeepsItsIndexAcrossPages) {
  for (int i = 0; i < 25; ++i) {
    v1::ProfileInfo info = Info("q" + std::to_string(i), "j", 2000 + i);
    (*info.mutable_labels())["team"] = "infra";
    (*info.mutable_labels())["zone"] = i % 5 == 0 ? "b" : "a";
    ASSERT_TRUE(store_->CommitProfile(info, v1::ProfileSummary()).ok());
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
    auto page = store_->ListProfiles(page_request);
    ASSERT_TRUE(page.ok()) << page.status();
    found += static_cast<int>(page->profiles.size());
    request.set_page_token(page->next_page_token);
  } while (!request.page_token().empty());
  EXPECT_EQ(found, 20);
}

TEST_F(ProfileStoreTest, PartialUploadIsInvisibleAndResumable) {
  v1::UploadRecord record;
  record.mutable_metadata()->set_upload_id("u1");
  ASSERT_TRUE(store_->PutUpload("u1", record).ok());
  ASSERT_TRUE(store_->AppendRaw("u1", record, "hello ").ok());
  ASSERT_TRUE(store_->AppendRaw("u1", record, "world").ok());
  Reopen();
  auto stored = store_->GetUpload("u1");
  ASSERT_TRUE(stored.ok() && stored->has_value());
  EXPECT_EQ((*stored)->received_bytes(), 11);
  auto raw = store_->ReadRaw("u1");
  std::string text(64, '\0');
  size_t have = 0;
  while (true) {
    auto got = raw->Read(text.data() + have, text.size() - have);
    ASSERT_TRUE(got.ok());
    if (*got == 0) break;
    have += *got;
  }
  EXPECT_EQ(text.substr(0, have), "hello world");
  auto list = store_->ListProfiles(v1::ListProfilesRequest());
  EXPECT_TRUE(list->profiles.empty());
  ASSERT_TRUE(store_->AbortUpload("u1").ok());
  EXPECT_FALSE(store_->GetUpload("u1")->has_value());
}

TEST_F(ProfileStoreTest, CommitMarksTheUploadCommitted) {
  v1::UploadRecord record;
  ASSERT_TRUE(store_->PutUpload("u2", record).ok());
  v1::ProfileInfo info = Info("p1", "j", 5);
  info.set_upload_id("u2");
  (*info.mutable_labels())["team"] = "infra";
  ASSERT_TRUE(store_->CommitProfile(info, v1::ProfileSummary()).ok());
  EXPECT_EQ((*store_->GetUpload("u2"))->profile_id(), "p1");
  v1::ListProfilesRequest by_label;
  (*by_label.mutable_labels())["team"] = "infra";
  EXPECT_EQ(store_->ListProfiles(by_label)->profiles.size(), 1u);
  (*by_label.mutable_labels())["team"] = "other";
  EXPECT_EQ(store_->ListProfiles(by_label)->profiles.size(), 0u);
}

TEST_F(ProfileStoreTest, StaleUploadsAreCleaned) {
  v1::UploadRecord old_record;
  old_record.set_updated_at_ns(100);
  ASSERT_TRUE(store_->PutUpload("old", old_record).ok());
  v1::UploadRecord fresh;
  fresh.set_updated_at_ns(1000);
  ASSERT_TRUE(store_->PutUpload("fresh", fresh).ok());
  auto cleaned = store_->CleanStaleUploads(500);
  ASSERT_TRUE(cleaned.ok());
  EXPECT_EQ(*cleaned, 1);
  EXPECT_TRUE(store_->GetUpload("fresh")->has_value());
}

TEST_F(ProfileStoreTest, RejectsForeignPageToken) {
  v1::ListProfilesRequest request;
  request.set_page_token("zz");
  EXPECT_FALSE(store_->ListProfiles(request).ok());
}

}  // namespace
}  // namespace fleetprof
