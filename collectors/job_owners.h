#pragma once
// Which uid a job name belongs to on this node. A job names itself (FLEETPROF_JOB in its own
// environment), so any local user could name another user's job and have a capture of that
// job trace its own process, uploaded as the victim's. A name is therefore bound to the uid
// whose process claimed it first, for as long as processes of that uid go on claiming it
// (plus `keep`); a process of another uid that claims it meanwhile is flagged (logged once,
// counted) and is never a target of that job. Thread-safe: the Kineto endpoint and the /proc
// discovery of XLA jobs share one, so a name is bound across both kinds of target.
//
// First come is only the fallback, since any user may start a process naming a job before the
// job does. Two things outrank it: root's processes (no user can start one, so root's jobs
// cannot be squatted: a name another uid holds moves to root), and the scheduler's word — the
// assignments file (--job_owners_file), "UID JOB" lines that a Slurm prolog or a node's job
// launcher writes: a listed name is that uid's (and root's) alone, whoever claimed it first.

#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <tuple>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"

namespace fleetprof {

class JobOwners {
 public:
  // `on_conflict` runs (outside the lock) once per newly flagged (job, uid, pid): a metric.
  // `assignments_file`: empty for none; else re-read when it changes, at most once a second.
  // A binding lasts `keep` on `clock` after its last claim.
  explicit JobOwners(std::chrono::nanoseconds keep = std::chrono::seconds(60), std::function<void()> on_conflict = {},
                     std::string assignments_file = {}, const Clock* clock = RealClock());

  // Reads the assignments file now: an error (unreadable, not the operator's, malformed) keeps
  // the assignments in force. Claim calls it once a second and logs an error once per change.
  absl::Status LoadAssignments();

  // True when process `pid` of `uid` may carry `job`: the name is free (it is bound to uid
  // now) or uid's already (the binding is refreshed). "unassigned" is nobody's: always true.
  // False for an unknown uid (< 0), for a name another uid holds (root's processes take it
  // over instead) and for a name the assignments file gives to another uid.
  bool Claim(const std::string& job, int64_t uid, int32_t pid);
  // True when `uid` may file data it wrote under `job` (a trace-dir file; docs/operating.md,
  // fleetprof-agent): a job the assignments file lists is its uid's and root's, any other job is
  // open to every uid, "unassigned" too. Binds nothing: a file is no process that goes on claiming
  // a name. False for an unknown uid (< 0).
  bool MayUse(const std::string& job, int64_t uid);
  // The uid that holds `job` now, nullopt when nobody does.
  std::optional<int64_t> OwnerOf(const std::string& job) const;
  // Conflicting claims flagged so far (each (job, uid, pid) once).
  int64_t conflicts() const;

 private:
  struct Binding {
    int64_t uid;
    int64_t last_claim_ns;  // on clock_.MonotonicNanos()
  };
  void SweepLocked(int64_t now_ns) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  // Whether `uid` may hold `job` now, refreshing or moving its binding.
  bool MayHoldLocked(const std::string& job, int64_t uid, int64_t now_ns, int64_t* holder)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void MaybeReload(int64_t now_ns) ABSL_LOCKS_EXCLUDED(mu_);

  const Clock& clock_;
  const int64_t keep_ns_;
  const std::function<void()> on_conflict_;
  mutable absl::Mutex mu_;
  std::map<std::string, Binding> bindings_ ABSL_GUARDED_BY(mu_);
  // Claims already flagged, so a process seen every scan is logged and counted once.
  std::set<std::tuple<std::string, int64_t, int32_t>> flagged_ ABSL_GUARDED_BY(mu_);
  int64_t conflicts_ ABSL_GUARDED_BY(mu_) = 0;

  const std::string assignments_file_;
  std::map<std::string, int64_t> assigned_ ABSL_GUARDED_BY(mu_);  // job -> uid, from the file
  int64_t next_reload_ns_ ABSL_GUARDED_BY(mu_) = 0;
  std::string file_signature_ ABSL_GUARDED_BY(mu_);  // of the version read (or refused) last
};

}  // namespace fleetprof
