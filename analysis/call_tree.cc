#include "analysis/call_tree.h"

#include <algorithm>
#include <map>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "analysis/frame_tree.h"
#include "analysis/host_nesting.h"
#include "common/checked_math.h"

namespace fleetprof::analysis {
namespace {

using Kind = FrameTree::Kind;
constexpr uint32_t kUnset = ~uint32_t{0};

// Tree names of the trace's names, interned on first use; every ProfilerStep#N is one frame.
class FrameNames {
 public:
  FrameNames(const TraceEvents& events, FrameTree* tree)
      : events_(events), tree_(tree), host_(events.names.size(), kUnset), kernel_(events.names.size(), kUnset) {}
  uint32_t Host(NameId id) {
    uint32_t& name = host_[id];
    if (name == kUnset) {
      const std::string_view text = events_.names.Get(id);
      name = tree_->Name(text.starts_with("ProfilerStep#") ? std::string_view(kStepFrame) : text);
    }
    return name;
  }
  uint32_t Kernel(NameId id) {
    uint32_t& name = kernel_[id];
    if (name == kUnset) name = tree_->Name(events_.names.Get(id));
    return name;
  }

 private:
  const TraceEvents& events_;
  FrameTree* tree_;
  std::vector<uint32_t> host_;
  std::vector<uint32_t> kernel_;
};

// An open host event of the walk, clipped to its parent: [start, end).
struct OpenEvent {
  uint32_t event;
  uint32_t frame;
  Ticks end;       // clipped end, >= the event's start
  Ticks length;    // end - start
  Ticks children;  // clipped children's lengths: siblings never overlap in this walk
};

// The runtime calls that launch device work, by correlation id: the frame of the first call
// seen with each id. A sorted array rather than a hash map: a 600 MB trace has about 460,000
// launches, and the map (with its rehash) was the largest allocation of the whole analysis.
class Launchers {
 public:
  explicit Launchers(const TraceEvents& events) {
    size_t n = 0;
    for (const HostEvent& e : events.host) n += e.is_runtime && e.has_correlation;
    calls_.reserve(n);
  }
  void Add(int64_t correlation, uint32_t frame) {
    calls_.push_back(Call{correlation, frame, static_cast<uint32_t>(calls_.size())});
  }
  // After the last Add: sorted, and only the first call of each id kept.
  void Seal() {
    std::sort(calls_.begin(), calls_.end(), [](const Call& a, const Call& b) {
      return a.correlation < b.correlation || (a.correlation == b.correlation && a.seen < b.seen);
    });
    calls_.erase(std::unique(calls_.begin(), calls_.end(),
                             [](const Call& a, const Call& b) { return a.correlation == b.correlation; }),
                 calls_.end());
  }
  std::optional<uint32_t> Find(int64_t correlation) const {
    auto it = std::lower_bound(calls_.begin(), calls_.end(), correlation,
                               [](const Call& c, int64_t id) { return c.correlation < id; });
    if (it == calls_.end() || it->correlation != correlation) return std::nullopt;
    return it->frame;
  }

