#include "server/fleet/capture_scheduler.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/runtime.h"
#include "common/text_checks.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

constexpr int64_t kNanosPerMs = 1'000'000;

// The first multiple of the period after `now`, counted from `due`.
int64_t NextAfter(int64_t due, int64_t every_ns, int64_t now) {
  if (due > now) return due;
  return due + ((now - due) / every_ns + 1) * every_ns;
}

v1::StartCaptureRequest CaptureRequestOf(const v1::Schedule& schedule) {
  v1::StartCaptureRequest request;
  request.set_job(schedule.job());
  request.set_node(schedule.node());
  request.set_duration_ms(schedule.duration_ms());
  return request;
}

}  // namespace

CaptureScheduler::CaptureScheduler(ScheduleTable* store, CaptureCoordinator* captures, ServerMetrics* metrics,
                                   Clock* clock, std::function<bool()> leads)
    : store_(store), captures_(captures), metrics_(metrics), clock_(clock), leads_(std::move(leads)) {
  auto stored = store_->List();
  {
    absl::MutexLock lock(&mu_);
    if (stored.ok()) {
      for (auto& s : *stored) schedules_[s.schedule_id()] = std::move(s);
    } else {
      spdlog::error("could not read the capture schedules: {}", std::string(stored.status().message()));
    }
    metrics_->SetSchedules(static_cast<int64_t>(schedules_.size()));
  }
  std::unique_ptr<PeriodicLoop> loop = PeriodicLoop::StartOrLog(
      "the capture scheduler", clock_, [this](int64_t now) { return RunDueSchedules(now); },
      "capture schedules will not run");
  absl::MutexLock lock(&loop_mu_);
  loop_ = std::move(loop);
}

CaptureScheduler::~CaptureScheduler() { Stop(); }

void CaptureScheduler::Stop() {
  absl::MutexLock stopping(&stop_mu_);  // a second Stop waits here for the first one's waits
  stopping_.store(true);  // the tick in progress ends after its run in progress
  std::unique_ptr<PeriodicLoop> loop;
  {
    absl::MutexLock lock(&loop_mu_);
    loop = std::move(loop_);
  }
  // Outside loop_mu_ (Create's nudge takes it): waits for the tick in progress, then joins.
  loop.reset();
  // A run called by another thread than the loop's (RunDueSchedules is public) holds write_mu_
  // until it is done, and the next one finds stopping_.
  absl::MutexLock writing(&write_mu_);
}

absl::StatusOr<v1::Schedule> CaptureScheduler::Create(const v1::CreateScheduleRequest& request,
                                                      const Principal& caller) {
  if (request.job().empty()) return absl::InvalidArgumentError("a schedule needs a job (--job)");
  if (absl::Status s = CheckPrintableText("job", request.job(), 253); !s.ok()) return s;
  if (!request.node().empty()) {
    if (absl::Status s = CheckPrintableText("node", request.node(), 253); !s.ok()) return s;
  }
  if (request.every_ms() < kMinEveryMs || request.every_ms() > kMaxEveryMs) {
    return absl::InvalidArgumentError(absl::StrCat("every must lie between 1s and 168h (", kMinEveryMs, " to ",
                                                   kMaxEveryMs, " ms), not ", request.every_ms(), " ms"));
  }
  if (request.duration_ms() < 0 || request.duration_ms() > CaptureCoordinator::kMaxDurationMs) {
    return absl::InvalidArgumentError(absl::StrCat("duration_ms must lie in 0..", CaptureCoordinator::kMaxDurationMs,
                                                   " (0: ", CaptureCoordinator::kDefaultDurationMs, ")"));
  }
  const int64_t now = clock_->Now();
  v1::Schedule schedule;
  schedule.set_schedule_id(absl::StrCat("s", absl::Hex(now, absl::kZeroPad16), RandomHex(4)));
  schedule.set_job(request.job());
  schedule.set_node(request.node());
  schedule.set_every_ms(request.every_ms());
  schedule.set_duration_ms(request.duration_ms() == 0 ? CaptureCoordinator::kDefaultDurationMs : request.duration_ms());
  schedule.set_created_at_ns(now);
  schedule.set_created_by(caller.name);
  schedule.set_next_run_ns(now);
  {
    absl::MutexLock writing(&write_mu_);
    {
      absl::MutexLock lock(&mu_);
      if (static_cast<int>(schedules_.size()) >= kMaxSchedules) {
        return absl::ResourceExhaustedError(absl::StrCat("the server keeps at most ", kMaxSchedules,
                                                         " schedules; remove one with fleetprof unschedule"));
      }
    }
    // Stored before it is listed: a schedule that is listed survives a restart.
    if (absl::Status s = store_->Put(schedule); !s.ok()) return s;
    absl::MutexLock lock(&mu_);
    schedules_[schedule.schedule_id()] = schedule;
    metrics_->SetSchedules(static_cast<int64_t>(schedules_.size()));
  }
  spdlog::info("schedule created schedule_id={} job={} every_ms={} duration_ms={} by={}", schedule.schedule_id(),
               schedule.job(), schedule.every_ms(), schedule.duration_ms(), schedule.created_by());
  {
    absl::MutexLock lock(&loop_mu_);
    if (loop_ != nullptr) loop_->Nudge();  // its first run is due now (none after Stop)
  }
  return schedule;
}

