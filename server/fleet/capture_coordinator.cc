#include "server/fleet/capture_coordinator.h"

#include <cstdlib>

#include <algorithm>
#include <optional>

#include "absl/strings/str_cat.h"
#include "common/kineto_timing.h"
#include "common/runtime.h"
#include "common/text_checks.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;
constexpr int64_t kMaxDelayMs = 60 * 60 * 1000;
// A repeated request id answers the capture it started within this long, among the job's
// newest kRequestIdScan captures (a retry comes seconds later).
constexpr int64_t kRequestIdWindowNs = int64_t{10} * 60 * 1'000'000'000;
constexpr int kRequestIdScan = 200;

bool ValidRequestId(const std::string& id) {
  if (id.size() > 64) return false;
  for (char c : id) {
    if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_')) return false;
  }
  return true;
}
constexpr int64_t kGraceNs = 10'000 * kNanosPerMs;
// How much later than the shared start an agent may report a target's start: a job that
// took its config late. More would be an agent's error, not a late poll.
constexpr int64_t kMaxStartMoveNs = int64_t{10} * 60 * 1'000 * kNanosPerMs;

// A target whose start moved later has its deadline moved with it.
int64_t TargetDeadline(const v1::Capture& capture, const v1::CaptureTarget& target) {
  const int64_t moved = target.start_time_unix_ns() > capture.start_time_unix_ns()
                            ? target.start_time_unix_ns() - capture.start_time_unix_ns()
                            : 0;
  return capture.deadline_unix_ns() + moved;
}

using TargetState = v1::CaptureTarget::State;

bool IsFinal(TargetState state) { return state == v1::CaptureTarget::INDEXED || state == v1::CaptureTarget::FAILED; }

// How far a state has come (the enum lists them in order, INDEXED and FAILED both last);
// updates never move a target backwards.
int Rank(TargetState state) { return IsFinal(state) ? v1::CaptureTarget::INDEXED : state; }

// Every target of a connected agent that the request selects, with its node.
std::vector<std::pair<std::string, v1::Target>> MatchTargets(const std::vector<v1::AgentInfo>& agents,
                                                             const v1::StartCaptureRequest& request) {
  std::vector<std::pair<std::string, v1::Target>> matched;
  for (const auto& agent : agents) {
    if (agent.state() != v1::AgentInfo::CONNECTED) continue;
    if (!request.node().empty() && agent.node() != request.node()) continue;
    for (const auto& target : agent.targets()) {
      if (!request.job().empty() && target.job() != request.job()) continue;
      if (!request.target().empty() && TargetName(target) != request.target()) continue;
      matched.emplace_back(agent.node(), target);
    }
  }
  return matched;
}

// The command that asks an agent to capture `target` for `capture`, its times moved onto this
// replica's clock by `frame_offset_ns` (Active).
v1::ServerMessage CommandFor(const v1::Capture& capture, const v1::Target& target, int64_t frame_offset_ns = 0) {
  const v1::StartCaptureRequest& request = capture.request();
  v1::ServerMessage message;
  v1::CaptureCommand* command = message.mutable_capture();
  command->set_capture_id(capture.capture_id());
  command->set_target_name(TargetName(target));
  *command->mutable_target() = target;
  command->set_duration_ms(request.duration_ms());
  command->set_iterations(request.iterations());
  command->set_start_time_unix_ns(capture.start_time_unix_ns() + frame_offset_ns);
  command->set_deadline_unix_ns(capture.deadline_unix_ns() + frame_offset_ns);
  command->set_record_shapes(request.record_shapes());
  command->set_profile_memory(request.profile_memory());
  command->set_with_stack(request.with_stack());
  command->set_start_time_fixed(request.start_delay_ms() > 0);
  return message;
}

