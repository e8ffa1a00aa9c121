#pragma once
// Captures of JAX, TensorFlow and PyTorch/XLA jobs through the XLA profiler service they serve
// (what `python -m jax.collect_profile` does). A job on this node's filesystem writes its trace
// into its user's private folder and the agent reads that file; otherwise the trace comes in
// the answer, held in memory within the agent's budget.

#include <memory>

#include "agent/capture_backend.h"

namespace fleetprof {

class XprofCaptureBackend final : public CaptureBackend {
 public:
  explicit XprofCaptureBackend(XprofCall call) : call_(std::move(call)) {}
  static std::unique_ptr<CaptureBackend> Make(const CaptureBackendDeps& deps);

  absl::StatusOr<CheckedFile> Capture(const v1::CaptureCommand& command, CaptureContext& context) override;

 private:
  XprofCall call_;
};

}  // namespace fleetprof
