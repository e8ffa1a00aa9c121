#pragma once
// Retention: what the server forgets, and when. Profiles older than their job's retention
// (--retention_days, --job_retention_days JOB=DAYS overrides) go; when --data_dir takes more
// disk than --max_disk_mb (as du counts it: StorageEngine::FolderBytes), the oldest profiles go,
// one at a time and measured again after each, until it does not (the newest one always stays);
// captures older than --capture_retention_days and agents gone for --agent_expiry_days go
// too. A profile is deleted through the same path as `fleetprof delete` (one synced write,
// then compaction), so nothing of it stays half visible. Runs as a PeriodicLoop: after every
// commit (Nudge) and every --retention_check_s of its clock.

#include <atomic>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/periodic_loop.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/registry.h"
#include "server/fleet/agent_registry.h"
#include "storage/storage.h"

namespace fleetprof {

struct RetentionPolicy {
  double retention_days = 0;                 // 0: keep profiles forever
  std::map<std::string, double> job_days;    // per job; 0: that job's profiles are kept
  int64_t max_disk_bytes = 0;                // 0: no limit
  double capture_retention_days = 30;
  double agent_expiry_days = 7;
  int64_t check_every_s = 60;                // a pass at least this often (and after each commit)

  // "train=30,eval=7" → job_days; days must be >= 0. INVALID_ARGUMENT naming the bad part.
  static absl::StatusOr<std::map<std::string, double>> ParseJobDays(const std::string& text);
  // How long profiles of `job` are kept, in ns; 0 = forever.
  int64_t KeepNs(const std::string& job) const;
};

class Retention {
 public:
  // `delete_profile` removes one profile everywhere (QueryApi::DeleteProfile, which also
  // empties the query caches).
  Retention(RetentionPolicy policy, Storage* store, AgentRegistry* agents,
            std::function<absl::Status(const std::string&)> delete_profile, prometheus::Registry* metrics,
            Clock* clock, std::function<bool()> leads = nullptr,
            std::function<int64_t()> cluster_clock_offset = nullptr);
  ~Retention();  // Stop()s

  // A profile was stored: check the disk limit soon. Nothing after Stop.
  void Nudge() ABSL_LOCKS_EXCLUDED(loop_mu_);
  // One pass at the clock's time now (tests and the loop), moved by the cluster's clock
  // offset (Membership::ClockOffsetNs): profiles are stamped by the replicas that ingested
  // them, so a leader ages them on the replicas' common time, not on its own if it is off.
  // After Stop it removes nothing.
  void RunOnce() ABSL_LOCKS_EXCLUDED(pass_mu_);
  // Stops removing, for the server's drain (before storage is flushed): the pass in progress
  // ends after the removal in progress (a profile's delete, the captures' or the agents'
  // sweep), which Stop waits for; what it had left waits for the next leader or the next start,
  // and no pass runs after. Any thread, any number of times; a second Stop waits too.
  void Stop() ABSL_LOCKS_EXCLUDED(stop_mu_, loop_mu_, pass_mu_);
  // Stop has begun: work not yet started is refused from here on. For tests that hold the
  // work in progress and must know Stop is under way before they let it go.
  bool stopping() const { return stopping_.load(); }

 private:
  void ExpireByAge(int64_t now) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);
  void EnforceDiskLimit() ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);
  // The folder's disk use once the engine's buffered writes are flushed and its running
  // compactions have ended.
  int64_t SettledDiskBytes();
  // False without deleting once Stop began.
  bool Delete(const std::string& profile_id, prometheus::Counter& counter) ABSL_EXCLUSIVE_LOCKS_REQUIRED(pass_mu_);

  const RetentionPolicy policy_;
  Storage* store_;
  AgentRegistry* agents_;
  std::function<absl::Status(const std::string&)> delete_profile_;
  prometheus::Family<prometheus::Counter>& deleted_;
  prometheus::Counter& deleted_age_;
  prometheus::Counter& deleted_disk_;
  prometheus::Counter& deleted_captures_;
  prometheus::Counter& deleted_agents_;
  Clock* clock_;
  const std::function<bool()> leads_;  // a cluster replica: only the leader deletes
  const std::function<int64_t()> cluster_clock_offset_;
  // One pass at a time (the loop's, or a caller's RunOnce); needed by no reader, so it may be
  // held across the pass's deletes. Stop takes it to wait for a pass it cannot join.
  absl::Mutex pass_mu_;
  int64_t last_offset_ ABSL_GUARDED_BY(pass_mu_) = 0;  // for a log line when it changes
  // Set by Stop, read between removals: no lock, so Stop needs none a pass holds to set it.
  std::atomic<bool> stopping_{false};
  absl::Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(loop_mu_, pass_mu_);  // held by Stop alone, across the wait
  // Never held across a pass or a join: Stop moves the loop out under it and joins outside.
  absl::Mutex loop_mu_;
  std::unique_ptr<PeriodicLoop> loop_ ABSL_GUARDED_BY(loop_mu_);  // last: stops before the members it uses go
};

}  // namespace fleetprof
