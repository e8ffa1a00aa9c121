#include "server/fleet/trigger_runner.h"

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/text_checks.h"
#include "server/fleet/trigger_expression.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
constexpr size_t kMaxEvidenceBytes = 512;
constexpr int kMaxDevices = 1024;

bool CoolingDown(const v1::Trigger& trigger, int64_t now) {
  return trigger.last_fired_ns() != 0 && now - trigger.last_fired_ns() < trigger.cooldown_ms() * kNanosPerMs;
}

v1::ServerMessage DeviceTriggersOf(const v1::ListTriggersResponse& all) {
  v1::ServerMessage message;
  v1::DeviceTriggers* out = message.mutable_device_triggers();
  for (const v1::Trigger& t : all.triggers()) {
    if (!t.has_device()) continue;
    v1::DeviceTrigger* d = out->add_triggers();
    d->set_trigger_id(t.trigger_id());
    d->set_job(t.job());
    *d->mutable_condition() = t.device();
    d->set_cooldown_ms(t.cooldown_ms());
  }
  return message;
}

std::string RegressionEvidence(const v1::Regression& r) {
  const std::string what = r.what() == "step_time" ? std::string("step time") : absl::StrCat(r.what(), " ", r.name());
  return absl::StrFormat(
      "regression in profile %s of job %s: %s %.3f ms now against a baseline median of %.3f ms "
      "(%+.1f%%, %d profiles)",
      r.profile_id(), r.job(), what, r.now_ns() / 1e6, r.baseline_ns() / 1e6, r.change() * 100,
      r.baseline_profiles_size());
}

const char* OutcomeName(TriggerRunner::Outcome outcome) {
  switch (outcome) {
    case TriggerRunner::Outcome::kStarted: return "started";
    case TriggerRunner::Outcome::kCooldown: return "cooldown";
    case TriggerRunner::Outcome::kBudget: return "budget";
    case TriggerRunner::Outcome::kGone: return "gone";
    case TriggerRunner::Outcome::kFailed: return "failed";
  }
  return "failed";
}

}  // namespace

TriggerRunner::TriggerRunner(TriggerStore* store, CaptureCoordinator* captures, AgentRegistry* agents,
                             prometheus::Registry* metrics, Clock* clock, Hooks hooks)
    : store_(store), captures_(captures), agents_(agents), clock_(clock), hooks_(std::move(hooks)) {
  firings_ =
      &prometheus::BuildCounter()
           .Name("fleetprof_trigger_firings_total")
           .Help(
               "trigger firings that started a capture, by kind (device_utilization, device_memory, rule, regression)")
           .Register(*metrics);
  suppressed_ =
      &prometheus::BuildCounter()
           .Name("fleetprof_trigger_suppressed_total")
           .Help("trigger firings held back, by kind and reason (cooldown, budget: the sampling budget refused)")
           .Register(*metrics);
  auto checks = WorkerPool::Start("the trigger checks", 1);
  if (checks.ok()) {
    checks_ = *std::move(checks);
  } else {
    spdlog::error("rule and regression triggers will not fire: {}", std::string(checks.status().message()));
  }
  loop_ = PeriodicLoop::StartOrLog(
      "the device trigger refresh", clock_, [this](int64_t now) { return Refresh(now); },
      "agents get device triggers only as they connect");
}

TriggerRunner::~TriggerRunner() {
  std::unique_ptr<PeriodicLoop> loop;
  std::unique_ptr<WorkerPool> checks;
  {
    absl::MutexLock lock(&stop_mu_);
    loop = std::move(loop_);
    checks = std::move(checks_);
  }
  loop.reset();
  checks.reset();  // runs what is queued (unless Stop ran), then joins
}

void TriggerRunner::Nudge() {
  absl::MutexLock lock(&stop_mu_);
  if (loop_ != nullptr) loop_->Nudge();
}

void TriggerRunner::Stop() {
  std::unique_ptr<PeriodicLoop> loop;
  std::unique_ptr<WorkerPool> checks;
  {
    absl::MutexLock lock(&stop_mu_);
    stopping_ = true;
    loop = std::move(loop_);
    checks = std::move(checks_);
  }
  // Outside stop_mu_: both wait for the work in progress, which may take a while on the
  // catalog; a Queue or Nudge meanwhile finds nothing and returns at once.
  loop.reset();
  checks.reset();  // what is queued returns at once (stopping_), then joins
}

void TriggerRunner::Count(const std::string& kind, Outcome outcome) {
  if (outcome == Outcome::kStarted) {
    firings_->Add({{"kind", kind}}).Increment();
  } else if (outcome == Outcome::kCooldown || outcome == Outcome::kBudget) {
    suppressed_->Add({{"kind", kind}, {"reason", OutcomeName(outcome)}}).Increment();
  }
}