// How long after `now` the shared start of `request`'s targets lies, and why: as asked with
// start_delay_ms; else as soon as the slowest kind of target can start. A PyTorch job takes a
// config only at its next poll and then needs its warm-up (common/kineto_timing.h), so a
// duration capture with a Kineto target starts kKinetoStartLeadMs out, every target with it.
std::pair<int64_t, std::string> PlanStart(const v1::StartCaptureRequest& request,
                                          const std::vector<std::pair<std::string, v1::Target>>& matched) {
  const bool kineto = std::any_of(matched.begin(), matched.end(),
                                  [](const auto& m) { return m.second.kind() == v1::Target::kineto; });
  if (request.start_delay_ms() > 0) {
    std::string note = absl::StrCat("as asked (start_delay_ms ", request.start_delay_ms(), ")");
    if (kineto && request.iterations() == 0 && request.start_delay_ms() < kKinetoStartLeadMs) {
      absl::StrAppend(&note, "; a PyTorch job that takes its config later than ",
                      std::max<int64_t>(0, request.start_delay_ms() - kKinetoWarmupMs),
                      " ms from now cannot meet it and fails with libkineto's reason (", kKinetoStartLeadMs,
                      " ms would cover its ", kKinetoPollIntervalMs, " ms poll and ", kKinetoWarmupMs, " ms warm-up)");
    }
    return {request.start_delay_ms(), note};
  }
  if (kineto && request.iterations() == 0) {
    return {kKinetoStartLeadMs,
            absl::StrCat("a PyTorch job takes a config at its next poll (every ", kKinetoPollIntervalMs / 1000,
                         " s) and warms its profiler up for ", kKinetoWarmupMs / 1000,
                         " s before tracing; every target starts together")};
  }
  return {0, request.iterations() > 0 ? "at each job's next iteration boundary" : "now"};
}

// Checks a start's request and fills in its defaults (the duration).
absl::Status CheckStartRequest(v1::StartCaptureRequest* request) {
  if (request->duration_ms() < 0 || request->iterations() < 0 || request->start_delay_ms() < 0) {
    return absl::InvalidArgumentError("duration_ms, iterations and start_delay_ms must be >= 0");
  }
  if (request->duration_ms() == 0 && request->iterations() == 0) request->set_duration_ms(CaptureCoordinator::kDefaultDurationMs);
  if (request->duration_ms() > CaptureCoordinator::kMaxDurationMs) {
    return absl::InvalidArgumentError(absl::StrCat("duration_ms is capped at ", CaptureCoordinator::kMaxDurationMs));
  }
  if (request->start_delay_ms() > kMaxDelayMs || request->timeout_ms() < 0 ||
      request->timeout_ms() > kMaxDelayMs) {
    return absl::InvalidArgumentError(
        absl::StrCat("start_delay_ms and timeout_ms must lie in 0..", kMaxDelayMs));
  }
  if (request->job().empty() && request->node().empty() && request->target().empty()) {
    return absl::InvalidArgumentError("name a job, a node or a target to capture");
  }
  if (!ValidRequestId(request->request_id())) {
    return absl::InvalidArgumentError("request_id must be at most 64 letters, digits, '-' or '_'");
  }
  // They reach logs, tables and terminals (`fleetprof captures`): no escapes, no control bytes.
  for (const auto& [what, text] : {std::pair{"job", &request->job()}, {"node", &request->node()}, {"target", &request->target()}}) {
    if (text->empty()) continue;
    if (absl::Status s = CheckPrintableText(what, *text, 253); !s.ok()) return s;
  }
  return absl::OkStatus();
}

void SetOrigin(const CaptureCoordinator::Origin& origin, v1::Capture* capture) {
  capture->set_reason(origin.reason);
  capture->set_schedule_id(origin.schedule_id);
  capture->set_trigger_id(origin.trigger_id);
  capture->set_evidence(origin.evidence);
}

