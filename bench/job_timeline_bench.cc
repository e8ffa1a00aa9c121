// The job timeline's costs on generated ranks (tests/jobtrace/rank_traces.h), in process:
//   job_timeline_bench [--ranks 32] [--collectives 10000] [--kernels_per_gap 14] [--runs 50]
// prints the events per rank, the first read of each profile's collectives, matching and
// offsets over all ranks, the collective analysis, and the job window (whole extent at the
// viewer's default resolution, and a 1 ms window) as query and as query + JSON: median, p99.
//   job_timeline_bench --write DIR [--ranks N] [--collectives K] [--late_rank R]
// writes rank<r>.json files instead (and truth.json: each rank's injected skew), for uploads.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "analysis/byte_source.h"
#include "analysis/trace_analyzer.h"
#include "jobtrace/clock_alignment.h"
#include "jobtrace/collective_analysis.h"
#include "jobtrace/job_window.h"
#include "proto/proto_json.h"
#include "tests/jobtrace/rank_traces.h"
#include "tests/timeline/memory_timeline_store.h"
#include "timeline/timeline_builder.h"

using namespace fleetprof;  // NOLINT: a benchmark's main

namespace {

using Clock = std::chrono::steady_clock;
double Ms(Clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

struct Stats {
  double median, p99;
};
Stats Of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return {v[v.size() / 2], v[std::min(v.size() - 1, static_cast<size_t>(static_cast<double>(v.size()) * 0.99))]};
}

}  // namespace