TriggerRunner::Outcome TriggerRunner::Fire(const std::string& trigger_id, const std::string& evidence, int devices,
                                           const std::string& node) {
  const int64_t now = clock_->Now();
  auto held = [&](v1::Trigger& t) {
    t.set_suppressed(t.suppressed() + 1);
    return true;
  };
  // The cooldown first, read only; then the budget (which counts what it grants); then the
  // claim, which checks the cooldown again: another replica may have fired meanwhile.
  absl::StatusOr<std::optional<v1::Trigger>> trigger = store_->Find(trigger_id);
  if (!trigger.ok()) {
    spdlog::warn("trigger {} not fired: {}", trigger_id, std::string(trigger.status().message()));
    return Outcome::kFailed;
  }
  if (!trigger->has_value()) return Outcome::kGone;
  const v1::Trigger& t0 = **trigger;
  const std::string kind = TriggerKind(t0);
  Outcome outcome = Outcome::kStarted;
  if (CoolingDown(t0, now)) {
    outcome = Outcome::kCooldown;
  } else if (hooks_.reserve && !hooks_.reserve(t0.duration_ms() * kNanosPerMs * std::clamp(devices, 1, kMaxDevices))) {
    outcome = Outcome::kBudget;
  }
  if (outcome != Outcome::kStarted) {
    store_->Update(trigger_id, held).IgnoreError();
    Count(kind, outcome);
    return outcome;
  }
  auto claimed = store_->Update(trigger_id, [&](v1::Trigger& t) {
    if (CoolingDown(t, now)) {
      outcome = Outcome::kCooldown;
      return held(t);
    }
    outcome = Outcome::kStarted;
    t.set_fired(t.fired() + 1);
    t.set_last_fired_ns(now);
    t.set_last_evidence(evidence);
    t.set_last_capture_id("");
    return true;
  });
  if (!claimed.ok()) {
    spdlog::warn("trigger {} not fired: {}", trigger_id, std::string(claimed.status().message()));
    return Outcome::kFailed;
  }
  if (!claimed->has_value()) return Outcome::kGone;
  Count(kind, outcome);
  if (outcome != Outcome::kStarted) return outcome;
  v1::StartCaptureRequest request;
  request.set_job(t0.job());
  request.set_node(node);
  request.set_duration_ms(t0.duration_ms());
  CaptureOrigin origin{v1::Capture::TRIGGERED, "", trigger_id, evidence};
  absl::StatusOr<v1::Capture> capture = captures_->Start(request, origin);
  const std::string capture_id = capture.ok() ? capture->capture_id() : "";
  spdlog::info("trigger {} fired for job {}: {}; capture {}", trigger_id, t0.job(), evidence,
               capture.ok() ? capture_id : absl::StrCat("not started: ", capture.status().message()));
  store_
      ->Update(trigger_id,
               [&](v1::Trigger& t) {
                 if (t.last_fired_ns() != now) return false;  // fired again since: that firing's capture stands
                 t.set_last_capture_id(capture_id);
                 return true;
               })
      .IgnoreError();
  return capture.ok() ? Outcome::kStarted : Outcome::kFailed;
}

void TriggerRunner::OnAgentFiring(const std::string& node, const v1::TriggerFiring& firing) {
  // Everything here came from a node: checked before it reaches a log, a record or a capture.
  if (!IsPrintableUtf8(firing.trigger_id(), 64) || !IsPrintableUtf8(firing.evidence(), kMaxEvidenceBytes)) {
    spdlog::warn("node {}: a trigger firing without a printable trigger id and evidence was ignored", node);
    return;
  }
  Queue("a device trigger's firing", [this, node, firing] { FireFromAgent(node, firing); });
}

void TriggerRunner::FireFromAgent(const std::string& node, const v1::TriggerFiring& firing) {
  absl::StatusOr<std::optional<v1::Trigger>> found = store_->Find(firing.trigger_id());
  if (!found.ok()) {
    spdlog::warn("node {}: trigger {} not fired: {}", node, firing.trigger_id(), std::string(found.status().message()));
    return;
  }
  const v1::Trigger* trigger = found->has_value() ? &**found : nullptr;
  // A trigger removed since the agent's copy, or a firing for another job: not this trigger's.
  if (trigger == nullptr || !trigger->has_device() || trigger->job() != firing.job()) return;
  // The capture is of the firing node's targets only. A node judges its own devices, and the job
  // it names is only as sure as that node's binding of processes to jobs: where no
  // --job_owners_file binds the job, a local user can name a process after another user's job
  // (and hold its devices idle); that must not start captures of the job's ranks elsewhere.
  Fire(firing.trigger_id(), absl::StrCat(firing.evidence(), " on node ", node), firing.devices(), node);
}