// A capture's record as it starts, created at `now` on the replica `started_by`: its shared
// start (PlanStart), deadline and one PENDING target per match, or the reason nothing matched.
v1::Capture NewCapture(const v1::StartCaptureRequest& request,
                       const std::vector<std::pair<std::string, v1::Target>>& matched,
                       const CaptureCoordinator::Origin& origin, int64_t now, const std::string& started_by) {
  const auto [start_in_ms, start_note] = PlanStart(request, matched);
  v1::Capture capture;
  capture.set_capture_id(absl::StrCat("c", absl::Hex(now, absl::kZeroPad16), RandomHex(8)));
  capture.set_created_at_ns(now);
  SetOrigin(origin, &capture);
  capture.set_started_by_replica(started_by);
  capture.set_start_time_unix_ns(now + start_in_ms * kNanosPerMs);
  capture.set_start_note(start_note);
  const int64_t timeout_ms = request.timeout_ms() > 0
                                 ? request.timeout_ms()
                                 : std::max<int64_t>(60'000, 2 * request.duration_ms());
  capture.set_deadline_unix_ns(capture.start_time_unix_ns() + timeout_ms * kNanosPerMs);
  *capture.mutable_request() = request;
  for (const auto& [node, target] : matched) {
    auto* t = capture.add_targets();
    t->set_node(node);
    t->set_target(TargetName(target));
    t->set_state(v1::CaptureTarget::PENDING);
    t->set_job(target.job());
    t->set_kind(target.kind());
    t->set_pid(target.pid());
    if (origin.reason == v1::Capture::SAMPLED) {
      t->set_weight_device_ns(origin.weight_device_ns);
      t->set_inclusion_probability(origin.inclusion_probability);
      t->set_devices(origin.devices);
    }
  }
  if (capture.targets().empty()) {
    capture.set_error(absl::StrCat(
        "no process matched", request.job().empty() ? "" : " job " + request.job(),
        request.node().empty() ? "" : " on node " + request.node(),
        request.target().empty() ? "" : " as target " + request.target(),
        ": no connected agent reports such a target (targets are processes with FLEETPROF_JOB "
        "in their environment, Kineto clients polling the agent, and --target flags; see "
        "`fleetprof agents`)"));
  }
  return capture;
}

}  // namespace

std::string TargetName(const v1::Target& target) {
  const std::string& kind = v1::Target::Kind_Name(target.kind());
  if (target.kind() == v1::Target::xprof) return absl::StrCat(kind, ":", target.address());
  if (target.kind() == v1::Target::nsys) return absl::StrCat(kind, ":session=", target.address());
  return absl::StrCat(kind, ":pid=", target.pid());
}

v1::Capture MergeCaptures(const v1::Capture& stored, const v1::Capture& ours) {
  v1::Capture merged = ours;
  for (auto& t : *merged.mutable_targets()) {
    for (const auto& s : stored.targets()) {
      if (s.node() != t.node() || s.target() != t.target()) continue;
      const bool stored_final = IsFinal(s.state());
      if ((stored_final && !IsFinal(t.state())) || (stored_final && IsFinal(t.state()) && s.state() != t.state()) ||
          (!stored_final && Rank(s.state()) > Rank(t.state()))) {
        t = s;
      }
      break;
    }
  }
  merged.set_state(CaptureStateOf(merged));
  return merged;
}

v1::Capture::State CaptureStateOf(const v1::Capture& capture) {
  if (capture.targets().empty()) return v1::Capture::FAILED;
  int indexed = 0, failed = 0;
  for (const auto& t : capture.targets()) {
    if (t.state() == v1::CaptureTarget::INDEXED) ++indexed;
    else if (t.state() == v1::CaptureTarget::FAILED) ++failed;
    else return v1::Capture::RUNNING;
  }
  if (failed == 0) return v1::Capture::DONE;
  return indexed > 0 ? v1::Capture::PARTIAL : v1::Capture::FAILED;
}

CaptureCoordinator::CaptureCoordinator(Storage* store, AgentRegistry* registry, ServerMetrics* metrics,
                                       Clock* clock, bool shared)
    : store_(store), registry_(registry), metrics_(metrics), clock_(clock), shared_(shared) {
  // Captures that were running when the server stopped go on: agents resend their updates
  // after reconnecting, and the expirer fails whatever is left at the deadline.
  auto stored = store_->captures().List("", 1000);
  if (stored.ok()) {
    absl::MutexLock lock(&mu_);
    for (auto& capture : *stored) {
      if (capture.state() != v1::Capture::RUNNING) continue;
      // In a cluster another replica may have started it, on its clock: its offset is
      // measured once the membership is known (UseReplicaClocks).
      active_[capture.capture_id()].capture = std::move(capture);
    }
  }
  std::unique_ptr<PeriodicLoop> expirer = PeriodicLoop::StartOrLog(
      "the capture deadline loop", clock_, [this](int64_t now) { return ExpireOverdue(now); },
      "captures past their deadline will not be failed");
  absl::MutexLock stopping(&stop_mu_);
  expirer_ = std::move(expirer);
}

