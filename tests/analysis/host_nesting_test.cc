// The order host events nest in (analysis/host_nesting.h): per thread, by start, the longer
// first at equal starts, then file order — whatever runs the reader wrote them in. Checked
// against a brute-force stable sort on inputs of one run, a few runs (as an nsys export writes
// a thread's tables one after another) and many (the sort path).

#include "analysis/host_nesting.h"

#include <algorithm>
#include <random>
#include <tuple>

#include "gtest/gtest.h"

namespace fleetprof::analysis {
namespace {

// `runs` sorted runs of events on 2 threads, with repeated starts and durations.
TraceEvents EventsInRuns(int runs, int per_run, uint64_t seed) {
  std::mt19937_64 random(seed);
  TraceEvents events;
  const NameId threads[2] = {events.names.Intern("1\x1f" "1"), events.names.Intern("1\x1f" "2")};
  for (int r = 0; r < runs; ++r) {
    Ticks start = static_cast<Ticks>(random() % 1000);
    for (int i = 0; i < per_run; ++i) {
      start += static_cast<Ticks>(random() % 3);  // equal starts happen
      HostEvent e;
      e.start = start;
      e.dur = static_cast<Ticks>(random() % 4);
      e.thread = threads[random() % 2];
      events.host.push_back(e);
    }
  }
  return events;
}

std::vector<std::vector<uint32_t>> Visited(const TraceEvents& events) {
  std::vector<std::vector<uint32_t>> out;
  ForEachThreadInNestingOrder(events, [&](const std::vector<uint32_t>& order, size_t begin, size_t end) {
    out.emplace_back(order.begin() + begin, order.begin() + end);
  });
  return out;
}

std::vector<std::vector<uint32_t>> BruteForce(const TraceEvents& events) {
  std::vector<std::vector<uint32_t>> by_thread(events.names.size());
  for (uint32_t i = 0; i < events.host.size(); ++i) by_thread[events.host[i].thread].push_back(i);
  std::vector<std::vector<uint32_t>> out;
  for (auto& ids : by_thread) {
    if (ids.empty()) continue;
    std::stable_sort(ids.begin(), ids.end(), [&](uint32_t a, uint32_t b) {
      const HostEvent& x = events.host[a];
      const HostEvent& y = events.host[b];
      return std::make_tuple(x.start, -x.dur) < std::make_tuple(y.start, -y.dur);
    });
    out.push_back(ids);
  }
  return out;
}

TEST(HostNesting, OrderIsAStableSortByStartThenLongerFirstWhateverTheRuns) {
  for (int runs : {1, 2, 3, 7, 16, 17, 40}) {
    for (uint64_t seed = 1; seed <= 20; ++seed) {
      const TraceEvents events = EventsInRuns(runs, 200, seed);
      ASSERT_EQ(Visited(events), BruteForce(events)) << runs << " runs, seed " << seed;
    }
  }
}

}  // namespace
}  // namespace fleetprof::analysis
