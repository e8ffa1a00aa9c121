#include "proto/call_tree_codec.h"

#include <algorithm>
#include <string>
#include <vector>

#include "analysis/call_tree.h"

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace fleetprof {

namespace {

// Writes `tree` into out, names by reference (`refs`, then out->names).
void Encode(const analysis::CallTree& tree, const absl::flat_hash_map<std::string_view, uint32_t>& refs,
            uint32_t first_own_name, v1::CallTree* out) {
  out->Clear();
  std::vector<uint32_t> ref_of(tree.names.size());
  for (size_t i = 0; i < tree.names.size(); ++i) {
    auto it = refs.find(tree.names[i]);
    if (it != refs.end()) {
      ref_of[i] = it->second;
    } else {
      ref_of[i] = first_own_name + static_cast<uint32_t>(out->names_size());
      out->add_names(tree.names[i]);
    }
  }
  const int n = static_cast<int>(tree.nodes.size());
  out->mutable_name()->Reserve(n);
  out->mutable_depth_kind()->Reserve(n);
  out->mutable_count()->Reserve(n);
  out->mutable_host_self_ns()->Reserve(n);
  out->mutable_device_ns()->Reserve(n);
  for (const analysis::CallTreeNode& node : tree.nodes) {
    out->add_name(ref_of[node.name]);
    out->add_depth_kind(node.depth * 4 + static_cast<uint32_t>(node.kind));
    out->add_count(node.count);
    out->add_host_self_ns(node.host_self_ns);
    out->add_device_ns(node.device_ns);
  }
}

}  // namespace

void CallTreeToProto(const analysis::CallTree& tree, v1::ProfileSummary* summary) {
  summary->clear_call_tree();
  if (tree.nodes.empty()) return;
  const size_t rest = summary->ByteSizeLong();
  const size_t budget = rest * kCallTreeSharePercent / 100;
  // Name references: op rows, then kernel rows, then the tree's own names; first one wins.
  absl::flat_hash_map<std::string_view, uint32_t> refs;
  uint32_t next = 0;
  for (const v1::OpStat& op : summary->ops()) refs.try_emplace(op.name(), next++);
  for (const v1::KernelStat& kernel : summary->kernels()) refs.try_emplace(kernel.name(), next++);
  Encode(tree, refs, next, summary->mutable_call_tree());
  size_t size = summary->ByteSizeLong() - rest;
  if (size <= budget) return;
  // Fold to about the share of nodes that fits, again while it does not (sizes per frame vary).
  analysis::CallTree folded = tree;
  while (size > budget) {
    const size_t nodes = folded.nodes.size();
    const size_t target = std::min(nodes - 1, nodes * budget / size);
    analysis::CallTree smaller = analysis::FoldCallTree(folded, static_cast<int64_t>(target));
    if (smaller.nodes.size() >= nodes) break;  // only kernel leaves and fixed frames are left
    folded = std::move(smaller);
    Encode(folded, refs, next, summary->mutable_call_tree());
    size = summary->ByteSizeLong() - rest;
  }
}

absl::StatusOr<analysis::CallTree> CallTreeFromProto(const v1::ProfileSummary& summary) {
  if (!summary.has_call_tree() || summary.call_tree().name_size() == 0) {
    return absl::NotFoundError("the summary holds no call tree (stored before call trees existed)");
  }
  const v1::CallTree& in = summary.call_tree();
  const int n = in.name_size();
  if (in.depth_kind_size() != n || in.count_size() != n || in.host_self_ns_size() != n || in.device_ns_size() != n) {
    return absl::DataLossError("stored call tree: its arrays differ in length");
  }
  const uint64_t ops = static_cast<uint64_t>(summary.ops_size());
  const uint64_t kernels = static_cast<uint64_t>(summary.kernels_size());
  analysis::CallTree tree;
  absl::flat_hash_map<uint32_t, uint32_t> names;  // reference -> index in tree.names
  tree.nodes.reserve(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const uint32_t ref = in.name(i);
    auto [it, inserted] = names.try_emplace(ref, static_cast<uint32_t>(tree.names.size()));
    if (inserted) {
      if (ref < ops) {
        tree.names.push_back(summary.ops(static_cast<int>(ref)).name());
      } else if (ref < ops + kernels) {
        tree.names.push_back(summary.kernels(static_cast<int>(ref - ops)).name());
      } else if (ref - ops - kernels < static_cast<uint64_t>(in.names_size())) {
        tree.names.push_back(in.names(static_cast<int>(ref - ops - kernels)));
      } else {
        return absl::DataLossError(absl::StrCat("stored call tree: frame ", i, " names entry ", ref,
                                                " of ", ops + kernels + in.names_size()));
      }
    }
    const uint32_t depth = in.depth_kind(i) / 4;
    const uint32_t kind = in.depth_kind(i) % 4;
    if (kind > static_cast<uint32_t>(analysis::FrameKind::kFixed)) {
      return absl::DataLossError(absl::StrCat("stored call tree: frame ", i, " has kind ", kind));
    }
    const bool valid_depth = i == 0 ? depth == 0 : depth >= 1 && depth <= tree.nodes.back().depth + 1;
    if (!valid_depth) {
      return absl::DataLossError(absl::StrCat("stored call tree: frame ", i, " has depth ", depth));
    }
    analysis::CallTreeNode node;
    node.name = it->second;
    node.depth = depth;
    node.kind = static_cast<analysis::FrameKind>(kind);
    node.count = in.count(i);
    node.host_self_ns = in.host_self_ns(i);
    node.device_ns = in.device_ns(i);
    tree.nodes.push_back(node);
  }
  return tree;
}

}  // namespace fleetprof