void CaptureCoordinator::UseReplicaClocks(Membership* membership, std::string replica_id) {
  std::vector<v1::Capture> running;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, active] : active_) running.push_back(active.capture);
  }
  // Captures found running at start get their offsets before any deadline is checked.
  std::map<std::string, int64_t> offsets;
  for (const v1::Capture& capture : running) {
    offsets[capture.capture_id()] = FrameOffsetOf(capture, membership, replica_id);
  }
  absl::MutexLock lock(&mu_);
  for (const auto& [id, offset] : offsets) {
    if (auto it = active_.find(id); it != active_.end()) it->second.frame_offset_ns = offset;
  }
  membership_ = membership;
  replica_id_ = std::move(replica_id);
}

int64_t CaptureCoordinator::MeasuredFrameOffset(const v1::Capture& capture) {
  Membership* membership;
  std::string self;
  {
    absl::MutexLock lock(&mu_);
    membership = membership_;
    self = replica_id_;
  }
  return FrameOffsetOf(capture, membership, self);
}

int64_t CaptureCoordinator::FrameOffsetOf(const v1::Capture& capture, Membership* membership, const std::string& self) {
  const std::string& origin = capture.started_by_replica();
  if (membership == nullptr || origin.empty() || origin == self) return 0;
  auto replicas = membership->LiveReplicas();
  if (!replicas.ok()) return 0;
  for (const auto& replica : *replicas) {
    if (replica.replica_id() != origin || replica.clock_unix_ns() <= 0) continue;
    // Its clock as published (up to a renewal ago) against this one's now.
    const int64_t origin_ahead = replica.clock_unix_ns() - clock_->Now();
    if (origin_ahead <= Membership::kTrustedClockSkewNs && origin_ahead >= -Membership::kTrustedClockSkewNs) return 0;
    spdlog::warn("capture {} was started by replica {}, whose clock is {} s {} this one's: its deadlines are "
                 "kept on this replica's clock (check NTP on the replicas)",
                 capture.capture_id(), origin, std::llabs(origin_ahead) / 1'000'000'000,
                 origin_ahead > 0 ? "ahead of" : "behind");
    return -origin_ahead;
  }
  return 0;  // gone from the membership: its times stand as stored
}

CaptureCoordinator::~CaptureCoordinator() { Stop(); }

void CaptureCoordinator::Stop() {
  absl::MutexLock stopping(&stop_mu_);  // a second Stop waits here for the first one's waits
  {
    // Every writer holds write_mu_ across its change and its store write: taking it waits for
    // the one in progress; the next one finds stopped_.
    absl::MutexLock writing(&write_mu_);
    stopped_ = true;
    absl::MutexLock lock(&mu_);
    stopping_ = true;  // watchers return
  }
  // The deadline loop's pass in progress (if it took write_mu_ after us) returns at once; this
  // waits for it and joins the thread. stop_mu_ is no lock any of the loop's work takes.
  expirer_.reset();
}

std::string CaptureCoordinator::RunningCaptureOf(const std::string& job) {
  absl::MutexLock lock(&mu_);
  for (const auto& [id, active] : active_) {
    if (active.capture.state() == v1::Capture::RUNNING && active.capture.request().job() == job) return id;
  }
  return "";
}

CaptureCoordinator::Running CaptureCoordinator::RunningTargets() {
  Running running;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, active] : active_) {
    if (active.capture.state() != v1::Capture::RUNNING) continue;
    if (active.capture.reason() == v1::Capture::SAMPLED) ++running.sampled_captures;
    for (const auto& t : active.capture.targets()) {
      if (!IsFinal(t.state())) running.busy_targets.emplace(t.node(), t.target());
    }
  }
  return running;
}

