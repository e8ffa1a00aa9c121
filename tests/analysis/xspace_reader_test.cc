// XSpace reading on hand-encoded protobufs: picosecond arithmetic, which lines count as
// device activity, tolerance of field order and unknown fields, and clear errors for
// truncated or random bytes.

#include <random>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/analysis/xspace_builder.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using testing::AnalyzeXSpace;
using testing::Event;
using testing::FindDevice;
using testing::FindKernel;
using ::testing::HasSubstr;
using testing::Line;
using testing::Plane;
using testing::Proto;
using testing::Space;

TraceSummary Analyze(const std::string& bytes) {
  absl::StatusOr<TraceSummary> summary = AnalyzeXSpace(bytes);
  EXPECT_TRUE(summary.ok()) << summary.status();
  return summary.ok() ? *summary : TraceSummary{};
}

TEST(XSpaceReader, SumsPicosecondsAndFloorsOncePerValue) {
  TraceSummary s = Analyze(
      Space({Plane("/device:GPU:0",
                   {Line("Stream #14(Compute)", 1000,
                         {Event(1, 0, 1500), Event(1, 10000, 1500), Event(1, 20000, 1500)})},
                   {{1, "volta_sgemm"}})}));
  const KernelSummary* k = FindKernel(s, "volta_sgemm");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->count, 3);
  EXPECT_EQ(k->total_ns, 4);  // 4500 ps; flooring each event first would give 3
  EXPECT_EQ(k->min_ns, 1);
  const DeviceSummary* d = FindDevice(s, "/device:GPU:0");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->start_ns, 1000);
  EXPECT_EQ(d->end_ns, 1021);  // 1000 ns + 21.5 ns, floored
  EXPECT_EQ(d->busy_ns, 4);
  EXPECT_EQ(d->compute_ns, 4);
  EXPECT_EQ(s.format, TraceFormat::kXSpace);
}

TEST(XSpaceReader, KeepsEpochTimestampsExact) {
  const int64_t t0 = 1712195495505582988;
  TraceSummary s = Analyze(
      Space({Plane("/device:GPU:3", {Line("Stream #7", t0, {Event(5, 1500, 2500)})}, {{5, "k"}})}));
  const DeviceSummary* d = FindDevice(s, "/device:GPU:3");
  ASSERT_NE(d, nullptr);
  EXPECT_EQ(d->start_ns, t0 + 1);
  EXPECT_EQ(d->end_ns, t0 + 4);
  EXPECT_EQ(d->busy_ns, 2);
}

TEST(XSpaceReader, ClassifiesStreamEventsByName) {
  TraceSummary s = Analyze(Space(
      {Plane("/device:GPU:0",
             {Line("Stream #1", 0, {Event(1, 0, 1000), Event(2, 0, 2000), Event(3, 5000, 1000)})},
             {{1, "MemcpyHtoD"}, {2, "ncclKernel_AllReduce"}, {3, "Memset"}})}));
  EXPECT_EQ(FindKernel(s, "MemcpyHtoD")->kind, ActivityKind::kMemory);
  EXPECT_EQ(FindKernel(s, "Memset")->kind, ActivityKind::kMemory);
  EXPECT_EQ(FindKernel(s, "ncclKernel_AllReduce")->kind, ActivityKind::kCommunication);
  const DeviceSummary* d = FindDevice(s, "/device:GPU:0");
  EXPECT_EQ(d->memory_ns, 2);
  EXPECT_EQ(d->communication_ns, 2);
  EXPECT_EQ(d->busy_ns, 3);
}

TEST(XSpaceReader, CountsXlaOpsOnlyOnPlanesWithoutStreamLines) {
  std::vector<std::pair<int64_t, std::string>> names = {
      {1, "fusion.1"}, {2, "all-reduce.2"}, {3, "gemm"}};
  TraceSummary s = Analyze(Space({
      Plane("/device:TPU:0",
            {Line("XLA Ops", 0, {Event(1, 0, 3000), Event(2, 3000, 2000)}),
             Line("XLA Modules", 0, {Event(1, 0, 9000)})},
            names),
      // A GPU plane in two messages: the derived XLA Ops line must not double-count even
      // though its Stream line comes in the second message.
      Plane("/device:GPU:0", {Line("XLA Ops", 0, {Event(1, 0, 5000)})}, names),
      Plane("/device:GPU:0", {Line("Stream #3", 0, {Event(3, 0, 1000)})}, names),
      Plane("/host:CPU", {Line("Stream #1", 0, {Event(3, 0, 1000)})}, names),
  }));
  const DeviceSummary* tpu = FindDevice(s, "/device:TPU:0");
  ASSERT_NE(tpu, nullptr);
  EXPECT_EQ(tpu->events, 2);
  EXPECT_EQ(tpu->compute_ns, 3);
  EXPECT_EQ(tpu->communication_ns, 2);
  EXPECT_EQ(FindKernel(s, "all-reduce.2")->kind, ActivityKind::kCommunication);
  const DeviceSummary* gpu = FindDevice(s, "/device:GPU:0");
  ASSERT_NE(gpu, nullptr);
  EXPECT_EQ(gpu->events, 1);
  EXPECT_EQ(FindKernel(s, "fusion.1")->count, 1);  // the TPU's only
  EXPECT_EQ(s.devices.size(), 2u);                 // the host plane is no device
}

