#pragma once
// The one in-memory model of a trace that every reader fills and every breakdown reads:
// compact per-event records with interned names. Times are integer "ticks": nanoseconds for
// Chrome-trace JSON, picoseconds relative to `base_ns` for XSpace, so that XSpace sums stay
// exact in ps and are floored to ns once, when a value is reported (ANALYSIS.md, Time).

#include <cstddef>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/name_table.h"
#include "analysis/trace_summary.h"

namespace fleetprof::analysis {

using Ticks = int64_t;

// Names (events, planes, lines, ids) longer than this are cut to their first kMaxNameBytes
// bytes by every reader, so that one absurd string cannot take the memory of a trace.
inline constexpr size_t kMaxNameBytes = 64 << 10;

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

struct TraceEvents {
  TraceFormat format = TraceFormat::kUnknown;
  Nanos base_ns = 0;         // ticks are relative to this
  int64_t ticks_per_ns = 1;  // 1 (JSON) or 1000 (XSpace)
  NameTable names;
  std::vector<DeviceActivity> activity;
  std::vector<HostEvent> host;
  std::vector<MemoryEvent> memory;
  std::vector<StepEvent> steps;
  // XSpace: the XLA op view, aggregated by the reader while it streams (per plane, by event
  // metadata), since per-event records would cost what the aggregation saves.
  std::vector<XlaOpSummary> xla_ops;
  // XSpace: per memory device (allocator), the highest peak_bytes_in_use it reported.
  std::map<std::string, int64_t> allocator_peak_bytes;
  int64_t events = 0;          // every event read, all phases
  int64_t skipped_events = 0;  // malformed, see the reader
  int64_t unknown_category_events = 0;
  std::map<std::string, std::string> metadata;

  // Floor division: a duration or sum of durations in ticks, reported in ns.
  Nanos DurationNs(Ticks t) const {
    Ticks q = t / ticks_per_ns;
    return (t % ticks_per_ns != 0 && t < 0) ? q - 1 : q;
  }
  // A point in time in ticks, reported in the trace's ns clock.
  Nanos TimeNs(Ticks t) const { return base_ns + DurationNs(t); }
};

}  // namespace fleetprof::analysis
