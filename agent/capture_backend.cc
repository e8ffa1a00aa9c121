#include "agent/capture_backend.h"

#include <array>

#include "agent/kineto_backend.h"
#include "agent/nsys_backend.h"
#include "agent/xprof_backend.h"

namespace fleetprof {
namespace {

// One row per kind of target the agent captures: the one place a profiler is added.
constexpr std::array<CaptureBackendRow, 3> kCaptureBackends = {{
    {v1::Target::xprof, "XLA profiler service", &XprofCaptureBackend::Make},
    {v1::Target::kineto, "Kineto", &KinetoCaptureBackend::Make},
    {v1::Target::nsys, "Nsight Systems session", &NsysCaptureBackend::Make},
}};

}  // namespace

std::span<const CaptureBackendRow> DefaultCaptureBackends() { return kCaptureBackends; }

}  // namespace fleetprof
