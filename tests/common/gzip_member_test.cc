// Upload chunks as gzip members: what the client makes, the server checks before it stores or
// analyses a byte of it, and everything else (any gzip tool) reads as a .gz file.

#include "common/gzip_member.h"

#include <cstdint>
#include <random>
#include <string>

#include "analysis/byte_source.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

std::string RandomBytes(size_t n) {
  std::mt19937_64 rng(7);
  std::string out(n, '\0');
  for (char& c : out) c = static_cast<char>(rng());
  return out;
}

std::string Json(size_t n) {
  std::string out;
  for (int i = 0; out.size() < n; ++i) {
    out += "{\"ph\": \"X\", \"name\": \"aten::mm\", \"ts\": " + std::to_string(1000 + i * 7) + ", \"dur\": 3},\n";
  }
  out.resize(n);
  return out;
}

TEST(GzipMember, RoundTripsTextBinaryAndNothingWithinItsBound) {
  for (const std::string& plain : {std::string(), Json(1 << 20), RandomBytes(1 << 20), std::string(3, 'x')}) {
    const std::string member = GzipMember(plain);
    EXPECT_TRUE(LooksGzipped(member));
    EXPECT_LE(member.size(), GzipMemberBound(plain.size())) << "incompressible bytes grow by little";
    std::string back;
    ASSERT_TRUE(GunzipMember(member, plain.size(), &back).ok());
    EXPECT_EQ(back, plain);
  }
  EXPECT_LT(GzipMember(Json(1 << 20)).size(), (1u << 20) / 5) << "JSON shrinks";
}

TEST(GzipMember, ManyMembersInARowReadAsOneGzipFile) {
  const std::string a = Json(100000), b = Json(5000);
  auto source = analysis::MaybeGunzip(analysis::OpenStringSource("two.gz", GzipMember(a) + GzipMember(b)));
  std::string all, buffer(4096, '\0');
  for (;;) {
    auto got = source->Read(buffer.data(), buffer.size());
    ASSERT_TRUE(got.ok()) << got.status();
    if (*got == 0) break;
    all.append(buffer, 0, *got);
  }
  EXPECT_EQ(all, a + b);
}

TEST(GzipMember, RefusesDamageTruncationTrailingBytesAndBombs) {
  const std::string plain = Json(200000);
  const std::string member = GzipMember(plain);
  std::string out = "left over";
  std::string damaged = member;
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x40);
  EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember(damaged, 1 << 20, &out)));
  EXPECT_TRUE(out.empty());
  std::string bad_crc = member;
  bad_crc[bad_crc.size() - 6] = static_cast<char>(bad_crc[bad_crc.size() - 6] ^ 1);  // in the CRC-32
  EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember(bad_crc, 1 << 20, &out)));
  EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember(member.substr(0, member.size() - 3), 1 << 20, &out)));
  EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember(member + "x", 1 << 20, &out)));
  EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember(member + member, 1 << 20, &out))) << "exactly one member";
  EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember(plain, 1 << 20, &out))) << "not gzip at all";
  EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember("", 1 << 20, &out)));

  EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember(member.substr(0, 6), 1 << 20, &out))) << "cut in the header";
  EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember(member.substr(0, member.size() / 2), 1 << 20, &out)))
      << "cut in the deflate stream";
  // The trailer's length field is only a hint for the output's size: one that lies, low or
  // high, is refused by the check of the whole member and never sizes past the cap.
  for (const uint32_t lie : {uint32_t{1}, uint32_t{0xFFFFFFFFu}}) {
    std::string lying = member;
    for (int i = 0; i < 4; ++i) lying[lying.size() - 4 + i] = static_cast<char>((lie >> (8 * i)) & 0xFF);
    EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember(lying, 1 << 20, &out))) << lie;
    EXPECT_TRUE(out.empty());
  }

  // 64 MiB of zeros in about 64 KiB: inflation stops one byte past the cap.
  const std::string bomb = GzipMember(std::string(64 << 20, '\0'));
  EXPECT_LT(bomb.size(), 1u << 20);
  EXPECT_TRUE(absl::IsResourceExhausted(GunzipMember(bomb, 1 << 20, &out)));
  EXPECT_TRUE(out.empty());
  EXPECT_TRUE(absl::IsResourceExhausted(GunzipMember(member, plain.size() - 1, &out)));
  EXPECT_TRUE(GunzipMember(member, plain.size(), &out).ok()) << "exactly the cap is allowed";
  EXPECT_EQ(out, plain);
}


TEST(GzipMember, ADeflaterMakesTheSameMembersOneAfterAnother) {
  GzipDeflater deflater;
  // Large, empty, small, incompressible: the buffers it keeps from one member serve the next.
  for (const std::string& plain : {Json(1 << 20), std::string(), Json(3000), RandomBytes(1 << 20), Json(1 << 20)}) {
    const std::string member = deflater.Member(plain);
    EXPECT_EQ(member, GzipMember(plain));
    EXPECT_LE(member.size(), GzipMemberBound(plain.size()));
    std::string back;
    ASSERT_TRUE(GunzipMember(member, plain.size(), &back).ok());
    EXPECT_EQ(back, plain);
  }
}

TEST(GzipMember, InflatesOverABufferUsedBefore) {
  // The server inflates each chunk into the buffer of one the analysis has read: longer,
  // shorter or the same length as the new content, and full of the old bytes.
  const std::string big = Json(1 << 20), small = Json(777);
  std::string buffer = RandomBytes(2 << 20);
  ASSERT_TRUE(GunzipMember(GzipMember(big), 1 << 20, &buffer).ok());
  EXPECT_EQ(buffer, big);
  ASSERT_TRUE(GunzipMember(GzipMember(small), 1 << 20, &buffer).ok());
  EXPECT_EQ(buffer, small);
  ASSERT_TRUE(GunzipMember(GzipMember(big), 1 << 20, &buffer).ok());
  EXPECT_EQ(buffer, big);
  // The cap holds whatever the buffer's length: a reused 2 MiB buffer inflates no further.
  buffer = RandomBytes(2 << 20);
  EXPECT_TRUE(absl::IsResourceExhausted(GunzipMember(GzipMember(std::string(3 << 20, 'a')), 1 << 20, &buffer)));
  EXPECT_TRUE(buffer.empty());
  buffer = RandomBytes(100);
  std::string damaged = GzipMember(big);
  damaged[damaged.size() / 2] = static_cast<char>(damaged[damaged.size() / 2] ^ 0x40);
  EXPECT_TRUE(absl::IsInvalidArgument(GunzipMember(damaged, 1 << 20, &buffer)));
  EXPECT_TRUE(buffer.empty());
}

}  // namespace
}  // namespace fleetprof
