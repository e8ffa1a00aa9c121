// The blob store on S3 through a proxy that injects what object storage does under load
// (503 SlowDown, resets, bodies cut short, slow answers): every operation is retried to the
// right answer, and when the faults do not stop, the error names the object and the reason and
// nothing half-written becomes visible.

#include <random>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage/cluster/object_blob_store.h"
#include "storage/cluster/s3_client.h"
#include "tests/cluster/cluster_engines.h"
#include "tests/cluster/fault_proxy.h"
#include "tests/test_support.h"

namespace fleetprof::cluster {
namespace {

using testing::Fault;

std::string Random(size_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::string out(n, '\0');
  for (auto& c : out) c = static_cast<char>(rng());
  return out;
}

std::string ReadAll(analysis::ByteSource& source) {
  std::string out;
  char buf[1 << 16];
  while (true) {
    auto n = source.Read(buf, sizeof(buf));
    EXPECT_TRUE(n.ok()) << n.status();
    if (!n.ok() || *n == 0) return out;
    out.append(buf, *n);
  }
}

class ObjectFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH(testing::S3rverPath());
    ASSERT_TRUE(s3rver_.Start());
  }
  std::unique_ptr<ObjectClient> ClientThrough(const testing::FaultProxy& proxy, int attempts) {
    S3Settings settings;
    settings.endpoint = proxy.endpoint();
    settings.access_key = settings.secret_key = "S3RVER";
    settings.max_attempts = attempts;
    settings.part_bytes = 5 << 20;
    return *OpenS3Client({s3rver_.bucket(), "f"}, settings);
  }
  int upstream_port() const { return std::stoi(s3rver_.endpoint().substr(s3rver_.endpoint().rfind(':') + 1)); }

  testing::S3rver s3rver_;
};

TEST_F(ObjectFaultTest, EveryKindOfFaultIsRetriedToTheRightAnswer) {
  // Every third request fails, cycling through the faults; a slow answer now and then.
  testing::FaultProxy proxy(upstream_port(), [](int64_t n) {
    if (n % 3 != 1) return Fault::kNone;
    static constexpr Fault kCycle[] = {Fault::kServiceUnavailable, Fault::kReset, Fault::kTruncatedBody,
                                       Fault::kServiceUnavailable, Fault::kReset, Fault::kTruncatedBody, Fault::kSlow};
    return kCycle[(n / 3) % 7];
  });
  auto client = ClientThrough(proxy, 6);
  auto blobs = NewObjectBlobStore(client.get());

  const std::string summary = Random(300000, 1);
  ASSERT_TRUE(blobs->PutObject("p1", summary).ok());
  EXPECT_EQ(*blobs->GetObject("p1"), summary);

  std::string uploaded;
  for (int i = 0; i < 6; ++i) {
    const std::string part = Random(200000 + i, 10 + i);
    absl::Status put = blobs->PutPart("u1", static_cast<int64_t>(uploaded.size()), part);
    ASSERT_TRUE(put.ok()) << put;
    uploaded += part;
  }
  EXPECT_TRUE(ReadAll(*blobs->ReadParts("u1", static_cast<int64_t>(uploaded.size()))) == uploaded);

  // Incompressible blocks: the segment goes out as a multipart upload of 5 MiB parts.
  auto segment = blobs->NewSegment("p1");
  std::vector<std::string> blocks;
  for (int i = 0; i < 12; ++i) {
    blocks.push_back(Random(1 << 20, 100 + i));
    ASSERT_TRUE(segment->Append(absl::StrCat("b", i), blocks.back()).ok());
  }
  ASSERT_TRUE(segment->Finish().ok());
  auto reader = blobs->OpenSegment("p1");
  for (int i = 0; i < 12; ++i) EXPECT_TRUE(*reader->Read(absl::StrCat("b", i)) == blocks[i]) << i;

  EXPECT_GT(proxy.faults(), 10) << "the proxy injected faults";
}

TEST_F(ObjectFaultTest, FaultsThatDoNotStopNameTheObjectAndLeaveNothingHalfVisible) {
  std::atomic<bool> broken{false};
  testing::FaultProxy proxy(upstream_port(), [&](int64_t) { return broken ? Fault::kServiceUnavailable : Fault::kNone; });
  auto client = ClientThrough(proxy, 3);
  auto blobs = NewObjectBlobStore(client.get());

  broken = true;
  absl::Status put = blobs->PutObject("p2", "summary");
  EXPECT_TRUE(absl::IsUnavailable(put)) << put;
  EXPECT_NE(put.message().find("summaries/p2"), std::string::npos) << put;
  EXPECT_NE(put.message().find("SlowDown"), std::string::npos) << put;

  // A segment whose last part cannot go out is never seen, even once the store recovers.
  broken = false;
  auto segment = blobs->NewSegment("p2");
  for (int i = 0; i < 7; ++i) ASSERT_TRUE(segment->Append(absl::StrCat("b", i), Random(1 << 20, 200 + i)).ok());
  broken = true;
  EXPECT_FALSE(segment->Finish().ok());
  segment.reset();
  broken = false;
  auto read = blobs->OpenSegment("p2")->Read("b0");
  EXPECT_TRUE(absl::IsNotFound(read.status())) << read.status();
  bool listed = false;
  ASSERT_TRUE(blobs->ListSegments([&](std::string_view) { return listed = true, false; }).ok());
  EXPECT_FALSE(listed);
}

}  // namespace
}  // namespace fleetprof::cluster
