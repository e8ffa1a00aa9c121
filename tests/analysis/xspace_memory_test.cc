// XSpace allocator memory on hand-built host planes: MemoryAllocation/MemoryDeallocation
// instants become per-allocator timelines of bytes_allocated, keyed by memory_id or
// allocator_name (str or ref), with the allocator's own peak; other events are ignored.
// Also checked on the TensorFlow corpus trace against values computed independently.

#include <string>

#include "tests/analysis/summary_json_for_test.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/analysis/xspace_builder.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using testing::AnalyzeXSpace;
using testing::Event;
using testing::IntStat;
using testing::Line;
using testing::Metadata;
using testing::Plane;
using testing::Proto;
using testing::RefStat;
using testing::Space;
using testing::StrStat;
using testing::UintStat;

enum : int64_t { kAllocator = 1, kBytes, kPeak, kMemoryId, kRequested, kId };
const std::vector<std::pair<int64_t, std::string>> kStatNames = {{kAllocator, "allocator_name"},
                                                                 {kBytes, "bytes_allocated"},
                                                                 {kPeak, "peak_bytes_in_use"},
                                                                 {kMemoryId, "memory_id"},
                                                                 {kRequested, "requested_bytes"},
                                                                 {kId, "id"},
                                                                 {50, "gpu_host_bfc"}};
enum : int64_t { kAlloc = 1, kDealloc, kProcess, kOtherInstant };
const std::vector<Proto> kEventNames = {
    Metadata(kAlloc, "MemoryAllocation"), Metadata(kDealloc, "MemoryDeallocation"),
    Metadata(kProcess, "ExecutorState::Process"), Metadata(kOtherInstant, "SomeInstant")};

Proto Alloc(int64_t metadata_id, int64_t offset_ps, const std::string& allocator, int64_t bytes,
            int64_t peak) {
  return Event(metadata_id, offset_ps, 0,
               {StrStat(kAllocator, allocator), IntStat(kRequested, 8), IntStat(kBytes, bytes),
                IntStat(kPeak, peak)});
}

TraceSummary Analyze(const std::string& bytes, size_t chunk = SIZE_MAX) {
  absl::StatusOr<TraceSummary> summary = AnalyzeXSpace(bytes, chunk);
  EXPECT_TRUE(summary.ok()) << summary.status();
  return summary.ok() ? *summary : TraceSummary{};
}

const MemorySummary* FindMemory(const TraceSummary& s, const std::string& device) {
  for (const MemorySummary& m : s.memory) {
    if (m.device == device) return &m;
  }
  return nullptr;
}

std::string HostSpace() {
  // Two threads whose events interleave in time; line timestamps in ns, offsets in ps.
  Proto thread_a = Line(
      "tf_Compute/1", 1000,
      {Event(kProcess, 0, 9000, {IntStat(kBytes, 999999), IntStat(kId, 1)}),
       Alloc(kAlloc, 1000, "GPU_0_bfc", 256, 4096), Alloc(kAlloc, 5000, "GPU_0_bfc", 768, 4096),
       Alloc(kDealloc, 9000, "GPU_0_bfc", 512, 4096),
       Event(kOtherInstant, 9500, 0, {IntStat(kBytes, 777)}),
       Event(kAlloc, 9600, 0, {StrStat(kAllocator, "GPU_0_bfc")})});
  Proto thread_b =
      Line("tf_Compute/2", 1002,
           {Alloc(kAlloc, 1500, "GPU_0_bfc", 1024, 8192),
            Event(kAlloc, 0, 0, {RefStat(kAllocator, 50), UintStat(kBytes, 64)}),
            Event(kAlloc, 100, 0,
                  {IntStat(kMemoryId, 3), StrStat(kAllocator, "ignored"), IntStat(kBytes, 32)}),
            Event(kAlloc, 200, 0, {IntStat(kBytes, 16)})});
  return Space({Plane("/host:CPU", {thread_a, thread_b}, kEventNames, kStatNames)});
}