int main(int argc, char** argv) {
  testing::RankTraceOptions o;
  o.ranks = 32;
  o.collectives = 10000;
  o.kernels_per_gap = 14;
  o.late_rank = 3;
  int runs = 50;
  std::string write_dir;
  for (int i = 1; i + 1 < argc; i += 2) {
    const std::string flag = argv[i];
    const long long v = std::atoll(argv[i + 1]);
    if (flag == "--ranks") o.ranks = static_cast<int>(v);
    else if (flag == "--collectives") o.collectives = static_cast<int>(v);
    else if (flag == "--kernels_per_gap") o.kernels_per_gap = static_cast<int>(v);
    else if (flag == "--late_rank") o.late_rank = static_cast<int>(v);
    else if (flag == "--runs") runs = static_cast<int>(v);
    else if (flag == "--write") write_dir = argv[i + 1];
    else {
      std::fprintf(stderr, "unknown flag %s\n", argv[i]);
      return 2;
    }
  }
  std::mt19937_64 rng(42);
  for (int r = 0; r < o.ranks; ++r) {
    o.skew_ns.push_back(r == 0 ? 0 : std::uniform_int_distribution<int64_t>(-2'000'000'000, 2'000'000'000)(rng));
  }
  auto t0 = Clock::now();
  std::vector<testing::RankTrace> traces = testing::GenerateRankTraces(o);
  std::printf("generated %d ranks x %d collectives in %.0f ms\n", o.ranks, o.collectives, Ms(Clock::now() - t0));
  if (!write_dir.empty()) {
    std::string truth = "{\"skew_ns\":[";
    for (int r = 0; r < o.ranks; ++r) {
      std::ofstream(write_dir + "/rank" + std::to_string(r) + ".json") << traces[r].json;
      truth += (r ? "," : "") + std::to_string(o.skew_ns[r]);
    }
    std::ofstream(write_dir + "/truth.json") << truth << "],\"late_rank\":" << o.late_rank << "}\n";
    return 0;
  }
  struct Rank {
    timeline::testing::MemoryTimelineStore store;
    std::shared_ptr<const timeline::Timeline> timeline;
    jobtrace::ProfileCollectives collectives;
  };
  std::vector<std::unique_ptr<Rank>> ranks;
  double read_ms = 0;
  for (int r = 0; r < o.ranks; ++r) {
    auto rank = std::make_unique<Rank>();
    timeline::TimelineSink sink(&rank->store);
    auto summary = analysis::AnalyzeTrace(*analysis::OpenStringSource("rank", std::move(traces[r].json)),
                                          analysis::TraceFormat::kKinetoJson, &sink);
    if (!summary.ok()) return std::fprintf(stderr, "%s\n", summary.status().ToString().c_str()), 1;
    rank->timeline = *timeline::Timeline::Load(rank->store);
    auto start = Clock::now();
    rank->collectives = *jobtrace::ReadCollectives(*rank->timeline, rank->store);
    read_ms += Ms(Clock::now() - start);
    ranks.push_back(std::move(rank));
  }
  std::printf("events per rank: %lld; collectives per rank: %zu\n",
              static_cast<long long>(ranks[0]->timeline->directory().events()), ranks[0]->collectives.events.size());
  std::printf("read collectives (first query of each profile, then cached): %.1f ms per rank, %.0f ms in all\n",
              read_ms / o.ranks, read_ms);
  std::vector<const jobtrace::ProfileCollectives*> inputs;
  for (auto& r : ranks) inputs.push_back(&r->collectives);
  std::vector<double> align, analyze;
  std::vector<jobtrace::RankAlignment> a;
  for (int i = 0; i < std::max(3, runs / 10); ++i) {
    auto s = Clock::now();
    a = jobtrace::AlignByCollectives(inputs);
    align.push_back(Ms(Clock::now() - s));
    std::vector<jobtrace::RankClock> clocks;
    for (int r = 0; r < o.ranks; ++r) {
      clocks.push_back({"p" + std::to_string(r), std::to_string(r), inputs[r], a[r].offset_ns, a[r].uncertainty_ns});
    }
    v1::JobCollectivesResponse out;
    s = Clock::now();
    jobtrace::AnalyzeCollectives(clocks, a, 1000, &out);
    analyze.push_back(Ms(Clock::now() - s));
  }
  int64_t worst = 0;
  for (int r = 1; r < o.ranks; ++r) worst = std::max<int64_t>(worst, std::llabs(a[r].offset_ns - (o.skew_ns[0] - o.skew_ns[r])));
  Stats sa = Of(align), sn = Of(analyze);
  std::printf("match + offsets, %d ranks x %d collectives: median %.1f ms, p99 %.1f ms (worst offset error %lld ns)\n",
              o.ranks, o.collectives, sa.median, sa.p99, static_cast<long long>(worst));
  std::printf("collective analysis (all instances, 1000 listed): median %.1f ms, p99 %.1f ms\n", sn.median, sn.p99);
  std::vector<jobtrace::WindowMember> members;
  for (int r = 0; r < o.ranks; ++r) {
    members.push_back({"p" + std::to_string(r), std::to_string(r), ranks[r]->timeline.get(), &ranks[r]->store, a[r].offset_ns});
  }
  auto [start, end] = jobtrace::JobExtent(members);
  for (auto [label, window_start, window_end] :
       {std::tuple{"whole job, default resolution", int64_t{0}, int64_t{0}},
        std::tuple{"1 ms window", start + (end - start) / 2, start + (end - start) / 2 + 1'000'000}}) {
    std::vector<double> query, json;
    size_t bytes = 0;
    for (int i = 0; i < runs; ++i) {
      v1::JobTraceRequest request;
      request.set_job("bench");
      request.set_start_ns(window_start);
      request.set_end_ns(window_end);
      auto s = Clock::now();
      auto window = jobtrace::QueryJobWindow(members, request);
      auto q = Clock::now();
      std::string text = ProtoToJson(*window);
      auto j = Clock::now();
      query.push_back(Ms(q - s));
      json.push_back(Ms(j - s));
      bytes = text.size();
    }
    Stats sq = Of(query), sj = Of(json);
    std::printf("job window, %s: query median %.2f ms p99 %.2f ms; with JSON median %.2f ms p99 %.2f ms (%zu bytes)\n",
                label, sq.median, sq.p99, sj.median, sj.p99, bytes);
  }
  return 0;
}
