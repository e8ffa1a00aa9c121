#pragma once
// CaptureCoordinator turns "capture job J now" into one command per matching target on the
// agents that host them, with one shared start time, and follows each target's state
// PENDING -> RUNNING -> UPLOADING -> INDEXED, or FAILED with a reason a user can act on.
// Captures are kept in the store so they can be read after they end or the server restarts.
//
// Locks: mu_ guards the captures in memory (what Get, RunningCaptureOf and WaitForChange
// read) and is never held across a store write or a command sent to an agent. write_mu_
// orders the writers (Start, OnUpdate, the deadline loop) among themselves, so the store
// receives each capture's versions in the order they were made. Order: write_mu_, then mu_,
// then AgentRegistry's lock (List before write_mu_; Send under write_mu_ only: it just queues).
// stop_mu_ (Stop's alone) comes before them all.

#include <chrono>
#include <map>
#include <set>
#include <utility>
#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/periodic_loop.h"
#include "fleetprof/v1/capture.pb.h"
#include "server/fleet/agent_registry.h"
#include "storage/membership.h"
#include "server/server_metrics.h"
#include "storage/storage.h"

namespace fleetprof {

// Why a capture runs, kept on its record: a user's request unless a schedule, the sampling
// policy or a trigger started it.
struct CaptureOrigin {
  v1::Capture::Reason reason = v1::Capture::MANUAL;
  std::string schedule_id;  // SCHEDULED
  std::string trigger_id;   // TRIGGERED
  std::string evidence;     // TRIGGERED
  // SAMPLED: put on every target (CaptureTarget.weight_device_ns, inclusion_probability, devices).
  int64_t weight_device_ns = 0;
  double inclusion_probability = 0;
  int32_t devices = 0;
  static CaptureOrigin Scheduled(const std::string& schedule_id) {
    return {v1::Capture::SCHEDULED, schedule_id, "", ""};
  }
};

class CaptureCoordinator {
 public:
  // `shared`: a cluster replica. Targets then come from every replica's agents; a command for
  // an agent on another replica goes out from there (it sees the capture through the catalog's
  // watch: StoredCaptureChanged); every write merges with the stored capture (compare-and-set),
  // so replicas that update the same capture never undo each other's progress.
  CaptureCoordinator(Storage* store, AgentRegistry* registry, ServerMetrics* metrics,
                     Clock* clock, bool shared = false);
  ~CaptureCoordinator();  // Stop()s

  // Stops writing, for the server's drain (after the last call that could start a capture or
  // report progress, before storage is flushed): the write in progress (a start, an update, a
  // deadline pass, each with its store write) is waited for and the deadline loop ends. After
  // it Start answers UNAVAILABLE, updates, catalog changes and skipped runs are neither kept nor
  // stored, watchers return at once, and no deadline is checked (captures still running fail
  // at their deadline after the next start). Any thread, any number of times; a second Stop
  // waits too.
  void Stop() ABSL_LOCKS_EXCLUDED(stop_mu_, write_mu_, mu_);

  // Cluster mode, once the replica has joined: its id (stamped on the captures it starts) and
  // the membership whose published clocks say how far another replica's clock is from this
  // one's. Until then deadlines are not checked (a capture of a replica whose clock is off
  // would fail at once). `membership` outlives the coordinator.
  void UseReplicaClocks(Membership* membership, std::string replica_id);

  // A capture's length when the request names neither a duration nor iterations, and the most
  // it may ask for (a schedule's runs are held to the same).
  static constexpr int64_t kDefaultDurationMs = 2000;
  static constexpr int64_t kMaxDurationMs = 10 * 60 * 1000;

  using Origin = CaptureOrigin;

  // Picks the targets, sends the commands and returns the capture as it starts.
  // Transport-free: the gRPC CaptureService and the HTTP API both call these.
  absl::StatusOr<v1::Capture> Start(const v1::StartCaptureRequest& request, const Origin& origin = {});
  // The id of a RUNNING capture of `job`, or "" when there is none.
  std::string RunningCaptureOf(const std::string& job);
  // The targets of RUNNING captures whose own state is not final yet, as (node, TargetName),
  // and how many RUNNING captures are SAMPLED ones (the sampler's in flight).
  struct Running {
    std::set<std::pair<std::string, std::string>> busy_targets;
    int sampled_captures = 0;
  };
  Running RunningTargets();
  // Stores a scheduled run that did not start: a capture in state SKIPPED, `reason` its error.
  v1::Capture RecordSkipped(const v1::StartCaptureRequest& request, const Origin& origin, const std::string& reason);
  absl::StatusOr<v1::Capture> Get(const std::string& capture_id);
  // True when capture `capture_id` has a target on `node` (who may upload for it).
  bool HasTarget(const std::string& capture_id, const std::string& node);
  // Recent captures, newest first; INVALID_ARGUMENT for a limit outside 0..1000 (0 = 50).
  absl::StatusOr<v1::ListCapturesResponse> List(const v1::ListCapturesRequest& request);
  // Waits until the capture's version exceeds `*version` (or `timeout` passes); then fills
  // `*out` and `*version`. False if the capture is unknown.
  bool WaitForChange(const std::string& capture_id, int64_t* version, std::chrono::milliseconds timeout,
                     v1::Capture* out);
  // The catalog's record of the capture changed (another replica's write): its progress joins
  // this replica's copy (watchers wake), and agents on this replica get their commands.
  void StoredCaptureChanged(const std::string& capture_id) ABSL_LOCKS_EXCLUDED(write_mu_, mu_);
  // An agent reported progress on one of its targets.
  void OnUpdate(const std::string& node, const v1::CaptureUpdate& update) ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

