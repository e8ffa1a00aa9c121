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

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "fleetprof/v1/schedule.pb.h"
#include "server/capture_coordinator.h"
#include "server/server_metrics.h"
#include "storage/profile_store.h"

namespace fleetprof {

class CaptureScheduler {
 public:
  static constexpr int64_t kMinEveryMs = 1000;
  static constexpr int64_t kMaxEveryMs = int64_t{7} * 24 * 3600 * 1000;
  static constexpr int kMaxSchedules = 1000;
  // A run this late is a missed run (skipped), not a late one (started).
  static constexpr int64_t kMissedAfterNs = int64_t{5} * 1'000'000'000;

  CaptureScheduler(ProfileStore* store, CaptureCoordinator* captures, ServerMetrics* metrics);
  ~CaptureScheduler();

  absl::StatusOr<v1::Schedule> Create(const v1::CreateScheduleRequest& request);
  absl::StatusOr<v1::ListSchedulesResponse> List(const v1::ListSchedulesRequest& request);
  absl::StatusOr<v1::DeleteScheduleResponse> Delete(const v1::DeleteScheduleRequest& request);

 private:
  void Loop();
  // REQUIRES: mu_ held. Runs (or skips) `schedule`, due at or before `now`, and moves it on.
  void RunDue(v1::Schedule& schedule, int64_t now);
  // REQUIRES: mu_ held.
  void Persist(const v1::Schedule& schedule);

  ProfileStore* store_;
  CaptureCoordinator* captures_;
  ServerMetrics* metrics_;
  std::mutex mu_;
  std::condition_variable wake_;
  std::map<std::string, v1::Schedule> schedules_;
  bool stopping_ = false;
  int64_t generation_ = 0;  // bumped by Create: the loop looks at the schedules again
  std::thread loop_;
};

}  // namespace fleetprof
