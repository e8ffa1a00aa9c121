#include "analysis/frame_tree.h"

#include <algorithm>

#include "absl/container/flat_hash_set.h"
#include "common/checked_math.h"

namespace fleetprof::analysis {
namespace {

// Floor division, as TraceEvents::DurationNs.
Nanos FloorNs(Ticks t, int64_t ticks_per_ns) {
  const Ticks q = t / ticks_per_ns;
  return (t % ticks_per_ns != 0 && t < 0) ? q - 1 : q;
}

// Shares of `ticks` in ns that add up to exactly the floor of their sum: each floored, the ns
// lost to flooring given back one each to the largest remainders (earlier index first).
std::vector<Nanos> ApportionNs(int64_t ticks_per_ns, const std::vector<Ticks>& ticks) {
  Ticks sum = 0;
  for (Ticks t : ticks) sum = SaturatingAdd(sum, t);
  const Nanos target = FloorNs(sum, ticks_per_ns);
  std::vector<Nanos> out(ticks.size());
  Nanos got = 0;
  for (size_t i = 0; i < ticks.size(); ++i) {
    out[i] = FloorNs(ticks[i], ticks_per_ns);
    got = SaturatingAdd(got, out[i]);
  }
  if (got == target || ticks.empty()) return out;
  std::vector<size_t> order(ticks.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto remainder = [&](size_t i) { return ticks[i] - out[i] * ticks_per_ns; };
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return remainder(a) > remainder(b); });
  // Flooring loses less than 1 ns per share; only a saturated sum can make `got` exceed it.
  // (A share that cannot move, 0 while `got` is too high, is passed; a full round without a move
  // ends it: only negative ticks, which readers never produce, could get there.)
  size_t still = 0;
  for (size_t k = 0; got != target && still < order.size(); k = (k + 1) % order.size()) {
    Nanos& share = out[order[k]];
    if (got < target) {
      ++share;
      ++got;
      still = 0;
    } else if (share > 0) {
      const Nanos cut = std::min(share, got - target);
      share -= cut;
      got -= cut;
      still = 0;
    } else {
      ++still;
    }
  }
  return out;
}

}  // namespace

FrameTree::FrameTree(std::string_view root_name) {
  Frame root;
  root.kind = Kind::kFixed;
  root.name = Name(root_name);
  frames_.push_back(root);
}

uint32_t FrameTree::Name(std::string_view name) {
  auto [it, inserted] = name_index_.try_emplace(std::string(name), static_cast<uint32_t>(names_.size()));
  if (inserted) names_.emplace_back(name);
  return it->second;
}

uint32_t FrameTree::Child(uint32_t parent, Kind kind, uint32_t name) {
  const std::pair<uint64_t, uint32_t> key{(uint64_t{parent} << 2) | static_cast<uint64_t>(kind), name};
  auto [it, inserted] = children_.try_emplace(key, static_cast<uint32_t>(frames_.size()));
  if (inserted) {
    Frame f;
    f.parent = parent;
    f.kind = kind;
    f.name = name;
    frames_.push_back(f);
  }
  return it->second;
}

int64_t FrameTree::SizeAfterFold(Ticks threshold, const std::vector<Ticks>& weight,
                                 std::vector<uint32_t>* owner) const {
  owner->assign(frames_.size(), kKept);
  int64_t size = 1;  // the root
  absl::flat_hash_set<uint32_t> others;                     // kept frames that get an "other"
  absl::flat_hash_set<std::pair<uint32_t, uint32_t>> leaves;  // (kept frame, kernel name) in its "other"
  for (uint32_t i = 1; i < frames_.size(); ++i) {
    const uint32_t parent = frames_[i].parent;
    const uint32_t parent_owner = (*owner)[parent];
    if (parent_owner == kKept) {
      if (Foldable(i) && weight[i] <= threshold) {
        (*owner)[i] = parent;
        others.insert(parent);
      } else {
        ++size;
      }
    } else {
      (*owner)[i] = parent_owner;
      if (frames_[i].kind == Kind::kKernel) leaves.insert({parent_owner, frames_[i].name});
    }
  }
  return size + static_cast<int64_t>(others.size() + leaves.size());
}

