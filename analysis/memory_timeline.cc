#include "analysis/memory_timeline.h"

#include <algorithm>
#include <map>
#include <string>

#include "common/checked_math.h"

namespace fleetprof::analysis {
namespace {

std::vector<MemorySample> Downsample(const std::vector<MemorySample>& samples) {
  const size_t n = samples.size();
  const size_t buckets = static_cast<size_t>(kMaxMemoryTimelinePoints);
  if (n <= buckets) return samples;
  std::vector<MemorySample> result;
  result.reserve(buckets);
  for (size_t b = 0; b < buckets; ++b) {
    size_t begin = b * n / buckets;
    size_t end = (b + 1) * n / buckets;
    size_t best = begin;
    for (size_t i = begin + 1; i < end; ++i) {
      if (samples[i].allocated_bytes > samples[best].allocated_bytes) best = i;
    }
    result.push_back(samples[best]);
  }
  return result;
}

}  // namespace

std::vector<MemorySummary> MemoryBreakdown(const TraceEvents& events) {
  if (events.memory.empty()) return {};
  std::map<std::string, std::vector<const MemoryEvent*>> by_device;
  for (const MemoryEvent& m : events.memory) {
    by_device[std::string(events.names.Get(m.device))].push_back(&m);
  }
  std::vector<MemorySummary> result;
  for (auto& [device, samples] : by_device) {
    std::stable_sort(samples.begin(), samples.end(),
                     [](const MemoryEvent* a, const MemoryEvent* b) { return a->ts < b->ts; });
    MemorySummary summary;
    summary.device = device;
    summary.samples = static_cast<int64_t>(samples.size());
    std::vector<MemorySample> timeline;
    timeline.reserve(samples.size());
    int64_t current = 0;
    bool first = true;
    for (const MemoryEvent* m : samples) {
      current = m->is_total ? m->bytes : SaturatingAdd(current, m->bytes);
      Nanos ts = events.TimeNs(m->ts);
      if (first || current > summary.peak_bytes) {
        summary.peak_bytes = current;
        summary.peak_ns = ts;
        first = false;
      }
      timeline.push_back(MemorySample{ts, current});
    }
    summary.timeline = Downsample(timeline);
    if (auto peak = events.allocator_peak_bytes.find(device);
        peak != events.allocator_peak_bytes.end()) {
      summary.allocator_peak_bytes = peak->second;
    }
    result.push_back(std::move(summary));
  }
  return result;
}

}  // namespace fleetprof::analysis
