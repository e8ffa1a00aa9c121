#pragma once
// The one in-memory model of a trace that every reader fills and every breakdown reads:
// compact per-event records with interned names. Times are integer "ticks": nanoseconds for
// Chrome-trace JSON, picoseconds relative to `base_ns` for XSpace, so that XSpace sums stay
// exact in ps and are floored to ns once, when a value is reported (docs/analysis.md, Time).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "analysis/event_array.h"
#include "analysis/name_table.h"
#include "analysis/trace_limits.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

using Ticks = int64_t;

// Every time in a trace, in ticks, lies within ±kMaxAbsTicks (just under 2^62: ±146 years of
// ns around the trace's clock zero, ±53 days of XSpace ps around its first line): a reader
// rejects an event outside, so the difference of any two times, a span, never overflows int64.
inline constexpr Ticks kMaxAbsTicks = (Ticks{1} << 62) - 1;
// Whether `v` (a time, an offset, a difference of two: int64 or wider) lies within ±kMaxAbsTicks,
// so that a sum or difference of two such values cannot overflow int64.
template <typename T>
constexpr bool WithinTickBound(T v) {
  return v >= -static_cast<T>(kMaxAbsTicks) && v <= static_cast<T>(kMaxAbsTicks);
}

// True when [start, start + dur] lies within ±kMaxAbsTicks. REQUIRES: dur >= 0.
inline bool TicksInRange(Ticks start, Ticks dur) {
  return start >= -kMaxAbsTicks && start <= kMaxAbsTicks && dur <= kMaxAbsTicks - start;
}

// One kernel, memcpy or memset on a device.
struct DeviceActivity {
  Ticks start = 0;
  Ticks dur = 0;
  int64_t correlation = 0;  // args.correlation; meaningful only when has_correlation
  NameId name = 0;
  NameId device = 0;
  NameId stream = 0;    // Kineto tid ("stream 7"), XSpace line name: the viewer's track
  NameId category = 0;  // Kineto cat, "" for XSpace: kept so an export reads back the same
  ActivityKind kind = ActivityKind::kCompute;
  bool has_correlation = false;
};

// One host (CPU) complete event, in file order.
struct HostEvent {
  Ticks start = 0;
  Ticks dur = 0;
  int64_t correlation = 0;
  NameId name = 0;
  NameId thread = 0;  // interned "pid\x1ftid": keys compared as strings
  NameId category = 0;  // Kineto cat ("" when the event had none)
  bool is_runtime = false;
  bool has_correlation = false;
};

// One allocator sample: either the device's total after the event (`is_total`) or a
// signed change in bytes (legacy Kineto files carry only "Bytes").
struct MemoryEvent {
  Ticks ts = 0;
  int64_t bytes = 0;
  NameId device = 0;
  bool is_total = false;
};

// A step found by the reader itself (XSpace "Steps" lines); Kineto steps are derived from
// ProfilerStep#N host events by the step breakdown.
struct StepEvent {
  int64_t step = 0;
  Ticks start = 0;
  Ticks dur = 0;
};

// The device activities of one (HLO module, category, op, kernel name), in ticks (ps).
struct XlaKernelLeaf {
  std::string module;
  std::string category;
  std::string op;
  std::string kernel;
  int64_t count = 0;
  Ticks total = 0;
};

struct TraceEvents {
  // What the reader may hold (set before reading; trace_limits.h).
  TraceLimits limits;
  TraceFormat format = TraceFormat::kUnknown;
  Nanos base_ns = 0;         // ticks are relative to this
  int64_t ticks_per_ns = 1;  // 1 (JSON) or 1000 (XSpace)
  NameTable names;
  EventArray<DeviceActivity> activity;
  EventArray<HostEvent> host;
  std::vector<MemoryEvent> memory;
  std::vector<StepEvent> steps;
  // XSpace: the XLA op view, aggregated by the reader while it streams (per plane, by event
  // metadata), since per-event records would cost what the aggregation saves.
  std::vector<XlaOpSummary> xla_ops;
  // XSpace: the same groups one level finer, per (module, category, op, kernel): where the
  // call tree books the kernels XLA launched for each op (analysis/call_tree.h).
  std::vector<XlaKernelLeaf> xla_kernel_leaves;
  // XSpace: per memory device (allocator), the highest peak_bytes_in_use it reported.
  std::map<std::string, int64_t> allocator_peak_bytes;
  int64_t events = 0;          // every event read, all phases
  int64_t skipped_events = 0;  // malformed, see the reader
  int64_t unknown_category_events = 0;
  std::map<std::string, std::string> metadata;
  // Kineto collective kernels: the message size ("In msg nelems" x the size of "dtype"), as
  // (index into `activity`, bytes), indices ascending. Sparse: most activity has none.
  std::vector<std::pair<uint32_t, int64_t>> message_bytes;
  // Bytes each copy or memset moved (nsys `bytes`, Kineto args.bytes), as (index into
  // `activity`, bytes), indices ascending; one without a size counts 0 (stats reports).
  std::vector<std::pair<uint32_t, int64_t>> copy_bytes;
  // NVTX ranges of a reader that has them apart from its host events (nsys), for nvtx_sum:
  // every closed range of the four types under its full name (the domain prefix kept).
  struct NvtxRange {
    Ticks dur = 0;
    NameId name = 0;
    bool start_end = false;  // a start/end range; else push/pop
  };
  std::vector<NvtxRange> nvtx_ranges;
  bool has_nvtx_ranges = false;  // false: the user annotations among `host` stand in
  int64_t nvtx_open_ranges = 0;  // ranges without an end

  // True while events and names stay within `limits`; `extra` is a reader's own table of
  // names (XSpace stat texts), counted with `names`. Cheap: readers ask after every event.
  bool WithinLimits(const NameTable* extra = nullptr) const {
    const size_t n = names.size() + (extra != nullptr ? extra->size() : 0);
    const size_t b = names.bytes() + (extra != nullptr ? extra->bytes() : 0);
    return events <= limits.max_trace_events &&
           n <= static_cast<uint64_t>(limits.max_trace_names) &&
           b <= static_cast<uint64_t>(limits.max_trace_name_mb) << 20;
  }
  // The error of the limit that WithinLimits(extra) found broken, at byte `offset`.
  absl::Status LimitError(const std::string& source, uint64_t offset,
                          const NameTable* extra = nullptr) const;
  // The error for an event at byte `offset` whose time lies outside ±kMaxAbsTicks;
  // `times` says which, e.g. "ts 9223372036854775 us".
  absl::Status TimeRangeError(const std::string& source, uint64_t offset,
                              const std::string& times) const;
  // The same two errors for a reader whose events have no byte offset: `where` says where
  // the event is instead ("row 12 of CUPTI_ACTIVITY_KIND_KERNEL").
  absl::Status LimitErrorAt(const std::string& source, const std::string& where,
                            const NameTable* extra = nullptr) const;
  absl::Status TimeRangeErrorAt(const std::string& source, const std::string& where,
                                const std::string& times) const;

  // Floor division: a duration or sum of durations in ticks, reported in ns.
  Nanos DurationNs(Ticks t) const {
    Ticks q = t / ticks_per_ns;
    return (t % ticks_per_ns != 0 && t < 0) ? q - 1 : q;
  }
  // A point in time in ticks, reported in the trace's ns clock.
  Nanos TimeNs(Ticks t) const { return base_ns + DurationNs(t); }
};

}  // namespace fleetprof::analysis
