// Every corpus trace's call tree against its breakdowns and the independent reference results:
// device total, each kernel's leaves, host self total; the stored form round-trips and stays
// within 10% of the summary it is stored with (sizes printed per file).

#include <cstdio>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "analysis/call_tree.h"
#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"
#include "proto/call_tree_codec.h"
#include "proto/summary_codec.h"
#include "simdjson.h"
#include "tests/test_support.h"

namespace fleetprof::analysis {
namespace {

using ::fleetprof::testing::CorpusPath;

// Every trace of the corpus, with the name of its reference file.
std::vector<std::pair<std::string, std::string>> CorpusTraces() {
  std::vector<std::pair<std::string, std::string>> traces;
  for (const char* folder : {"kineto", "xspace"}) {
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(CorpusPath(folder), ec)) {
      std::string name = entry.path().filename().string();
      std::string stem = name;
      for (const char* suffix : {".json.gz", ".json", ".pb"}) {
        const std::string s = suffix;
        if (stem.size() > s.size() && stem.compare(stem.size() - s.size(), s.size(), s) == 0) {
          stem.resize(stem.size() - s.size());
          break;
        }
      }
      traces.push_back({std::string(folder) + "/" + name, stem + ".ref.json"});
    }
  }
  std::sort(traces.begin(), traces.end());
  return traces;
}

// Reference totals: kernel total_ns by name, the sum of ops' self_ns (absent: no ops section).
struct Reference {
  std::map<std::string, int64_t> kernels;
  bool has_ops = false;
  int64_t op_self = 0;
};
Reference ReadReference(const std::string& path) {
  Reference ref;
  simdjson::dom::parser parser;
  simdjson::padded_string text(fleetprof::testing::ReadSmallFile(path));
  simdjson::dom::element doc;
  EXPECT_EQ(parser.parse(text).get(doc), simdjson::SUCCESS) << path;
  for (simdjson::dom::element k : doc["kernels"].get_array()) {
    ref.kernels[std::string(std::string_view(k["name"].get_string()))] += int64_t(k["total_ns"].get_int64());
  }
  simdjson::dom::array ops;
  if (doc["ops"].get(ops) == simdjson::SUCCESS) {
    ref.has_ops = true;
    for (simdjson::dom::element op : ops) ref.op_self += int64_t(op["self_ns"].get_int64());
  }
  return ref;
}

struct TreeTotals {
  int64_t device = 0;
  int64_t host_self = 0;
};

// Checks `tree` against the summary's tables and the reference: the device total, each kernel's
// leaves, the host self total; no value negative.
TreeTotals ExpectTreeEqualsBreakdowns(const CallTree& tree, const TraceSummary& summary, const Reference& ref) {
  TreeTotals t;
  std::map<std::string, int64_t> device_by_name;
  std::map<std::string, int64_t> count_by_kernel;
  for (const CallTreeNode& node : tree.nodes) {
    EXPECT_GE(node.host_self_ns, 0);
    EXPECT_GE(node.device_ns, 0);
    EXPECT_GE(node.count, 0);
    t.device += node.device_ns;
    t.host_self += node.host_self_ns;
    if (node.kind == FrameKind::kKernel) {
      device_by_name[tree.names[node.name]] += node.device_ns;
      count_by_kernel[tree.names[node.name]] += node.count;
    } else {
      EXPECT_EQ(node.device_ns, 0) << tree.names[node.name];
    }
  }
  int64_t kernel_total = 0, ref_total = 0, op_self = 0;
  for (const KernelSummary& k : summary.kernels) {
    kernel_total += k.total_ns;
    EXPECT_EQ(device_by_name[k.name], k.total_ns) << "kernel " << k.name;
    EXPECT_EQ(count_by_kernel[k.name], k.count) << "kernel " << k.name;
  }
  EXPECT_EQ(device_by_name.size(), summary.kernels.size()) << "leaves of no kernel row";
  for (const auto& [name, total] : ref.kernels) {
    ref_total += total;
    EXPECT_EQ(device_by_name[name], total) << "reference kernel " << name;
  }
  for (const OpSummary& op : summary.ops) op_self += op.self_ns;
  EXPECT_EQ(t.device, kernel_total);
  EXPECT_EQ(t.device, ref_total);
  EXPECT_EQ(t.host_self, op_self);
  if (ref.has_ops) {
    EXPECT_EQ(t.host_self, ref.op_self);
  }
  return t;
}

void ExpectTreeMatches(const std::string& trace, const std::string& reference_name) {
  SCOPED_TRACE(trace);
  const Reference ref = ReadReference(CorpusPath("reference/" + reference_name));
  absl::StatusOr<TraceSummary> summary = AnalyzeTraceFile(CorpusPath(trace));
  ASSERT_TRUE(summary.ok()) << summary.status();
  const CallTree& built = summary->call_tree;
  ASSERT_FALSE(built.nodes.empty());
  EXPECT_LE(static_cast<int64_t>(built.nodes.size()),
            kMaxCallTreeNodes + static_cast<int64_t>(summary->kernels.size()) + 2);
  const TreeTotals totals = ExpectTreeEqualsBreakdowns(built, *summary, ref);

  // The stored form (folded to its share of the summary) is as exact, and within 10%.
  v1::ProfileSummary stored = SummaryToProto(*summary);
  absl::StatusOr<CallTree> back = CallTreeFromProto(stored);
  ASSERT_TRUE(back.ok()) << back.status();
  {
    SCOPED_TRACE("stored tree");
    ExpectTreeEqualsBreakdowns(*back, *summary, ref);
  }
  const int64_t with_tree = static_cast<int64_t>(stored.ByteSizeLong());
  stored.clear_call_tree();
  const int64_t without = static_cast<int64_t>(stored.ByteSizeLong());
  std::printf("call tree %-52s built %4zu stored %4zu nodes  device %12lld ns  host self %12lld ns  "
              "summary %6lld B  tree %5lld B (%4.1f%%)\n",
              trace.c_str(), built.nodes.size(), back->nodes.size(), static_cast<long long>(totals.device),
              static_cast<long long>(totals.host_self), static_cast<long long>(without),
              static_cast<long long>(with_tree - without),
              100.0 * static_cast<double>(with_tree - without) / static_cast<double>(without));
  EXPECT_LE((with_tree - without) * 10, without) << "the tree adds more than 10% to the summary";
}

TEST(CallTreeCorpus, EveryTraceTreeEqualsItsBreakdownsAndReference) {
  const std::string kineto = CorpusPath("kineto");
  FLEETPROF_REQUIRE_PATH(kineto);
  const auto traces = CorpusTraces();
  ASSERT_GE(traces.size(), 7u) << "the corpus lost traces";
  for (const auto& [trace, reference] : traces) ExpectTreeMatches(trace, reference);
}

}  // namespace
}  // namespace fleetprof::analysis
