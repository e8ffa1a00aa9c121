#include "analysis/trace_events_append.h"

#include <optional>
#include <thread>
#include <utility>
#include <vector>

#include "common/threads.h"

namespace fleetprof::analysis {
namespace {

// Tail events copied between giving their pages back: the copy never holds both whole.
constexpr size_t kDiscardEvery = 16384;
// From this many events in each array on, the two are copied on two threads.
constexpr size_t kParallelCopyEvents = 32768;

}  // namespace

bool FitWithinLimitsTogether(const TraceEvents& head, const TraceEvents& tail) {
  const TraceLimits& limits = head.limits;
  return head.events + tail.events <= limits.max_trace_events &&
         head.names.size() + tail.names.size() <= static_cast<uint64_t>(limits.max_trace_names) &&
         head.names.bytes() + tail.names.bytes() <= static_cast<uint64_t>(limits.max_trace_name_mb) << 20;
}

void AppendEvents(TraceEvents* head, TraceEvents&& tail) {
  std::vector<NameId> id(tail.names.size());
  for (size_t i = 0; i < id.size(); ++i) id[i] = head->names.Intern(tail.names.Get(static_cast<NameId>(i)));

  const uint32_t activity_base = static_cast<uint32_t>(head->activity.size());
  head->activity.reserve(head->activity.size() + tail.activity.size());
  head->host.reserve(head->host.size() + tail.host.size());
  // The two arrays share nothing but `id`: on a large trace the host events are copied on a
  // second thread beside the device activity (this step waits on the read's critical path).
  const auto copy_host = [&id, head, &tail] {
    for (size_t i = 0; i < tail.host.size(); ++i) {
      HostEvent h = tail.host[i];
      h.name = id[h.name];
      h.thread = id[h.thread];
      h.category = id[h.category];
      head->host.push_back(h);
      if (i % kDiscardEvery == kDiscardEvery - 1) tail.host.DiscardBefore(i + 1);
    }
  };
  std::optional<std::thread> host_copier;
  if (tail.host.size() >= kParallelCopyEvents && tail.activity.size() >= kParallelCopyEvents) {
    absl::StatusOr<std::thread> thread = StartThread("the host-event copy of a trace's far part", copy_host);
    if (thread.ok()) host_copier = *std::move(thread);
  }
  for (size_t i = 0; i < tail.activity.size(); ++i) {
    DeviceActivity a = tail.activity[i];
    a.name = id[a.name];
    a.device = id[a.device];
    a.stream = id[a.stream];
    a.category = id[a.category];
    head->activity.push_back(a);
    if (i % kDiscardEvery == kDiscardEvery - 1) tail.activity.DiscardBefore(i + 1);
  }
  if (host_copier.has_value()) {
    host_copier->join();
  } else {
    copy_host();
  }
  head->memory.reserve(head->memory.size() + tail.memory.size());
  for (MemoryEvent m : tail.memory) {
    m.device = id[m.device];
    head->memory.push_back(m);
  }
  for (const auto& [index, bytes] : tail.copy_bytes) head->copy_bytes.emplace_back(activity_base + index, bytes);
  for (const auto& [index, bytes] : tail.message_bytes) head->message_bytes.emplace_back(activity_base + index, bytes);
  head->events += tail.events;
  head->skipped_events += tail.skipped_events;
  head->unknown_category_events += tail.unknown_category_events;
  for (auto& [key, value] : tail.metadata) head->metadata[key] = std::move(value);
  tail = TraceEvents();
}

}  // namespace fleetprof::analysis
