#pragma once
// Captures of jobs running under an Nsight Systems session: a job started as
// `nsys launch --session-new=NAME …` with FLEETPROF_JOB and FLEETPROF_NSYS_SESSION=NAME in its
// environment (collectors/target_discovery.h). At the shared start the agent runs the node's
// nsys (--nsys) as the job's user: `nsys start --session=NAME --output=…nsys-rep` into that
// user's private folder, waits the capture's duration, `nsys stop --session=NAME`, and exports
// the report to SQLite (`nsys export --type sqlite`), which the runner uploads like any trace
// (format nsys_sqlite). The report is removed once exported.

#include <memory>

#include "agent/capture_backend.h"
#include "collectors/nsys_cli.h"

namespace fleetprof {

class NsysCaptureBackend final : public CaptureBackend {
 public:
  explicit NsysCaptureBackend(NsysCli nsys) : nsys_(std::move(nsys)) {}
  static std::unique_ptr<CaptureBackend> Make(const CaptureBackendDeps& deps);

  absl::StatusOr<CheckedFile> Capture(const v1::CaptureCommand& command, CaptureContext& context) override;

 private:
  // From `nsys start` to the report exported: the SQLite file in `folder` (beneath kineto_dir).
  absl::StatusOr<CheckedFile> Record(const v1::CaptureCommand& command, CaptureContext& context,
                                     const NsysUser& user, const std::string& folder);

  NsysCli nsys_;
};

}  // namespace fleetprof
