#include "server/fleet/sampler_fleet.h"

#include "server/fleet/fleet_rollups.h"

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// Profiles of a job read to find each node's device count (the last few captures' ranks) and
// its labels (as fleet accounting finds them: NewestJobLabelsIn).
constexpr int kProfilesPerJob = std::max(32, kJobLabelsSearchDepth);

}  // namespace

SamplerFleet SamplerFleetSource::Fleet() {
  SamplerFleet fleet;
  fleet.live_targets = [this] { return LiveTargets(); };
  fleet.sampled_in_flight = [this] { return captures_->RunningTargets().sampled_captures; };
  fleet.start = [this](const v1::SamplingPick& pick, int64_t duration_ms) { return Start(pick, duration_ms); };
  return fleet;
}

std::vector<SampledTarget> SamplerFleetSource::LiveTargets() {
  std::vector<SampledTarget> out;
  absl::StatusOr<v1::ListAgentsResponse> agents = registry_->ListAgents();
  if (!agents.ok()) {
    spdlog::warn("sampling: agents cannot be listed: {}", std::string(agents.status().message()));
    return out;
  }
  const CaptureCoordinator::Running running = captures_->RunningTargets();
  const int64_t now = clock_->Now();
  std::map<std::string, JobFacts> facts_of;  // each job's facts once per call, not per target
  for (const v1::AgentInfo& agent : agents->agents()) {
    if (agent.state() != v1::AgentInfo::CONNECTED) continue;
    // NVML's view: devices where the job's processes hold memory, and the job's targets here.
    std::map<std::string, int32_t> nvml_devices, targets_of_job;
    for (const v1::DeviceSample& device : agent.devices()) {
      for (const auto& [job, bytes] : device.job_memory_used_bytes()) {
        if (bytes > 0) ++nvml_devices[job];
      }
    }
    for (const v1::Target& target : agent.targets()) ++targets_of_job[target.job()];
    for (const v1::Target& target : agent.targets()) {
      SampledTarget t;
      t.node = agent.node();
      t.target = TargetName(target);
      t.job = target.job();
      auto known = facts_of.find(t.job);
      if (known == facts_of.end()) known = facts_of.emplace(t.job, FactsOf(t.job, now)).first;
      const JobFacts& facts = known->second;
      t.labels = facts.labels;
      if (auto n = nvml_devices.find(t.job); n != nvml_devices.end()) {
        const int32_t sharing = std::max(1, targets_of_job[t.job]);
        t.devices = std::max(1, (n->second + sharing - 1) / sharing);
      } else if (auto p = facts.devices_by_node.find(t.node); p != facts.devices_by_node.end()) {
        t.devices = std::max(1, p->second);
      } else {
        t.devices = 1;
      }
      t.busy = running.busy_targets.contains({t.node, t.target});
      out.push_back(std::move(t));
    }
  }
  return out;
}

SamplerFleetSource::JobFacts SamplerFleetSource::FactsOf(const std::string& job, int64_t now) {
  {
    absl::MutexLock lock(&mu_);
    auto it = jobs_.find(job);
    if (it != jobs_.end() && now - it->second.read_at_ns < kJobFactsTtlNs && now >= it->second.read_at_ns) {
      return it->second;
    }
  }
  JobFacts facts = ReadFacts(job);  // no lock held across the store's reads
  facts.read_at_ns = now;
  absl::MutexLock lock(&mu_);
  if (jobs_.size() >= kMaxJobsCached) jobs_.clear();
  jobs_[job] = facts;
  return facts;
}

SamplerFleetSource::JobFacts SamplerFleetSource::ReadFacts(const std::string& job) {
  JobFacts facts;
  v1::ListProfilesRequest request;
  request.set_job(job);
  request.set_page_size(kProfilesPerJob);
  absl::StatusOr<ProfilePage> page = profiles_->List(request);
  if (!page.ok()) return facts;
  // A captured profile carries only its capture's labels (capture_id, source, pid...): the
  // job's own are those of its newest profile that has any, as fleet accounting counts them.
  facts.labels = NewestJobLabelsIn(page->profiles);
  for (const v1::ProfileInfo& info : page->profiles) {
    if (facts.devices_by_node.contains(info.node())) continue;
    absl::StatusOr<v1::ProfileSummary> summary = profiles_->GetListedSummary(info.profile_id());
    if (summary.ok()) facts.devices_by_node[info.node()] = summary->devices_size();
  }
  return facts;
}

absl::StatusOr<std::string> SamplerFleetSource::Start(const v1::SamplingPick& pick, int64_t duration_ms) {
  v1::StartCaptureRequest request;
  request.set_job(pick.job());
  request.set_node(pick.node());
  request.set_target(pick.target());
  request.set_duration_ms(duration_ms);
  CaptureOrigin origin;
  origin.reason = v1::Capture::SAMPLED;
  origin.weight_device_ns = pick.weight_device_ns();
  origin.inclusion_probability = pick.inclusion_probability();
  origin.devices = pick.devices();
  absl::StatusOr<v1::Capture> capture = captures_->Start(request, origin);
  if (!capture.ok()) return capture.status();
  if (capture->targets().empty()) return absl::NotFoundError(capture->error());
  return capture->capture_id();
}

}  // namespace fleetprof
