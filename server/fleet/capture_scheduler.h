#pragma once
// CaptureScheduler runs the capture schedules (`fleetprof schedule`): every `every_ms` it
// starts a capture of the schedule's job through CaptureCoordinator, so a job's time series
// fills by itself. Schedules live in the store and survive restarts. Rules:
// - never two captures of one job at once: a run due while a capture of the job is RUNNING
//   is skipped, recorded as a SKIPPED capture naming the running one;
// - a run missed by more than kMissedAfter (the server was down, or the host stalled) is
//   skipped too, once, and the schedule goes on from the next period: runs never pile up;
// - the first run is due when the schedule is created.
// Transport-free: the gRPC ScheduleService and the HTTP API both call these methods.
//
// Locks: mu_ guards the schedules in memory and is never held across a store write or a
// capture start, so List() never waits on an fsync or an agent. write_mu_ orders the writers
// (the loop's runs, Create, Delete) among themselves, so a run cannot store a schedule that a
// Delete has just removed. Order: write_mu_, then mu_; CaptureCoordinator's lock after both.
// loop_mu_ only guards the loop's pointer (Create's nudge against Stop); stop_mu_ orders Stops.

#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "auth/scopes.h"
#include "common/clock.h"
#include "common/periodic_loop.h"
#include "fleetprof/v1/schedule.pb.h"
#include "server/fleet/capture_coordinator.h"
#include "server/server_metrics.h"
#include "storage/fleet_tables.h"

namespace fleetprof {

class CaptureScheduler {
 public:
  static constexpr int64_t kMinEveryMs = 1000;
  static constexpr int64_t kMaxEveryMs = int64_t{7} * 24 * 3600 * 1000;
  static constexpr int kMaxSchedules = 1000;
  // A run this late is a missed run (skipped), not a late one (started).
  static constexpr int64_t kMissedAfterNs = int64_t{5} * 1'000'000'000;

  // Starts the loop (at once: runs due while the server was down are skipped then). A loop
  // that cannot start is logged and the schedules stay stored, unrun.
  // `leads`, when given (a cluster replica), says whether this replica leads the cluster: only
  // the leader runs schedules, and it reads them from the store at every tick, so a schedule
  // created through another replica runs too.
  CaptureScheduler(ScheduleTable* store, CaptureCoordinator* captures, ServerMetrics* metrics,
                   Clock* clock, std::function<bool()> leads = nullptr);
  ~CaptureScheduler();  // Stop()s

  // Stops running schedules, for the server's drain (before storage is flushed): the run in
  // progress (its capture start and its stored schedule) is waited for, the runs due after it in
  // the same tick are left due (the next leader, or the next start, runs or skips them), and no
  // run starts after. Create and Delete still store and remove schedules. Any thread, any
  // number of times; a second Stop also waits for the run in progress.
  void Stop() ABSL_LOCKS_EXCLUDED(stop_mu_, loop_mu_, write_mu_);
  // Stop has begun: work not yet started is refused from here on. For tests that hold the
  // work in progress and must know Stop is under way before they let it go.
  bool stopping() const { return stopping_.load(); }

  // A schedule created by `caller`, who may delete it later (Delete).
  absl::StatusOr<v1::Schedule> Create(const v1::CreateScheduleRequest& request, const Principal& caller);
  absl::StatusOr<v1::ListSchedulesResponse> List(const v1::ListSchedulesRequest& request);
  // PERMISSION_DENIED unless `caller` created the schedule or holds the admin scope: the
  // capture scope lets a principal run captures, not stop another's.
  absl::StatusOr<v1::DeleteScheduleResponse> Delete(const v1::DeleteScheduleRequest& request,
                                                    const Principal& caller);

  // Runs (or skips) every schedule due at `now` and returns when the next one is due (at most
  // a second ahead, so a clock set back is noticed). The loop's tick; public for tests.
  // After Stop it runs nothing.
  int64_t RunDueSchedules(int64_t now) ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

 private:
  // Runs (or skips) `schedule`, due at or before `now`, and moves it to its next period.
  void RunDue(v1::Schedule& schedule, int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  void Persist(const v1::Schedule& schedule) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Delete's rule: the schedule's creator or an admin.
  static absl::Status CheckMayDelete(const v1::Schedule& schedule, const Principal& caller);

  ScheduleTable* store_;
  CaptureCoordinator* captures_;
  ServerMetrics* metrics_;
  Clock* clock_;
  const std::function<bool()> leads_;
  absl::Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(loop_mu_, write_mu_);  // held by Stop alone, across the wait
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  mutable absl::Mutex mu_;
  std::map<std::string, v1::Schedule> schedules_ ABSL_GUARDED_BY(mu_);
  // Set by Stop, read by a tick between runs: no lock, so Stop needs none a tick holds to set it.
  std::atomic<bool> stopping_{false};
  // Never held across a tick or a join: Stop moves the loop out under it and joins outside.
  absl::Mutex loop_mu_;
  std::unique_ptr<PeriodicLoop> loop_ ABSL_GUARDED_BY(loop_mu_);  // last: it stops before the members it uses go
};

}  // namespace fleetprof
