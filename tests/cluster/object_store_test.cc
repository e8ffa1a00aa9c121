// The object-storage layer: key words, frames, S3's XML, curl's SigV4 signature against AWS's
// published example, and the S3 client against a real S3 server (s3rver).

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <random>
#include <string>
#include <thread>

#include "absl/strings/str_format.h"
#include "gtest/gtest.h"
#include "storage/cluster/blob_codec.h"
#include "storage/cluster/s3_client.h"
#include "storage/cluster/s3_xml.h"
#include "tests/cluster/cluster_engines.h"
#include "tests/test_support.h"

namespace fleetprof::cluster {
namespace {

TEST(KeyWordTest, EveryNameRoundTripsToUnreservedCharactersOnly) {
  for (std::string name : {std::string(""), std::string("p-1"), std::string("a/b/../c"), std::string("_5f"),
                           std::string("..", 2), std::string("job\0x", 5), std::string("ümlaut space")}) {
    std::string word = EncodeKeyWord(name);
    ASSERT_FALSE(word.empty());
    for (char c : word) EXPECT_TRUE(isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_') << word;
    std::string back;
    ASSERT_TRUE(DecodeKeyWord(word, &back)) << word;
    EXPECT_EQ(back, name);
  }
  std::string out;
  EXPECT_FALSE(DecodeKeyWord("ab_4", &out));
  EXPECT_FALSE(DecodeKeyWord("ab_zz", &out));
}

TEST(BlobFrameTest, RoundTripsAndRefusesDamageAndOversizedClaims) {
  std::string text(100000, 'x');
  for (size_t i = 0; i < text.size(); i += 7) text[i] = static_cast<char>('a' + i % 26);
  std::string frame = Compress(text);
  EXPECT_LT(frame.size(), text.size() / 4);
  EXPECT_EQ(*Decompress(frame, 1 << 20, "t"), text);
  EXPECT_EQ(*FrameContentSize(std::string_view(frame).substr(0, kFrameHeaderMaxBytes)), 100000);
  EXPECT_TRUE(absl::IsDataLoss(Decompress(frame, 1000, "t").status()));  // announces more than allowed
  std::string cut = frame.substr(0, frame.size() - 5);
  EXPECT_TRUE(absl::IsDataLoss(Decompress(cut, 1 << 20, "t").status()));
  std::string flipped = frame;
  flipped[frame.size() / 2] ^= 0x40;
  EXPECT_TRUE(absl::IsDataLoss(Decompress(flipped, 1 << 20, "t").status()));
  EXPECT_TRUE(absl::IsDataLoss(Decompress("not a frame at all", 1 << 20, "t").status()));
}

TEST(S3XmlTest, ReadsAListingPageAndErrors) {
  auto page = ParseListPage(
      "<?xml version=\"1.0\"?><ListBucketResult><Name>b</Name><Prefix>p/</Prefix><IsTruncated>true</IsTruncated>"
      "<Contents><Key>p/a&amp;b</Key><Size>12</Size></Contents><Contents><Key>p/c</Key><Size>0</Size></Contents>"
      "<NextContinuationToken>tok+/=</NextContinuationToken></ListBucketResult>");
  ASSERT_TRUE(page.ok()) << page.status();
  ASSERT_EQ(page->entries.size(), 2u);
  EXPECT_EQ(page->entries[0].key, "p/a&b");
  EXPECT_EQ(page->entries[0].size, 12);
  EXPECT_TRUE(page->truncated);
  EXPECT_EQ(page->next_token, "tok+/=");
  EXPECT_FALSE(ParseListPage("<Error><Code>NoSuchBucket</Code></Error>").ok());
  EXPECT_EQ(XmlText("<Error><Code>SlowDown</Code><Message>a &lt; b</Message></Error>", "Message"), "a < b");
}

// One HTTP request read off a loopback socket, answered 200 with an empty body.
class CapturingServer {
 public:
  CapturingServer() {
    fd_ = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t length = sizeof(addr);
    EXPECT_EQ(::bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)), 0);
    EXPECT_EQ(::listen(fd_, 1), 0);
    ::getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &length);
    port_ = ntohs(addr.sin_port);
    thread_ = std::thread([this] {
      int c = ::accept(fd_, nullptr, nullptr);
      if (c < 0) return;
      char buf[4096];
      while (request_.find("\r\n\r\n") == std::string::npos) {
        ssize_t n = ::read(c, buf, sizeof(buf));
        if (n <= 0) break;
        request_.append(buf, static_cast<size_t>(n));
      }
      const char reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\nConnection: close\r\n\r\n";
      (void)!::write(c, reply, sizeof(reply) - 1);
      ::close(c);
    });
  }
  ~CapturingServer() {
    ::shutdown(fd_, SHUT_RDWR);
    thread_.join();
    ::close(fd_);
  }
  int port() const { return port_; }
  std::string Request() {
    thread_.join();
    thread_ = std::thread([] {});
    return request_;
  }

 private:
  int fd_;
  int port_ = 0;
  std::thread thread_;
  std::string request_;
};

