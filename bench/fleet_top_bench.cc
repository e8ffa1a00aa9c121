// fleet top over a week of sampled profiles (issue 42: p99 < 1 s over 1M profiles): the rollups
// are built through the server's own commit path (FleetRollupWriter::Observe: the capture
// lookup, SampledProfileOf, the compare-and-set cell update) into a real RocksDB store, one
// profile at a time on a SimulatedClock spread over `days`; then FleetTopQuery answers 200
// queries per grouping (the default 24 h window, every row) and a few 7-day ones, timed.
//   fleet_top_bench [profiles=1000000] [jobs=200] [days=7] [dir=/tmp/fleet_top_bench]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "server/fleet/fleet_accounting.h"
#include "server/fleet/fleet_rollups.h"
#include "server/query/fleet_top_query.h"
#include "server/server_metrics.h"
#include "spdlog/spdlog.h"
#include "storage/fleet_rollup_store.h"
#include "storage/storage.h"

namespace fleetprof {
namespace {

constexpr int kKernelsPerJob = 60;
constexpr int kOpsPerJob = 40;
constexpr int kKernelNames = 3000;  // the fleet's kernel vocabulary
constexpr int kTemplatesPerJob = 4;  // summaries per job, so profiles of a job differ
constexpr int kNodes = 100;
constexpr int kQueries = 200;
constexpr int64_t kDayNs = 24 * kFleetHourNs;

double Seconds(std::chrono::steady_clock::duration d) { return std::chrono::duration<double>(d).count(); }

std::string KernelName(int k) {
  return absl::StrCat("void at::native::vectorized_elementwise_kernel<4, at::native::BinaryFunctor<float>>_", k);
}

// A job's summaries: two devices over a 10 s span, its own kernels and ops at random sizes.
std::vector<v1::ProfileSummary> JobSummaries(int job, std::mt19937_64& rng) {
  std::vector<v1::ProfileSummary> out;
  for (int t = 0; t < kTemplatesPerJob; ++t) {
    v1::ProfileSummary s;
    s.set_start_ns(0);
    s.set_end_ns(10'000'000'000);
    int64_t busy = 0;
    for (int k = 0; k < kKernelsPerJob; ++k) {
      v1::KernelStat* kernel = s.add_kernels();
      kernel->set_name(KernelName((job * 37 + k * 101) % kKernelNames));
      kernel->set_total_ns(static_cast<int64_t>(rng() % 200'000'000));
      busy += kernel->total_ns();
    }
    for (int o = 0; o < kOpsPerJob; ++o) {
      v1::OpStat* op = s.add_ops();
      op->set_name(absl::StrCat("aten::op_", (job * 13 + o * 7) % 500));
      op->set_device_total_ns(static_cast<int64_t>(rng() % 300'000'000));
    }
    for (int d = 0; d < 2; ++d) {
      v1::DeviceBreakdown* device = s.add_devices();
      device->set_device(absl::StrCat(d));
      device->set_busy_ns(std::min<int64_t>(busy / 2, 10'000'000'000));
    }
    s.add_device_samples()->set_model(job % 3 == 0 ? "NVIDIA H100 80GB HBM3" : job % 3 == 1 ? "NVIDIA A100-SXM4-80GB" : "TPU v5e");
    out.push_back(std::move(s));
  }
  return out;
}

struct Latency {
  double p50_ms, p99_ms, max_ms;
  int64_t rows, samples;
};

Latency TimeQueries(const FleetTopQuery& query, const std::string& by, int64_t since_ms, int n) {
  std::vector<double> ms;
  v1::FleetTopRequest request;
  request.set_by(by);
  request.set_since_ms(since_ms);
  Latency out{};
  for (int i = 0; i < n; ++i) {
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<v1::FleetTopResponse> r = query.Top(request);
    ms.push_back(1e3 * Seconds(std::chrono::steady_clock::now() - start));
    if (!r.ok()) {
      std::fprintf(stderr, "fleet top --by %s: %s\n", by.c_str(), std::string(r.status().message()).c_str());
      std::exit(1);
    }
    out.rows = r->rows_size();
    out.samples = r->samples();
  }
  std::sort(ms.begin(), ms.end());
  out.p50_ms = ms[ms.size() / 2];
  out.p99_ms = ms[std::min(ms.size() - 1, ms.size() * 99 / 100)];
  out.max_ms = ms.back();
  return out;
}

int Run(int64_t profiles, int jobs, int days, const std::string& dir) {
  spdlog::set_level(spdlog::level::warn);
  std::filesystem::remove_all(dir);
  absl::StatusOr<std::unique_ptr<Storage>> storage = Storage::Open(dir);
  if (!storage.ok()) {
    std::fprintf(stderr, "open %s: %s\n", dir.c_str(), std::string(storage.status().message()).c_str());
    return 1;
  }
  const int64_t start_ns = int64_t{1'800'000'000} * 1'000'000'000;
  SimulatedClock clock(start_ns);
  ServerMetrics metrics;
  FleetRollupStore store(&(*storage)->engine().catalog(), (*storage)->unreadable());
  // Every profile names its own capture: "c<index>", SAMPLED, one target with its weight.
  const int64_t period_ns = 600 * int64_t{1'000'000'000};
  auto capture_of = [&](const std::string& id) -> absl::StatusOr<v1::Capture> {
    int64_t i = 0;
    if (!absl::SimpleAtoi(id.substr(1), &i)) return absl::NotFoundError(id);
    v1::Capture c;
    c.set_capture_id(id);
    c.set_reason(v1::Capture::SAMPLED);
    v1::CaptureTarget* t = c.add_targets();
    t->set_node(absl::StrCat("node-", i % kNodes));
    t->set_job(absl::StrCat("job-", i % jobs));
    t->set_devices(2);
    t->set_inclusion_probability(0.02);
    t->set_weight_device_ns(static_cast<int64_t>(2 * period_ns / 0.02));
    return c;
  };
  FleetRollupWriter writer(&store, &clock, 0, capture_of, nullptr);
  FleetTopQuery query(&store, &clock, &metrics);

  std::mt19937_64 rng(1);
  std::vector<std::vector<v1::ProfileSummary>> summaries;
  for (int j = 0; j < jobs; ++j) summaries.push_back(JobSummaries(j, rng));

  const int64_t span_ns = int64_t{days} * kDayNs;
  const auto build_start = std::chrono::steady_clock::now();
  v1::ProfileInfo info;
  for (int64_t i = 0; i < profiles; ++i) {
    clock.Set(start_ns + static_cast<int64_t>(static_cast<__int128>(span_ns) * i / profiles));
    info.set_profile_id(absl::StrCat("p", i));
    info.set_job(absl::StrCat("job-", i % jobs));
    info.set_node(absl::StrCat("node-", i % kNodes));
    info.mutable_labels()->clear();
    (*info.mutable_labels())["capture_id"] = absl::StrCat("c", i);
    (*info.mutable_labels())["team"] = absl::StrCat("team-", (i % jobs) % 8);
    const v1::ProfileSummary& summary = summaries[i % jobs][(i / jobs) % kTemplatesPerJob];
    if (absl::Status s = writer.Observe(info, summary); !s.ok()) {
      std::fprintf(stderr, "profile %lld: %s\n", static_cast<long long>(i), std::string(s.message()).c_str());
      return 1;
    }
    if ((i + 1) % 100000 == 0) {
      std::fprintf(stderr, "  %lld profiles, %.1f s\n", static_cast<long long>(i + 1),
                   Seconds(std::chrono::steady_clock::now() - build_start));
    }
  }
  const double build_s = Seconds(std::chrono::steady_clock::now() - build_start);
  int64_t records = 0;
  for (int d = 0; d < kFleetDimensions; ++d) {
    (void)store.Scan(FleetDimensionName(static_cast<FleetDimension>(d)), INT64_MIN / kFleetHourNs,
                     [&](const v1::FleetRollupCell&) { return ++records, true; });
  }
  (*storage)->engine().AwaitBackgroundWork();
  std::printf("built rollups of %lld sampled profiles (%d jobs, %d days) in %.1f s (%.1f us per commit): %lld cell "
              "records, %s\n",
              static_cast<long long>(profiles), jobs, days, build_s, 1e6 * build_s / static_cast<double>(profiles),
              static_cast<long long>(records), dir.c_str());

  bool ok = true;
  std::printf("%-12s %-6s %8s %8s %8s %7s %9s\n", "by", "since", "p50 ms", "p99 ms", "max ms", "rows", "samples");
  for (const char* by : {"kernel", "op", "job", "node", "device_type"}) {
    Latency l = TimeQueries(query, by, 0, kQueries);
    ok &= l.p99_ms < 1000;
    std::printf("%-12s %-6s %8.1f %8.1f %8.1f %7lld %9lld\n", by, "24h", l.p50_ms, l.p99_ms, l.max_ms,
                static_cast<long long>(l.rows), static_cast<long long>(l.samples));
  }
  for (const char* by : {"kernel", "job"}) {
    Latency l = TimeQueries(query, by, int64_t{days} * 24 * 3600 * 1000, 20);
    std::printf("%-12s %-6s %8.1f %8.1f %8.1f %7lld %9lld\n", by, absl::StrCat(days, "d").c_str(), l.p50_ms, l.p99_ms,
                l.max_ms, static_cast<long long>(l.rows), static_cast<long long>(l.samples));
  }
  std::printf("%s: p99 of every 24 h grouping under 1 s\n", ok ? "ok" : "FAIL");
  return ok ? 0 : 1;
}

}  // namespace
}  // namespace fleetprof

int main(int argc, char** argv) {
  const int64_t profiles = argc > 1 ? std::atoll(argv[1]) : 1'000'000;
  const int jobs = argc > 2 ? std::atoi(argv[2]) : 200;
  const int days = argc > 3 ? std::atoi(argv[3]) : 7;
  const std::string dir = argc > 4 ? argv[4] : "/tmp/fleet_top_bench";
  if (profiles <= 0 || jobs <= 0 || days <= 0) {
    std::fprintf(stderr, "usage: fleet_top_bench [profiles] [jobs] [days] [dir]\n");
    return 2;
  }
  return fleetprof::Run(profiles, jobs, days, dir);
}
