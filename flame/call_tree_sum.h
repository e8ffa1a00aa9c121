#pragma once
// Call trees of several profiles added up (a job's flame graph): frames with the same path of
// names from the root are one frame, their counts and times summed (saturating).

#include <string>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis/trace_summary.h"

namespace fleetprof::flame {

class CallTreeSum {
 public:
  CallTreeSum();
  // REQUIRES: `tree` in pre-order with depths (analysis::CallTree).
  void Add(const analysis::CallTree& tree);
  // The sum, in pre-order (children in the order they were first seen).
  analysis::CallTree Finish() const;

 private:
  struct Frame {
    uint32_t parent = 0;
    uint32_t name = 0;
    analysis::CallTreeNode values;
  };
  uint32_t Name(const std::string& name);

  std::vector<Frame> frames_;  // frames_[0] is the root
  std::vector<std::string> names_;
  absl::flat_hash_map<std::string, uint32_t> name_index_;
  absl::flat_hash_map<std::pair<uint32_t, uint32_t>, uint32_t> children_;  // (parent, name) -> frame
};

}  // namespace fleetprof::flame
