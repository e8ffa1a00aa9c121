// The `nsys stats` reports (analysis/stats_reports.h): the arithmetic against a brute-force
// answer, and every Kineto corpus trace's reports against its own kernels[] breakdown, which
// the corpus references hold exact.

#include "analysis/stats_reports.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <random>

#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"
#include "proto/proto_json.h"
#include "fleetprof/v1/query.pb.h"
#include "proto/summary_codec.h"
#include "tests/analysis/stats_reference.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using ::fleetprof::testing::CorpusPath;

const std::vector<StatsRow>& Report(const StatsReports& r, StatsReport which) {
  return r.reports[static_cast<size_t>(which)];
}

TEST(StatsReports, RowsEqualABruteForceAnswer) {
  std::mt19937_64 random(7);
  NameTable names;
  const NameId a = names.Intern("a"), b = names.Intern("b"), c = names.Intern("c");
  std::vector<StatsInstance> instances;
  std::map<std::pair<std::string, bool>, std::vector<int64_t>> by_key;
  for (int i = 0; i < 5000; ++i) {
    const NameId name = std::vector<NameId>{a, b, c}[random() % 3];
    const bool start_end = random() % 2 == 0;
    const int64_t value = static_cast<int64_t>(random() % 1'000'000'000);
    instances.push_back({name, start_end, value});
    by_key[{std::string(names.Get(name)), start_end}].push_back(value);
  }
  const std::vector<StatsRow> rows = SummarizeStats(names, instances, /*with_style=*/true);
  ASSERT_EQ(rows.size(), by_key.size());
  double all = 0;
  for (const auto& [key, values] : by_key) for (int64_t v : values) all += static_cast<double>(v);
  for (size_t i = 0; i < rows.size(); ++i) {
    const StatsRow& row = rows[i];
    std::vector<int64_t> values = by_key.at({row.name, row.style == "StartEnd"});
    std::sort(values.begin(), values.end());
    const size_t n = values.size();
    int64_t total = 0;
    for (int64_t v : values) total += v;
    const double mean = static_cast<double>(total) / n;
    double squares = 0;
    for (int64_t v : values) squares += (v - mean) * (v - mean);
    EXPECT_EQ(row.total, total);
    EXPECT_EQ(row.instances, static_cast<int64_t>(n));
    EXPECT_EQ(row.min, values.front());
    EXPECT_EQ(row.max, values.back());
    EXPECT_NEAR(row.avg, mean, mean * 1e-9);
    const double med = n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2.0;
    EXPECT_DOUBLE_EQ(row.med, med);
    EXPECT_NEAR(row.stddev, std::sqrt(squares / (n - 1)), 1e-6 * std::sqrt(squares / (n - 1)));
    EXPECT_NEAR(row.time_pct, 100.0 * total / all, 1e-9);
    if (i > 0) EXPECT_GE(rows[i - 1].total, row.total) << "sorted by total, descending";
  }
}

TEST(StatsReports, OneInstanceHasNoSpreadAndAnEmptyReportIsEmpty) {
  NameTable names;
  const std::vector<StatsRow> rows = SummarizeStats(names, {{names.Intern("x"), false, 42}}, false);
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0].med, 42);
  EXPECT_EQ(rows[0].stddev, 0);
  EXPECT_EQ(rows[0].time_pct, 100);
  EXPECT_EQ(rows[0].style, "");
  EXPECT_TRUE(SummarizeStats(names, {}, false).empty());
}

TEST(StatsReports, EqualTotalsOrderByInstancesThenName) {
  NameTable names;
  const NameId x = names.Intern("x"), y = names.Intern("y"), z = names.Intern("z");
  const std::vector<StatsRow> rows =
      SummarizeStats(names, {{z, false, 10}, {y, false, 10}, {x, false, 5}, {x, false, 5}}, false);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].name, "x");  // 10 in two
  EXPECT_EQ(rows[1].name, "y");
  EXPECT_EQ(rows[2].name, "z");
}

// A Kineto trace's kernel and memory reports hold the same instances as its kernels[] rows.
TEST(StatsReports, KinetoReportsAgreeWithTheKernelBreakdown) {
  for (const char* file : {"kineto/a100_alexnet.json.gz", "kineto/a100_nccl_rank0.json.gz",
                           "kineto/v100_resnet_rank0.pt.trace.json.gz", "kineto/mtia_inference_rank0.json.gz"}) {
    const std::string path = CorpusPath(file);
    FLEETPROF_REQUIRE(std::filesystem::exists(path), path);
    absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(path);
    ASSERT_TRUE(summary.ok()) << summary.status();
    std::map<std::string, std::pair<int64_t, int64_t>> kernels, copies;  // name -> (count, total)
    for (const KernelSummary& k : summary->kernels) {
      (k.kind == ActivityKind::kMemory ? copies : kernels)[k.name] = {k.count, k.total_ns};
    }
    const auto rows_of = [&](StatsReport which) {
      std::map<std::string, std::pair<int64_t, int64_t>> rows;
      for (const StatsRow& row : Report(summary->stats, which)) rows[row.name] = {row.instances, row.total};
      return rows;
    };
    EXPECT_EQ(rows_of(StatsReport::kKernSum), kernels) << file;
    EXPECT_EQ(rows_of(StatsReport::kMemTimeSum), copies) << file;
    const auto sizes = rows_of(StatsReport::kMemSizeSum);
    EXPECT_EQ(sizes.size(), copies.size()) << file;
    EXPECT_EQ(summary->stats.nvtx_open_ranges, 0) << file;
  }
}

// A100 AlexNet's copies carry args.bytes: the size report adds them up.
TEST(StatsReports, KinetoCopiesCarryTheirBytes) {
  const std::string path = CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE(std::filesystem::exists(path), path);
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(path);
  ASSERT_TRUE(summary.ok()) << summary.status();
  int64_t bytes = 0;
  for (const StatsRow& row : Report(summary->stats, StatsReport::kMemSizeSum)) bytes += row.total;
  EXPECT_GT(bytes, 0);
  EXPECT_FALSE(Report(summary->stats, StatsReport::kApiSum).empty());
  EXPECT_FALSE(Report(summary->stats, StatsReport::kNvtxSum).empty()) << "user annotations stand in for NVTX";
  for (const StatsRow& row : Report(summary->stats, StatsReport::kNvtxSum)) EXPECT_EQ(row.style, "PushPop");
}

// The three nsys exports (2022.2, 2024.5, 2026.2) against the reports `nsys stats` printed.
TEST(StatsReports, NsysExportsEqualTheirReferences) {
  for (const char* name : {"saxpy_a100.sqlite", "cloverleaf_a100.sqlite", "h100_2gpu_1s.sqlite"}) {
    const std::string path = CorpusPath(std::string("nsys/") + name + ".gz");
    FLEETPROF_REQUIRE(std::filesystem::exists(path), path);
    absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(path);
    ASSERT_TRUE(summary.ok()) << summary.status();
    const v1::ProfileSummary stored = SummaryToProto(*summary);
    v1::StatsResponse answer;
    *answer.mutable_reports() = stored.stats();
    answer.set_nvtx_open_ranges(stored.nvtx_open_ranges());
    testing::ExpectStatsEqualReference(ProtoToJson(answer), std::string(name) + ".ref.json");
  }
}

}  // namespace
}  // namespace fleetprof::analysis
