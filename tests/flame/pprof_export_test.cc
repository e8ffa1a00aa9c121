// The pprof export of every corpus trace, read by the real `go tool pprof`: its -top totals of
// device_time, host_self_time and count equal the kernel table, the op table and the tree.

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "analysis/trace_analyzer.h"
#include "flame/pprof_export.h"
#include "gtest/gtest.h"
#include "tests/e2e/go_pprof.h"
#include "tests/e2e/process_runner.h"
#include "tests/test_support.h"

namespace fleetprof::flame {
namespace {

using ::fleetprof::testing::CorpusPath;

TEST(PprofExport, GoToolPprofTotalsEqualTheBreakdownsOnEveryCorpusTrace) {
  FLEETPROF_REQUIRE_PATH(CorpusPath("kineto"));
  FLEETPROF_REQUIRE_GO();
  const std::string dir = ::fleetprof::testing::MakeTempDir();
  int traces = 0;
  for (const char* folder : {"kineto", "xspace"}) {
    for (const auto& entry : std::filesystem::directory_iterator(CorpusPath(folder))) {
      SCOPED_TRACE(entry.path().string());
      absl::StatusOr<analysis::TraceSummary> summary = analysis::AnalyzeTraceFile(entry.path().string());
      ASSERT_TRUE(summary.ok()) << summary.status();
      int64_t device = 0, host_self = 0, count = 0;
      for (const analysis::KernelSummary& k : summary->kernels) device += k.total_ns;
      for (const analysis::OpSummary& op : summary->ops) host_self += op.self_ns;
      for (const analysis::CallTreeNode& node : summary->call_tree.nodes) count += node.count;
      absl::StatusOr<std::string> bytes = CallTreeToGzippedPprof(summary->call_tree);
      ASSERT_TRUE(bytes.ok()) << bytes.status();
      const std::string file = dir + "/" + entry.path().filename().string() + ".pb.gz";
      std::ofstream(file, std::ios::binary) << *bytes;
      for (const auto& [index, want] : std::vector<std::pair<std::string, int64_t>>{
               {"device_time", device}, {"host_self_time", host_self}, {"count", count}}) {
        absl::StatusOr<int64_t> total = ::fleetprof::testing::GoPprofTotal(file, index);
        ASSERT_TRUE(total.ok()) << total.status();
        EXPECT_EQ(*total, want) << index;
        std::printf("pprof %-50s %-15s go tool pprof %15lld  breakdown %15lld\n",
                    entry.path().filename().c_str(), index.c_str(), static_cast<long long>(*total),
                    static_cast<long long>(want));
      }
      ++traces;
    }
  }
  EXPECT_GE(traces, 7);
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

}  // namespace
}  // namespace fleetprof::flame
