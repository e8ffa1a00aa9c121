#include "collectors/device_trigger_evaluator.h"

#include <optional>

#include "absl/strings/str_format.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
// Held this much past the cooldown: the server's cooldown starts when a firing arrives, a
// little after it was sent here, and a firing that arrived early would only be suppressed.
constexpr int64_t kHoldMarginNs = 1'000'000'000;

// The value the condition reads, percent; nullopt when NVML did not give it.
std::optional<double> PercentOf(const v1::DeviceCondition& condition, const DeviceSample& device) {
  if (condition.metric() == v1::DeviceCondition::DEVICE_UTILIZATION) {
    if (!device.utilization_ratio) return std::nullopt;
    return *device.utilization_ratio * 100;
  }
  if (!device.memory_used_bytes || !device.memory_total_bytes || *device.memory_total_bytes == 0) return std::nullopt;
  return 100.0 * static_cast<double>(*device.memory_used_bytes) / static_cast<double>(*device.memory_total_bytes);
}

bool Past(const v1::DeviceCondition& condition, double percent) {
  return condition.below() ? percent < condition.percent() : percent > condition.percent();
}

bool SameTrigger(const v1::DeviceTrigger& a, const v1::DeviceTrigger& b) {
  return a.job() == b.job() && a.condition().SerializeAsString() == b.condition().SerializeAsString();
}

}  // namespace

void DeviceTriggerEvaluator::SetTriggers(const v1::DeviceTriggers& triggers) {
  std::map<std::string, State> next;
  int kept = 0;
  absl::MutexLock lock(&mu_);
  for (const v1::DeviceTrigger& t : triggers.triggers()) {
    if (kept == kMaxTriggers) {
      spdlog::warn("device triggers: {} sent, the first {} are evaluated", triggers.triggers_size(), kMaxTriggers);
      break;
    }
    const v1::DeviceCondition& c = t.condition();
    if (t.trigger_id().empty() || c.for_ms() <= 0 || c.percent() < 0 || c.percent() > 100 ||
        c.metric() == v1::DeviceCondition::METRIC_UNSPECIFIED) {
      continue;  // not a condition this agent can judge
    }
    auto old = states_.find(t.trigger_id());
    State state;
    if (old != states_.end() && SameTrigger(old->second.trigger, t)) state = std::move(old->second);
    state.trigger = t;
    next[t.trigger_id()] = std::move(state);
    ++kept;
  }
  states_ = std::move(next);
}

size_t DeviceTriggerEvaluator::size() const {
  absl::MutexLock lock(&mu_);
  return states_.size();
}

bool DeviceTriggerEvaluator::Judge(State& state, const DeviceSample& device, int devices, int64_t now,
                                   v1::TriggerFiring* firing) {
  const v1::DeviceCondition& c = state.trigger.condition();
  const std::optional<double> percent = PercentOf(c, device);
  if (!percent || !Past(c, *percent)) {
    state.past_since.erase(device.index);
    return false;
  }
  const int64_t since = state.past_since.try_emplace(device.index, now).first->second;
  if (now - since < c.for_ms() * kNanosPerMs || now < state.held_until) return false;
  const bool memory = c.metric() == v1::DeviceCondition::DEVICE_MEMORY;
  firing->set_trigger_id(state.trigger.trigger_id());
  firing->set_job(state.trigger.job());
  firing->set_device(absl::StrFormat("%u", device.index));
  firing->set_value(*percent);
  firing->set_window_ms((now - since) / kNanosPerMs);
  firing->set_devices(devices);
  firing->set_evidence(absl::StrFormat("device %u %s %.4g%% %s %.4g%% for %.1f s", device.index,
                                       memory ? "memory" : "utilization", *percent, c.below() ? "<" : ">", c.percent(),
                                       static_cast<double>(now - since) / 1e9));
  return true;
}

std::vector<v1::TriggerFiring> DeviceTriggerEvaluator::Observe(const NvmlSnapshot& round, int64_t now_ns) {
  std::vector<v1::TriggerFiring> firings;
  absl::MutexLock lock(&mu_);
  for (auto& [id, state] : states_) {
    const std::string& job = state.trigger.job();
    int devices = 0;
    for (const DeviceSample& d : round.devices) devices += !d.lost && d.job_memory_used_bytes.contains(job) ? 1 : 0;
    for (const DeviceSample& device : round.devices) {
      if (device.lost || !device.job_memory_used_bytes.contains(job)) {
        state.past_since.erase(device.index);  // not the job's now: its window starts afresh
        continue;
      }
      v1::TriggerFiring firing;
      if (!Judge(state, device, devices, now_ns, &firing)) continue;
      firings.push_back(std::move(firing));
      // One firing per window: every device starts afresh, and the cooldown holds the next.
      state.past_since.clear();
      state.held_until = now_ns + state.trigger.cooldown_ms() * kNanosPerMs + kHoldMarginNs;
      break;
    }
  }
  return firings;
}

}  // namespace fleetprof
