#include "flame/flame_graph.h"

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "common/checked_math.h"

namespace fleetprof::flame {
namespace {

int64_t ValueOf(const analysis::CallTreeNode& node, FlameValue value) {
  switch (value) {
    case FlameValue::kDeviceNs:
      return node.device_ns;
    case FlameValue::kHostSelfNs:
      return node.host_self_ns;
    case FlameValue::kCount:
      return node.count;
  }
  return 0;
}

}  // namespace

absl::StatusOr<FlameValue> ParseFlameValue(std::string_view value) {
  if (value.empty() || value == "device_ns") return FlameValue::kDeviceNs;
  if (value == "host_self_ns") return FlameValue::kHostSelfNs;
  if (value == "count") return FlameValue::kCount;
  return absl::InvalidArgumentError(
      absl::StrCat("unknown flame graph value '", std::string(value), "': device_ns, host_self_ns or count"));
}

int64_t CallTreeTotal(const analysis::CallTree& tree, FlameValue value) {
  int64_t total = 0;
  for (const analysis::CallTreeNode& node : tree.nodes) total = SaturatingAdd(total, ValueOf(node, value));
  return total;
}

namespace {

// Which frames a graph of at most `max_nodes` frames keeps: the largest totals, ties in
// pre-order, never a frame without its parent; the others' totals move to their parent's self.
std::vector<bool> KeepLargest(const std::vector<uint32_t>& parent, const std::vector<int64_t>& total,
                              std::vector<int64_t>& self, int64_t max_nodes) {
  const size_t n = total.size();
  std::vector<bool> keep(n, true);
  if (max_nodes <= 0 || static_cast<int64_t>(n) <= max_nodes) return keep;
  std::vector<int64_t> sorted(total.begin() + 1, total.end());
  const size_t k = static_cast<size_t>(max_nodes - 1);  // the root is always drawn
  int64_t threshold = INT64_MAX;
  if (k > 0) {
    std::nth_element(sorted.begin(), sorted.begin() + (k - 1), sorted.end(), std::greater<int64_t>());
    threshold = sorted[k - 1];
  }
  size_t kept = 0;
  for (size_t i = 1; i < n; ++i) {
    keep[i] = keep[parent[i]] && kept < k && total[i] >= threshold && total[i] > 0;
    if (keep[i]) {
      ++kept;
    } else if (keep[parent[i]]) {
      self[parent[i]] = SaturatingAdd(self[parent[i]], total[i]);
    }
  }
  return keep;
}

}  // namespace

v1::FlameGraph RenderFlameGraph(const analysis::CallTree& tree, FlameValue value, int64_t max_nodes) {
  v1::FlameGraph graph;
  const size_t n = tree.nodes.size();
  if (n == 0) {
    graph.add_names("total");
    for (int k = 0; k < 4; ++k) graph.add_levels()->add_values(0);
    return graph;
  }
  // Parents from the depths, then totals bottom-up (a pre-order puts children after parents).
  std::vector<uint32_t> parent(n, 0);
  std::vector<uint32_t> open;  // open[d]: the last frame seen at depth d
  for (uint32_t i = 0; i < n; ++i) {
    const uint32_t depth = tree.nodes[i].depth;
    open.resize(depth);
    if (depth > 0) parent[i] = open[depth - 1];
    open.push_back(i);
  }
  std::vector<int64_t> self(n), total(n);
  for (size_t i = 0; i < n; ++i) total[i] = self[i] = ValueOf(tree.nodes[i], value);
  for (size_t i = n - 1; i > 0; --i) total[parent[i]] = SaturatingAdd(total[parent[i]], total[i]);
  const std::vector<bool> keep = KeepLargest(parent, total, self, max_nodes);
  // Children by name (CSR).
  std::vector<uint32_t> first(n + 1, 0);
  for (size_t i = 1; i < n; ++i) ++first[parent[i] + 1];
  for (size_t i = 1; i <= n; ++i) first[i] += first[i - 1];
  std::vector<uint32_t> children(n - 1);
  {
    std::vector<uint32_t> next(first.begin(), first.end() - 1);
    for (uint32_t i = 1; i < n; ++i) children[next[parent[i]]++] = i;
  }
  auto name_of = [&](uint32_t i) -> const std::string& { return tree.names[tree.nodes[i].name]; };
  for (size_t p = 0; p < n; ++p) {
    std::stable_sort(children.begin() + first[p], children.begin() + first[p + 1],
                     [&](uint32_t a, uint32_t b) { return name_of(a) < name_of(b); });
  }
  absl::flat_hash_map<std::string_view, int64_t> name_index;
  auto index_of = [&](uint32_t i) {
    auto [it, inserted] = name_index.try_emplace(name_of(i), graph.names_size());
    if (inserted) graph.add_names(name_of(i));
    return it->second;
  };
  std::vector<int64_t> level_end;  // x where the last node written on each level ends
  int64_t max_self = 0;
  std::vector<std::pair<uint32_t, int64_t>> stack{{0, 0}};  // (frame, x)
  std::vector<std::pair<uint32_t, int64_t>> placed;         // scratch: one frame's children
  while (!stack.empty()) {
    const auto [i, x] = stack.back();
    stack.pop_back();
    if (i != 0 && (total[i] == 0 || !keep[i])) continue;
    const uint32_t depth = tree.nodes[i].depth;
    if (level_end.size() <= depth) {
      level_end.resize(depth + 1, 0);
      while (graph.levels_size() <= static_cast<int>(depth)) graph.add_levels();
    }
    auto* values = graph.mutable_levels(static_cast<int>(depth))->mutable_values();
    values->Add(x - level_end[depth]);
    values->Add(total[i]);
    values->Add(self[i]);
    values->Add(index_of(i));
    level_end[depth] = SaturatingAdd(x, total[i]);
    max_self = std::max(max_self, self[i]);
    // Children left to right from the frame's own x; pushed in reverse to pop in order.
    int64_t child_x = x;
    placed.clear();
    for (uint32_t k = first[i]; k < first[i + 1]; ++k) {
      placed.push_back({children[k], child_x});
      child_x = SaturatingAdd(child_x, total[children[k]]);
    }
    stack.insert(stack.end(), placed.rbegin(), placed.rend());
  }
  graph.set_total(total[0]);
  graph.set_max_self(max_self);
  return graph;
}

}  // namespace fleetprof::flame
