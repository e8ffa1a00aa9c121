#include "analysis/device_breakdown.h"

#include <algorithm>
#include <limits>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "common/checked_math.h"

namespace fleetprof::analysis {

void MergeIntervals(std::vector<Interval>* intervals) {
  std::vector<Interval>& v = *intervals;
  std::sort(v.begin(), v.end(), [](const Interval& a, const Interval& b) {
    return a.start < b.start || (a.start == b.start && a.end < b.end);
  });
  size_t out = 0;
  for (const Interval& iv : v) {
    if (iv.end <= iv.start) continue;
    if (out > 0 && iv.start <= v[out - 1].end) {
      v[out - 1].end = std::max(v[out - 1].end, iv.end);
    } else {
      v[out++] = iv;
    }
  }
  v.resize(out);
}

Ticks UnionLength(std::vector<Interval>* intervals) {
  MergeIntervals(intervals);
  Ticks total = 0;
  for (const Interval& iv : *intervals) total += iv.end - iv.start;
  return total;
}

namespace {

constexpr int kKinds = 3;  // ActivityKind's values

struct DeviceAccumulator {
  NameId device = 0;
  int64_t events = 0;
  Ticks start = std::numeric_limits<Ticks>::max();
  Ticks end = std::numeric_limits<Ticks>::min();
  int64_t per_kind[kKinds] = {};          // the first pass's counts
  std::vector<Interval> by_kind[kKinds];  // indexed by ActivityKind
};

// The length of the union of `lists`, each sorted and merged (MergeIntervals): a sweep over
// their heads in start order, so the union of all kinds needs no list of its own.
Ticks UnionOfMergedLists(const std::vector<Interval>* lists, int count) {
  std::vector<size_t> next(static_cast<size_t>(count), 0);
  Ticks total = 0;
  bool open = false;
  Interval current{0, 0};
  for (;;) {
    const Interval* head = nullptr;
    int from = -1;
    for (int k = 0; k < count; ++k) {
      if (next[k] < lists[k].size() && (head == nullptr || lists[k][next[k]].start < head->start)) {
        head = &lists[k][next[k]];
        from = k;
      }
    }
    if (head == nullptr) break;
    ++next[from];
    if (open && head->start <= current.end) {
      current.end = std::max(current.end, head->end);
    } else {
      if (open) total += current.end - current.start;
      current = *head;
      open = true;
    }
  }
  if (open) total += current.end - current.start;
  return total;
}

struct KernelAccumulator {
  NameId name = 0;
  ActivityKind kind = ActivityKind::kCompute;
  int64_t count = 0;
  Ticks total = 0;
  Ticks min = 0;
  Ticks max = 0;
};

}  // namespace

std::vector<DeviceSummary> DeviceBreakdown(const TraceEvents& events) {
  // Two passes: the first counts each device's activities of each kind, so the second keeps
  // their intervals in lists of exactly that size (16 bytes per activity in all; grown one by
  // one, and with a second list for all kinds, they took up to six times that).
  std::vector<DeviceAccumulator> devices;
  absl::flat_hash_map<NameId, size_t> slots;
  for (const DeviceActivity& a : events.activity) {
    auto [it, inserted] = slots.try_emplace(a.device, devices.size());
    if (inserted) {
      devices.emplace_back();
      devices.back().device = a.device;
    }
    ++devices[it->second].per_kind[static_cast<int>(a.kind)];
  }
  for (DeviceAccumulator& d : devices) {
    for (int k = 0; k < kKinds; ++k) d.by_kind[k].reserve(static_cast<size_t>(d.per_kind[k]));
  }
  DeviceAccumulator* last = nullptr;  // consecutive activities mostly share a device
  for (const DeviceActivity& a : events.activity) {
    if (last == nullptr || last->device != a.device) last = &devices[slots.find(a.device)->second];
    DeviceAccumulator& d = *last;
    ++d.events;
    Interval iv{a.start, a.start + a.dur};
    d.start = std::min(d.start, iv.start);
    d.end = std::max(d.end, iv.end);
    d.by_kind[static_cast<int>(a.kind)].push_back(iv);
  }
  std::vector<DeviceSummary> result;
  result.reserve(devices.size());
  for (DeviceAccumulator& d : devices) {
    DeviceSummary s;
    s.device = std::string(events.names.Get(d.device));
    s.events = d.events;
    s.start_ns = events.TimeNs(d.start);
    s.end_ns = events.TimeNs(d.end);
    s.span_ns = s.end_ns - s.start_ns;
    s.compute_ns =
        events.DurationNs(UnionLength(&d.by_kind[static_cast<int>(ActivityKind::kCompute)]));
    s.communication_ns =
        events.DurationNs(UnionLength(&d.by_kind[static_cast<int>(ActivityKind::kCommunication)]));
    s.memory_ns =
        events.DurationNs(UnionLength(&d.by_kind[static_cast<int>(ActivityKind::kMemory)]));
    // Busy: the union of every kind's union, the lists merged above.
    s.busy_ns = events.DurationNs(UnionOfMergedLists(d.by_kind, kKinds));
    s.idle_ns = s.span_ns - s.busy_ns;
    for (std::vector<Interval>& list : d.by_kind) list = {};  // this device's memory back before the next
    result.push_back(std::move(s));
  }
  std::sort(result.begin(), result.end(),
            [](const DeviceSummary& a, const DeviceSummary& b) { return a.device < b.device; });
  return result;
}

std::vector<KernelSummary> KernelBreakdown(const TraceEvents& events) {
  std::vector<KernelAccumulator> kernels;
  absl::flat_hash_map<NameId, size_t> slots;
  for (const DeviceActivity& a : events.activity) {
    auto [it, inserted] = slots.try_emplace(a.name, kernels.size());
    if (inserted) {
      KernelAccumulator k;
      k.name = a.name;
      k.kind = a.kind;
      k.min = a.dur;
      k.max = a.dur;
      kernels.push_back(k);
    }
    KernelAccumulator& k = kernels[it->second];
    ++k.count;
    k.total = SaturatingAdd(k.total, a.dur);  // times are in range, sums of them may not be
    k.min = std::min(k.min, a.dur);
    k.max = std::max(k.max, a.dur);
  }
  std::vector<KernelSummary> result;
  result.reserve(kernels.size());
  for (const KernelAccumulator& k : kernels) {
    KernelSummary s;
    s.name = std::string(events.names.Get(k.name));
    s.kind = k.kind;
    s.count = k.count;
    s.total_ns = events.DurationNs(k.total);
    s.min_ns = events.DurationNs(k.min);
    s.max_ns = events.DurationNs(k.max);
    result.push_back(std::move(s));
  }
  std::sort(result.begin(), result.end(), [](const KernelSummary& a, const KernelSummary& b) {
    return a.total_ns != b.total_ns ? a.total_ns > b.total_ns : a.name < b.name;
  });
  return result;
}

}  // namespace fleetprof::analysis
