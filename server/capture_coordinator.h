#pragma once
// CaptureCoordinator turns "capture job J now" into one command per matching target on the
// agents that host them, with one shared start time, and follows each target's state
// PENDING -> RUNNING -> UPLOADING -> INDEXED, or FAILED with a reason a user can act on.
// Captures are kept in the store so they can be read after they end or the server restarts.

#include <condition_variable>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "fleetprof/v1/capture.pb.h"
#include "server/agent_registry.h"
#include "server/server_metrics.h"
#include "storage/profile_store.h"

namespace fleetprof {

class CaptureCoordinator {
 public:
  CaptureCoordinator(ProfileStore* store, AgentRegistry* registry, ServerMetrics* metrics);
  ~CaptureCoordinator();

  // Picks the targets, sends the commands and returns the capture as it starts.
  // Transport-free: the gRPC CaptureService and the HTTP API both call these.
  absl::StatusOr<v1::Capture> Start(const v1::StartCaptureRequest& request, const std::string& schedule_id = "");
  // The id of a RUNNING capture of `job`, or "" when there is none.
  std::string RunningCaptureOf(const std::string& job);
  // Stores a scheduled run that did not start: a capture in state SKIPPED, `reason` its error.
  v1::Capture RecordSkipped(const v1::StartCaptureRequest& request, const std::string& schedule_id,
                            const std::string& reason);
  absl::StatusOr<v1::Capture> Get(const std::string& capture_id);
  // True when capture `capture_id` has a target on `node` (who may upload for it).
  bool HasTarget(const std::string& capture_id, const std::string& node);
  // Recent captures, newest first; INVALID_ARGUMENT for a limit outside 0..1000 (0 = 50).
  absl::StatusOr<v1::ListCapturesResponse> List(const v1::ListCapturesRequest& request);
  // Waits until the capture's version exceeds `*version` (or `timeout` passes); then fills
  // `*out` and `*version`. False if the capture is unknown.
  bool WaitForChange(const std::string& capture_id, int64_t* version, std::chrono::milliseconds timeout,
                     v1::Capture* out);
  // An agent reported progress on one of its targets.
  void OnUpdate(const std::string& node, const v1::CaptureUpdate& update);

 private:
  struct Active {
    v1::Capture capture;
    int64_t version = 0;
  };
  // REQUIRES: mu_ held. Recomputes the capture state, persists, wakes watchers.
  void Changed(Active& active);
  void ExpireLoop();

  ProfileStore* store_;
  AgentRegistry* registry_;
  ServerMetrics* metrics_;
  std::mutex mu_;
  std::condition_variable changed_;
  std::map<std::string, Active> active_;  // captures still RUNNING, and recent ones
  bool stopping_ = false;
  std::thread expirer_;
};

// "xprof:HOST:PORT" or "kineto:pid=N": how users and updates name a target.
std::string TargetName(const v1::Target& target);
// RUNNING while a target is unfinished; else DONE (all INDEXED), PARTIAL or FAILED.
v1::Capture::State CaptureStateOf(const v1::Capture& capture);

}  // namespace fleetprof