  // Fails the targets of captures past their deadline (plus a grace for the agents' own
  // reasons) and forgets finished ones a minute after; returns when to look again. The
  // deadline loop's tick; public for tests.
  int64_t ExpireOverdue(int64_t now) ABSL_LOCKS_EXCLUDED(write_mu_, mu_);

 private:
  struct Active {
    v1::Capture capture;
    int64_t version = 0;
    // How far this replica's wall clock is ahead of the clock of the replica that started the
    // capture (all its times are on that one's), as the replicas' published clocks measure it
    // (ReplicaInfo.clock_unix_ns); 0 when started here or within
    // Membership::kTrustedClockSkewNs. Deadlines are
    // checked, and times sent to agents, on this replica's clock: a replica 300 s off must not
    // fail at once (or wait 5 minutes past) what another started.
    int64_t frame_offset_ns = 0;
  };
  // frame_offset_ns for `capture`: needs the membership (UseReplicaClocks); reads the catalog.
  int64_t MeasuredFrameOffset(const v1::Capture& capture) ABSL_LOCKS_EXCLUDED(mu_);
  int64_t FrameOffsetOf(const v1::Capture& capture, Membership* membership, const std::string& self);
  // Recomputes the capture's state and version and wakes its watchers; returns the copy to store.
  v1::Capture Changed(Active& active) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void Store(const v1::Capture& capture) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // The capture an earlier start with request.request_id() started (same job, recent), from
  // memory or the store; nullopt when there is none.
  absl::StatusOr<std::optional<v1::Capture>> FindByRequestId(const v1::StartCaptureRequest& request, int64_t now)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Shared: `capture` merged with the stored version, written by compare-and-set (retried when
  // another replica wrote first); returns what was stored.
  v1::Capture StoreMerged(const v1::Capture& capture) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);
  // Sends the commands of `capture`'s targets whose agents are on this replica and have not
  // had theirs from here.
  void SendLocalCommands(const v1::Capture& capture) ABSL_EXCLUSIVE_LOCKS_REQUIRED(write_mu_);

  Storage* store_;
  AgentRegistry* registry_;
  ServerMetrics* metrics_;
  Clock* clock_;
  const bool shared_;
  absl::Mutex write_mu_ ABSL_ACQUIRED_BEFORE(mu_);
  absl::Mutex mu_;
  std::map<std::string, Active> active_ ABSL_GUARDED_BY(mu_);  // captures still RUNNING, and recent ones
  // Shared: (capture, node) pairs whose commands went out from this replica.
  std::set<std::pair<std::string, std::string>> sent_ ABSL_GUARDED_BY(write_mu_);
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;  // watchers return (Stop)
  bool stopped_ ABSL_GUARDED_BY(write_mu_) = false;  // writers return (Stop)
  Membership* membership_ ABSL_GUARDED_BY(mu_) = nullptr;  // shared: set by UseReplicaClocks
  std::string replica_id_ ABSL_GUARDED_BY(mu_);
  // Held by Stop alone, across its waits; the loop is only set in the constructor and taken by Stop.
  absl::Mutex stop_mu_ ABSL_ACQUIRED_BEFORE(write_mu_);
  std::unique_ptr<PeriodicLoop> expirer_ ABSL_GUARDED_BY(stop_mu_);  // last: stops before the members it uses go
};

// "xprof:HOST:PORT" or "kineto:pid=N": how users and updates name a target.
std::string TargetName(const v1::Target& target);
// `ours` with every target that `stored` has further along (a final state is kept as first
// stored), and the capture state recomputed: two replicas' progress on one capture combined.
v1::Capture MergeCaptures(const v1::Capture& stored, const v1::Capture& ours);
// RUNNING while a target is unfinished; else DONE (all INDEXED), PARTIAL or FAILED.
v1::Capture::State CaptureStateOf(const v1::Capture& capture);

}  // namespace fleetprof
