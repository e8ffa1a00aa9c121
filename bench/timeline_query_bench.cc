// Where a trace-window query spends its time, without HTTP: opens a stopped server's data
// directory and times, for one profile, the window query itself and its JSON apart, with what
// each answer holds (events listed, merged blocks, JSON bytes) and the block reads it took.
//   timeline_query_bench --data_dir DIR --profile ID [--queries 200]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "proto/proto_json.h"
#include "storage/storage.h"
#include "timeline/trace_window.h"

namespace {

// Counts the block reads of the queries, to see how many a window costs.
class CountingReader : public fleetprof::timeline::TimelineReader {
 public:
  explicit CountingReader(std::unique_ptr<fleetprof::timeline::TimelineReader> inner) : inner_(std::move(inner)) {}
  absl::StatusOr<std::string> GetBlock(uint32_t t, uint32_t l, uint32_t b) override {
    ++blocks;
    const auto a = std::chrono::steady_clock::now();
    auto r = inner_->GetBlock(t, l, b);
    get_ms += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - a).count();
    return r;
  }
  absl::StatusOr<std::string> GetNames(uint32_t c) override { return inner_->GetNames(c); }
  absl::StatusOr<std::string> GetDirectory() override { return inner_->GetDirectory(); }
  int64_t blocks = 0;
  double get_ms = 0;

 private:
  std::unique_ptr<fleetprof::timeline::TimelineReader> inner_;
};

double Ms(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

void Report(const char* what, std::vector<double> query, std::vector<double> json) {
  std::sort(query.begin(), query.end());
  std::sort(json.begin(), json.end());
  const size_t n = query.size();
  std::printf("  %-40s query p50 %.3f p99 %.3f ms   JSON p50 %.3f p99 %.3f ms\n", what, query[n / 2],
              query[std::min(n - 1, n * 99 / 100)], json[n / 2], json[std::min(n - 1, n * 99 / 100)]);
}

}  // namespace

int main(int argc, char** argv) {
  std::string dir, profile;
  int queries = 200;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--data_dir") dir = argv[i + 1];
    if (flag == "--profile") profile = argv[i + 1];
    if (flag == "--queries") (void)absl::SimpleAtoi(argv[i + 1], &queries);
  }
  auto store = fleetprof::Storage::Open(dir);
  if (!store.ok()) {
    std::fprintf(stderr, "%s\n", std::string(store.status().message()).c_str());
    return 1;
  }
  auto reader = std::make_unique<CountingReader>((*store)->events().NewReader(profile));
  const auto t0 = std::chrono::steady_clock::now();
  auto timeline = fleetprof::timeline::Timeline::Load(*reader);
  if (!timeline.ok()) {
    std::fprintf(stderr, "%s\n", std::string(timeline.status().message()).c_str());
    return 1;
  }
  size_t blocks = 0;
  for (const auto& t : (*timeline)->directory().tracks())
    for (const auto& l : t.levels()) blocks += l.blocks_size();
  std::printf("directory: %d tracks, %zu blocks, %lld events, loaded in %.2f ms\n",
              (*timeline)->directory().tracks_size(), blocks,
              static_cast<long long>((*timeline)->directory().events()), Ms(std::chrono::steady_clock::now() - t0));
  const int64_t start = (*timeline)->start_ns(), end = (*timeline)->end_ns();
  std::mt19937_64 rng(7);
  auto run = [&](const char* what, auto make) {
    std::vector<double> q, j;
    int64_t listed = 0, merged = 0, bytes = 0;
    reader->blocks = 0;
    reader->get_ms = 0;
    for (int i = 0; i < queries; ++i) {
      fleetprof::v1::TraceWindowRequest request = make();
      auto a = std::chrono::steady_clock::now();
      auto window = fleetprof::timeline::QueryTraceWindow(**timeline, *reader, request);
      auto b = std::chrono::steady_clock::now();
      std::string json = fleetprof::ProtoToJson(*window);
      auto c = std::chrono::steady_clock::now();
      q.push_back(Ms(b - a));
      j.push_back(Ms(c - b));
      for (const auto& track : window->tracks()) {
        listed += track.events_size();
        merged += track.merged_size();
      }
      bytes += static_cast<int64_t>(json.size());
    }
    Report(what, q, j);
    const double n = queries;
    std::printf("  %-40s %.1f block reads per query, %.3f ms of them in storage; answers hold %.0f events, "
                "%.0f merged blocks, %.0f JSON bytes on average\n",
                "", static_cast<double>(reader->blocks) / n, reader->get_ms / n, static_cast<double>(listed) / n,
                static_cast<double>(merged) / n, static_cast<double>(bytes) / n);
  };
  run("whole profile, default resolution", [] { return fleetprof::v1::TraceWindowRequest(); });
  run("random 1 ms windows, default resolution", [&] {
    fleetprof::v1::TraceWindowRequest r;
    r.set_start_ns(start + static_cast<int64_t>(rng() % static_cast<uint64_t>(end - start - 1'000'000)));
    r.set_end_ns(r.start_ns() + 1'000'000);
    return r;
  });
  return 0;
}
