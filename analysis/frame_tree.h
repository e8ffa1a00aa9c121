#pragma once
// The call tree while it is built (analysis/call_tree.h): frames keyed by (parent, kind, name),
// values in ticks, then folded to a node budget and emitted as a CallTree in ns.
// A child's index is always above its parent's, so passes over the indices in order visit
// parents first, and in reverse children first: nothing recurses, however deep the nesting.

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis/trace_events.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

class FrameTree {
 public:
  using Kind = FrameKind;
  struct Frame {
    uint32_t parent = 0;
    uint32_t name = 0;  // index into names()
    Kind kind = Kind::kHost;
    int64_t count = 0;
    Ticks host_self = 0;
    Ticks device = 0;
  };
  static constexpr uint32_t kRoot = 0;

  explicit FrameTree(std::string_view root_name);

  // The index of `name` in the tree's names.
  uint32_t Name(std::string_view name);
  // The child of `parent` with that kind and name, added when new.
  uint32_t Child(uint32_t parent, Kind kind, uint32_t name);
  Frame& frame(uint32_t i) { return frames_[i]; }
  size_t size() const { return frames_.size(); }

  // Folds the lightest kHost subtrees into an "other" frame under their parent until at most
  // `max_nodes` frames remain (or all that can fold have). Totals stay as they were.
  void Fold(int64_t max_nodes, std::string_view other_name);

  // The tree in depth-first pre-order, children by name, values in ns (`ticks_per_ns` ticks
  // each): host self floored per frame, device time per kernel name floored once and spread over
  // its leaves so that they add up to exactly the floor of the kernel's ticks over all leaves.
  CallTree Emit(int64_t ticks_per_ns) const;

 private:
  // How many frames the tree has once every kHost subtree of weight <= `threshold` whose parent
  // stays is folded; (*owner)[i] is kKept for a frame that stays, else the kept frame whose
  // "other" takes it.
  int64_t SizeAfterFold(Ticks threshold, const std::vector<Ticks>& weight,
                        std::vector<uint32_t>* owner) const;
  static constexpr uint32_t kKept = ~uint32_t{0};
  bool Foldable(uint32_t i) const { return frames_[i].kind == Kind::kHost; }

  std::vector<Frame> frames_;
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, uint32_t> name_index_;
  // ((parent << 2) | kind, name) -> frame
  absl::flat_hash_map<std::pair<uint64_t, uint32_t>, uint32_t> children_;
};

}  // namespace fleetprof::analysis
