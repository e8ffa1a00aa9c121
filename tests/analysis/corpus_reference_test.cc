// Every file of the shared corpus, analysed end to end and compared field by field with the
// reference results computed by an independent implementation of the rules
// in docs/analysis.md (Reference results).

#include <string>

#include "tests/analysis/summary_json_for_test.h"
#include "tests/analysis/reference_match.h"
#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using ::fleetprof::testing::CorpusPath;
using ::fleetprof::analysis::testing::ExpectMatchesReference;

TEST(CorpusReference, MatchesReferenceForV100Resnet) {
  ExpectMatchesReference("kineto/v100_resnet_rank0.pt.trace.json.gz",
                         "v100_resnet_rank0.pt.trace.ref.json");
}

TEST(CorpusReference, MatchesReferenceForA100Nccl) {
  ExpectMatchesReference("kineto/a100_nccl_rank0.json.gz", "a100_nccl_rank0.ref.json");
}

TEST(CorpusReference, MatchesReferenceForMi250Rocm) {
  ExpectMatchesReference("kineto/mi250_rocm62.json.gz", "mi250_rocm62.ref.json");
}

TEST(CorpusReference, MatchesReferenceForA100Alexnet) {
  ExpectMatchesReference("kineto/a100_alexnet.json.gz", "a100_alexnet.ref.json");
}

TEST(CorpusReference, MatchesReferenceForV100LegacySchema) {
  ExpectMatchesReference("kineto/v100_resnet50_legacy_schema.pt.trace.json.gz",
                         "v100_resnet50_legacy_schema.pt.trace.ref.json");
}

// MTIA: device work under mtia_ccp_events (dma* transfers count as memory), runtime calls
// under mtia_runtime.
TEST(CorpusReference, MatchesReferenceForMtiaInference) {
  ExpectMatchesReference("kineto/mtia_inference_rank0.json.gz", "mtia_inference_rank0.ref.json");
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(CorpusPath("kineto/mtia_inference_rank0.json.gz"));
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->unknown_category_events, 0) << "its 1,313 device and 823 runtime events are known";
}

TEST(CorpusReference, MatchesReferenceForTensorFlowXSpace) {
  ExpectMatchesReference("xspace/tf_8gpu_multi_worker.xplane.pb",
                         "tf_8gpu_multi_worker.xplane.ref.json");
}

// Tokens, keys and varints that straddle a read boundary must come out the same: the
// results may not depend on how the bytes arrive.
TEST(CorpusReference, ResultsDoNotDependOnReadBoundaries) {
  const std::string json_path = CorpusPath("kineto/a100_nccl_rank0.json.gz");
  const std::string small_path = CorpusPath("kineto/mi250_rocm62.json.gz");
  const std::string xspace_path = CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
  FLEETPROF_REQUIRE_PATH(json_path);
  FLEETPROF_REQUIRE_PATH(small_path);
  FLEETPROF_REQUIRE_PATH(xspace_path);

  const std::string json = testing::ReadDecompressed(json_path);
  absl::StatusOr<TraceSummary> whole = testing::AnalyzeJson(json);
  ASSERT_TRUE(whole.ok()) << whole.status();
  for (size_t chunk : {4093, 65537}) {
    absl::StatusOr<TraceSummary> chunked = testing::AnalyzeJson(json, chunk);
    ASSERT_TRUE(chunked.ok()) << chunked.status();
    EXPECT_EQ(SummaryToJson(*chunked), SummaryToJson(*whole)) << "chunk " << chunk;
  }

  const std::string small = testing::ReadDecompressed(small_path);
  absl::StatusOr<TraceSummary> small_whole = testing::AnalyzeJson(small);
  absl::StatusOr<TraceSummary> small_bytewise = testing::AnalyzeJson(small, 1);
  ASSERT_TRUE(small_whole.ok() && small_bytewise.ok());
  EXPECT_EQ(SummaryToJson(*small_bytewise), SummaryToJson(*small_whole));

  const std::string xspace = testing::ReadDecompressed(xspace_path);
  absl::StatusOr<TraceSummary> xs_whole = testing::AnalyzeXSpace(xspace);
  absl::StatusOr<TraceSummary> xs_chunked = testing::AnalyzeXSpace(xspace, 7);
  ASSERT_TRUE(xs_whole.ok() && xs_chunked.ok());
  EXPECT_EQ(SummaryToJson(*xs_chunked), SummaryToJson(*xs_whole));
}

TEST(CorpusReference, FindsStepsInProfilerStepEvents) {
  const std::string path = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_FALSE(summary->steps.empty());
  for (const StepSummary& step : summary->steps) {
    EXPECT_EQ(step.duration_ns, step.end_ns - step.start_ns);
    EXPECT_GE(step.device_busy_ns, 0);
    EXPECT_LE(step.device_busy_ns, step.duration_ns);
    EXPECT_EQ(step.device_idle_ns, step.duration_ns - step.device_busy_ns);
  }
  // ProfilerStep#101 … #105 in this capture.
  EXPECT_EQ(summary->steps.front().step, 101);
}

TEST(CorpusReference, ReadsLegacyMemoryEventsIntoATimeline) {
  const std::string path = CorpusPath("kineto/v100_resnet50_legacy_schema.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(path);
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  ASSERT_FALSE(summary->memory.empty());
  int64_t samples = 0;
  for (const MemorySummary& memory : summary->memory) {
    samples += memory.samples;
    EXPECT_LE(memory.timeline.size(), static_cast<size_t>(kMaxMemoryTimelinePoints));
    bool peak_kept = false;
    for (const MemorySample& s : memory.timeline) {
      EXPECT_LE(s.allocated_bytes, memory.peak_bytes);
      peak_kept |= s.allocated_bytes == memory.peak_bytes && s.ts_ns == memory.peak_ns;
    }
    EXPECT_TRUE(peak_kept) << memory.device;
  }
  EXPECT_EQ(samples, 12838);  // every "[memory]" instant of the file
}

}  // namespace
}  // namespace fleetprof::analysis
