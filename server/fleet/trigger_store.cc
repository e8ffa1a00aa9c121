#include "server/fleet/trigger_store.h"

#include "absl/strings/str_cat.h"
#include "common/runtime.h"
#include "common/text_checks.h"
#include "server/fleet/capture_coordinator.h"
#include "server/fleet/trigger_expression.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

absl::Status CheckMayDelete(const v1::Trigger& trigger, const Principal& caller) {
  // An empty created_by matches nobody's name: only an admin removes such a trigger.
  if (caller.Has(Scope::kAdmin) || (!trigger.created_by().empty() && trigger.created_by() == caller.name)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "trigger ", trigger.trigger_id(), " was added by ",
      trigger.created_by().empty() ? std::string("an unrecorded principal") : "'" + trigger.created_by() + "'",
      ": only its creator or a principal with the admin scope may remove it"));
}

}  // namespace

absl::StatusOr<v1::Trigger> TriggerStore::Add(const v1::AddTriggerRequest& request, const Principal& caller) {
  if (request.job().empty()) return absl::InvalidArgumentError("a trigger needs a job (--job)");
  if (absl::Status s = CheckPrintableText("job", request.job(), 253); !s.ok()) return s;
  if (request.when().empty()) {
    return absl::InvalidArgumentError(absl::StrCat("a trigger needs a condition (--when): ", kTriggerGrammar));
  }
  absl::StatusOr<TriggerCondition> condition = ParseTriggerCondition(request.when(), known_rules_);
  if (!condition.ok()) return condition.status();
  if (request.duration_ms() < 0 || request.duration_ms() > CaptureCoordinator::kMaxDurationMs) {
    return absl::InvalidArgumentError(absl::StrCat("duration_ms must lie in 0..", CaptureCoordinator::kMaxDurationMs,
                                                   " (0: ", CaptureCoordinator::kDefaultDurationMs, ")"));
  }
  if (request.cooldown_ms() < 0 || request.cooldown_ms() > kMaxCooldownMs) {
    return absl::InvalidArgumentError(
        absl::StrCat("cooldown must lie between 1ms and 7d (0: 10m), not ", request.cooldown_ms(), " ms"));
  }
  absl::StatusOr<v1::ListTriggersResponse> existing = List(v1::ListTriggersRequest());
  if (!existing.ok()) return existing.status();
  if (existing->triggers_size() >= kMaxTriggers) {
    return absl::ResourceExhaustedError(
        absl::StrCat("the server keeps at most ", kMaxTriggers, " triggers; remove one with fleetprof trigger rm"));
  }
  const int64_t now = clock_->Now();
  v1::Trigger trigger;
  trigger.set_trigger_id(absl::StrCat("g", absl::Hex(now, absl::kZeroPad16), RandomHex(4)));
  trigger.set_job(request.job());
  trigger.set_when(request.when());
  trigger.set_duration_ms(request.duration_ms() == 0 ? CaptureCoordinator::kDefaultDurationMs : request.duration_ms());
  trigger.set_cooldown_ms(request.cooldown_ms() == 0 ? kDefaultCooldownMs : request.cooldown_ms());
  trigger.set_created_at_ns(now);
  trigger.set_created_by(caller.name);
  if (condition->device.metric() != v1::DeviceCondition::METRIC_UNSPECIFIED) {
    *trigger.mutable_device() = condition->device;
  } else if (!condition->rule.empty()) {
    trigger.set_rule(condition->rule);
  } else {
    trigger.set_regression(true);
  }
  if (absl::Status s = table_->Add(trigger); !s.ok()) return s;
  spdlog::info("trigger added trigger_id={} job={} when='{}' duration_ms={} cooldown_ms={} by={}", trigger.trigger_id(),
               trigger.job(), trigger.when(), trigger.duration_ms(), trigger.cooldown_ms(), trigger.created_by());
  return trigger;
}

absl::StatusOr<v1::ListTriggersResponse> TriggerStore::List(const v1::ListTriggersRequest& request) {
  absl::StatusOr<std::vector<v1::Trigger>> all = table_->List();
  if (!all.ok()) return all.status();
  v1::ListTriggersResponse response;
  for (v1::Trigger& trigger : *all) {
    if (request.job().empty() || trigger.job() == request.job()) *response.add_triggers() = std::move(trigger);
  }
  return response;
}

absl::StatusOr<v1::DeleteTriggerResponse> TriggerStore::Delete(const v1::DeleteTriggerRequest& request,
                                                               const Principal& caller) {
  if (request.trigger_id().empty()) return absl::InvalidArgumentError("trigger_id is required");
  auto found = table_->Find(request.trigger_id());
  if (!found.ok()) return found.status();
  if (!found->has_value()) {
    return absl::NotFoundError(absl::StrCat("trigger ", request.trigger_id(), ": not found (see fleetprof triggers)"));
  }
  if (absl::Status s = CheckMayDelete(**found, caller); !s.ok()) return s;
  if (absl::Status s = table_->Delete(request.trigger_id()); !s.ok()) return s;
  spdlog::info("trigger removed trigger_id={} by={}", request.trigger_id(), caller.name);
  v1::DeleteTriggerResponse response;
  response.set_trigger_id(request.trigger_id());
  response.set_deleted(true);
  return response;
}

}  // namespace fleetprof