// AWS's published Signature V4 example for S3 ("GET Object": examplebucket, test.txt, bytes
// 0-9, 20130524T000000Z, the documentation's example keys) must come out with AWS's signature.
TEST(S3SigningTest, CurlsSignatureMatchesAwsPublishedExample) {
  CapturingServer server;
  S3Settings settings;
  settings.access_key = "AKIAIOSFODNN7EXAMPLE";
  settings.secret_key = "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY";
  settings.max_attempts = 1;
  S3TestHooks hooks;
  hooks.amz_date = "20130524T000000Z";
  hooks.bucket_url = "http://examplebucket.s3.amazonaws.com";
  hooks.connect_to = "examplebucket.s3.amazonaws.com:80:127.0.0.1:" + std::to_string(server.port());
  auto client = OpenS3Client({"examplebucket", ""}, settings, hooks);
  ASSERT_TRUE(client.ok()) << client.status();
  (void)(*client)->Get("test.txt", ByteRange{0, 10});
  std::string request = server.Request();
  EXPECT_NE(request.find("GET /test.txt HTTP/1.1"), std::string::npos) << request;
  EXPECT_NE(request.find("SignedHeaders=host;range;x-amz-content-sha256;x-amz-date"), std::string::npos) << request;
  EXPECT_NE(request.find("Signature=f0e8bdb87c964420e857bd35b5d6ed310bd44f0170aba48dd91039c6036bdb41"),
            std::string::npos)
      << request;
}

class S3ClientTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH(testing::S3rverPath());
    ASSERT_TRUE(s3rver_.Start()) << "s3rver did not start";
    S3Settings settings;
    settings.endpoint = s3rver_.endpoint();
    settings.access_key = "S3RVER";
    settings.secret_key = "S3RVER";
    settings.part_bytes = 5 << 20;
    auto client = OpenS3Client({s3rver_.bucket(), "t/"}, settings);
    ASSERT_TRUE(client.ok()) << client.status();
    client_ = *std::move(client);
  }
  testing::S3rver s3rver_;
  std::unique_ptr<ObjectClient> client_;
};

TEST_F(S3ClientTest, PutGetRangeSizeListDelete) {
  ASSERT_TRUE(client_->Put("a/one", "hello world").ok());
  ASSERT_TRUE(client_->Put("a/two", "").ok());
  ASSERT_TRUE(client_->Put("b/three", "x").ok());
  EXPECT_EQ(*client_->Get("a/one"), "hello world");
  EXPECT_EQ(*client_->Get("a/one", ByteRange{6, 5}), "world");
  EXPECT_EQ(*client_->Get("a/one", ByteRange{6, 100}), "world");  // cut at the end
  EXPECT_EQ(*client_->Size("a/one"), 11);
  EXPECT_TRUE(absl::IsNotFound(client_->Get("a/none").status()));
  EXPECT_TRUE(absl::IsNotFound(client_->Size("a/none").status()));
  std::vector<std::string> keys;
  ASSERT_TRUE(client_->List("a/", [&](std::string_view key, int64_t) {
    keys.emplace_back(key);
    return true;
  }).ok());
  EXPECT_EQ(keys, (std::vector<std::string>{"a/one", "a/two"}));
  ASSERT_TRUE(client_->Delete("a/one").ok());
  ASSERT_TRUE(client_->Delete("a/one").ok());  // nothing left to delete is fine
  EXPECT_TRUE(absl::IsNotFound(client_->Get("a/one").status()));
}

TEST_F(S3ClientTest, ListingsPageThroughMoreThanOneThousandKeys) {
  for (int i = 0; i < 1003; ++i) ASSERT_TRUE(client_->Put(absl::StrFormat("many/%05d", i), "v").ok());
  int seen = 0;
  std::string last;
  absl::Status listed = client_->List("many/", [&](std::string_view key, int64_t) {
    EXPECT_GT(std::string(key), last);
    last = std::string(key);
    ++seen;
    return true;
  });
  ASSERT_TRUE(listed.ok()) << listed;
  EXPECT_EQ(seen, 1003);
}

TEST_F(S3ClientTest, LargeObjectsGoOutAsMultipartUploadsAndAppearOnlyWhenFinished) {
  std::mt19937 rng(7);
  std::string big(11 << 20, '\0');
  for (auto& c : big) c = static_cast<char>(rng());
  {
    auto writer = client_->NewWriter("big");
    ASSERT_TRUE(writer.ok());
    for (size_t at = 0; at < big.size(); at += 999999) {
      ASSERT_TRUE((*writer)->Append(std::string_view(big).substr(at, 999999)).ok());
    }
    EXPECT_TRUE(absl::IsNotFound(client_->Size("big").status()));  // two parts out, not yet visible
    ASSERT_TRUE((*writer)->Finish().ok());
  }
  EXPECT_EQ(*client_->Size("big"), static_cast<int64_t>(big.size()));
  EXPECT_EQ(*client_->Get("big", ByteRange{(5 << 20) - 3, 6}), big.substr((5 << 20) - 3, 6));
  EXPECT_EQ(*client_->Get("big"), big);
  {
    auto abandoned = client_->NewWriter("abandoned");
    ASSERT_TRUE((*abandoned)->Append(big).ok());
  }
  EXPECT_TRUE(absl::IsNotFound(client_->Size("abandoned").status()));
}

TEST_F(S3ClientTest, AMissingBucketIsAClearError) {
  S3Settings settings;
  settings.endpoint = s3rver_.endpoint();
  settings.access_key = settings.secret_key = "S3RVER";
  auto client = OpenS3Client({"no-such-bucket", ""}, settings);
  ASSERT_TRUE(client.ok());
  absl::Status s = (*client)->Put("k", "v");
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.message().find("NoSuchBucket"), std::string::npos) << s;
  EXPECT_NE(s.message().find("no-such-bucket/k"), std::string::npos) << s;
}

}  // namespace
}  // namespace fleetprof::cluster
