// Pyroscope's FlameGraph layout from call trees, and trees added up for a job.

#include <string>
#include <vector>

#include "analysis/call_tree.h"
#include "flame/call_tree_sum.h"
#include "flame/flame_graph.h"
#include "gtest/gtest.h"

namespace fleetprof::flame {
namespace {

using analysis::CallTree;
using analysis::CallTreeNode;

// A tree from (name, depth, count, host_self_ns, device_ns) rows in pre-order.
struct Row {
  std::string name;
  uint32_t depth;
  int64_t count, host_self_ns, device_ns;
};
CallTree TreeOf(const std::vector<Row>& rows) {
  CallTree tree;
  for (const Row& r : rows) {
    CallTreeNode node;
    node.name = static_cast<uint32_t>(tree.names.size());
    tree.names.push_back(r.name);
    node.depth = r.depth;
    node.count = r.count;
    node.host_self_ns = r.host_self_ns;
    node.device_ns = r.device_ns;
    tree.nodes.push_back(node);
  }
  return tree;
}

std::vector<int64_t> Level(const v1::FlameGraph& graph, int level) {
  const auto& values = graph.levels(level).values();
  return std::vector<int64_t>(values.begin(), values.end());
}

TEST(FlameGraph, MaxNodesDrawsTheLargestFramesAndKeepsEveryTotal) {
  const CallTree tree = TreeOf({{"total", 0, 0, 0, 0},
                                {"a", 1, 1, 0, 0},
                                {"a1", 2, 6, 0, 0},
                                {"a2", 2, 1, 0, 0},
                                {"b", 1, 2, 0, 0},
                                {"b1", 2, 1, 0, 0}});
  // Totals: a 8, a1 6, b 3, a2 1, b1 1. Four frames: total, a, a1, b; a2 and b1 go to their
  // parents' self.
  const v1::FlameGraph graph = RenderFlameGraph(tree, FlameValue::kCount, 4);
  EXPECT_EQ(graph.total(), 11);
  ASSERT_EQ(graph.levels_size(), 3);
  auto name = [&](int64_t i) { return graph.names(static_cast<int>(i)); };
  const std::vector<int64_t> one = Level(graph, 1);
  ASSERT_EQ(one.size(), 8u);
  EXPECT_EQ(name(one[3]), "a");
  EXPECT_EQ((std::vector<int64_t>{one[1], one[2]}), (std::vector<int64_t>{8, 2}));  // a: 1 + a2's 1
  EXPECT_EQ(name(one[7]), "b");
  EXPECT_EQ((std::vector<int64_t>{one[5], one[6]}), (std::vector<int64_t>{3, 3}));  // b: 2 + b1's 1
  const std::vector<int64_t> two = Level(graph, 2);
  ASSERT_EQ(two.size(), 4u);
  EXPECT_EQ(name(two[3]), "a1");
  // Without a limit, or with one above the size, every frame.
  EXPECT_EQ(Level(RenderFlameGraph(tree, FlameValue::kCount, 100), 2).size(), 12u);
  EXPECT_EQ(Level(RenderFlameGraph(tree, FlameValue::kCount), 2).size(), 12u);
}

TEST(FlameGraph, OffsetsCountFromThePreviousNodeOfTheLevelWhateverItsParent) {
  // Siblings come by name (b before a in the input); c has nothing to show and is left out.
  const CallTree tree = TreeOf({{"total", 0, 0, 0, 0},
                                {"b", 1, 0, 0, 0},
                                {"z", 2, 2, 0, 0},
                                {"a", 1, 4, 0, 0},
                                {"x", 2, 3, 0, 0},
                                {"c", 2, 0, 0, 0}});
  const v1::FlameGraph graph = RenderFlameGraph(tree, FlameValue::kCount);
  ASSERT_EQ(graph.levels_size(), 3);
  EXPECT_EQ(graph.total(), 9);
  EXPECT_EQ(graph.max_self(), 4);
  ASSERT_GE(graph.names_size(), 1);
  EXPECT_EQ(graph.names(0), "total");
  auto name = [&](int64_t i) { return graph.names(static_cast<int>(i)); };
  EXPECT_EQ(Level(graph, 0), (std::vector<int64_t>{0, 9, 0, 0}));
  const std::vector<int64_t> one = Level(graph, 1);
  ASSERT_EQ(one.size(), 8u);
  EXPECT_EQ((std::vector<int64_t>{one[0], one[1], one[2]}), (std::vector<int64_t>{0, 7, 4}));
  EXPECT_EQ(name(one[3]), "a");
  EXPECT_EQ((std::vector<int64_t>{one[4], one[5], one[6]}), (std::vector<int64_t>{0, 2, 0}));
  EXPECT_EQ(name(one[7]), "b");
  const std::vector<int64_t> two = Level(graph, 2);
  ASSERT_EQ(two.size(), 8u);
  // x at 0..3 under a; z at 7..9 under b: 4 after the end of x.
  EXPECT_EQ((std::vector<int64_t>{two[0], two[1], two[2]}), (std::vector<int64_t>{0, 3, 3}));
  EXPECT_EQ(name(two[3]), "x");
  EXPECT_EQ((std::vector<int64_t>{two[4], two[5], two[6]}), (std::vector<int64_t>{4, 2, 2}));
  EXPECT_EQ(name(two[7]), "z");
}

TEST(FlameGraph, ValueSelectsDeviceHostSelfOrCount) {
  const CallTree tree = TreeOf({{"total", 0, 0, 0, 0}, {"op", 1, 1, 30, 0}, {"gemm", 2, 5, 0, 70}});
  EXPECT_EQ(RenderFlameGraph(tree, FlameValue::kDeviceNs).total(), 70);
  EXPECT_EQ(RenderFlameGraph(tree, FlameValue::kHostSelfNs).total(), 30);
  EXPECT_EQ(RenderFlameGraph(tree, FlameValue::kCount).total(), 6);
  // Host self time: the kernel leaf has none, so the graph stops at the op.
  EXPECT_EQ(RenderFlameGraph(tree, FlameValue::kHostSelfNs).levels_size(), 2);
}

TEST(FlameGraph, UnknownValueIsAClearError) {
  EXPECT_TRUE(ParseFlameValue("").ok());
  EXPECT_TRUE(ParseFlameValue("host_self_ns").ok());
  absl::StatusOr<FlameValue> bad = ParseFlameValue("cpu");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(bad.status().message().find("device_ns"), std::string::npos);
}

TEST(CallTreeSum, FramesWithTheSamePathAddUp) {
  CallTreeSum sum;
  sum.Add(TreeOf({{"total", 0, 0, 0, 0}, {"op", 1, 1, 30, 0}, {"gemm", 2, 5, 0, 70}}));
  sum.Add(TreeOf({{"total", 0, 0, 0, 0}, {"op", 1, 2, 10, 0}, {"gemm", 2, 1, 0, 5}, {"other", 1, 1, 3, 0}}));
  const CallTree tree = sum.Finish();
  ASSERT_EQ(tree.nodes.size(), 4u);
  const v1::FlameGraph device = RenderFlameGraph(tree, FlameValue::kDeviceNs);
  EXPECT_EQ(device.total(), 75);
  EXPECT_EQ(RenderFlameGraph(tree, FlameValue::kHostSelfNs).total(), 43);
  EXPECT_EQ(RenderFlameGraph(tree, FlameValue::kCount).total(), 10);
}

}  // namespace
}  // namespace fleetprof::flame
