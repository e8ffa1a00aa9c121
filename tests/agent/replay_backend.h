#pragma once
// A capture backend made in a test, as a new profiler would be added to the agent: this file
// pair and one row in the runner's table (capture_backend_test.cc). It "captures" by copying
// a recorded trace, named by the target's address, into the agent's own folder: the runner
// then uploads and removes it like any captured trace.

#include <memory>

#include "agent/capture_backend.h"

namespace fleetprof::testing {

// No kind in the proto names it: the daemon's table does not have it.
inline constexpr v1::Target::Kind kReplayKind = static_cast<v1::Target::Kind>(100);

class ReplayBackend final : public CaptureBackend {
 public:
  static std::unique_ptr<CaptureBackend> Make(const CaptureBackendDeps& deps);
  absl::StatusOr<CheckedFile> Capture(const v1::CaptureCommand& command, CaptureContext& context) override;
};

}  // namespace fleetprof::testing
