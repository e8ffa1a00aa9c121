// EventArray (analysis/event_array.h): a trace's events in a growable mapping of their own.

#include "analysis/event_array.h"

#include <atomic>
#include <cstdint>
#include <numeric>
#include <thread>
#include <utility>
#include <vector>

#include "gtest/gtest.h"

namespace fleetprof::analysis {
namespace {

struct Record {
  int64_t start;
  int32_t name;
};

std::vector<int64_t> Starts(const EventArray<Record>& a) {
  std::vector<int64_t> out;
  for (const Record& r : a) out.push_back(r.start);
  return out;
}

TEST(EventArray, GrowingInPlaceKeepsEveryEventInOrder) {
  EventArray<Record> a;
  EXPECT_TRUE(a.empty());
  // Past several growths, the first one at 64 KiB.
  constexpr int64_t kCount = 1'000'003;
  for (int64_t i = 0; i < kCount; ++i) a.push_back(Record{i * 3, static_cast<int32_t>(i % 97)});
  ASSERT_EQ(a.size(), static_cast<size_t>(kCount));
  EXPECT_GE(a.capacity(), a.size());
  for (int64_t i = 0; i < kCount; ++i) {
    ASSERT_EQ(a[i].start, i * 3) << i;
    ASSERT_EQ(a[i].name, i % 97) << i;
  }
  EXPECT_EQ(a.back().start, (kCount - 1) * 3);
  EXPECT_EQ(a.end() - a.begin(), kCount);
}

TEST(EventArray, CopiesAreIndependentAndMovesLeaveTheSourceEmpty) {
  EventArray<Record> a{{1, 1}, {2, 2}, {3, 3}};
  EventArray<Record> copy = a;
  copy[0].start = 10;
  copy.push_back({4, 4});
  EXPECT_EQ(Starts(a), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_EQ(Starts(copy), (std::vector<int64_t>{10, 2, 3, 4}));
  copy = a;
  EXPECT_EQ(Starts(copy), (std::vector<int64_t>{1, 2, 3}));
  const EventArray<Record>& same = copy;
  copy = same;  // assigning an array to itself keeps it
  EXPECT_EQ(Starts(copy), (std::vector<int64_t>{1, 2, 3}));

  EventArray<Record> moved = std::move(a);
  EXPECT_EQ(Starts(moved), (std::vector<int64_t>{1, 2, 3}));
  EXPECT_TRUE(a.empty());  // NOLINT(bugprone-use-after-move): the contract under test
  a.push_back({7, 7});     // and it is usable again
  EXPECT_EQ(Starts(a), (std::vector<int64_t>{7}));
  moved = std::move(a);
  EXPECT_EQ(Starts(moved), (std::vector<int64_t>{7}));
}

TEST(EventArray, ReserveAppendAndClear) {
  EventArray<Record> a;
  a.reserve(5000);
  EXPECT_GE(a.capacity(), 5000u);
  EXPECT_TRUE(a.empty());
  std::vector<Record> more(300);
  for (size_t i = 0; i < more.size(); ++i) more[i] = Record{static_cast<int64_t>(i), 0};
  a.append_range(more);
  a.append_range(more);
  ASSERT_EQ(a.size(), 600u);
  EXPECT_EQ(a[299].start, 299);
  EXPECT_EQ(a[300].start, 0);
  const size_t capacity = a.capacity();
  a.clear();
  EXPECT_TRUE(a.empty());
  EXPECT_EQ(a.capacity(), capacity);
}

TEST(EventArray, AnArrayTooLargeToAddressIsRefusedAsAnAllocation) {
  EventArray<Record> a;
  EXPECT_THROW(a.reserve(SIZE_MAX / sizeof(Record) + 1), std::bad_alloc);
  EXPECT_THROW(a.reserve(SIZE_MAX / sizeof(Record)), std::bad_alloc);  // the kernel refuses
  EXPECT_TRUE(a.empty());
  a.push_back({1, 1});
  EXPECT_EQ(a[0].start, 1);
}


// The server keeps freed arrays' mappings for the next arrays (KeepFreedEventMemory).
class KeptEventMemory : public ::testing::Test {
 protected:
  void TearDown() override {
    KeepFreedEventMemory(0);
    ReleaseKeptEventMemory();
  }
};

TEST_F(KeptEventMemory, AFreedArraysMappingServesTheNextWithEveryEventIntact) {
  KeepFreedEventMemory(size_t{16} << 20);
  const Record* first_data = nullptr;
  {
    EventArray<Record> a;
    for (int64_t i = 0; i < 200'000; ++i) a.push_back(Record{i, 1});  // 3.2 MB: a 4 MiB mapping
    first_data = a.data();
  }
  EXPECT_EQ(KeptEventMemoryBytes(), size_t{4} << 20);
  EventArray<Record> b;
  b.push_back(Record{-1, 2});
  EXPECT_NE(b.data(), first_data) << "64 KiB asked: a 4 MiB mapping is more than 4 times that";
  // Growing to 1 MiB takes it, the events copied over; growing past it maps anew.
  std::vector<int64_t> expected{-1};
  for (int64_t i = 0; i < 600'000; ++i) {
    b.push_back(Record{i, 3});
    expected.push_back(i);
    if (b.size() == (size_t{1} << 20) / sizeof(Record) + 1) {
      EXPECT_EQ(b.data(), first_data) << "the kept mapping, taken when 1 MiB was asked";
      EXPECT_EQ(KeptEventMemoryBytes(), 0u);
    }
  }
  EXPECT_EQ(Starts(b), expected);
}

TEST_F(KeptEventMemory, GrowingTakesALargerKeptMappingAndCopiesOnlyWhatIsUsed) {
  KeepFreedEventMemory(size_t{64} << 20);
  {
    EventArray<Record> big;
    big.reserve((size_t{16} << 20) / sizeof(Record));
  }
  ASSERT_EQ(KeptEventMemoryBytes(), size_t{16} << 20);
  EventArray<Record> a;
  std::vector<int64_t> expected;
  // 24 MB: from 2 MiB (4 MiB asked) into the kept 16 MiB, then past it.
  constexpr size_t kAt2MiB = (size_t{2} << 20) / sizeof(Record);
  for (int64_t i = 0; i < 1'500'000; ++i) {
    a.push_back(Record{i * 5, 0});
    expected.push_back(i * 5);
    if (a.size() == kAt2MiB) {
      EXPECT_EQ(a.capacity() * sizeof(Record), size_t{2} << 20);
    }
    if (a.size() == kAt2MiB + 1) {
      EXPECT_EQ(a.capacity() * sizeof(Record), size_t{16} << 20) << "grew into the kept mapping";
    }
  }
  EXPECT_EQ(Starts(a), expected);
  EXPECT_EQ(KeptEventMemoryBytes(), size_t{2} << 20) << "the 2 MiB it left is kept in turn";
}

TEST_F(KeptEventMemory, ArraysOnManyThreadsKeepTheirOwnEvents) {
  KeepFreedEventMemory(size_t{24} << 20);
  std::vector<std::thread> threads;
  std::atomic<int> wrong{0};
  for (int t = 0; t < 4; ++t) {
    threads.emplace_back([t, &wrong] {
      for (int round = 0; round < 12; ++round) {
        EventArray<Record> a;
        const int64_t n = 50'000 + 70'000 * ((t + round) % 5);
        for (int64_t i = 0; i < n; ++i) a.push_back(Record{i * 7 + t, static_cast<int32_t>(round)});
        for (int64_t i = 0; i < n; ++i) {
          if (a[static_cast<size_t>(i)].start != i * 7 + t || a[static_cast<size_t>(i)].name != round) ++wrong;
        }
      }
    });
  }
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  EXPECT_LE(KeptEventMemoryBytes(), size_t{24} << 20);
}

TEST_F(KeptEventMemory, KeepsNoMoreThanItsLimitAndNothingSmallOrWhenOff) {
  {
    EventArray<Record> off;
    off.reserve((size_t{2} << 20) / sizeof(Record));
  }
  EXPECT_EQ(KeptEventMemoryBytes(), 0u) << "the default keeps nothing";
  KeepFreedEventMemory(size_t{6} << 20);
  {
    EventArray<Record> small, a, b;
    small.push_back(Record{1, 1});  // 64 KiB: not worth keeping
    a.reserve((size_t{4} << 20) / sizeof(Record));
    b.reserve((size_t{4} << 20) / sizeof(Record));
  }
  EXPECT_EQ(KeptEventMemoryBytes(), size_t{4} << 20) << "one of the two 4 MiB mappings fits under 6 MiB";
  KeepFreedEventMemory(size_t{1} << 20);
  EXPECT_EQ(KeptEventMemoryBytes(), 0u) << "a lower limit gives back what is over it";
  KeepFreedEventMemory(size_t{8} << 20);
  {
    EventArray<Record> a;
    a.reserve((size_t{4} << 20) / sizeof(Record));
  }
  EXPECT_EQ(KeptEventMemoryBytes(), size_t{4} << 20);
  ReleaseKeptEventMemory();
  EXPECT_EQ(KeptEventMemoryBytes(), 0u);
}

}  // namespace
}  // namespace fleetprof::analysis