v1::Capture CaptureCoordinator::RecordSkipped(const v1::StartCaptureRequest& request,
                                              const Origin& origin, const std::string& reason) {
  const int64_t now = clock_->Now();
  v1::Capture capture;
  capture.set_capture_id(absl::StrCat("c", absl::Hex(now, absl::kZeroPad16), RandomHex(8)));
  capture.set_created_at_ns(now);
  capture.set_state(v1::Capture::SKIPPED);
  capture.set_error(reason);
  SetOrigin(origin, &capture);
  *capture.mutable_request() = request;
  {
    absl::MutexLock writing(&write_mu_);  // ordered with Stop: nothing is stored after it
    if (stopped_) return capture;
    if (absl::Status s = store_->captures().Put(capture); !s.ok()) {
      spdlog::warn("could not store skipped capture {}: {}", capture.capture_id(), std::string(s.message()));
    }
  }
  metrics_->RecordCapture("SKIPPED");
  spdlog::info("scheduled capture skipped schedule_id={} job={}: {}", origin.schedule_id, request.job(), reason);
  return capture;
}

absl::StatusOr<v1::Capture> CaptureCoordinator::Start(const v1::StartCaptureRequest& in, const Origin& origin) {
  v1::StartCaptureRequest request = in;
  if (absl::Status s = CheckStartRequest(&request); !s.ok()) return s;

  // Shared: every replica's connected agents (the catalog's records), not only this one's.
  std::vector<v1::AgentInfo> agents;
  if (shared_) {
    absl::StatusOr<v1::ListAgentsResponse> listed = registry_->ListAgents();
    // Without the catalog no target can be known: say so now, not "no process matched".
    if (!listed.ok()) return listed.status();
    agents.assign(listed->agents().begin(), listed->agents().end());
  } else {
    // A capture of one node's targets (a sampled pick) looks at that agent only: with 10,000
    // targets a copy of every agent per start was 1.9 ms, 92% of the sampler's CPU.
    agents = request.node().empty() ? registry_->List() : registry_->ListNode(request.node());
  }
  std::vector<std::pair<std::string, v1::Target>> matched = MatchTargets(agents, request);

  const int64_t now = clock_->Now();
  std::string started_by;
  {
    absl::MutexLock lock(&mu_);
    started_by = replica_id_;
  }
  v1::Capture capture = NewCapture(request, matched, origin, now, started_by);
  capture.set_state(CaptureStateOf(capture));  // RUNNING (or FAILED without targets) from the start
  absl::MutexLock writing(&write_mu_);
  if (stopped_) return absl::UnavailableError("the server is shutting down: it starts no captures");
  // A repeat of a start (a client's retry, maybe on another replica): the first one's capture.
  if (!request.request_id().empty()) {
    absl::StatusOr<std::optional<v1::Capture>> earlier = FindByRequestId(request, now);
    if (!earlier.ok()) return earlier.status();
    if (earlier->has_value()) return **earlier;
  }
  // In a cluster the stored record is how other replicas' agents hear of the capture: a start
  // the catalog did not take is no capture (UNAVAILABLE naming etcd), never one that fails a
  // minute later with "agent never started the capture".
  if (shared_) {
    if (absl::Status s = store_->captures().PutIfUnchanged(capture, std::nullopt); !s.ok()) {
      spdlog::warn("capture of job {} not started: {}", request.job(), std::string(s.message()));
      return s;
    }
  }
  {
    // Listed (and able to take updates) before any agent hears of it, already RUNNING, so a
    // scheduled run of the job meanwhile sees it (never two captures of one job).
    absl::MutexLock lock(&mu_);
    active_[capture.capture_id()].capture = capture;
  }
  // The commands go out with no lock of ours held: a slow agent stream delays only this start.
  std::vector<int> unsent;
  for (int i = 0; i < capture.targets_size(); ++i) {
    const std::string& node = capture.targets(i).node();
    // An agent on another replica gets its command from there, once the capture is stored.
    if (shared_ && !registry_->HoldsStream(node)) continue;
    if (!registry_->Send(node, CommandFor(capture, matched[i].second))) {
      unsent.push_back(i);
    } else if (shared_) {
      sent_.emplace(capture.capture_id(), node);
    }
  }
  v1::Capture started;
  {
    absl::MutexLock lock(&mu_);
    Active& active = active_[capture.capture_id()];
    for (int i : unsent) {
      v1::CaptureTarget& t = *active.capture.mutable_targets(i);
      if (IsFinal(t.state())) continue;
      t.set_state(v1::CaptureTarget::FAILED);
      t.set_error(absl::StrCat("agent on node ", t.node(), " disconnected before the capture started"));
    }
    started = Changed(active);
  }
  if (!capture.targets().empty()) metrics_->RecordCaptureStarted(v1::Capture::Reason_Name(origin.reason));
  spdlog::info("capture started capture_id={} job={} targets={}", capture.capture_id(),
               request.job(), capture.targets_size());
  Store(started);
  return started;
}