TEST(XSpaceMemory, BuildsAllocatorTimelinesFromHostAllocatorEvents) {
  TraceSummary s = Analyze(HostSpace());
  ASSERT_EQ(s.memory.size(), 4u);      // by device: "3", "GPU_0_bfc", "gpu_host_bfc", "host"
  EXPECT_EQ(s.memory[0].device, "3");  // memory_id wins over allocator_name
  EXPECT_EQ(s.memory[3].device, "host");
  EXPECT_EQ(s.memory[3].timeline[0].allocated_bytes, 16);

  const MemorySummary* gpu = FindMemory(s, "GPU_0_bfc");
  ASSERT_NE(gpu, nullptr);
  // Events without bytes_allocated, non-allocator instants and timed events do not count.
  EXPECT_EQ(gpu->samples, 4);
  ASSERT_EQ(gpu->timeline.size(), 4u);
  // 1001 ns: 256, 1005 ns: 768, 1009 ns: 512 (line A); 1003.5 ns: 1024 (line B).
  EXPECT_EQ(gpu->timeline[0].ts_ns, 1001);
  EXPECT_EQ(gpu->timeline[0].allocated_bytes, 256);
  EXPECT_EQ(gpu->timeline[1].ts_ns, 1003);
  EXPECT_EQ(gpu->timeline[1].allocated_bytes, 1024);
  EXPECT_EQ(gpu->timeline[2].allocated_bytes, 768);
  EXPECT_EQ(gpu->timeline[3].ts_ns, 1009);
  EXPECT_EQ(gpu->timeline[3].allocated_bytes, 512);
  EXPECT_EQ(gpu->peak_bytes, 1024);
  EXPECT_EQ(gpu->peak_ns, 1003);
  EXPECT_EQ(gpu->allocator_peak_bytes, 8192);

  const MemorySummary* pinned = FindMemory(s, "gpu_host_bfc");  // a ref_value allocator name
  ASSERT_NE(pinned, nullptr);
  EXPECT_EQ(pinned->samples, 1);
  EXPECT_EQ(pinned->peak_bytes, 64);
  EXPECT_EQ(pinned->peak_ns, 1002);
  EXPECT_EQ(pinned->allocator_peak_bytes, 0);  // not reported

  // Memory events are no activity: the trace has no devices and no time span.
  EXPECT_TRUE(s.devices.empty());
  EXPECT_EQ(s.skipped_events, 0);
}

TEST(XSpaceMemory, WritesAllocatorPeakInJsonOnlyWhenKnown) {
  std::string json = SummaryToJson(Analyze(HostSpace()));
  EXPECT_NE(json.find("{\"device\":\"GPU_0_bfc\",\"samples\":4,\"peak_bytes\":1024,"
                      "\"peak_ns\":1003,\"allocator_peak_bytes\":8192,\"timeline\":["),
            std::string::npos)
      << json;
  EXPECT_NE(json.find("{\"device\":\"host\",\"samples\":1,\"peak_bytes\":16,\"peak_ns\":1002,"
                      "\"timeline\":["),
            std::string::npos)
      << json;
}

TEST(XSpaceMemory, IgnoresAllocatorEventsOutsideTheHostPlane) {
  Proto line = Line("Stream #1", 0, {Alloc(kAlloc, 0, "GPU_0_bfc", 1, 1)});
  TraceSummary s = Analyze(Space({Plane("/device:GPU:0", {line}, kEventNames, kStatNames),
                                  Plane("/host:metadata", {line}, kEventNames, kStatNames)}));
  EXPECT_TRUE(s.memory.empty());
}

TEST(XSpaceMemory, KeepsEpochTimesExactBesideDeviceActivity) {
  // The host plane comes first; the device plane's line sets the base of the ticks.
  const int64_t t0 = 1712195495505582988;
  Proto host_line = Line("python3", t0 - 5, {Alloc(kAlloc, 2500, "GPU_0_bfc", 10, 10)});
  Proto stream = Line("Stream #1", t0, {Event(1, 0, 1000)});
  TraceSummary s = Analyze(Space({
      Plane("/host:CPU", {host_line}, kEventNames, kStatNames),
      Plane("/device:GPU:0", {stream}, {{1, "k"}}),
  }));
  ASSERT_EQ(s.memory.size(), 1u);
  EXPECT_EQ(s.memory[0].timeline[0].ts_ns, t0 - 5 + 2);
  EXPECT_EQ(s.memory[0].peak_ns, t0 - 3);
  EXPECT_EQ(s.start_ns, t0);
}