void FrameTree::Fold(int64_t max_nodes, std::string_view other_name) {
  if (static_cast<int64_t>(frames_.size()) <= max_nodes) return;
  std::vector<Ticks> weight(frames_.size());
  for (size_t i = 0; i < frames_.size(); ++i) weight[i] = SaturatingAdd(frames_[i].host_self, frames_[i].device);
  for (size_t i = frames_.size() - 1; i > 0; --i) {
    weight[frames_[i].parent] = SaturatingAdd(weight[frames_[i].parent], weight[i]);
  }
  std::vector<Ticks> thresholds;
  for (uint32_t i = 1; i < frames_.size(); ++i) {
    if (Foldable(i)) thresholds.push_back(weight[i]);
  }
  if (thresholds.empty()) return;
  std::sort(thresholds.begin(), thresholds.end());
  thresholds.erase(std::unique(thresholds.begin(), thresholds.end()), thresholds.end());
  // The size only shrinks as the threshold grows: the smallest threshold that fits.
  std::vector<uint32_t> owner;
  size_t lo = 0, hi = thresholds.size() - 1;
  while (lo < hi) {
    const size_t mid = lo + (hi - lo) / 2;
    if (SizeAfterFold(thresholds[mid], weight, &owner) <= max_nodes) {
      hi = mid;
    } else {
      lo = mid + 1;
    }
  }
  SizeAfterFold(thresholds[lo], weight, &owner);

  const std::vector<Frame> old = std::move(frames_);
  frames_.clear();
  children_.clear();
  frames_.push_back(old[0]);
  const uint32_t other = Name(other_name);
  std::vector<uint32_t> moved(old.size(), kRoot);
  for (uint32_t i = 1; i < old.size(); ++i) {
    const Frame& f = old[i];
    uint32_t to;
    if (owner[i] == kKept) {
      to = Child(moved[f.parent], f.kind, f.name);
    } else {
      const uint32_t other_frame = Child(moved[owner[i]], Kind::kFixed, other);
      to = f.kind == Kind::kKernel ? Child(other_frame, Kind::kKernel, f.name) : other_frame;
    }
    moved[i] = to;
    Frame& into = frames_[to];
    into.count = SaturatingAdd(into.count, f.count);
    into.host_self = SaturatingAdd(into.host_self, f.host_self);
    into.device = SaturatingAdd(into.device, f.device);
  }
}

CallTree FrameTree::Emit(int64_t ticks_per_ns) const {
  const size_t n = frames_.size();
  // Children lists (CSR), each sorted by name.
  std::vector<uint32_t> first(n + 1, 0);
  for (size_t i = 1; i < n; ++i) ++first[frames_[i].parent + 1];
  for (size_t i = 1; i <= n; ++i) first[i] += first[i - 1];
  std::vector<uint32_t> children(n > 0 ? n - 1 : 0);
  {
    std::vector<uint32_t> next(first.begin(), first.end() - 1);
    for (uint32_t i = 1; i < n; ++i) children[next[frames_[i].parent]++] = i;
  }
  for (size_t p = 0; p < n; ++p) {
    std::sort(children.begin() + first[p], children.begin() + first[p + 1], [&](uint32_t a, uint32_t b) {
      const std::string& x = names_[frames_[a].name];
      const std::string& y = names_[frames_[b].name];
      return x != y ? x < y : frames_[a].kind < frames_[b].kind;
    });
  }
  // Device ns per kernel leaf: each kernel name's leaves share its floored total.
  std::vector<Nanos> device_ns(n, 0);
  {
    absl::flat_hash_map<uint32_t, std::vector<uint32_t>> by_kernel;
    for (uint32_t i = 0; i < n; ++i) {
      if (frames_[i].kind == Kind::kKernel) by_kernel[frames_[i].name].push_back(i);
    }
    for (const auto& [name, leaves] : by_kernel) {
      std::vector<Ticks> ticks;
      for (uint32_t leaf : leaves) ticks.push_back(frames_[leaf].device);
      std::vector<Nanos> shares = ApportionNs(ticks_per_ns, ticks);
      for (size_t k = 0; k < leaves.size(); ++k) device_ns[leaves[k]] = shares[k];
    }
  }
  CallTree tree;
  absl::flat_hash_map<uint32_t, uint32_t> used_names;
  std::vector<std::pair<uint32_t, uint32_t>> stack{{kRoot, 0}};  // (frame, depth)
  while (!stack.empty()) {
    const auto [i, depth] = stack.back();
    stack.pop_back();
    const Frame& f = frames_[i];
    auto [name, inserted] = used_names.try_emplace(f.name, static_cast<uint32_t>(tree.names.size()));
    if (inserted) tree.names.push_back(names_[f.name]);
    CallTreeNode node;
    node.name = name->second;
    node.depth = depth;
    node.kind = f.kind;
    node.count = f.count;
    node.host_self_ns = FloorNs(f.host_self, ticks_per_ns);
    node.device_ns = device_ns[i];
    tree.nodes.push_back(node);
    for (uint32_t k = first[i + 1]; k > first[i]; --k) stack.push_back({children[k - 1], depth + 1});
  }
  return tree;
}

}  // namespace fleetprof::analysis
