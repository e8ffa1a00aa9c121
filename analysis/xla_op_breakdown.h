#pragma once
// The XLA op view of an XSpace (TraceSummary::xla_ops), aggregated while the reader streams.
//
// What counts, per device plane (`/device:…`):
// - events of `Stream #…` lines that carry an `hlo_op` stat (on the event, else on its event
//   metadata; str_value or a ref_value into stat_metadata): one row per op, fed by the
//   kernels XLA launched for it. Stream events without hlo_op (TF kernels, memcpys) are not
//   XLA ops.
// - on planes with no `Stream #` line at all (TPU), the events of the `XLA Ops` line, the op
//   being the event's name. On GPU planes that line is derived from the kernels and would
//   count them twice, so it is ignored — across all XPlane messages of the same name.
// `hlo_category` and `hlo_module` come from the event's stats, else its metadata's. Rows
// are merged across planes by (name, module). `flops` / `bytes_accessed`: an event's own
// stat, else its metadata's, summed over the events.
// The view needs durations only: events with a negative duration are left out (the reader
// counts them as skipped); an event's start plays no part.
//
// Memory: while a plane streams, events are summed into groups keyed by (line kind, event
// metadata id, the event's text stats) — stat names are not known yet (an XPlane writes its
// stat_metadata last), so a group keeps ids and sums every numeric stat by id. Groups are
// resolved to named rows when the plane ends, and the rows are what stays.

#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis/trace_events.h"
#include "analysis/trace_summary.h"
#include "analysis/xspace_stats.h"

namespace fleetprof::analysis {

class XlaOpCollector {
 public:
  enum class Line : uint8_t { kStream, kXlaOps, kUnknown };

  // A line starts; events of a line whose name is not known yet (kUnknown) are held apart
  // until EndLine says what the line was.
  void BeginLine() { ++line_seq_; }
  // Returns how many stat records it kept (a new group's texts, a group's new sums): what the
  // trace limit --max_trace_stats counts. Linear in the event's stats.
  size_t AddEvent(Line line, int64_t metadata_id, int64_t dur_ps, const StatScratch& stats,
                  PlaneStats* plane);
  // `line`: what the line turned out to be; anything but kStream / kXlaOps drops its events.
  void EndLine(Line line);

  // Resolves the plane's groups into rows and forgets the groups. `event_name` gives the
  // name of an event metadata id.
  void FinishPlane(const std::string& plane_name, bool device_plane, bool has_stream_line,
                   const PlaneStats& plane,
                   const std::function<std::string_view(int64_t)>& event_name);

  // Every row, merged across planes, total_ns desc, then name, then module.
  std::vector<XlaOpSummary> Finish();
  // After Finish: the same events per (module, category, op, kernel), for the call tree
  // (analysis/call_tree.h); a TPU op's kernel is the op itself.
  std::vector<XlaKernelLeaf> TakeKernelLeaves() { return std::move(kernel_leaves_); }

 private:
  enum class Tag : uint8_t { kStream, kXlaOps, kPending, kDropped };
  struct Sum {
    int64_t stat_id = 0;
    int64_t events = 0;  // events that carried the stat
    StatSum sum;
  };
  struct Group {
    int64_t metadata_id = 0;
    Tag tag = Tag::kStream;
    int64_t count = 0;
    __int128 total_ps = 0;
    std::vector<RawStat> texts;  // str/ref stats, strings interned in PlaneStats
    std::vector<Sum> sums;       // numeric stats by id
  };
  struct Row {
    std::string category;
    int64_t count = 0;
    __int128 total_ps = 0;
    bool has_flops = false;
    __int128 flops = 0;
    bool has_bytes = false;
    __int128 bytes = 0;
    void Merge(const Row& other);
  };
  static Tag TagOf(Line line, Tag otherwise);

  using RowKey = std::pair<std::string, std::string>;  // name, module
  using Rows = std::map<RowKey, Row>;
  // (module, category, op, kernel) -> (events, ps)
  using LeafKey = std::tuple<std::string, std::string, std::string, std::string>;
  using Leaves = std::map<LeafKey, std::pair<int64_t, __int128>>;

  // The group's rows entry, or false when the group is no XLA op.
  bool Resolve(const Group& g, const PlaneStats& plane,
               const std::function<std::string_view(int64_t)>& event_name, RowKey* key,
               Row* row) const;

  uint64_t line_seq_ = 0;
  std::vector<uint32_t> pending_;  // groups of the current line while its name is unknown
  std::vector<Group> groups_;
  absl::flat_hash_map<std::string, uint32_t> index_;
  // (group, stat id) -> index in the group's sums: an event with many stats stays linear.
  absl::flat_hash_map<std::pair<uint32_t, int64_t>, uint32_t> sum_index_;
  std::string key_;                       // scratch
  std::vector<RawStat> texts_;            // scratch
  Rows stream_rows_;                      // always counted
  std::map<std::string, Rows> xla_rows_;  // by plane, counted without streams
  std::set<std::string> planes_with_streams_;
  Leaves stream_leaves_;
  std::map<std::string, Leaves> xla_leaves_;  // by plane, as xla_rows_
  std::vector<XlaKernelLeaf> kernel_leaves_;
};

}  // namespace fleetprof::analysis
