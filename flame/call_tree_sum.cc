#include "flame/call_tree_sum.h"

#include "analysis/call_tree.h"
#include "common/checked_math.h"

namespace fleetprof::flame {

CallTreeSum::CallTreeSum() {
  Frame root;
  root.name = Name(analysis::kRootFrame);
  frames_.push_back(root);
}

uint32_t CallTreeSum::Name(const std::string& name) {
  auto [it, inserted] = name_index_.try_emplace(name, static_cast<uint32_t>(names_.size()));
  if (inserted) names_.push_back(name);
  return it->second;
}

void CallTreeSum::Add(const analysis::CallTree& tree) {
  std::vector<uint32_t> path;  // path[d]: this sum's frame for the tree's open frame at depth d
  for (const analysis::CallTreeNode& node : tree.nodes) {
    path.resize(node.depth);
    uint32_t frame = 0;
    if (node.depth > 0) {
      const uint32_t parent = path[node.depth - 1];
      const uint32_t name = Name(tree.names[node.name]);
      auto [it, inserted] = children_.try_emplace({parent, name}, static_cast<uint32_t>(frames_.size()));
      if (inserted) {
        Frame f;
        f.parent = parent;
        f.name = name;
        frames_.push_back(f);
      }
      frame = it->second;
    }
    analysis::CallTreeNode& sum = frames_[frame].values;
    sum.kind = node.kind;
    sum.count = SaturatingAdd(sum.count, node.count);
    sum.host_self_ns = SaturatingAdd(sum.host_self_ns, node.host_self_ns);
    sum.device_ns = SaturatingAdd(sum.device_ns, node.device_ns);
    path.push_back(frame);
  }
}

analysis::CallTree CallTreeSum::Finish() const {
  const size_t n = frames_.size();
  std::vector<uint32_t> first(n + 1, 0);
  for (size_t i = 1; i < n; ++i) ++first[frames_[i].parent + 1];
  for (size_t i = 1; i <= n; ++i) first[i] += first[i - 1];
  std::vector<uint32_t> children(n - 1);
  {
    std::vector<uint32_t> next(first.begin(), first.end() - 1);
    for (uint32_t i = 1; i < n; ++i) children[next[frames_[i].parent]++] = i;
  }
  analysis::CallTree tree;
  tree.names = names_;
  std::vector<std::pair<uint32_t, uint32_t>> stack{{0, 0}};  // (frame, depth)
  while (!stack.empty()) {
    const auto [i, depth] = stack.back();
    stack.pop_back();
    analysis::CallTreeNode node = frames_[i].values;
    node.name = frames_[i].name;
    node.depth = depth;
    tree.nodes.push_back(node);
    for (uint32_t k = first[i + 1]; k > first[i]; --k) stack.push_back({children[k - 1], depth + 1});
  }
  return tree;
}

}  // namespace fleetprof::flame
