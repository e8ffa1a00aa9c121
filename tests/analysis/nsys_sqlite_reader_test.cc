// The Nsight Systems SQLite reader: the corpus exports against their references, and each rule
// of docs/analysis.md (Nsight Systems) on small exports built here.

#include <string>

#include "absl/strings/str_cat.h"
#include "analysis/nsys_names.h"
#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"
#include "tests/analysis/analysis_test_util.h"
#include "tests/analysis/nsys_export_builder.h"
#include "tests/analysis/reference_match.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using testing::AnalyzeSqlite;
using testing::FindDevice;
using testing::FindKernel;
using testing::FindOp;
using testing::NsysExport;
using testing::NsysTid;

TEST(NsysSqliteCorpus, MatchesReferenceForSaxpy2022) {
  testing::ExpectMatchesReference("nsys/saxpy_a100.sqlite.gz", "saxpy_a100.sqlite.ref.json");
}

TEST(NsysSqliteCorpus, MatchesReferenceForCloverleaf2024) {
  testing::ExpectMatchesReference("nsys/cloverleaf_a100.sqlite.gz", "cloverleaf_a100.sqlite.ref.json");
}

TEST(NsysSqliteCorpus, MatchesReferenceForH100TwoProcesses2026) {
  testing::ExpectMatchesReference("nsys/h100_2gpu_1s.sqlite.gz", "h100_2gpu_1s.sqlite.ref.json");
}

TEST(NsysSqliteCorpus, KeepsGpuNamesAndTheNsysVersion) {
  const std::string path = fleetprof::testing::CorpusPath("nsys/cloverleaf_a100.sqlite.gz");
  FLEETPROF_REQUIRE_PATH(path);
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  EXPECT_EQ(summary->format, TraceFormat::kNsysSqlite);
  EXPECT_EQ(summary->metadata["device.0.name"], "NVIDIA A100-SXM4-80GB");
  EXPECT_EQ(summary->metadata["nsys_version"], "2024.5.1.113");
  EXPECT_EQ(summary->metadata["schema_version"], "3.13.2");
}

// The flame graph's data: every kernel's device time is booked somewhere in the call tree.
TEST(NsysSqliteCorpus, CallTreeHoldsAllDeviceTime) {
  const std::string path = fleetprof::testing::CorpusPath("nsys/h100_2gpu_1s.sqlite.gz");
  FLEETPROF_REQUIRE_PATH(path);
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  Nanos kernels = 0, tree = 0;
  for (const KernelSummary& k : summary->kernels) kernels += k.total_ns;
  for (const CallTreeNode& node : summary->call_tree.nodes) tree += node.device_ns;
  EXPECT_EQ(tree, kernels);
  EXPECT_GT(summary->call_tree.nodes.size(), 100u);
}

TEST(NsysSqliteReader, CallsAreRuntimeAndDriverRowsWithoutVersionSuffix) {
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(NsysExport(R"sql(
    INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel_v7000'), (2, 'cuCtxSynchronize'), (3, 'backtrace_v2');
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 150, 0, 16777217, 1, 1, 0), (200, 260, 1, 16777217, 2, 2, 0),
      (300, 400, 67, 16777217, 3, 3, 0);)sql"));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_NE(FindOp(*s, "cudaLaunchKernel"), nullptr);
  EXPECT_EQ(FindOp(*s, "cudaLaunchKernel")->total_ns, 50);
  ASSERT_NE(FindOp(*s, "cuCtxSynchronize"), nullptr);
  EXPECT_EQ(s->ops.size(), 2u) << "eventClass 67 rows are backtraces, not calls";
  EXPECT_EQ(s->events, 3);
  EXPECT_EQ(s->skipped_events, 0);
}