v1::Capture CaptureCoordinator::Changed(Active& active) {
  const v1::Capture::State before = active.capture.state();
  active.capture.set_state(CaptureStateOf(active.capture));
  ++active.version;  // watchers waiting in WaitForChange see it when mu_ is released
  if (before != active.capture.state() && active.capture.state() != v1::Capture::RUNNING) {
    const std::string& state = v1::Capture::State_Name(active.capture.state());
    metrics_->RecordCapture(state);
    spdlog::info("capture finished capture_id={} state={}", active.capture.capture_id(), state);
  }
  return active.capture;
}

absl::StatusOr<std::optional<v1::Capture>> CaptureCoordinator::FindByRequestId(const v1::StartCaptureRequest& request,
                                                                              int64_t now) {
  const auto same = [&](const v1::Capture& c) {
    return c.request().request_id() == request.request_id() && c.request().job() == request.job() &&
           c.created_at_ns() >= now - kRequestIdWindowNs;
  };
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, active] : active_) {
      if (same(active.capture)) return std::optional<v1::Capture>(active.capture);
    }
  }
  // Stored by this or another replica (ids start with their creation time: newest first).
  absl::StatusOr<std::vector<v1::Capture>> recent = store_->captures().List(request.job(), kRequestIdScan);
  if (!recent.ok()) return recent.status();
  for (const v1::Capture& c : *recent) {
    if (same(c)) return std::optional<v1::Capture>(c);
  }
  return std::optional<v1::Capture>();
}

void CaptureCoordinator::Store(const v1::Capture& capture) {
  if (shared_) {
    (void)StoreMerged(capture);
    return;
  }
  if (absl::Status s = store_->captures().Put(capture); !s.ok()) {
    spdlog::warn("could not store capture {}: {}", capture.capture_id(), std::string(s.message()));
  }
}

v1::Capture CaptureCoordinator::StoreMerged(const v1::Capture& capture) {
  for (int attempt = 0; attempt < 20; ++attempt) {
    auto stored = store_->captures().FindWithBytes(capture.capture_id());
    if (!stored.ok()) {
      spdlog::warn("could not read capture {}: {}", capture.capture_id(), std::string(stored.status().message()));
      return capture;
    }
    v1::Capture merged = stored->has_value() ? MergeCaptures((*stored)->first, capture) : capture;
    std::optional<std::string> expected;
    if (stored->has_value()) expected = (*stored)->second;
    absl::Status s = store_->captures().PutIfUnchanged(merged, expected);
    if (s.ok()) return merged;
    if (!absl::IsAborted(s)) {
      spdlog::warn("could not store capture {}: {}", capture.capture_id(), std::string(s.message()));
      return capture;
    }
  }
  spdlog::warn("capture {}: gave up storing after 20 concurrent writes", capture.capture_id());
  return capture;
}

void CaptureCoordinator::SendLocalCommands(const v1::Capture& capture) {
  int64_t frame_offset_ns = 0;
  {
    absl::MutexLock lock(&mu_);
    if (auto it = active_.find(capture.capture_id()); it != active_.end()) frame_offset_ns = it->second.frame_offset_ns;
  }
  for (const auto& t : capture.targets()) {
    if (t.state() != v1::CaptureTarget::PENDING || sent_.contains({capture.capture_id(), t.node()})) continue;
    if (!registry_->HoldsStream(t.node())) continue;
    // The agent's own target, from its record (the command carries the whole target).
    for (const auto& agent : registry_->List()) {
      if (agent.node() != t.node()) continue;
      for (const auto& target : agent.targets()) {
        if (TargetName(target) != t.target()) continue;
        if (registry_->Send(t.node(), CommandFor(capture, target, frame_offset_ns))) {
          sent_.emplace(capture.capture_id(), t.node());
          spdlog::info("capture {}: command sent to node {} on this replica", capture.capture_id(), t.node());
        }
      }
    }
  }
}

