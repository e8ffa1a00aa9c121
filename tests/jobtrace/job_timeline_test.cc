// The job timeline against generated ranks with known clock skews, jitter and a late rank:
// recovered offsets, matched collectives, the late rank, and the job window against each
// profile's own window shifted by its offset.
#include <algorithm>
#include <random>

#include "analysis/byte_source.h"
#include "analysis/trace_analyzer.h"
#include "gtest/gtest.h"
#include "jobtrace/agent_clock.h"
#include "jobtrace/clock_alignment.h"
#include "jobtrace/collective_analysis.h"
#include "jobtrace/collectives.h"
#include "jobtrace/job_window.h"
#include "tests/jobtrace/rank_traces.h"
#include "tests/timeline/memory_timeline_store.h"
#include "timeline/timeline_builder.h"
#include "timeline/trace_window.h"

namespace fleetprof::jobtrace {
namespace {

using timeline::testing::MemoryTimelineStore;

struct StoredRank {
  MemoryTimelineStore store;
  std::shared_ptr<const timeline::Timeline> timeline;
  ProfileCollectives collectives;
};

std::vector<std::unique_ptr<StoredRank>> Store(const std::vector<testing::RankTrace>& traces) {
  std::vector<std::unique_ptr<StoredRank>> out;
  for (size_t r = 0; r < traces.size(); ++r) {
    auto stored = std::make_unique<StoredRank>();
    timeline::TimelineSink sink(&stored->store);
    auto summary = analysis::AnalyzeTrace(*analysis::OpenStringSource("rank" + std::to_string(r), traces[r].json),
                                          analysis::TraceFormat::kKinetoJson, &sink);
    EXPECT_TRUE(summary.ok()) << summary.status();
    auto t = timeline::Timeline::Load(stored->store);
    EXPECT_TRUE(t.ok()) << t.status();
    stored->timeline = *t;
    auto c = ReadCollectives(**t, stored->store);
    EXPECT_TRUE(c.ok()) << c.status();
    stored->collectives = *std::move(c);
    out.push_back(std::move(stored));
  }
  return out;
}

std::vector<int64_t> RandomSkews(int ranks, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<int64_t> skews;
  for (int r = 0; r < ranks; ++r) skews.push_back(std::uniform_int_distribution<int64_t>(-2'000'000'000, 2'000'000'000)(rng));
  return skews;
}

std::vector<const ProfileCollectives*> Collectives(const std::vector<std::unique_ptr<StoredRank>>& ranks) {
  std::vector<const ProfileCollectives*> out;
  for (const auto& r : ranks) out.push_back(&r->collectives);
  return out;
}

TEST(CollectiveOp, NamesOfEveryNcclVersionAndRcclAndXlaMeet) {
  EXPECT_EQ(CollectiveOpOf("ncclKernel_AllReduce_RING_LL_Sum_float(ncclDevComm*, unsigned long, ncclWork*)"),
            CollectiveOp::kAllReduce);
  EXPECT_EQ(CollectiveOpOf("ncclDevKernel_AllReduce_Sum_f32_RING_LL(ncclDevKernelArgsStorage<4096ul>)"),
            CollectiveOp::kAllReduce);
  EXPECT_EQ(CollectiveOpOf("nccl:all_reduce"), CollectiveOp::kAllReduce);
  EXPECT_EQ(CollectiveOpOf("all-reduce.3"), CollectiveOp::kAllReduce);
  EXPECT_EQ(CollectiveOpOf("ncclDevKernel_ReduceScatter_Sum_bf16_RING_SIMPLE"), CollectiveOp::kReduceScatter);
  EXPECT_EQ(CollectiveOpOf("nccl:_reduce_scatter_base"), CollectiveOp::kReduceScatter);
  EXPECT_EQ(CollectiveOpOf("nccl:_all_gather_base"), CollectiveOp::kAllGather);
  EXPECT_EQ(CollectiveOpOf("ncclKernel_Broadcast_RING_LL_Sum_int8_t(ncclDevComm*, unsigned long, ncclWork*)"),
            CollectiveOp::kBroadcast);
  EXPECT_EQ(CollectiveOpOf("ncclDevKernel_SendRecv(ncclDevKernelArgsStorage<4096ul>)"), CollectiveOp::kSendRecv);
  EXPECT_EQ(CollectiveOpOf("nccl:send"), CollectiveOp::kSendRecv);
  EXPECT_EQ(CollectiveOpOf("nccl:all_to_all"), CollectiveOp::kAllToAll);
  EXPECT_EQ(CollectiveOpOf("ncclDevKernel_Generic"), CollectiveOp::kOther);
}

// The acceptance case: 8 ranks, skews in ±2 s, a few µs of jitter, rank 5 late.
TEST(ClockAlignment, RecoversInjectedSkewsWithin20MicrosecondsAndFindsTheLateRank) {
  for (int ranks : {2, 8, 32}) {
    SCOPED_TRACE(ranks);
    testing::RankTraceOptions o;
    o.ranks = ranks;
    o.collectives = 120;
    o.skew_ns = RandomSkews(ranks, 7 + static_cast<uint64_t>(ranks));
    o.late_rank = ranks - 1;
    o.jitter_ns = 4'000;
    auto traces = testing::GenerateRankTraces(o);
    auto stored = Store(traces);
    ASSERT_EQ(stored[0]->collectives.events.size(), 120u);
    EXPECT_FALSE(stored[0]->collectives.from_host);
    std::vector<RankAlignment> a = AlignByCollectives(Collectives(stored));
    for (int r = 1; r < ranks; ++r) {
      SCOPED_TRACE(r);
      ASSERT_TRUE(a[r].aligned);
      const int64_t truth = o.skew_ns[0] - o.skew_ns[r];  // rank time + offset = rank 0's time
      EXPECT_LE(std::llabs(a[r].offset_ns - truth), 20'000) << a[r].offset_ns << " vs " << truth;
      EXPECT_EQ(a[r].matched, 120);
      EXPECT_GT(a[r].uncertainty_ns, 0);
      EXPECT_LE(a[r].uncertainty_ns, 2 * o.jitter_ns);
      EXPECT_EQ(a[r].shifts.size(), 1u);
    }
    // On the common clock the ends line up within the jitter; the late rank is last.
    std::vector<RankClock> clocks;
    for (int r = 0; r < ranks; ++r) {
      clocks.push_back({"p" + std::to_string(r), std::to_string(r), &stored[r]->collectives, a[r].offset_ns,
                        a[r].uncertainty_ns});
    }
    v1::JobCollectivesResponse answer;
    AnalyzeCollectives(clocks, a, 100000, &answer);
    EXPECT_EQ(answer.instances(), 120);
    ASSERT_EQ(answer.collectives_size(), 120);
    EXPECT_FALSE(answer.truncated());
    for (const v1::CollectiveInstance& c : answer.collectives()) {
      ASSERT_EQ(c.ranks_size(), ranks);
      EXPECT_EQ(c.op(), "all_reduce");
      EXPECT_EQ(c.bytes(), 4 * (1'000'000 + c.seq()));  // "In msg nelems" x sizeof(Float)
      int64_t lo = INT64_MAX, hi = INT64_MIN;
      for (const auto& t : c.ranks()) lo = std::min(lo, t.end_ns()), hi = std::max(hi, t.end_ns());
      EXPECT_LE(hi - lo, 2 * o.jitter_ns + 2 * 20'000) << "instance " << c.seq();
      EXPECT_EQ(c.last_rank(), std::to_string(ranks - 1)) << "instance " << c.seq();
    }
    const auto& late = answer.ranks(ranks - 1);
    EXPECT_EQ(late.last_count(), 120);
    EXPECT_EQ(late.instances(), 120);
    for (int r = 0; r + 1 < ranks; ++r) {
      EXPECT_EQ(answer.ranks(r).last_count(), 0);
      // Everyone else waits about late_ns for the late rank at every instance.
      EXPECT_GT(answer.ranks(r).wait_ns(), 120 * (o.late_ns - 100'000));
    }
    EXPECT_LT(late.wait_ns(), 120 * 40'000);
  }
}

TEST(ClockAlignment, ATraceThatStartsLaterIsMatchedAtItsShift) {
  testing::RankTraceOptions o;
  o.ranks = 3;
  o.collectives = 80;
  o.skew_ns = {0, 1'500'000'000, -700'000'000};
  o.skip_first = {0, 3, 0};  // rank 1's trace starts three collectives later
  auto stored = Store(testing::GenerateRankTraces(o));
  ASSERT_EQ(stored[1]->collectives.events.size(), 77u);
  auto a = AlignByCollectives(Collectives(stored));
  ASSERT_TRUE(a[1].aligned);
  EXPECT_EQ(a[1].shifts.begin()->second, -3);
  EXPECT_LE(std::llabs(a[1].offset_ns + 1'500'000'000), 20'000);
  EXPECT_EQ(a[1].matched, 77);
  EXPECT_LE(std::llabs(a[2].offset_ns - 700'000'000), 20'000);
}

TEST(ClockAlignment, NoCommonCollectiveMeansNoOffset) {
  ProfileCollectives ref, other;
  ref.events.push_back({0, 10, 0, 0, CollectiveOp::kAllReduce});
  other.events.push_back({5, 20, 0, 0, CollectiveOp::kAllGather});
  auto a = AlignByCollectives({&ref, &other});
  EXPECT_TRUE(a[0].aligned);
  EXPECT_FALSE(a[1].aligned);
  EXPECT_EQ(a[1].offset_ns, 0);
}

// The job window is each profile's own window at [start - offset, end - offset), shifted by
// +offset: checked over random windows and resolutions for 2, 8 and 32 ranks.
TEST(JobWindow, EqualsEachProfilesWindowShiftedByItsOffset) {
  for (int ranks : {2, 8, 32}) {
    SCOPED_TRACE(ranks);
    testing::RankTraceOptions o;
    o.ranks = ranks;
    o.collectives = 60;
    o.skew_ns = RandomSkews(ranks, 99 + static_cast<uint64_t>(ranks));
    auto stored = Store(testing::GenerateRankTraces(o));
    auto a = AlignByCollectives(Collectives(stored));
    std::vector<WindowMember> members;
    for (int r = 0; r < ranks; ++r) {
      members.push_back({"p" + std::to_string(r), std::to_string(r), stored[r]->timeline.get(), &stored[r]->store,
                         a[r].offset_ns});
    }
    auto [extent_start, extent_end] = JobExtent(members);
    ASSERT_LT(extent_start, extent_end);
    std::mt19937_64 rng(5);
    for (int trial = 0; trial < 20; ++trial) {
      v1::JobTraceRequest request;
      request.set_job("j");
      if (trial > 0) {
        const int64_t span = extent_end - extent_start;
        const int64_t s = extent_start + std::uniform_int_distribution<int64_t>(0, span - 2)(rng);
        const int64_t e = s + 1 + std::uniform_int_distribution<int64_t>(0, extent_end - s - 1)(rng);
        request.set_start_ns(s);
        request.set_end_ns(e);
        request.set_resolution_ns(std::uniform_int_distribution<int64_t>(0, 200'000)(rng));
      }
      auto job = QueryJobWindow(members, request);
      ASSERT_TRUE(job.ok()) << job.status();
      int next = 0;
      for (int r = 0; r < ranks; ++r) {
        v1::TraceWindowRequest own;
        own.set_start_ns(job->start_ns() - a[r].offset_ns);
        own.set_end_ns(job->end_ns() - a[r].offset_ns);
        own.set_resolution_ns(job->resolution_ns());
        auto window = timeline::QueryTraceWindow(*stored[r]->timeline, stored[r]->store, own);
        ASSERT_TRUE(window.ok()) << window.status();
        for (const v1::TraceTrack& t : window->tracks()) {
          ASSERT_LT(next, job->tracks_size());
          const v1::TraceTrack& got = job->tracks(next++);
          EXPECT_EQ(got.profile_id(), "p" + std::to_string(r));
          EXPECT_EQ(got.rank(), std::to_string(r));
          EXPECT_EQ(got.id(), t.id());
          EXPECT_FALSE(got.truncated());
          ASSERT_EQ(got.events_size(), t.events_size());
          for (int i = 0; i < t.events_size(); ++i) {
            EXPECT_EQ(got.events(i).name(), t.events(i).name());
            EXPECT_EQ(got.events(i).start_ns(), t.events(i).start_ns() + a[r].offset_ns);
            EXPECT_EQ(got.events(i).dur_ns(), t.events(i).dur_ns());
          }
          ASSERT_EQ(got.merged_size(), t.merged_size());
          for (int i = 0; i < t.merged_size(); ++i) {
            EXPECT_EQ(got.merged(i).start_ns(), t.merged(i).start_ns() + a[r].offset_ns);
            EXPECT_EQ(got.merged(i).end_ns(), t.merged(i).end_ns() + a[r].offset_ns);
            EXPECT_EQ(got.merged(i).count(), t.merged(i).count());
          }
        }
      }
      EXPECT_EQ(next, job->tracks_size());
    }
  }
}

// Brute force: the whole job window at resolution 1 holds every stored event of every rank,
// each exactly where its rank's clock puts it plus the offset.
TEST(JobWindow, AtFullResolutionHoldsEveryEventOnTheReferenceClock) {
  testing::RankTraceOptions o;
  o.ranks = 4;
  o.collectives = 30;
  o.skew_ns = {0, 2'000'000'000, -2'000'000'000, 123'456'789};
  auto stored = Store(testing::GenerateRankTraces(o));
  auto a = AlignByCollectives(Collectives(stored));
  std::vector<WindowMember> members;
  int64_t expected_events = 0;
  for (int r = 0; r < o.ranks; ++r) {
    members.push_back({"p" + std::to_string(r), std::to_string(r), stored[r]->timeline.get(), &stored[r]->store,
                       a[r].offset_ns});
    expected_events += stored[r]->timeline->directory().events();
  }
  v1::JobTraceRequest request;
  request.set_resolution_ns(1);
  auto job = QueryJobWindow(members, request);
  ASSERT_TRUE(job.ok()) << job.status();
  int64_t events = 0;
  for (const auto& t : job->tracks()) {
    EXPECT_EQ(t.merged_size(), 0);
    events += t.events_size();
  }
  EXPECT_EQ(events, expected_events);
  // Every rank's collective ends within the jitter (plus the offset's error) of rank 0's.
  for (const auto& t : job->tracks()) {
    if (t.id().find("/20") == std::string::npos) continue;
    for (const auto& e : t.events()) EXPECT_GE(e.start_ns(), job->start_ns());
  }
}

TEST(JobWindow, AnUnknownTrackOrAnEmptyWindowIsAClearError) {
  testing::RankTraceOptions o;
  o.ranks = 2;
  o.collectives = 10;
  auto stored = Store(testing::GenerateRankTraces(o));
  std::vector<WindowMember> members;
  for (int r = 0; r < 2; ++r) members.push_back({"p" + std::to_string(r), std::to_string(r), stored[r]->timeline.get(), &stored[r]->store, 0});
  v1::JobTraceRequest request;
  request.add_tracks("no-such-track");
  auto job = QueryJobWindow(members, request);
  EXPECT_EQ(job.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(job.status().message().find("no-such-track"), std::string::npos);
  v1::JobTraceRequest empty;
  empty.set_start_ns(10);
  empty.set_end_ns(10);
  EXPECT_EQ(QueryJobWindow(members, empty).status().code(), absl::StatusCode::kInvalidArgument);
  v1::JobTraceRequest huge;  // shifted by an offset it would overflow
  huge.set_start_ns(INT64_MIN + 5);
  huge.set_end_ns(10);
  EXPECT_EQ(QueryJobWindow(members, huge).status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(AgentClock, WallClockTracesMapAsTheyAreOthersThroughTheCaptureWindow) {
  google::protobuf::Map<std::string, std::string> labels;
  labels["clock_offset_ns"] = "-1500";
  labels["clock_uncertainty_ns"] = "40";
  labels["capture_start_unix_ns"] = "1700000000000000000";
  labels["capture_window_ns"] = "2000000000";
  // A trace in epoch ns (XSpace, Kineto in µs since the epoch): its clock is the node's.
  auto wall = AgentClockOf(labels, 1'700'000'000'500'000'000);
  ASSERT_TRUE(wall.has_value());
  EXPECT_EQ(wall->to_server_ns, -1500);
  EXPECT_EQ(wall->uncertainty_ns, 40);
  // Kineto's monotonic clock (days since boot): mapped through the window's start, ± the window.
  auto mono = AgentClockOf(labels, 4'458'676'522'690'655);
  ASSERT_TRUE(mono.has_value());
  EXPECT_EQ(mono->to_server_ns, 1'700'000'000'000'000'000 - 4'458'676'522'690'655 - 1500);
  EXPECT_EQ(mono->uncertainty_ns, 2'000'000'040);
  labels["clock_uncertainty_ns"] = "x";
  EXPECT_FALSE(AgentClockOf(labels, 0).has_value());
  labels.erase("clock_uncertainty_ns");
  EXPECT_FALSE(AgentClockOf(labels, 0).has_value());
  EXPECT_FALSE(AgentClockOf({}, 0).has_value());
}

}  // namespace
}  // namespace fleetprof::jobtrace
