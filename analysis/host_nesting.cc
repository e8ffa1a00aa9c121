#include "analysis/host_nesting.h"

#include <algorithm>

namespace fleetprof::analysis {

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
    std::sort(order.begin() + begin, order.begin() + end, [&](uint32_t a, uint32_t b) {
      const HostEvent& x = host[a];
      const HostEvent& y = host[b];
      if (x.start != y.start) return x.start < y.start;
      if (x.dur != y.dur) return x.dur > y.dur;
      return a < b;
    });
    visit(order, begin, end);
  }
}

}  // namespace fleetprof::analysis