TEST(XSpaceMemory, HandlesLateNamesAndBoundsTheTimeline) {
  // Plane name and line timestamp after the events; 3000 allocations, one of them the peak.
  Proto line;
  for (int i = 0; i < 3000; ++i) {
    line.Message(4, Alloc(kAlloc, i * 1000, "GPU_0_bfc", i == 1234 ? 1 << 30 : i, 1 << 30));
  }
  line.Varint(3, 7);
  Proto plane = Proto().Message(3, line);
  for (const Proto& m : kEventNames) plane.Message(4, m);
  for (const auto& [id, name] : kStatNames) plane.Message(5, testing::StatMetadata(id, name));
  plane.Bytes(2, "/host:CPU");
  std::string bytes = Proto().Message(1, plane).bytes();
  TraceSummary s = Analyze(bytes);
  ASSERT_EQ(s.memory.size(), 1u);
  const MemorySummary& m = s.memory[0];
  EXPECT_EQ(m.samples, 3000);
  EXPECT_LE(m.timeline.size(), static_cast<size_t>(kMaxMemoryTimelinePoints));
  EXPECT_EQ(m.peak_bytes, 1 << 30);
  EXPECT_EQ(m.peak_ns, 7 + 1234);
  bool peak_kept = false;
  for (const MemorySample& p : m.timeline) peak_kept |= p.allocated_bytes == m.peak_bytes;
  EXPECT_TRUE(peak_kept);
  EXPECT_EQ(SummaryToJson(Analyze(bytes, 3)), SummaryToJson(s));
}

TEST(XSpaceMemory, TruncatedStatsAndMetadataFailCleanly) {
  // Every cut inside the host plane (stats, event and stat metadata) is an error naming the
  // byte offset; only a cut between top-level fields would be a (shorter) valid XSpace.
  const std::string bytes = HostSpace();
  for (size_t cut = 1; cut < bytes.size(); ++cut) {
    absl::StatusOr<TraceSummary> summary = AnalyzeXSpace(bytes.substr(0, cut));
    ASSERT_FALSE(summary.ok()) << "cut at " << cut;
    EXPECT_NE(summary.status().message().find(" at byte "), absl::string_view::npos);
  }
}

TEST(XSpaceMemory, MatchesTensorFlowCorpusAllocators) {
  // Expected values computed from the file with an independent Python protobuf decoder.
  const std::string path = fleetprof::testing::CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
  FLEETPROF_REQUIRE_PATH(path);
  TraceSummary s = Analyze(testing::ReadDecompressed(path));
  struct Expected {
    const char* device;
    int64_t samples, peak_bytes, peak_ns, allocator_peak_bytes;
  };
  const Expected expected[] = {
      {"GPU_1_bfc", 19, 4013344768, 2775174310, 4013344768},
      {"GPU_4_bfc", 969, 6208853760, 1938600973, 6208853760},
      {"GPU_6_bfc", 969, 6210111488, 2587153828, 6210111488},
      {"gpu_host_bfc", 536, 605952, 2763444253, 134217728},
  };
  ASSERT_EQ(s.memory.size(), 4u);
  for (const Expected& e : expected) {
    const MemorySummary* m = FindMemory(s, e.device);
    ASSERT_NE(m, nullptr) << e.device;
    EXPECT_EQ(m->samples, e.samples) << e.device;
    EXPECT_EQ(m->peak_bytes, e.peak_bytes) << e.device;
    EXPECT_EQ(m->peak_ns, e.peak_ns) << e.device;
    EXPECT_EQ(m->allocator_peak_bytes, e.allocator_peak_bytes) << e.device;
    EXPECT_LE(m->timeline.size(), static_cast<size_t>(kMaxMemoryTimelinePoints));
  }
}

}  // namespace
}  // namespace fleetprof::analysis
