// The folded runs of a level (Timeline::FoldBlocks) at small scale: a run folded whole because
// no gap inside it reaches the join distance must give the merged blocks its parts give, and
// a level without such gaps must fold in a few calls however many blocks it has. Also whole
// windows of such a level: every event folded once, inside a merged block.

#include <algorithm>
#include <limits>
#include <random>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "tests/timeline/memory_timeline_store.h"
#include "timeline/timeline_builder.h"
#include "timeline/trace_window.h"

namespace fleetprof::timeline {
namespace {

using timeline::testing::MemoryTimelineStore;

constexpr int64_t kNoJoin = std::numeric_limits<int64_t>::min();  // every gap reaches it

struct Merged {
  int64_t start = 0, end = 0, count = 0, max_value = 0;
  bool operator==(const Merged& o) const {
    return std::tie(start, end, count, max_value) == std::tie(o.start, o.end, o.count, o.max_value);
  }
};

std::ostream& operator<<(std::ostream& os, const Merged& m) {
  return os << "{" << m.start << ".." << m.end << " x" << m.count << "}";
}

// What the window's merged blocks make of folded items: sorted by start, an item joins the
// block before it when it starts less than `join_gap` after that block's end.
std::vector<Merged> Join(std::vector<Merged> items, int64_t join_gap) {
  std::stable_sort(items.begin(), items.end(), [](const Merged& a, const Merged& b) { return a.start < b.start; });
  std::vector<Merged> out;
  for (const Merged& item : items) {
    if (!out.empty() && item.start < out.back().end + join_gap) {
      out.back().end = std::max(out.back().end, item.end);
      out.back().count += item.count;
      out.back().max_value = std::max(out.back().max_value, item.max_value);
    } else {
      out.push_back(item);
    }
  }
  return out;
}

// One host thread of 10 ns events (one level) 20 ns apart, in bursts of random length with
// gaps drawn from `gaps` between them. Returns the event starts.
std::vector<int64_t> WriteBursts(const std::vector<int64_t>& gaps, int events, uint64_t seed,
                                 MemoryTimelineStore* store) {
  analysis::TraceEvents in;
  const analysis::NameId name = in.names.Intern("op");
  const analysis::NameId thread = in.names.Intern("1\x1f" "1");
  std::mt19937_64 rng(seed);
  std::vector<int64_t> starts;
  int64_t t = 1'000'000;
  while (static_cast<int>(starts.size()) < events) {
    const int burst = 1 + static_cast<int>(rng() % 3000);
    for (int i = 0; i < burst && static_cast<int>(starts.size()) < events; ++i, t += 20) {
      analysis::HostEvent e;
      e.start = t;
      e.dur = 10;
      e.name = name;
      e.thread = thread;
      e.category = name;
      in.host.push_back(e);
      starts.push_back(t);
    }
    t += gaps[rng() % gaps.size()];
  }
  TimelineSink sink(store);
  EXPECT_TRUE(sink.Consume(in).ok());
  return starts;
}

std::vector<Merged> Fold(const Timeline& t, uint32_t first, uint32_t end, int64_t max_span, int64_t join_gap,
                         int* calls) {
  std::vector<Merged> items;
  t.FoldBlocks(0, 0, first, end, max_span, join_gap, [&](const Timeline::Extent& e) {
    items.push_back({e.start_ns, e.end_ns, e.count, e.max_value});
  });
  *calls = static_cast<int>(items.size());
  return items;
}

TEST(FoldRuns, RunsWithoutAWideGapMergeAsTheirBlocksWould) {
  MemoryTimelineStore store;
  WriteBursts({0, 15, 50, 900, 20'000, 3'000'000}, 400'000, 7, &store);
  auto timeline = Timeline::Load(store);
  ASSERT_TRUE(timeline.ok()) << timeline.status();
  const Timeline& t = **timeline;
  ASSERT_EQ(t.tracks(), 1u);
  ASSERT_EQ(t.track(0).levels_size(), 1);
  const uint32_t blocks = static_cast<uint32_t>(t.track(0).levels(0).blocks_size());
  ASSERT_GT(blocks, 1000u);  // a pyramid of 5 layers above the blocks
  std::mt19937_64 rng(11);
  for (int round = 0; round < 400; ++round) {
    uint32_t first = static_cast<uint32_t>(rng() % blocks), end = static_cast<uint32_t>(rng() % (blocks + 1));
    if (round % 4 == 0) first = 0, end = blocks;
    if (first > end) std::swap(first, end);
    const int64_t join_gap = int64_t{1} << (rng() % 24);
    const int64_t max_span = round % 3 == 0 ? 0 : join_gap * 4;
    SCOPED_TRACE(absl::StrCat("blocks [", first, ", ", end, "), join gap ", join_gap, ", span ", max_span));
    int with_gaps = 0, without = 0;
    const std::vector<Merged> joined = Fold(t, first, end, max_span, join_gap, &with_gaps);
    const std::vector<Merged> parts = Fold(t, first, end, max_span, kNoJoin, &without);
    EXPECT_EQ(Join(joined, join_gap), Join(parts, join_gap));
    EXPECT_LE(with_gaps, without);
  }
}

TEST(FoldRuns, ALevelWithoutWideGapsFoldsInAFewCalls) {
  MemoryTimelineStore store;
  WriteBursts({0, 15, 50}, 400'000, 3, &store);
  auto timeline = Timeline::Load(store);
  ASSERT_TRUE(timeline.ok()) << timeline.status();
  const Timeline& t = **timeline;
  const uint32_t blocks = static_cast<uint32_t>(t.track(0).levels(0).blocks_size());
  int calls = 0, block_calls = 0;
  // Gaps of 10 to 60 ns between events: every gap is under 100 ns, the join distance.
  const std::vector<Merged> items = Fold(t, 0, blocks, 0, 100, &calls);
  (void)Fold(t, 0, blocks, 0, kNoJoin, &block_calls);
  EXPECT_EQ(block_calls, static_cast<int>(blocks));
  // The aligned runs that tile [0, blocks): at most 3 per layer of the pyramid.
  EXPECT_LE(calls, 3 * 6);
  ASSERT_EQ(Join(items, 100).size(), 1u);
  EXPECT_EQ(Join(items, 100)[0].count, 400'000);
}

// The whole window of a thread of bursts at resolutions that fold every event: the merged
// blocks count every event once, hold each one, and lie at least a step apart.
TEST(FoldRuns, AWholeWindowOfBurstsFoldsEveryEventOnce) {
  MemoryTimelineStore store;
  const std::vector<int64_t> starts = WriteBursts({0, 50, 900, 20'000, 3'000'000}, 300'000, 5, &store);
  auto timeline = Timeline::Load(store);
  ASSERT_TRUE(timeline.ok()) << timeline.status();
  for (const int64_t resolution : {64, 1000, 50'000, 10'000'000}) {
    SCOPED_TRACE(resolution);
    v1::TraceWindowRequest request;
    request.set_resolution_ns(resolution);
    auto window = QueryTraceWindow(**timeline, store, request);
    ASSERT_TRUE(window.ok()) << window.status();
    ASSERT_EQ(window->tracks_size(), 1);
    const v1::TraceTrack& track = window->tracks(0);
    EXPECT_EQ(track.events_size(), 0);
    int64_t merged = 0;
    for (int i = 0; i < track.merged_size(); ++i) {
      merged += track.merged(i).count();
      if (i > 0) {
        EXPECT_GE(track.merged(i).start_ns() - track.merged(i - 1).end_ns(), resolution);
      }
    }
    EXPECT_EQ(merged, static_cast<int64_t>(starts.size()));
    for (const int64_t start : starts) {
      auto it = std::upper_bound(track.merged().begin(), track.merged().end(), start,
                                 [](int64_t t, const v1::MergedBlock& m) { return t < m.start_ns(); });
      ASSERT_NE(it, track.merged().begin()) << start;
      --it;
      ASSERT_LE(start + 10, it->end_ns()) << start;
    }
  }
}

}  // namespace
}  // namespace fleetprof::timeline
