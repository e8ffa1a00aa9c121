#pragma once
// The sampler's view of the server's fleet (SamplerFleet, server/fleet/sampler.h): live targets
// from the agent registry with their devices and their jobs' labels, sampled captures in
// flight from the capture coordinator, and starts through it.
//
// A target's devices: what the agent's NVML says of its job on the node (devices whose
// processes of the job hold memory, shared among the job's targets on that node), else the
// device count of the job's last profile from that node, else 1. A job's labels are those of
// its newest profile that has job labels (JobLabelsOf: a sampled capture's own profiles carry
// only per-upload ones). Both come from the store at most once per job every kJobFactsTtlNs, so a
// tick costs memory reads, not a scan of profiles.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/capture_coordinator.h"
#include "server/fleet/sampler.h"
#include "storage/profile_table.h"

namespace fleetprof {

class SamplerFleetSource {
 public:
  static constexpr int64_t kJobFactsTtlNs = int64_t{600} * 1'000'000'000;
  static constexpr size_t kMaxJobsCached = 100'000;

  // REQUIRES: each outlives the source and the Sampler it feeds.
  SamplerFleetSource(AgentRegistry* registry, CaptureCoordinator* captures, ProfileTable* profiles, Clock* clock)
      : registry_(registry), captures_(captures), profiles_(profiles), clock_(clock) {}

  SamplerFleet Fleet();

 private:
  struct JobFacts {
    std::map<std::string, std::string> labels;
    std::map<std::string, int32_t> devices_by_node;  // from the last profile of the job per node
    int64_t read_at_ns = 0;
  };
  std::vector<SampledTarget> LiveTargets();
  // The job's labels and per-node device counts (cached); read from its last profiles.
  JobFacts FactsOf(const std::string& job, int64_t now) ABSL_LOCKS_EXCLUDED(mu_);
  JobFacts ReadFacts(const std::string& job);
  absl::StatusOr<std::string> Start(const v1::SamplingPick& pick, int64_t duration_ms);

  AgentRegistry* registry_;
  CaptureCoordinator* captures_;
  ProfileTable* profiles_;
  Clock* clock_;
  absl::Mutex mu_;
  std::map<std::string, JobFacts> jobs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace fleetprof
