#pragma once
// The result of analysing one trace: every number fleetprof reports about a profile.
// Definitions: docs/analysis.md. All times are integer nanoseconds in the
// trace's own clock.

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stats_rows.h"

namespace fleetprof::analysis {

using Nanos = int64_t;

enum class TraceFormat { kUnknown, kKinetoJson, kXSpace, kNsysSqlite };
// "kineto_json" / "xspace" / "nsys_sqlite" / "unknown": the names the API and CLI use.
const char* TraceFormatName(TraceFormat format);
TraceFormat TraceFormatFromName(const std::string& name);

enum class ActivityKind { kCompute, kCommunication, kMemory };
// "compute" / "communication" / "memory".
const char* ActivityKindName(ActivityKind kind);
bool ActivityKindFromName(const std::string& name, ActivityKind* kind);

// Temporal breakdown of one device.
struct DeviceSummary {
  std::string device;
  int64_t events = 0;
  Nanos start_ns = 0;
  Nanos end_ns = 0;
  Nanos span_ns = 0;
  Nanos busy_ns = 0;
  Nanos idle_ns = 0;
  Nanos compute_ns = 0;
  Nanos communication_ns = 0;
  Nanos memory_ns = 0;
};

// Device activity grouped by exact name, merged across devices.
struct KernelSummary {
  std::string name;
  ActivityKind kind = ActivityKind::kCompute;
  int64_t count = 0;
  Nanos total_ns = 0;
  Nanos min_ns = 0;
  Nanos max_ns = 0;
};

// Host events grouped by name: the key_averages() view.
struct OpSummary {
  std::string name;
  int64_t count = 0;
  Nanos total_ns = 0;
  Nanos self_ns = 0;
  Nanos device_self_ns = 0;
  Nanos device_total_ns = 0;
};

// One training step (ProfilerStep#N or an XSpace step).
struct StepSummary {
  int64_t step = 0;
  Nanos start_ns = 0;
  Nanos end_ns = 0;
  Nanos duration_ns = 0;
  Nanos device_busy_ns = 0;  // union of all device activity inside the step, all devices
  Nanos device_idle_ns = 0;  // duration - device_busy (per the union above)
};

// Memory use of one device over the trace.
struct MemorySample {
  Nanos ts_ns = 0;
  int64_t allocated_bytes = 0;
};
struct MemorySummary {
  std::string device;
  int64_t samples = 0;
  int64_t peak_bytes = 0;
  Nanos peak_ns = 0;
  // XSpace allocators: the highest `peak_bytes_in_use` they reported, their own high-water
  // mark since start-up, which may predate the trace. 0 when unknown (Kineto).
  int64_t allocator_peak_bytes = 0;
  // At most kMaxMemoryTimelinePoints points, keeping the peak.
  std::vector<MemorySample> timeline;
};
inline constexpr int kMaxMemoryTimelinePoints = 512;

// One HLO op of an XSpace profile: GPU kernels grouped by their `hlo_op` stat, or the events
// of a TPU plane's "XLA Ops" line (analysis/xla_op_breakdown.h). Merged across devices by
// (name, module).
struct XlaOpSummary {
  std::string name;
  std::string category;  // hlo_category; empty when the trace has none
  std::string module;    // hlo_module; empty when the trace has none
  int64_t count = 0;     // events (GPU: kernels launched for the op)
  Nanos total_ns = 0;    // picoseconds summed, floored once
  // Present only when the trace carries `flops` / `bytes_accessed` for the op; the rates
  // (per second of the op's own time) only when that time is not zero.
  std::optional<int64_t> flops;
  std::optional<double> flops_per_second;
  std::optional<int64_t> bytes_accessed;
  std::optional<double> bytes_accessed_per_second;
};

// A profile's call tree, the flame graph's data (analysis/call_tree.h says how it is built):
// frames in depth-first pre-order, each with its depth (the root, "total", is 0). Values are a
// frame's own ("self"), in ns: a frame's total is the sum over its subtree.
// A host frame may fold into "other" (call_tree.h); a kernel leaf carries device time; a fixed
// frame (the root, "other", the frame of device time nothing launched) never folds.
enum class FrameKind : uint8_t { kHost = 0, kKernel = 1, kFixed = 2 };
struct CallTreeNode {
  uint32_t name = 0;   // index into CallTree::names
  uint32_t depth = 0;
  FrameKind kind = FrameKind::kHost;
  int64_t count = 0;         // events at this frame (host events, or device activities at a kernel)
  Nanos host_self_ns = 0;    // host frames: duration minus the union of the children's
  Nanos device_ns = 0;       // kernel leaves: device time of the activities booked there
};
struct CallTree {
  std::vector<std::string> names;
  std::vector<CallTreeNode> nodes;  // nodes[0] is the root
};

struct TraceSummary {
  TraceFormat format = TraceFormat::kUnknown;
  Nanos start_ns = 0;  // earliest start of any analysed event
  Nanos end_ns = 0;    // latest end of any analysed event
  int64_t events = 0;          // events read (all phases)
  int64_t skipped_events = 0;  // malformed events skipped, see the reader's documentation
  // Chrome-trace X events with a "cat" fleetprof does not know; analysed as host events
  // (docs/analysis.md, Host events), counted so that a new profiler category does not go unnoticed.
  int64_t unknown_category_events = 0;
  // Bytes of the trace's names and metadata that were not valid UTF-8, each replaced by
  // U+FFFD (MakeStringsValidUtf8) so the summary can be stored and printed.
  int64_t invalid_utf8_replacements = 0;
  std::vector<DeviceSummary> devices;  // sorted by device name
  std::vector<KernelSummary> kernels;  // total_ns desc, then name
  std::vector<OpSummary> ops;          // self_ns desc, then name
  std::vector<OpSummary> scopes;       // by user annotation (OpAndScopeBreakdown); self_ns desc
  std::vector<StepSummary> steps;      // by step number
  std::vector<MemorySummary> memory;   // by device
  std::vector<XlaOpSummary> xla_ops;   // XSpace only; total_ns desc, then name, module
  CallTree call_tree;
  StatsReports stats;  // the `nsys stats` reports (analysis/stats_reports.h)
  // Facts found in the trace, e.g. "rank", "world_size" (Kineto distributedInfo), "hostname".
  std::map<std::string, std::string> metadata;
};

// Replaces the invalid UTF-8 bytes of every string of `summary` (names, devices, metadata)
// with U+FFFD and adds their number to summary->invalid_utf8_replacements.
void MakeStringsValidUtf8(TraceSummary* summary);

}  // namespace fleetprof::analysis
