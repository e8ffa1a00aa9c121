#pragma once
// TriggerRunner fires the triggers (trigger_store.h): a firing starts a capture of the trigger's
// job with reason TRIGGERED, its id and the evidence, unless the trigger's cooldown holds or the
// sampling budget refuses the device-time (both counted as suppressed). Three sources:
// - device conditions, decided by the agents on their own NVML samples (TriggerFiring over the
//   agent link): this runner keeps every connected agent's copy of the device triggers current
//   (on connect, and when the set changes: a loop reads the catalog every kRefreshNs, so a
//   trigger added through another replica reaches this replica's agents too);
// - `rule NAME`, run when a profile of the job is committed (OnProfileCommitted);
// - `regression`, when the regression detector made a record for the job (OnRegressions).
// Cluster: the cooldown is claimed by compare-and-set on the stored trigger, so replicas that
// see one condition start one capture. The commit hooks and the agents' firings queue their
// work on a thread of the runner's own: ingest never waits on a diagnosis, nor gRPC on the catalog.

#include <atomic>
#include <functional>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "common/clock.h"
#include "common/periodic_loop.h"
#include "common/worker_pool.h"
#include "fleetprof/v1/agent.pb.h"
#include "fleetprof/v1/compare.pb.h"
#include "fleetprof/v1/profile.pb.h"
#include "fleetprof/v1/regression.pb.h"
#include "prometheus/counter.h"
#include "prometheus/family.h"
#include "prometheus/registry.h"
#include "server/fleet/agent_registry.h"
#include "server/fleet/capture_coordinator.h"
#include "server/fleet/trigger_store.h"

namespace fleetprof {

class TriggerRunner {
 public:
  static constexpr int64_t kRefreshNs = int64_t{2} * 1'000'000'000;
  static constexpr int kMaxQueuedChecks = 1000;  // commit hooks waiting; past it they are dropped (logged)

  struct Hooks {
    // The sampling budget (Sampler::ReserveTriggered): true when a capture of `device_ns` fits
    // in the current period, which it then counts. Null: every firing fits.
    std::function<bool(int64_t device_ns)> reserve;
    // A diagnosis, as QueryApi::Diagnose answers it (`rule NAME` triggers).
    std::function<absl::StatusOr<v1::DiagnoseResponse>(const v1::DiagnoseRequest&)> diagnose;
    // The rules that judge a job's ranks together (diagnosed by job, not by profile).
    std::set<std::string> job_rules;
  };

  enum class Outcome { kStarted, kCooldown, kBudget, kGone, kFailed };

  // None of the pointers is owned; each outlives the runner. Starts the refresh loop and the
  // thread of the commit hooks.
  TriggerRunner(TriggerStore* store, CaptureCoordinator* captures, AgentRegistry* agents, prometheus::Registry* metrics,
                Clock* clock, Hooks hooks);
  ~TriggerRunner();

  // Fires trigger `trigger_id` with `evidence` (see the header comment); `devices`, at least 1,
  // sizes the device-time asked of the budget (devices x the capture's duration). `node`, when
  // set, limits the capture to that node's targets (a device firing: see FireFromAgent).
  Outcome Fire(const std::string& trigger_id, const std::string& evidence, int devices, const std::string& node = "");

  // An agent's firing, judged on the runner's thread (at most kMaxQueuedChecks waiting, so a
  // node that floods firings cannot grow the server's memory). Returns at once: safe on gRPC's
  // callback threads.
  void OnAgentFiring(const std::string& node, const v1::TriggerFiring& firing);
  // A profile was committed: its job's `rule` triggers run their rule. Returns at once.
  void OnProfileCommitted(const v1::ProfileInfo& info);
  // The detector made `found` for a profile of `job`: its `regression` triggers fire. Returns at once.
  void OnRegressions(const std::string& job, const std::vector<v1::Regression>& found);

  // An agent's stream said hello: it gets the device triggers now. Never blocks.
  void AgentConnected(const std::string& node);
  // Re-reads the device triggers now (after an add or a remove through this replica).
  void Nudge() ABSL_LOCKS_EXCLUDED(stop_mu_);
  // Stops firing, for the server's drain (before storage is flushed): the refresh loop ends
  // (after the refresh in progress), queued checks and firings not yet started are dropped (the
  // captures they would start reach no agent once the drain closes the streams), and the one in
  // progress is waited for. Firings and commits after it are ignored. Any thread, more than once.
  // The destructor, without Stop, still runs what is queued.
  void Stop() ABSL_LOCKS_EXCLUDED(stop_mu_);
  // Stop has begun: work not yet started is refused from here on. For tests that hold the
  // work in progress and must know Stop is under way before they let it go.
  bool stopping() const { return stopping_.load(); }
  // The loop's tick: reads the device triggers and sends them to every connected agent when
  // they changed. Public for tests.
  int64_t Refresh(int64_t now) ABSL_LOCKS_EXCLUDED(mu_);

 private:
  void FireFromAgent(const std::string& node, const v1::TriggerFiring& firing);
  void CheckRules(const v1::ProfileInfo& info);
  void FireRegressions(const std::string& job, const v1::Regression& first);
  // Queues `work` on the hooks' thread, unless kMaxQueuedChecks are waiting or Stop ran.
  void Queue(const char* what, std::function<void()> work) ABSL_LOCKS_EXCLUDED(stop_mu_);
  void Count(const std::string& kind, Outcome outcome);

  TriggerStore* store_;
  CaptureCoordinator* captures_;
  AgentRegistry* agents_;
  Clock* clock_;
  const Hooks hooks_;
  prometheus::Family<prometheus::Counter>* firings_;
  prometheus::Family<prometheus::Counter>* suppressed_;
  absl::Mutex mu_;
  v1::ServerMessage device_triggers_ ABSL_GUARDED_BY(mu_);  // what agents hold, as last sent
  std::string device_triggers_bytes_ ABSL_GUARDED_BY(mu_);
  std::atomic<int> queued_{0};
  std::atomic<int64_t> dropped_{0};
  std::atomic<bool> stopping_{false};  // queued work not yet started returns at once
  // Guards the pool and the loop against Stop (Queue and Nudge run on gRPC's and ingest's
  // threads meanwhile); held only to post, nudge or take them, never across their work.
  absl::Mutex stop_mu_;
  std::unique_ptr<WorkerPool> checks_ ABSL_GUARDED_BY(stop_mu_);  // the commit hooks' thread
  std::unique_ptr<PeriodicLoop> loop_ ABSL_GUARDED_BY(stop_mu_);  // last: stops first
};

}  // namespace fleetprof
