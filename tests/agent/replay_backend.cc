#include "tests/agent/replay_backend.h"

#include <unistd.h>

#include <filesystem>

#include "absl/strings/str_cat.h"

namespace fleetprof::testing {

std::unique_ptr<CaptureBackend> ReplayBackend::Make(const CaptureBackendDeps&) {
  return std::make_unique<ReplayBackend>();
}

absl::StatusOr<CheckedFile> ReplayBackend::Capture(const v1::CaptureCommand& command, CaptureContext& context) {
  if (context.cancelled()) return absl::CancelledError("the agent is stopping");
  const std::filesystem::path recorded = command.target().address();
  const std::filesystem::path copy = std::filesystem::path(context.settings().xprof_dir) /
                                     absl::StrCat(SafeFileName(command.capture_id()), "-", recorded.filename().string());
  std::error_code ec;
  std::filesystem::copy_file(recorded, copy, std::filesystem::copy_options::overwrite_existing, ec);
  if (ec) return absl::NotFoundError(absl::StrCat("cannot replay ", recorded.string(), ": ", ec.message()));
  context.ReportRunning(0, "replayed");
  return CheckedFile::Open(copy.string(), {static_cast<int64_t>(::geteuid())});
}

}  // namespace fleetprof::testing