absl::StatusOr<v1::ListSchedulesResponse> CaptureScheduler::List(const v1::ListSchedulesRequest& request) {
  v1::ListSchedulesResponse response;
  absl::MutexLock lock(&mu_);
  for (const auto& [id, s] : schedules_) {
    if (request.job().empty() || s.job() == request.job()) *response.add_schedules() = s;
  }
  return response;
}

absl::StatusOr<v1::DeleteScheduleResponse> CaptureScheduler::Delete(const v1::DeleteScheduleRequest& request,
                                                                    const Principal& caller) {
  if (request.schedule_id().empty()) return absl::InvalidArgumentError("schedule_id is required");
  absl::MutexLock writing(&write_mu_);
  {
    absl::MutexLock lock(&mu_);
    auto it = schedules_.find(request.schedule_id());
    if (it == schedules_.end()) {
      return absl::NotFoundError(
          absl::StrCat("schedule ", request.schedule_id(), ": not found (see fleetprof schedules)"));
    }
    if (absl::Status s = CheckMayDelete(it->second, caller); !s.ok()) return s;
  }
  if (absl::Status s = store_->Delete(request.schedule_id()); !s.ok()) return s;
  {
    absl::MutexLock lock(&mu_);
    schedules_.erase(request.schedule_id());
    metrics_->SetSchedules(static_cast<int64_t>(schedules_.size()));
  }
  v1::DeleteScheduleResponse response;
  response.set_schedule_id(request.schedule_id());
  response.set_deleted(true);
  return response;
}

absl::Status CaptureScheduler::CheckMayDelete(const v1::Schedule& schedule, const Principal& caller) {
  // An empty created_by (a schedule from before it was recorded) matches nobody's name.
  if (caller.Has(Scope::kAdmin) || (!schedule.created_by().empty() && schedule.created_by() == caller.name)) {
    return absl::OkStatus();
  }
  return absl::PermissionDeniedError(absl::StrCat(
      "schedule ", schedule.schedule_id(), " was created by ",
      schedule.created_by().empty() ? std::string("an unrecorded principal") : "'" + schedule.created_by() + "'",
      ": only its creator or a principal with the admin scope may delete it"));
}

void CaptureScheduler::Persist(const v1::Schedule& schedule) {
  if (absl::Status s = store_->Put(schedule); !s.ok()) {
    spdlog::warn("could not store schedule {}: {}", schedule.schedule_id(), std::string(s.message()));
  }
}