 private:
  struct Call {
    int64_t correlation;
    uint32_t frame;
    uint32_t seen;  // the order of Add: the first wins (it fills what was padding)
  };
  std::vector<Call> calls_;
};

// Host frames from every thread's nesting; returns the frame of each launching runtime call,
// by correlation id.
Launchers AddHostFrames(const TraceEvents& events, FrameNames& names, FrameTree* tree) {
  Launchers launchers(events);
  std::vector<OpenEvent> stack;
  auto close = [&]() {
    const OpenEvent open = stack.back();
    stack.pop_back();
    FrameTree::Frame& f = tree->frame(open.frame);
    f.host_self = SaturatingAdd(f.host_self, open.length - open.children);
  };
  ForEachThreadInNestingOrder(events, [&](const std::vector<uint32_t>& order, size_t begin, size_t end) {
    for (size_t i = begin; i < end; ++i) {
      const HostEvent& e = events.host[order[i]];
      // Nesting exactly as the op breakdown's: an event is open while its own end is after the
      // newcomer's start.
      while (!stack.empty()) {
        const HostEvent& top = events.host[stack.back().event];
        if (top.start + top.dur > e.start) break;
        close();
      }
      Ticks clipped_end = e.start + e.dur;  // in range: readers keep times within ±kMaxAbsTicks
      uint32_t parent = FrameTree::kRoot;
      if (!stack.empty()) {
        clipped_end = std::max(e.start, std::min(clipped_end, stack.back().end));
        parent = stack.back().frame;
      }
      const Ticks length = clipped_end - e.start;
      if (!stack.empty()) stack.back().children += length;
      const uint32_t frame = tree->Child(parent, Kind::kHost, names.Host(e.name));
      ++tree->frame(frame).count;
      if (e.is_runtime && e.has_correlation) launchers.Add(e.correlation, frame);
      stack.push_back(OpenEvent{order[i], frame, clipped_end, length, 0});
    }
    while (!stack.empty()) close();
  });
  launchers.Seal();
  return launchers;
}

void AddKernel(FrameTree* tree, uint32_t parent, uint32_t name, int64_t count, Ticks ticks) {
  FrameTree::Frame& leaf = tree->frame(tree->Child(parent, Kind::kKernel, name));
  leaf.count = SaturatingAdd(leaf.count, count);
  leaf.device = SaturatingAdd(leaf.device, ticks);
}

// Kineto: each activity under its launching runtime call, else under kUnlaunchedFrame.
void AddLaunchedKernels(const TraceEvents& events, const Launchers& launchers, FrameNames& names, FrameTree* tree) {
  uint32_t unlaunched = kUnset;
  for (const DeviceActivity& a : events.activity) {
    uint32_t parent;
    std::optional<uint32_t> launcher = a.has_correlation ? launchers.Find(a.correlation) : std::nullopt;
    if (launcher) {
      parent = *launcher;
    } else {
      if (unlaunched == kUnset) {
        unlaunched = tree->Child(FrameTree::kRoot, Kind::kFixed, tree->Name(kUnlaunchedFrame));
      }
      parent = unlaunched;
    }
    AddKernel(tree, parent, names.Kernel(a.name), 1, a.dur);
  }
}

// XSpace: module -> category -> op -> kernel from the XLA op groups; what the groups do not
// account for of a kernel's activity under kNoXlaOpFrame. Should the groups claim more than the
// activity holds (events the reader skipped as malformed), the kernel goes there whole.
void AddXlaKernels(const TraceEvents& events, FrameNames& names, FrameTree* tree) {
  struct Activity {
    int64_t count = 0;
    Ticks ticks = 0;
    NameId name = 0;
    int64_t leaf_count = 0;
    Ticks leaf_ticks = 0;
  };
  std::map<std::string_view, Activity> by_kernel;
  for (const DeviceActivity& a : events.activity) {
    Activity& k = by_kernel[events.names.Get(a.name)];
    k.name = a.name;
    ++k.count;
    k.ticks = SaturatingAdd(k.ticks, a.dur);
  }
  std::vector<const XlaKernelLeaf*> leaves;
  for (const XlaKernelLeaf& leaf : events.xla_kernel_leaves) {
    auto it = by_kernel.find(leaf.kernel);
    if (it == by_kernel.end()) continue;
    it->second.leaf_count = SaturatingAdd(it->second.leaf_count, leaf.count);
    it->second.leaf_ticks = SaturatingAdd(it->second.leaf_ticks, leaf.total);
    leaves.push_back(&leaf);
  }
  auto fits = [](const Activity& k) { return k.leaf_count <= k.count && k.leaf_ticks <= k.ticks; };
  for (const XlaKernelLeaf* leaf : leaves) {
    const Activity& k = by_kernel.find(leaf->kernel)->second;
    if (!fits(k)) continue;
    uint32_t frame = FrameTree::kRoot;
    for (const std::string* level : {&leaf->module, &leaf->category, &leaf->op}) {
      if (!level->empty()) frame = tree->Child(frame, Kind::kHost, tree->Name(*level));
    }
    AddKernel(tree, frame, names.Kernel(k.name), leaf->count, leaf->total);
  }
  uint32_t no_op = kUnset;
  for (const auto& [text, k] : by_kernel) {
    const bool whole = !fits(k);
    const int64_t count = whole ? k.count : k.count - k.leaf_count;
    const Ticks ticks = whole ? k.ticks : k.ticks - k.leaf_ticks;
    if (count == 0 && ticks == 0) continue;
    if (no_op == kUnset) no_op = tree->Child(FrameTree::kRoot, Kind::kFixed, tree->Name(kNoXlaOpFrame));
    AddKernel(tree, no_op, names.Kernel(k.name), count, ticks);
  }
}

}  // namespace

CallTree BuildCallTree(const TraceEvents& events, int64_t max_nodes) {
  FrameTree tree(kRootFrame);
  FrameNames names(events, &tree);
  if (events.format == TraceFormat::kXSpace) {
    AddXlaKernels(events, names, &tree);
  } else {
    const Launchers launchers = AddHostFrames(events, names, &tree);
    AddLaunchedKernels(events, launchers, names, &tree);
  }
  tree.Fold(max_nodes, kOtherFrame);
  return tree.Emit(events.ticks_per_ns);
}

CallTree FoldCallTree(const CallTree& tree, int64_t max_nodes) {
  if (static_cast<int64_t>(tree.nodes.size()) <= max_nodes || tree.nodes.empty()) return tree;
  FrameTree frames(tree.names[tree.nodes[0].name]);
  std::vector<uint32_t> path;  // path[d]: the frame of the open node at depth d
  for (const CallTreeNode& node : tree.nodes) {
    path.resize(node.depth);
    uint32_t frame = FrameTree::kRoot;
    if (node.depth > 0) frame = frames.Child(path[node.depth - 1], node.kind, frames.Name(tree.names[node.name]));
    FrameTree::Frame& f = frames.frame(frame);
    f.count = SaturatingAdd(f.count, node.count);
    f.host_self = SaturatingAdd(f.host_self, node.host_self_ns);
    f.device = SaturatingAdd(f.device, node.device_ns);
    path.push_back(frame);
  }
  frames.Fold(max_nodes, kOtherFrame);
  return frames.Emit(1);
}

}  // namespace fleetprof::analysis