void TriggerRunner::Queue(const char* what, std::function<void()> work) {
  absl::MutexLock lock(&stop_mu_);  // Post only queues: never waits on the work
  if (checks_ == nullptr) return;
  if (queued_.fetch_add(1) >= kMaxQueuedChecks) {
    queued_.fetch_sub(1);
    // Said once per 1,000 dropped: a flood must not become a flood of log lines too.
    if (dropped_.fetch_add(1) % 1000 == 0) {
      spdlog::warn("{} not checked: {} trigger checks are waiting already", what, kMaxQueuedChecks);
    }
    return;
  }
  checks_->Post([this, work = std::move(work)] {
    if (!stopping_.load()) work();
    queued_.fetch_sub(1);
  });
}

void TriggerRunner::OnProfileCommitted(const v1::ProfileInfo& info) {
  if (info.job().empty() || !hooks_.diagnose) return;
  Queue("the rule triggers of a new profile", [this, info] { CheckRules(info); });
}

void TriggerRunner::CheckRules(const v1::ProfileInfo& info) {
  v1::ListTriggersRequest of_job;
  of_job.set_job(info.job());
  auto listed = store_->List(of_job);
  if (!listed.ok()) {
    spdlog::warn("rule triggers of job {} not checked: {}", info.job(), std::string(listed.status().message()));
    return;
  }
  const int64_t now = clock_->Now();
  // A diagnosis runs every rule: the job's and the profile's are made once each, whatever the
  // number of rule triggers that read them.
  std::optional<absl::StatusOr<v1::DiagnoseResponse>> of_job_ranks, of_profile;
  for (const v1::Trigger& trigger : listed->triggers()) {
    // A trigger cooling down is not diagnosed at all: its firing would be held back anyway.
    if (trigger.rule().empty() || CoolingDown(trigger, now)) continue;
    const bool job_rule = hooks_.job_rules.contains(trigger.rule());
    std::optional<absl::StatusOr<v1::DiagnoseResponse>>& made = job_rule ? of_job_ranks : of_profile;
    if (!made.has_value()) {
      v1::DiagnoseRequest request;
      if (job_rule) {
        request.set_job(info.job());  // the job's ranks: the newest capture, else each rank's newest profile
      } else {
        request.set_profile_id(info.profile_id());
      }
      made = hooks_.diagnose(request);
    }
    const absl::StatusOr<v1::DiagnoseResponse>& diagnosis = *made;
    if (!diagnosis.ok()) {
      spdlog::warn("trigger {}: rule {} on profile {} of job {} did not run: {}", trigger.trigger_id(), trigger.rule(),
                   info.profile_id(), info.job(), std::string(diagnosis.status().message()));
      continue;
    }
    for (const v1::Finding& finding : diagnosis->findings()) {
      if (finding.rule() != trigger.rule()) continue;
      Fire(trigger.trigger_id(),
           absl::StrFormat("rule %s on job %s after profile %s: %s (metric %g, threshold %g)", trigger.rule(),
                           info.job(), info.profile_id(), finding.summary(), finding.metric(), finding.threshold()),
           1);
      break;
    }
  }
}

void TriggerRunner::OnRegressions(const std::string& job, const std::vector<v1::Regression>& found) {
  if (found.empty()) return;
  Queue("the regression triggers of a new record", [this, job, first = found.front()] { FireRegressions(job, first); });
}

void TriggerRunner::FireRegressions(const std::string& job, const v1::Regression& first) {
  v1::ListTriggersRequest of_job;
  of_job.set_job(job);
  auto listed = store_->List(of_job);
  if (!listed.ok()) {
    spdlog::warn("regression triggers of job {} not checked: {}", job, std::string(listed.status().message()));
    return;
  }
  for (const v1::Trigger& trigger : listed->triggers()) {
    if (trigger.regression()) Fire(trigger.trigger_id(), RegressionEvidence(first), 1);
  }
}

void TriggerRunner::AgentConnected(const std::string& node) {
  v1::ServerMessage message;
  {
    absl::MutexLock lock(&mu_);
    message = device_triggers_;
  }
  if (!message.has_device_triggers()) message.mutable_device_triggers();  // none yet: an empty set
  agents_->Send(node, message);
}

int64_t TriggerRunner::Refresh(int64_t now) {
  auto listed = store_->List(v1::ListTriggersRequest());
  if (!listed.ok()) return now + kRefreshNs;  // the catalog does not answer: agents keep their copies
  v1::ServerMessage message = DeviceTriggersOf(*listed);
  std::string bytes = message.SerializeAsString();
  {
    absl::MutexLock lock(&mu_);
    if (bytes == device_triggers_bytes_) return now + kRefreshNs;
    device_triggers_ = message;
    device_triggers_bytes_ = std::move(bytes);
  }
  int sent = 0;
  for (const v1::AgentInfo& agent : agents_->List()) sent += agents_->Send(agent.node(), message) ? 1 : 0;
  spdlog::info("device triggers: {} sent to {} connected agents", message.device_triggers().triggers_size(), sent);
  return now + kRefreshNs;
}

}  // namespace fleetprof
