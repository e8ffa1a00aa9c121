#pragma once
// Captures of PyTorch jobs through libkineto's daemon protocol: the job polls this agent's
// Kineto endpoint, takes a config that names a trace file in its user's private folder, traces
// from the shared start after its warm-up, and writes the file itself (docs/captures.md).

#include <memory>

#include "agent/capture_backend.h"
#include "collectors/kineto_endpoint.h"

namespace fleetprof {

class KinetoCaptureBackend final : public CaptureBackend {
 public:
  explicit KinetoCaptureBackend(KinetoEndpoint* kineto) : kineto_(kineto) {}
  static std::unique_ptr<CaptureBackend> Make(const CaptureBackendDeps& deps);

  absl::StatusOr<CheckedFile> Capture(const v1::CaptureCommand& command, CaptureContext& context) override;

 private:
  // Waits until the job takes the config TriggerProcess queued (or the capture gives up on
  // it): how many ns later than the shared start its trace starts (0 unless moved).
  absl::StatusOr<int64_t> AwaitHandout(const v1::CaptureCommand& command, const KinetoTrigger& trigger,
                                       const KinetoTraceRequest& request, CaptureContext& context);
  // The wait up to the last moment the job can take a fixed start (start - warm-up): a fixed
  // start still pending then is withdrawn with the reason (the error returned); a movable one
  // tells the user why it waits.
  absl::Status AwaitWarmupBound(const v1::CaptureCommand& command, const KinetoTrigger& trigger,
                                const KinetoTraceRequest& request, CaptureContext& context);

  KinetoEndpoint* kineto_;
};

}  // namespace fleetprof