TEST(XSpaceReader, AcceptsAnyFieldOrderAndSkipsUnknownFields) {
  // Line name after its events, metadata entry with value before key, plane name last,
  // and unknown fields of every wire type at every level.
  // Stats (XEvent 4, XEventMetadata 5) are read since the XLA op view: they must be XStats.
  Proto stat = Proto().Varint(1, 3).Fixed32(9, 0).Varint(4, 5).Bytes(12, "x");
  Proto event = Event(9, 2000, 3000).Fixed32(15, 1).Message(4, stat).Varint(20, 1);
  Proto line = Proto().Varint(3, 100).Message(4, event).Fixed64(30, 0).Bytes(2, "Stream #2");
  Proto metadata_stat = Proto().Bytes(5, "v").Fixed64(13, 0).Varint(1, 4);
  Proto entry =
      Proto().Message(2, Proto().Bytes(2, "late_kernel").Message(5, metadata_stat)).Varint(1, 9);
  Proto plane = Proto()
                    .Message(3, line)
                    .Message(4, entry)
                    .Message(5, Proto().Varint(1, 1))
                    .Fixed32(99, 7)
                    .Bytes(2, "/device:GPU:5");
  std::string bytes = Proto().Message(1, plane).Bytes(4, "worker-0").Bytes(2, "an error").bytes();
  TraceSummary s = Analyze(bytes);
  const KernelSummary* k = FindKernel(s, "late_kernel");
  ASSERT_NE(k, nullptr);
  EXPECT_EQ(k->total_ns, 3);
  EXPECT_EQ(FindDevice(s, "/device:GPU:5")->start_ns, 102);
  EXPECT_EQ(s.metadata["hostname"], "worker-0");
  EXPECT_EQ(s.events, 1);
}

TEST(XSpaceReader, ReadsStepsLines) {
  TraceSummary s =
      Analyze(Space({Plane("/device:GPU:0",
                           {Line("Steps", 0, {Event(1, 0, 10000), Event(2, 10000, 10000)}),
                            Line("Stream #1", 0, {Event(3, 2000, 4000), Event(3, 12000, 1000)})},
                           {{1, "5"}, {2, "6"}, {3, "k"}})}));
  ASSERT_EQ(s.steps.size(), 2u);
  EXPECT_EQ(s.steps[0].step, 5);
  EXPECT_EQ(s.steps[0].device_busy_ns, 4);
  EXPECT_EQ(s.steps[1].device_busy_ns, 1);
  EXPECT_EQ(s.steps[1].device_idle_ns, 9);
}

TEST(XSpaceReader, SkipsNegativeDurations) {
  TraceSummary s = Analyze(Space(
      {Plane("/device:GPU:0",
             {Line("Stream #1", 0, {Event(1, 0, static_cast<uint64_t>(-5)), Event(1, 0, 1000)})},
             {{1, "k"}})}));
  EXPECT_EQ(s.skipped_events, 1);
  EXPECT_EQ(FindKernel(s, "k")->count, 1);
}

TEST(XSpaceReader, RejectsTruncatedXSpaceWithOffset) {
  const std::string path = fleetprof::testing::CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
  FLEETPROF_REQUIRE_PATH(path);
  const std::string bytes = testing::ReadDecompressed(path);
  for (size_t cut : {size_t{1}, size_t{100}, bytes.size() / 2, bytes.size() - 1}) {
    absl::StatusOr<TraceSummary> summary = AnalyzeXSpace(bytes.substr(0, cut));
    ASSERT_FALSE(summary.ok()) << "cut at " << cut;
    EXPECT_THAT(summary.status().message(),
                HasSubstr(absl::StrCat("test.xplane.pb: unexpected end of input at byte ", cut,
                                       ", expected")));
  }
}

TEST(XSpaceReader, RejectsLengthsThatOverrunTheirMessage) {
  // A line claiming 1000 bytes inside a plane of a few bytes.
  Proto plane = Proto().Bytes(2, "/device:GPU:0").Raw(std::string("\x1a\xe8\x07", 3));
  absl::StatusOr<TraceSummary> summary = AnalyzeXSpace(Proto().Message(1, plane).bytes());
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("runs past the end of its XPlane"));
  EXPECT_THAT(summary.status().message(), HasSubstr("invalid XSpace at byte 20"));
}

TEST(XSpaceReader, RejectsGroupWireTypesAndFieldZero) {
  absl::StatusOr<TraceSummary> summary = AnalyzeXSpace(std::string("\x0b", 1));  // field 1, group
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("unsupported wire type 3"));
  summary = AnalyzeXSpace(std::string("\x02\x00", 2));
  ASSERT_FALSE(summary.ok());
  EXPECT_THAT(summary.status().message(), HasSubstr("invalid field number 0"));
}

TEST(XSpaceReader, RejectsRandomBytesWithClearError) {
  for (uint32_t seed = 1; seed <= 50; ++seed) {
    std::mt19937 rng(seed);
    std::string bytes(4096, '\0');
    for (char& c : bytes) c = static_cast<char>(rng());
    absl::StatusOr<TraceSummary> summary = AnalyzeXSpace(bytes);
    ASSERT_FALSE(summary.ok()) << "seed " << seed;
    EXPECT_THAT(summary.status().message(), HasSubstr("test.xplane.pb: "));
    EXPECT_THAT(summary.status().message(), HasSubstr(" at byte "));
  }
}

// Was "an empty space" until issue 21: any bytes that decode as protobuf fields (none, a
// hostname only, a JSON file renamed .xplane.pb) were stored as an empty profile.
TEST(XSpaceReader, InputWithoutAnyPlaneIsNoTrace) {
  for (const std::string& bytes : {std::string(), Proto().Bytes(4, "host").bytes()}) {
    absl::StatusOr<TraceSummary> summary = AnalyzeXSpace(bytes);
    ASSERT_FALSE(summary.ok());
    EXPECT_TRUE(absl::IsInvalidArgument(summary.status())) << summary.status();
    EXPECT_NE(summary.status().message().find("no XPlane"), absl::string_view::npos) << summary.status();
  }
}

}  // namespace
}  // namespace fleetprof::analysis
