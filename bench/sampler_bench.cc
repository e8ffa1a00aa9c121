// The sampler's own CPU cost on the leader (issue 42: under 1% of one core with 10,000 targets):
// the server's real path (AgentRegistry with 2,000 connected agents of 5 targets each,
// CaptureCoordinator starting each pick, SamplerFleetSource, Sampler over the catalog) driven
// for two simulated hours on a SimulatedClock. Only Sampler::Tick's thread CPU time is counted
// (the agents' updates that end the captures are the coordinator's work, not the sampler's),
// against the simulated time it covered.
//   sampler_bench [targets] [every_s] [duration_s] [max_overhead] [max_concurrent]

#include <time.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/clock.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/capture_coordinator.h"
#include "server/fleet/sampler.h"
#include "server/fleet/sampler_fleet.h"
#include "server/server_metrics.h"
#include "spdlog/spdlog.h"
#include "storage/storage.h"

namespace fleetprof {
namespace {

constexpr int64_t kSecondNs = 1'000'000'000;
constexpr int kTargetsPerNode = 5;

double ThreadCpuSeconds() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + static_cast<double>(ts.tv_nsec) * 1e-9;
}

struct Started {
  std::string capture_id, node, target;
  int64_t at_ns;
};

int Run(int targets, int64_t every_s, int64_t duration_s, double max_overhead, int max_concurrent) {
  spdlog::set_level(spdlog::level::warn);
  SimulatedClock clock;
  auto storage = Storage::InMemory();
  ServerMetrics metrics;
  AgentLimits limits;
  limits.max_agents = targets;
  AgentRegistry registry(&storage->agents(), &metrics, limits, &clock);
  const int nodes = (targets + kTargetsPerNode - 1) / kTargetsPerNode;
  for (int n = 0; n < nodes; ++n) {
    v1::AgentHello hello;
    hello.set_node(absl::StrCat("node-", n));
    for (int t = 0; t < kTargetsPerNode && n * kTargetsPerNode + t < targets; ++t) {
      v1::Target* target = hello.add_targets();
      target->set_job(absl::StrCat("job-", (n * kTargetsPerNode + t) % 200));
      target->set_kind(v1::Target::xprof);
      target->set_address(absl::StrCat("10.", n / 250, ".", n % 250, ".1:", 9000 + t));
    }
    if (!registry.Connected(hello, [](const v1::ServerMessage&) { return true; }, [] {}).ok()) {
      std::fprintf(stderr, "agent %d refused\n", n);
      return 1;
    }
  }
  CaptureCoordinator captures(storage.get(), &registry, &metrics, &clock);
  SamplerFleetSource source(&registry, &captures, &storage->profiles(), &clock);
  SamplerFleet fleet = source.Fleet();
  std::deque<Started> running;
  auto start = fleet.start;
  double start_cpu = 0;  // of it, CaptureCoordinator::Start's (the same for any capture)
  fleet.start = [&](const v1::SamplingPick& pick, int64_t duration_ms) -> absl::StatusOr<std::string> {
    const double before = ThreadCpuSeconds();
    auto id = start(pick, duration_ms);
    start_cpu += ThreadCpuSeconds() - before;
    if (id.ok()) running.push_back({*id, pick.node(), pick.target(), clock.Now()});
    return id;
  };
  Sampler sampler(&storage->engine().catalog(), fleet, &clock, &metrics);
  v1::SetSamplingRequest policy;
  policy.set_every_ms(every_s * 1000);
  policy.set_duration_ms(duration_s * 1000);
  policy.set_max_overhead(max_overhead);
  policy.set_max_concurrent(max_concurrent);
  Principal admin;
  admin.name = "bench";
  if (auto set = sampler.Set(policy, admin); !set.ok()) {
    std::fprintf(stderr, "%s\n", std::string(set.status().message()).c_str());
    return 1;
  }

  const int64_t begin = clock.Now(), end = begin + 2 * 3600 * kSecondNs;
  double cpu = 0, worst_tick = 0;
  int64_t ticks = 0;
  std::vector<double> period_start_ticks;
  while (clock.Now() < end) {
    const int64_t now = clock.Now();
    const double before = ThreadCpuSeconds();
    int64_t next = sampler.Tick(now);
    const double spent = ThreadCpuSeconds() - before;
    cpu += spent;
    worst_tick = std::max(worst_tick, spent);
    ++ticks;
    // The agents report the captures that ran their length (not counted: coordinator work).
    while (!running.empty() && running.front().at_ns + duration_s * kSecondNs <= now) {
      v1::CaptureUpdate update;
      update.set_capture_id(running.front().capture_id);
      update.set_target(running.front().target);
      update.set_state(v1::CaptureTarget::FAILED);
      update.set_error("bench: no trace");
      captures.OnUpdate(running.front().node, update);
      running.pop_front();
    }
    next = std::max(next, now + 1);
    if (!running.empty()) next = std::min(next, running.front().at_ns + duration_s * kSecondNs);
    clock.Set(std::min(next, end));
  }
  auto status = sampler.Get();
  const double simulated_s = static_cast<double>(end - begin) / kSecondNs;
  std::printf("sampler_bench: %d targets on %d nodes, every %llds, %llds captures, max_overhead %.3g, "
              "max_concurrent %d, 2 simulated hours\n",
              targets, nodes, static_cast<long long>(every_s), static_cast<long long>(duration_s), max_overhead,
              max_concurrent);
  std::printf("  periods %lld, captures %lld, skipped_busy %lld, overhead_last_hour %.4f\n",
              static_cast<long long>(status->periods()), static_cast<long long>(status->captures()),
              static_cast<long long>(status->skipped_busy()), status->overhead_last_hour());
  std::printf("  ticks %lld, sampler CPU %.3f s (worst tick %.1f ms, mean %.2f ms) over %.0f s: %.4f%% of one core\n",
              static_cast<long long>(ticks), cpu, worst_tick * 1e3, cpu / static_cast<double>(ticks) * 1e3,
              simulated_s, 100 * cpu / simulated_s);
  std::printf("  of which capture starts (CaptureCoordinator::Start, as for any capture) %.3f s; the sampler's own "
              "planning %.3f s: %.4f%% of one core\n",
              start_cpu, cpu - start_cpu, 100 * (cpu - start_cpu) / simulated_s);
  return (cpu - start_cpu) / simulated_s < 0.01 ? 0 : 2;
}

}  // namespace
}  // namespace fleetprof

int main(int argc, char** argv) {
  const int targets = argc > 1 ? std::atoi(argv[1]) : 10'000;
  const int64_t every_s = argc > 2 ? std::atoll(argv[2]) : 600;
  const int64_t duration_s = argc > 3 ? std::atoll(argv[3]) : 10;
  const double max_overhead = argc > 4 ? std::atof(argv[4]) : 0.01;
  const int max_concurrent = argc > 5 ? std::atoi(argv[5]) : 200;
  return fleetprof::Run(targets, every_s, duration_s, max_overhead, max_concurrent);
}