void CaptureCoordinator::StoredCaptureChanged(const std::string& capture_id) {
  if (!shared_) return;
  auto stored = store_->captures().Get(capture_id);
  if (!stored.ok()) return;
  bool known;
  {
    absl::MutexLock lock(&mu_);
    known = active_.contains(capture_id);
  }
  // A capture new to this replica: how far its starting replica's clock is (no lock held).
  const int64_t frame_offset_ns = known || stored->state() != v1::Capture::RUNNING ? 0 : MeasuredFrameOffset(*stored);
  absl::MutexLock writing(&write_mu_);
  if (stopped_) return;
  {
    absl::MutexLock lock(&mu_);
    auto it = active_.find(capture_id);
    if (it == active_.end()) {
      if (stored->state() != v1::Capture::RUNNING) return;
      Active& active = active_[capture_id];
      active.capture = *stored;
      ++active.version;
      active.frame_offset_ns = frame_offset_ns;
    } else {
      const std::string before = it->second.capture.SerializeAsString();
      it->second.capture = MergeCaptures(*stored, it->second.capture);
      // Watchers wake; the finished-capture metric stays with the replica whose write ended it.
      if (it->second.capture.SerializeAsString() != before) ++it->second.version;
    }
  }
  if (stored->state() == v1::Capture::RUNNING) SendLocalCommands(*stored);
}

bool CaptureCoordinator::HasTarget(const std::string& capture_id, const std::string& node) {
  auto capture = Get(capture_id);
  if (!capture.ok()) return false;
  for (const auto& t : capture->targets()) {
    if (t.node() == node) return true;
  }
  return false;
}

void CaptureCoordinator::OnUpdate(const std::string& node, const v1::CaptureUpdate& update) {
  // A node reports only its own targets (the caller matched `node` to its credential), and
  // links only a profile it uploaded for this capture.
  if (!update.profile_id().empty()) {
    auto profile = store_->profiles().Get(update.profile_id());
    bool linked = false;
    if (profile.ok() && profile->node() == node) {
      auto label = profile->labels().find("capture_id");
      linked = label != profile->labels().end() && label->second == update.capture_id();
    }
    if (!linked) {
      spdlog::warn("capture {}: node {} reported profile {}, which is not its upload for this capture; ignored",
                   update.capture_id(), node, update.profile_id());
      return;
    }
  }
  // Shared: a capture started through another replica is known here from the catalog.
  std::optional<v1::Capture> from_catalog;
  if (shared_) {
    if (auto stored = store_->captures().Get(update.capture_id()); stored.ok()) from_catalog = *std::move(stored);
  }
  absl::MutexLock writing(&write_mu_);
  if (stopped_) return;  // the agent resends it after it reconnects to the next server
  v1::Capture changed;
  {
    absl::MutexLock lock(&mu_);
    auto it = active_.find(update.capture_id());
    if (it == active_.end() && from_catalog && from_catalog->state() == v1::Capture::RUNNING) {
      it = active_.emplace(update.capture_id(), Active{*from_catalog, 0}).first;
    }
    if (it == active_.end()) return;
    bool found = false;
    for (auto& t : *it->second.capture.mutable_targets()) {
      if (t.node() != node || t.target() != update.target()) continue;
      if (IsFinal(t.state()) || Rank(update.state()) < Rank(t.state())) return;
      t.set_state(update.state());
      if (!update.profile_id().empty()) t.set_profile_id(update.profile_id());
      if (!update.error().empty()) t.set_error(update.error());
      // Only later than the shared start, and never past the deadline's reach: a moved start
      // extends this target's deadline by as much (TargetDeadline).
      // The agent reports on the clock of the commands this replica sent; the capture keeps
      // its starting replica's.
      const int64_t moved_start = update.start_time_unix_ns() - it->second.frame_offset_ns;
      if (update.start_time_unix_ns() > 0 && moved_start > it->second.capture.start_time_unix_ns() &&
          moved_start - it->second.capture.start_time_unix_ns() <= kMaxStartMoveNs) {
        t.set_start_time_unix_ns(moved_start);
      }
      if (!update.note().empty()) t.set_note(update.note().substr(0, 1024));
      if (IsFinal(t.state())) metrics_->RecordCaptureTarget(v1::CaptureTarget::State_Name(t.state()));
      found = true;
      break;
    }
    if (!found) return;
    changed = Changed(it->second);
  }
  Store(changed);
}