void CaptureScheduler::RunDue(v1::Schedule& schedule, int64_t now) {
  const int64_t every_ns = schedule.every_ms() * kNanosPerMs;
  const v1::StartCaptureRequest request = CaptureRequestOf(schedule);
  const int64_t late = now - schedule.next_run_ns();
  if (late > kMissedAfterNs) {
    const int64_t missed = late / every_ns + 1;
    const v1::Capture skipped = captures_->RecordSkipped(
        request, CaptureCoordinator::Origin::Scheduled(schedule.schedule_id()),
        absl::StrCat("skipped: ", missed, " run", missed == 1 ? "" : "s", " of this schedule came due while the "
                     "server was not running (or could not keep up); the schedule goes on from the next period"));
    schedule.set_last_capture_id(skipped.capture_id());
    schedule.set_skipped(schedule.skipped() + 1);
    schedule.set_last_outcome(skipped.error());
    metrics_->RecordScheduledRun("skipped_missed");
  } else if (std::string running = captures_->RunningCaptureOf(schedule.job()); !running.empty()) {
    const v1::Capture skipped = captures_->RecordSkipped(
        request, CaptureCoordinator::Origin::Scheduled(schedule.schedule_id()),
        absl::StrCat("skipped: capture ", running, " of job ", schedule.job(),
                     " is still running (never two captures of one job at once)"));
    schedule.set_last_capture_id(skipped.capture_id());
    schedule.set_skipped(schedule.skipped() + 1);
    schedule.set_last_outcome(skipped.error());
    metrics_->RecordScheduledRun("skipped_busy");
  } else {
    auto capture = captures_->Start(request, CaptureCoordinator::Origin::Scheduled(schedule.schedule_id()));
    if (capture.ok()) {
      schedule.set_last_capture_id(capture->capture_id());
      schedule.set_runs(schedule.runs() + 1);
      schedule.set_last_outcome(capture->state() == v1::Capture::FAILED ? absl::StrCat("failed: ", capture->error())
                                                                       : "started");
      metrics_->RecordScheduledRun(capture->state() == v1::Capture::FAILED ? "failed" : "started");
    } else {
      schedule.set_last_outcome(absl::StrCat("failed: ", capture.status().message()));
      metrics_->RecordScheduledRun("failed");
    }
  }
  schedule.set_next_run_ns(NextAfter(schedule.next_run_ns(), every_ns, now));
}

int64_t CaptureScheduler::RunDueSchedules(int64_t now) {
  absl::MutexLock writing(&write_mu_);
  if (stopping_.load()) return now + 1'000'000'000;
  if (leads_) {
    if (!leads_()) return now + 1'000'000'000;  // another replica runs them
    // The store is the truth across replicas: schedules created or deleted elsewhere.
    if (auto stored = store_->List(); stored.ok()) {
      absl::MutexLock lock(&mu_);
      schedules_.clear();
      for (auto& s : *stored) schedules_[s.schedule_id()] = std::move(s);
      metrics_->SetSchedules(static_cast<int64_t>(schedules_.size()));
    } else {
      return now + 1'000'000'000;  // the catalog does not answer: run nothing on stale copies
    }
  }
  // Copies of the due schedules: each run starts a capture and stores the schedule, neither of
  // which may happen under mu_ (List would wait on them). write_mu_ keeps Create and Delete
  // out meanwhile, so the copies stay the truth until they are written back.
  std::vector<v1::Schedule> due;
  {
    absl::MutexLock lock(&mu_);
    for (const auto& [id, schedule] : schedules_) {
      if (schedule.next_run_ns() <= now) due.push_back(schedule);
    }
  }
  for (v1::Schedule& schedule : due) {
    // Stop waits for the run in progress, not for every run due: the rest stay due, unstored.
    if (stopping_.load()) break;
    RunDue(schedule, now);
    Persist(schedule);
    absl::MutexLock lock(&mu_);
    schedules_[schedule.schedule_id()] = schedule;
  }
  int64_t next = now + 1'000'000'000;  // look again at least every second (clock changes)
  absl::MutexLock lock(&mu_);
  for (const auto& [id, schedule] : schedules_) next = std::min(next, schedule.next_run_ns());
  return next;
}

}  // namespace fleetprof
