// A block read up to a window's end (DecodeBlock's stop_start): the events before the stop as
// a whole read has them, the bytes after it unread, a damaged block still refused.

#include <limits>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "timeline/block_codec.h"

namespace fleetprof::timeline {
namespace {

std::vector<TimelineEvent> Events() {
  std::vector<TimelineEvent> events;
  for (int i = 0; i < 200; ++i) {
    TimelineEvent e;
    e.start = -50 + i * 7 - (i % 3 == 0 ? 0 : 1);  // from a negative first start
    e.dur = i * 13;
    e.name = static_cast<uint32_t>(i % 5);
    e.category = 1;
    if (i % 4 == 0) {
      e.flags = TimelineEvent::kHasCorrelation;
      e.correlation = -i;
    }
    events.push_back(e);
  }
  return events;
}

bool Same(const TimelineEvent& a, const TimelineEvent& b) {
  return a.start == b.start && a.dur == b.dur && a.name == b.name && a.category == b.category &&
         a.flags == b.flags && a.correlation == b.correlation;
}

TEST(BlockCodec, AStopLeavesOutExactlyTheEventsFromIt) {
  const std::vector<TimelineEvent> events = Events();
  std::string bytes;
  EncodeBlock(events, false, &bytes);
  std::vector<TimelineEvent> all;
  uint64_t declared = 0;
  ASSERT_TRUE(DecodeBlock(bytes, false, 5, &all, std::numeric_limits<int64_t>::max(), &declared).ok());
  ASSERT_EQ(all.size(), events.size());
  EXPECT_EQ(declared, events.size());
  for (const int64_t stop : {int64_t{-1000}, int64_t{-50}, int64_t{-49}, int64_t{0}, int64_t{600}, int64_t{1342},
                             int64_t{5000}}) {
    SCOPED_TRACE(stop);
    std::vector<TimelineEvent> part;
    ASSERT_TRUE(DecodeBlock(bytes, false, 5, &part, stop, &declared).ok());
    EXPECT_EQ(declared, events.size());
    size_t expected = 0;
    while (expected < events.size() && events[expected].start < stop) ++expected;
    ASSERT_EQ(part.size(), expected);
    for (size_t i = 0; i < part.size(); ++i) EXPECT_TRUE(Same(part[i], all[i])) << i;
  }
}

TEST(BlockCodec, BytesPastTheStopAreNotReadButADamagedBlockIsRefused) {
  const std::vector<TimelineEvent> events = Events();
  // A name id out of range in the last event: a whole read refuses the block, one that stops
  // before that event never reads it.
  std::vector<TimelineEvent> tail_damaged = events;
  tail_damaged.back().name = 9;
  std::string bytes;
  EncodeBlock(tail_damaged, false, &bytes);
  std::vector<TimelineEvent> out;
  EXPECT_FALSE(DecodeBlock(bytes, false, 5, &out).ok());
  EXPECT_TRUE(DecodeBlock(bytes, false, 5, &out, events[10].start).ok());
  EXPECT_EQ(out.size(), 10u);
  // A name id out of range before the stop is damage whatever the stop.
  std::vector<TimelineEvent> bad = events;
  bad[3].name = 9;
  bytes.clear();
  EncodeBlock(bad, false, &bytes);
  EXPECT_FALSE(DecodeBlock(bytes, false, 5, &out, events[10].start).ok());
  EXPECT_TRUE(DecodeBlock(bytes, false, 5, &out, events[3].start).ok());
}

}  // namespace
}  // namespace fleetprof::timeline
