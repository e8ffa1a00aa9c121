#include "server/fleet/sampling_plan.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <unordered_map>
#include <unordered_set>

#include "common/checked_math.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
constexpr int64_t kHourNs = int64_t{3600} * 1'000'000'000;
// Spend entries kept: an hour of periods, at most this many (a 1 s period keeps the last 17 min).
constexpr int kMaxSpendEntries = 1024;

// A uniform double in [0, 1) from 53 bits of the generator: the same on every platform (the
// standard's distributions are not), so replicas draw alike.
double Uniform(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-53; }

std::string KeyOf(const std::string& node, const std::string& target) {
  std::string key = node;
  key.push_back('\0');
  key += target;
  return key;
}

int64_t SaturatingMul(int64_t a, int64_t b) {
  int64_t out;
  return __builtin_mul_overflow(a, b, &out) ? std::numeric_limits<int64_t>::max() : out;
}

int32_t ClampDevices(int32_t devices) {
  return std::clamp<int32_t>(devices, 1, SamplingPlan::kMaxDevicesPerTarget);
}

v1::SamplingPeriodSpend* CurrentSpend(v1::SamplingState* state) {
  if (state->spend().empty() || state->spend().rbegin()->period_start_ns() != state->period_start_ns()) {
    return nullptr;
  }
  return state->mutable_spend(state->spend_size() - 1);
}

}  // namespace

double SamplingPlan::InclusionProbability(const v1::SetSamplingRequest& policy) {
  if (policy.duration_ms() <= 0 || policy.every_ms() <= 0) return 0;
  const double p = kBudgetShare * policy.max_overhead() * static_cast<double>(policy.every_ms()) /
                   static_cast<double>(policy.duration_ms());
  return std::clamp(p, 0.0, 1.0);
}

int64_t SamplingPlan::CostDeviceNs(const v1::SetSamplingRequest& policy, int32_t devices) {
  return static_cast<int64_t>(ClampDevices(devices)) * policy.duration_ms() * kNanosPerMs;
}

bool SamplingPlan::Matches(const v1::SetSamplingRequest& policy, const SampledTarget& target) {
  for (const auto& [key, value] : policy.labels()) {
    auto it = target.labels.find(key);
    if (it == target.labels.end() || it->second != value) return false;
  }
  return true;
}

int64_t SamplingPlan::FleetDeviceNs(const v1::SetSamplingRequest& policy, const std::vector<SampledTarget>& targets) {
  int64_t devices = 0;
  for (const SampledTarget& t : targets) {
    if (Matches(policy, t)) devices += ClampDevices(t.devices);
  }
  return SaturatingMul(devices, policy.every_ms() * kNanosPerMs);
}

void SamplingPlan::BeginPeriod(v1::SamplingState* state, const std::vector<SampledTarget>& targets,
                               int64_t period_start_ns) {
  const v1::SetSamplingRequest& policy = state->policy();
  state->set_period_start_ns(period_start_ns);
  state->set_periods(state->periods() + 1);
  v1::SamplingPeriodSpend* spend = state->add_spend();
  spend->set_period_start_ns(period_start_ns);
  spend->set_fleet_device_ns(FleetDeviceNs(policy, targets));
  // Spend older than an hour says nothing about overhead_last_hour.
  int drop = 0;
  while (drop < state->spend_size() - 1 &&
         (state->spend(drop).period_start_ns() <= period_start_ns - kHourNs ||
          state->spend_size() - drop > kMaxSpendEntries)) {
    ++drop;
  }
  if (drop > 0) state->mutable_spend()->DeleteSubrange(0, drop);

  std::vector<const SampledTarget*> order;
  order.reserve(targets.size());
  for (const SampledTarget& t : targets) {
    if (Matches(policy, t)) order.push_back(&t);
  }
  std::sort(order.begin(), order.end(), [](const SampledTarget* a, const SampledTarget* b) {
    return a->node != b->node ? a->node < b->node : a->target < b->target;
  });
  const double p = InclusionProbability(policy);
  std::mt19937_64 rng(state->seed());
  for (const SampledTarget* t : order) {
    // One draw per target whatever the outcome, so one target's coming or going does not
    // change the others' draws... beyond its own position: the order is by name.
    if (Uniform(rng) >= p) continue;
    v1::SamplingPick* pick = state->add_pending();
    pick->set_node(t->node);
    pick->set_target(t->target);
    pick->set_job(t->job);
    pick->set_devices(ClampDevices(t->devices));
    pick->set_inclusion_probability(p);
    const double weight = static_cast<double>(pick->devices()) * static_cast<double>(policy.every_ms()) *
                          static_cast<double>(kNanosPerMs) / p;
    pick->set_weight_device_ns(weight >= 9.2e18 ? std::numeric_limits<int64_t>::max()
                                                : static_cast<int64_t>(std::llround(weight)));
    pick->set_drawn_period_start_ns(period_start_ns);
  }
  state->set_seed(rng());
  // The queue's bound: the oldest picks go first (counted by the caller as dropped).
  if (state->pending_size() > kMaxPending) {
    state->mutable_pending()->DeleteSubrange(0, state->pending_size() - kMaxPending);
  }
}