absl::StatusOr<v1::Capture> CaptureCoordinator::Get(const std::string& capture_id) {
  if (capture_id.empty()) return absl::InvalidArgumentError("capture_id is required");
  {
    absl::MutexLock lock(&mu_);
    auto it = active_.find(capture_id);
    if (it != active_.end()) return it->second.capture;
  }
  return store_->captures().Get(capture_id);
}

absl::StatusOr<v1::ListCapturesResponse> CaptureCoordinator::List(const v1::ListCapturesRequest& request) {
  if (request.limit() < 0 || request.limit() > 1000) {
    return absl::InvalidArgumentError("limit must be between 0 (default 50) and 1000");
  }
  auto captures = store_->captures().List(request.job(), request.limit() == 0 ? 50 : request.limit());
  if (!captures.ok()) return captures.status();
  v1::ListCapturesResponse response;
  for (auto& c : *captures) *response.add_captures() = std::move(c);
  return response;
}

bool CaptureCoordinator::WaitForChange(const std::string& capture_id, int64_t* version,
                                       std::chrono::milliseconds timeout, v1::Capture* out) {
  {
    absl::MutexLock lock(&mu_);
    if (active_.count(capture_id)) {
      const auto changed = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        auto now = active_.find(capture_id);
        return stopping_ || now == active_.end() || now->second.version > *version;
      };
      mu_.AwaitWithTimeout(absl::Condition(&changed), absl::Milliseconds(timeout.count()));
      auto now = active_.find(capture_id);
      if (now == active_.end()) return false;
      *out = now->second.capture;
      *version = now->second.version;
      return true;
    }
  }
  auto stored = store_->captures().Get(capture_id);
  if (!stored.ok()) return false;
  *out = *stored;
  *version = INT64_MAX;
  return true;
}

int64_t CaptureCoordinator::ExpireOverdue(int64_t now) {
  constexpr int64_t kLookEveryNs = 500 * kNanosPerMs;
  absl::MutexLock writing(&write_mu_);
  if (stopped_) return now + kLookEveryNs;
  std::vector<v1::Capture> changed;
  {
    absl::MutexLock lock(&mu_);
    for (auto it = active_.begin(); it != active_.end();) {
      // A cluster replica checks no deadline before it can measure the replicas' clocks.
      if (shared_ && membership_ == nullptr) break;
      Active& active = it->second;
      bool failed_now = false;
      // Agents enforce the deadline themselves and report why; the grace lets that reason
      // arrive before this generic one.
      // The capture's times are on the clock of the replica that started it.
      const int64_t capture_now = now - active.frame_offset_ns;
      if (active.capture.state() == v1::Capture::RUNNING && capture_now > active.capture.deadline_unix_ns() + kGraceNs) {
        for (auto& t : *active.capture.mutable_targets()) {
          if (IsFinal(t.state()) || capture_now <= TargetDeadline(active.capture, t) + kGraceNs) continue;
          t.set_error(t.state() == v1::CaptureTarget::PENDING
                          ? "agent never started the capture before the deadline"
                          : "no result from the agent within the capture deadline");
          t.set_state(v1::CaptureTarget::FAILED);
          metrics_->RecordCaptureTarget(v1::CaptureTarget::State_Name(v1::CaptureTarget::FAILED));
          failed_now = true;
        }
        if (failed_now) changed.push_back(Changed(active));
      }
      // Finished captures stay in memory a minute for watchers, then live in the store only
      // (one just failed stays until the next pass, after its final version is stored).
      if (!failed_now && active.capture.state() != v1::Capture::RUNNING &&
          capture_now - active.capture.deadline_unix_ns() > 60'000 * kNanosPerMs) {
        it = active_.erase(it);
      } else {
        ++it;
      }
    }
  }
  for (const v1::Capture& capture : changed) Store(capture);
  return now + kLookEveryNs;
}

}  // namespace fleetprof
