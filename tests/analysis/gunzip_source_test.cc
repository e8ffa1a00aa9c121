// MaybeGunzip: plain bytes pass through; gzip (several members too) inflates on the worker
// thread; damaged streams fail with the compressed byte offset.

#include <cstdio>
#include <fstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/byte_source.h"
#include "analysis/trace_analyzer.h"
#include "common/threads.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using testing::Gzip;
using ::testing::HasSubstr;

// Reads `source` to the end in reads of `n` bytes.
absl::StatusOr<std::string> ReadAll(ByteSource& source, size_t n = 4096) {
  std::string out;
  std::string buf(n, '\0');
  for (;;) {
    absl::StatusOr<size_t> got = source.Read(buf.data(), buf.size());
    if (!got.ok()) return got.status();
    if (*got == 0) return out;
    out.append(buf.data(), *got);
  }
}

absl::StatusOr<std::string> Gunzip(const std::string& bytes, size_t inner_chunk = SIZE_MAX) {
  std::unique_ptr<ByteSource> source =
      MaybeGunzip(OpenStringSource("t.json.gz", bytes, inner_chunk));
  return ReadAll(*source);
}

// Text big enough to span several inflate buffers, and not trivially compressible.
std::string SampleText(size_t bytes) {
  std::string text;
  uint64_t x = 88172645463325252ull;
  while (text.size() < bytes) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    absl::StrAppend(&text, "{\"ts\": ", x % 1000000, ".", x % 997, "},\n");
  }
  return text;
}

TEST(MaybeGunzip, PassesPlainBytesThrough) {
  EXPECT_EQ(*Gunzip("{\"traceEvents\": []}"), "{\"traceEvents\": []}");
  EXPECT_EQ(*Gunzip(""), "");
  EXPECT_EQ(*Gunzip("\x1f"), "\x1f");  // one byte of the magic is not gzip
  EXPECT_EQ(*Gunzip("[1]", 1), "[1]");
}

TEST(MaybeGunzip, InflatesLargeStreamsInAnyReadSize) {
  const std::string text = SampleText(3 << 20);
  const std::string gz = Gzip(text);
  EXPECT_EQ(*Gunzip(gz), text);
  std::unique_ptr<ByteSource> source = MaybeGunzip(OpenStringSource("t.gz", gz, 777));
  EXPECT_EQ(*ReadAll(*source, 1), text);
}

TEST(MaybeGunzip, InflatesConcatenatedMembers) {
  const std::string a = SampleText(300000);
  const std::string b = "second member";
  const std::string c = SampleText(1000);
  EXPECT_EQ(*Gunzip(Gzip(a) + Gzip(b) + Gzip("") + Gzip(c)), a + b + c);
  EXPECT_EQ(*Gunzip(Gzip(a) + Gzip(b), 3), a + b);
}

TEST(MaybeGunzip, ToleratesZeroPaddingAfterTheLastMember) {
  EXPECT_EQ(*Gunzip(Gzip("abc") + std::string(512, '\0')), "abc");
}

TEST(MaybeGunzip, RejectsTrailingGarbage) {
  absl::StatusOr<std::string> out = Gunzip(Gzip("abc") + "junk");
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("trailing data after gzip stream at compressed byte"));
}

TEST(MaybeGunzip, RejectsTruncatedGzipWithOffset) {
  const std::string gz = Gzip(SampleText(1 << 20));
  for (size_t cut : {size_t{5}, size_t{20}, gz.size() / 2, gz.size() - 4, gz.size() - 1}) {
    absl::StatusOr<std::string> out = Gunzip(gz.substr(0, cut));
    ASSERT_FALSE(out.ok()) << "cut at " << cut;
    EXPECT_THAT(
        out.status().message(),
        HasSubstr(absl::StrCat("t.json.gz: truncated gzip stream at compressed byte ", cut)));
  }
}

TEST(MaybeGunzip, RejectsCorruptGzipWithOffset) {
  std::string gz = Gzip(SampleText(1 << 20));
  std::string broken = gz;
  for (size_t i = 100; i < 140; ++i) broken[i] = static_cast<char>(broken[i] ^ 0x5a);
  absl::StatusOr<std::string> out = Gunzip(broken);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(),
              HasSubstr("t.json.gz: corrupt gzip stream at compressed byte "));

  std::string bad_crc = gz;
  bad_crc[bad_crc.size() - 6] ^= 1;  // inside the CRC-32 of the trailer
  out = Gunzip(bad_crc);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("CRC-32 mismatch"));

  std::string bad_method = gz;
  bad_method[2] = 7;  // compression method other than deflate
  out = Gunzip(bad_method);
  ASSERT_FALSE(out.ok());
  EXPECT_THAT(out.status().message(), HasSubstr("at compressed byte"));
}

TEST(MaybeGunzip, StopsCleanlyWhenTheReaderLeavesEarly) {
  const std::string gz = Gzip(SampleText(4 << 20));
  for (int i = 0; i < 20; ++i) {
    std::unique_ptr<ByteSource> source = MaybeGunzip(OpenStringSource("t.gz", gz));
    char buf[100];
    ASSERT_TRUE(source->Read(buf, sizeof(buf)).ok());
    // Destroying the source mid-stream must join the worker, not hang or crash.
  }
}

// Before: the inflate thread's failed start was RESOURCE_EXHAUSTED, which ingest takes for a
// trace over a limit and drops the upload. Out of threads is transient: UNAVAILABLE.
TEST(MaybeGunzip, AThreadThatCannotStartIsUnavailableNotOverALimit) {
  FailThreadStartsForTesting(1);
  std::unique_ptr<ByteSource> source = MaybeGunzip(OpenStringSource("t.gz", Gzip(SampleText(1 << 16))));
  absl::StatusOr<std::string> read = ReadAll(*source);
  FailThreadStartsForTesting(0);
  EXPECT_EQ(read.status().code(), absl::StatusCode::kUnavailable) << read.status();
  EXPECT_THAT(read.status().message(), HasSubstr("cannot start the inflate thread of t.gz"));
  // The next one finds its thread.
  EXPECT_EQ(Gunzip(Gzip("again")).value_or("failed"), "again");
}

TEST(MaybeGunzip, KeepsTheInnerName) {
  std::unique_ptr<ByteSource> source = MaybeGunzip(OpenStringSource("upload-17", Gzip("x")));
  EXPECT_EQ(source->name(), "upload-17");
}

TEST(MaybeGunzip, AnalyzeTraceFileReportsTruncatedGzipWithOffset) {
  const std::string corpus = fleetprof::testing::CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(corpus);
  std::string gz = fleetprof::testing::ReadSmallFile(corpus);
  const size_t cut = gz.size() / 2;
  const std::string path = ::testing::TempDir() + "/truncated_trace.json.gz";
  {
    std::ofstream out(path, std::ios::binary);
    out.write(gz.data(), static_cast<std::streamsize>(cut));
  }
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(path);
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(),
              HasSubstr(absl::StrCat(path, ": truncated gzip stream at compressed byte ", cut)));
  std::remove(path.c_str());
}

}  // namespace
}  // namespace fleetprof::analysis