PlanStep SamplingPlan::Dispatch(v1::SamplingState* state, const std::vector<SampledTarget>& targets, int in_flight) {
  PlanStep step;
  if (state->pending().empty()) return step;
  const v1::SetSamplingRequest& policy = state->policy();
  v1::SamplingPeriodSpend* spend = CurrentSpend(state);
  if (spend == nullptr) return step;  // no period begun yet
  const int64_t budget = static_cast<int64_t>(policy.max_overhead() * static_cast<double>(spend->fleet_device_ns()));
  const int32_t max_concurrent = policy.max_concurrent() > 0 ? policy.max_concurrent() : kDefaultMaxConcurrent;

  std::unordered_map<std::string, const SampledTarget*> live;
  live.reserve(targets.size());
  for (const SampledTarget& t : targets) live.emplace(KeyOf(t.node, t.target), &t);
  std::unordered_set<std::string> started_now;

  google::protobuf::RepeatedPtrField<v1::SamplingPick> waiting;
  int running = in_flight;
  for (v1::SamplingPick& pick : *state->mutable_pending()) {
    const std::string key = KeyOf(pick.node(), pick.target());
    auto it = live.find(key);
    if (it == live.end() || !Matches(policy, *it->second)) {
      ++step.dropped;  // gone, or its job no longer matches: its device-time left the sampled fleet
      continue;
    }
    if (started_now.contains(key)) {  // drawn twice (a carried pick and a new one): the next one waits
      *waiting.Add() = std::move(pick);
      continue;
    }
    const int64_t cost = CostDeviceNs(policy, pick.devices());
    if (cost > budget) {
      ++step.dropped;  // larger than a whole period's budget: it could never start
      continue;
    }
    if (running >= max_concurrent || spend->captured_device_ns() + cost > budget) {
      *waiting.Add() = std::move(pick);
      continue;
    }
    if (it->second->busy) {
      ++step.skipped_busy;
      continue;
    }
    spend->set_captured_device_ns(spend->captured_device_ns() + cost);
    ++running;
    started_now.insert(key);
    step.start.push_back(std::move(pick));
  }
  state->mutable_pending()->Swap(&waiting);
  state->set_captures(state->captures() + static_cast<int64_t>(step.start.size()));
  state->set_skipped_busy(state->skipped_busy() + step.skipped_busy);
  return step;
}

double SamplingPlan::OverheadLastHour(const v1::SamplingState& state, int64_t now_ns) {
  int64_t captured = 0, fleet = 0;
  for (const v1::SamplingPeriodSpend& s : state.spend()) {
    if (s.period_start_ns() < now_ns - kHourNs) continue;  // began more than an hour ago
    captured += s.captured_device_ns();
    fleet = SaturatingAdd(fleet, s.fleet_device_ns());
  }
  return fleet > 0 ? static_cast<double>(captured) / static_cast<double>(fleet) : 0;
}

}  // namespace fleetprof
