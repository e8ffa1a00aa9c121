#include "analysis/host_nesting.h"

#include <algorithm>

namespace fleetprof::analysis {

namespace {

using OrderIt = std::vector<uint32_t>::iterator;

// Sorts one thread's events by start, the longer first at equal starts, then file order.
// Readers mostly write a thread's events in a few runs already in that order (an nsys export:
// one run per table; a Kineto trace: often one): those are merged in linear time, where
// std::sort would spend n log n and, on some such inputs, fall back to heap sort.
void SortIntoNestingOrder(const EventArray<HostEvent>& host, OrderIt first, OrderIt last) {
  const auto before = [&host](uint32_t a, uint32_t b) {
    const HostEvent& x = host[a];
    const HostEvent& y = host[b];
    if (x.start != y.start) return x.start < y.start;
    if (x.dur != y.dur) return x.dur > y.dur;
    return a < b;
  };
  constexpr size_t kMaxRuns = 16;
  std::vector<OrderIt> runs = {first};
  for (OrderIt it = first; it != last && std::next(it) != last; ++it) {
    if (!before(*it, *std::next(it))) {
      runs.push_back(std::next(it));
      if (runs.size() > kMaxRuns) {
        std::sort(first, last, before);
        return;
      }
    }
  }
  runs.push_back(last);
  // Merge neighbouring runs until one is left: log2(runs) passes over the range.
  while (runs.size() > 2) {
    std::vector<OrderIt> merged = {first};
    for (size_t i = 0; i + 2 < runs.size(); i += 2) {
      std::inplace_merge(runs[i], runs[i + 1], runs[i + 2], before);
      merged.push_back(runs[i + 2]);
    }
    if (runs.size() % 2 == 0) merged.push_back(last);  // an odd run count leaves the last run as it was
    runs = std::move(merged);
  }
}

}  // namespace

void ForEachThreadInNestingOrder(
    const TraceEvents& events,
    const std::function<void(const std::vector<uint32_t>& order, size_t begin, size_t end)>& visit) {
  const EventArray<HostEvent>& host = events.host;
  if (host.empty()) return;
  // Group by thread with a counting sort, which keeps file order inside each thread.
  std::vector<uint32_t> thread_start(events.names.size() + 1, 0);
  for (const HostEvent& e : host) ++thread_start[e.thread + 1];
  for (size_t i = 1; i < thread_start.size(); ++i) thread_start[i] += thread_start[i - 1];
  std::vector<uint32_t> order(host.size());
  {
    std::vector<uint32_t> next(thread_start.begin(), thread_start.end() - 1);
    for (uint32_t i = 0; i < host.size(); ++i) order[next[host[i].thread]++] = i;
  }
  for (size_t t = 0; t + 1 < thread_start.size(); ++t) {
    const size_t begin = thread_start[t];
    const size_t end = thread_start[t + 1];
    if (begin == end) continue;
    // File order breaks the remaining ties, as a stable sort would, without its buffer (as
    // large again as the thread's share of `order`).
    SortIntoNestingOrder(host, order.begin() + begin, order.begin() + end);
    visit(order, begin, end);
  }
}

}  // namespace fleetprof::analysis