TEST(NsysSqliteReader, JoinsDeviceTimeByCorrelationWithinEachProcess) {
  // Both processes use correlation id 7: each call gets only its own process's kernel.
  const int64_t a = NsysTid(10, 1), b = NsysTid(20, 1);
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(NsysExport(absl::StrCat(R"sql(
    INSERT INTO StringIds VALUES (1, 'cudaLaunchKernel'), (2, 'cuLaunchKernel'), (3, 'gemm'), (4, 'ncclAllReduce');
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (100, 110, 0, )sql", a, R"sql(, 7, 1, 0), (100, 110, 1, )sql", b,
                                                                         R"sql(, 7, 2, 0);
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (200, 300, 0, 1, 7, 7, )sql", NsysTid(10, 0), R"sql(, 3, 3),
      (200, 250, 1, 1, 7, 7, )sql", NsysTid(20, 0), R"sql(, 4, 4),
      (400, 405, 1, 1, 7, 99, )sql", NsysTid(20, 0), R"sql(, 3, 3);)sql")));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(FindOp(*s, "cudaLaunchKernel")->device_total_ns, 100);
  EXPECT_EQ(FindOp(*s, "cuLaunchKernel")->device_total_ns, 50);
  ASSERT_NE(FindKernel(*s, "ncclAllReduce"), nullptr);
  EXPECT_EQ(FindKernel(*s, "ncclAllReduce")->kind, ActivityKind::kCommunication);
  EXPECT_EQ(FindKernel(*s, "gemm")->count, 2) << "a kernel launched outside the window still counts";
  ASSERT_NE(FindDevice(*s, "1"), nullptr);
  EXPECT_EQ(FindDevice(*s, "1")->events, 2);
}

TEST(NsysSqliteReader, NamesCopiesByCudasKindsWithoutAnEnumTable) {
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(NsysExport(R"sql(
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (0, 10, 0, 1, NULL, NULL, 64, 1), (10, 30, 0, 1, NULL, NULL, 64, 10),
      (30, 60, 0, 1, NULL, NULL, 64, 42), (60, 100, 0, 1, NULL, NULL, 64, 13);
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMSET VALUES (100, 150, 0, 1, NULL, NULL, 0, 64);)sql"));
  ASSERT_TRUE(s.ok()) << s.status();
  for (const char* name : {"[CUDA memcpy Host-to-Device]", "[CUDA memcpy Peer-to-Peer]", "[CUDA memcpy Unknown]",
                           "[CUDA memcpy Unified Device-to-Device]", "[CUDA memset]"}) {
    ASSERT_NE(FindKernel(*s, name), nullptr) << name;
    EXPECT_EQ(FindKernel(*s, name)->kind, ActivityKind::kMemory) << name;
  }
  EXPECT_EQ(FindDevice(*s, "0")->memory_ns, 150);
}

TEST(NsysSqliteReader, NamesCopiesByTheEnumTableWhereItExists) {
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(NsysExport(R"sql(
    CREATE TABLE ENUM_CUDA_MEMCPY_OPER (id INTEGER NOT NULL PRIMARY KEY, name TEXT, label TEXT);
    INSERT INTO ENUM_CUDA_MEMCPY_OPER VALUES (1, 'CUDA_MEMCPY_KIND_HTOD', 'HtoD as labelled');
    INSERT INTO CUPTI_ACTIVITY_KIND_MEMCPY VALUES (0, 10, 0, 1, NULL, NULL, 64, 1), (10, 30, 0, 1, NULL, NULL, 64, 2);)sql"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE(FindKernel(*s, "[CUDA memcpy HtoD as labelled]"), nullptr);
  EXPECT_NE(FindKernel(*s, "[CUDA memcpy Unknown]"), nullptr) << "a kind the table does not list";
}

TEST(NsysSqliteReader, NestsNvtxRangesOverCallsWithDomainsAndEmitNvtxNames) {
  const int64_t t = NsysTid(5, 5);
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(NsysExport(absl::StrCat(R"sql(
    INSERT INTO StringIds VALUES (1, 'cudaMemcpy'), (2, 'MPI_Init'), (3, 'MPI');
    INSERT INTO NVTX_EVENTS VALUES
      (0, 1000, 59, 'aten::mm, op_id = 7', )sql", t, R"sql(, NULL, 0),
      (2000, 2100, 59, 'aten::mm, seq = 3, sizes = [[2, 3]]', )sql", t, R"sql(, NULL, NULL),
      (3000, 3500, 70, NULL, )sql", t, R"sql(, 2, 9),
      (0, NULL, 75, NULL, NULL, 3, 9),
      (4000, 4100, 59, 'no such domain', )sql", t, R"sql(, NULL, 8),
      (5000, NULL, 59, 'open', )sql", t, R"sql(, NULL, 0),
      (6000, 7000, 60, 'start/end', )sql", t, R"sql(, NULL, 0);
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (0, 1000, 0, )sql", t, R"sql(, 1, 1, 0),
      (100, 200, 0, )sql", t, R"sql(, 2, 1, 0);)sql")));
  ASSERT_TRUE(s.ok()) << s.status();
  const OpSummary* mm = FindOp(*s, "aten::mm");
  ASSERT_NE(mm, nullptr);
  EXPECT_EQ(mm->count, 2);
  EXPECT_EQ(mm->total_ns, 1100);
  // The call of equal (start, duration) is the range's child, and the second call the first's.
  EXPECT_EQ(mm->self_ns, 100);
  EXPECT_EQ(FindOp(*s, "cudaMemcpy")->count, 2);
  EXPECT_EQ(FindOp(*s, "cudaMemcpy")->self_ns, 1000);
  ASSERT_NE(FindOp(*s, "MPI:MPI_Init"), nullptr);
  EXPECT_NE(FindOp(*s, "no such domain"), nullptr);
  EXPECT_EQ(FindOp(*s, "open"), nullptr);
  EXPECT_EQ(FindOp(*s, "start/end"), nullptr);
  EXPECT_EQ(s->events, 9);
}

TEST(NsysSqliteReader, ProfilerStepRangesAreSteps) {
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(NsysExport(R"sql(
    INSERT INTO NVTX_EVENTS VALUES (0, 1000, 59, 'ProfilerStep#4', 1, NULL, 0), (1000, 3000, 59, 'ProfilerStep#5', 1, NULL, 0);
    INSERT INTO StringIds VALUES (1, 'k');
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (1500, 2000, 0, 1, 1, NULL, NULL, 1, 1);)sql"));
  ASSERT_TRUE(s.ok()) << s.status();
  ASSERT_EQ(s->steps.size(), 2u);
  EXPECT_EQ(s->steps[1].step, 5);
  EXPECT_EQ(s->steps[1].device_busy_ns, 500);
}

TEST(NsysSqliteReader, SkipsRowsThatEndBeforeTheyStartAsJsonSkipsNegativeDurations) {
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(NsysExport(R"sql(
    INSERT INTO StringIds VALUES (1, 'k'), (2, 'cudaFree');
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (100, 50, 0, 1, 1, NULL, NULL, 1, 1), (100, 150, 0, 1, 1, NULL, NULL, 1, 1),
      ('soon', 150, 0, 1, 1, NULL, NULL, 1, 1), (100, 150, 0, 1, 1, NULL, NULL, 77, 77);
    INSERT INTO CUPTI_ACTIVITY_KIND_RUNTIME VALUES (10, 5, 0, 1, 1, 2, 0);)sql"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(FindKernel(*s, "k")->count, 1);
  EXPECT_EQ(s->skipped_events, 4) << "end < start twice, a text start, a name id without its string";
  EXPECT_TRUE(s->ops.empty());
}

TEST(NsysSqliteReader, ReplacesNamesThatAreNotUtf8AsJsonDoes) {
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(NsysExport(R"sql(
    INSERT INTO StringIds VALUES (1, CAST(X'6B65726E656CFF' AS TEXT));
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 10, 0, 1, 1, NULL, NULL, 1, 1);)sql"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE(FindKernel(*s, "kernel\xEF\xBF\xBD"), nullptr);
  EXPECT_GE(s->invalid_utf8_replacements, 1);
}

TEST(NsysSqliteReader, CutsLongNamesToMaxNameBytes) {
  TraceLimits limits;
  limits.max_name_bytes = 8;
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(NsysExport(R"sql(
    INSERT INTO StringIds VALUES (1, 'abcdefghijklmnop');
    INSERT INTO CUPTI_ACTIVITY_KIND_KERNEL VALUES (0, 10, 0, 1, 1, NULL, NULL, 1, 1);)sql"), limits);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_NE(FindKernel(*s, "abcdefgh"), nullptr);
}

TEST(NsysSqliteReader, AbsentTablesHaveNoRows) {
  testing::SqliteBuilder builder;
  builder.Exec("CREATE TABLE StringIds (id INTEGER NOT NULL PRIMARY KEY, value TEXT NOT NULL);");
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(builder.Bytes());
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->format, TraceFormat::kNsysSqlite);
  EXPECT_TRUE(s->devices.empty());
  EXPECT_TRUE(s->ops.empty());
}

TEST(NsysSqliteReader, IsDetectedByContentAndBySuffixAndReadThroughGzip) {
  const std::string bytes = NsysExport("INSERT INTO StringIds VALUES (1, 'k');");
  EXPECT_EQ(DetectTraceFormat("upload", bytes.substr(0, 64)), TraceFormat::kNsysSqlite);
  EXPECT_EQ(DetectTraceFormat("report.sqlite", ""), TraceFormat::kNsysSqlite);
  EXPECT_EQ(DetectTraceFormat("report.sqlite.gz", ""), TraceFormat::kNsysSqlite);
  EXPECT_STREQ(TraceFormatName(TraceFormat::kNsysSqlite), "nsys_sqlite");
  EXPECT_EQ(TraceFormatFromName("nsys_sqlite"), TraceFormat::kNsysSqlite);
  absl::StatusOr<TraceSummary> s = AnalyzeSqlite(testing::Gzip(bytes), TraceLimits(), 1000);
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->format, TraceFormat::kNsysSqlite);
}

TEST(NsysNames, StripsOnlyAVersionSuffix) {
  EXPECT_EQ(StripCudaVersionSuffix("cudaLaunchKernel_v7000"), "cudaLaunchKernel");
  EXPECT_EQ(StripCudaVersionSuffix("cuMemcpy_v2"), "cuMemcpy");
  EXPECT_EQ(StripCudaVersionSuffix("cudaMalloc"), "cudaMalloc");
  EXPECT_EQ(StripCudaVersionSuffix("cudaThing_v"), "cudaThing_v");
  EXPECT_EQ(StripCudaVersionSuffix("cuda_vx2"), "cuda_vx2");
}

TEST(NsysNames, CutsEmitNvtxNamesAtTheFirstMarker) {
  for (const char* name : {"aten::mm, op_id = 7", "aten::mm, seq = 3, sizes = [[2, 3]]",
                           "aten::mm, sizes = [[1]], seq = 2", "aten::mm, input_op_ids = [1]", "aten::mm"}) {
    const std::string_view n(name);
    EXPECT_EQ(n.substr(0, EmitNvtxOpNameLength(n)), "aten::mm") << name;
  }
  EXPECT_EQ(EmitNvtxOpNameLength("a,seq = 1"), 9u);
}

TEST(NsysNames, LabelsCopyKindsAsCudaDoes) {
  EXPECT_EQ(FixedMemcpyKindLabel(0), "Unknown");
  EXPECT_EQ(FixedMemcpyKindLabel(8), "Device-to-Device");
  EXPECT_EQ(FixedMemcpyKindLabel(11), "Unified Host-to-Device");
  EXPECT_EQ(FixedMemcpyKindLabel(14), "Unknown");
  EXPECT_EQ(FixedMemcpyKindLabel(-1), "Unknown");
}

}  // namespace
}  // namespace fleetprof::analysis
