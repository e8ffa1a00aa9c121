#include "auth/access_policy.h"

#include <array>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace fleetprof {
namespace {

constexpr AccessRule kPublic{true, Scope::kRead};
constexpr AccessRule Needs(Scope scope) { return AccessRule{false, scope}; }

// gRPC's own services, whose every method needs one rule. (The server offers reflection
// only while authentication is off: with tokens the schema is the .proto files.)
constexpr std::array<std::pair<std::string_view, AccessRule>, 2> kServices = {{
    {"/grpc.health.v1.Health/", kPublic},
    {"/grpc.reflection.v1alpha.ServerReflection/", Needs(Scope::kRead)},
}};

// fleetprof's methods, each by name: a new one is refused until it is listed here.
constexpr std::array<std::pair<std::string_view, AccessRule>, 27> kMethods = {{
    {"/fleetprof.v1.QueryService/ListProfiles", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/GetProfile", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/OpBreakdown", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/KernelBreakdown", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/TemporalBreakdown", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/StepBreakdown", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/MemoryBreakdown", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/XlaOpBreakdown", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/ExportProfile", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/GetTraceWindow", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/GetRangeBreakdown", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/DeleteProfile", Needs(Scope::kAdmin)},
    {"/fleetprof.v1.QueryService/Diff", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/JobOps", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/JobSeries", Needs(Scope::kRead)},
    {"/fleetprof.v1.QueryService/Diagnose", Needs(Scope::kRead)},
    {"/fleetprof.v1.IngestService/Upload", Needs(Scope::kIngest)},
    {"/fleetprof.v1.IngestService/GetUploadState", Needs(Scope::kIngest)},
    {"/fleetprof.v1.CaptureService/StartCapture", Needs(Scope::kCapture)},
    {"/fleetprof.v1.CaptureService/GetCapture", Needs(Scope::kRead)},
    {"/fleetprof.v1.CaptureService/ListCaptures", Needs(Scope::kRead)},
    {"/fleetprof.v1.CaptureService/WatchCapture", Needs(Scope::kRead)},
    {"/fleetprof.v1.ScheduleService/CreateSchedule", Needs(Scope::kCapture)},
    {"/fleetprof.v1.ScheduleService/ListSchedules", Needs(Scope::kRead)},
    {"/fleetprof.v1.ScheduleService/DeleteSchedule", Needs(Scope::kCapture)},
    {"/fleetprof.v1.AgentService/Connect", Needs(Scope::kAgent)},
    {"/fleetprof.v1.AgentService/ListAgents", Needs(Scope::kRead)},
}};

}  // namespace

absl::StatusOr<AccessRule> RuleForGrpcMethod(std::string_view full_method) {
  for (const auto& [method, rule] : kMethods) {
    if (full_method == method) return rule;
  }
  for (const auto& [prefix, rule] : kServices) {
    if (full_method.substr(0, prefix.size()) == prefix) return rule;
  }
  return absl::PermissionDeniedError(
      absl::StrCat(std::string(full_method), " has no access rule (auth/access_policy.cc), so nobody may call it"));
}

AccessRule RuleForHttp(std::string_view method, std::string_view path) {
  if (path == "/metrics") return Needs(Scope::kRead);
  if (path.substr(0, 5) != "/api/") return kPublic;  // /healthz, the web app and its assets
  if (method == "GET" || method == "HEAD") return Needs(Scope::kRead);
  if (method == "POST" && path == "/api/v1/captures") return Needs(Scope::kCapture);
  // Schedules start captures: creating and removing one is the capture scope's business.
  if (method == "POST" && path == "/api/v1/schedules") return Needs(Scope::kCapture);
  if (method == "DELETE" && path.substr(0, 18) == "/api/v1/schedules/") return Needs(Scope::kCapture);
  return Needs(Scope::kAdmin);  // DELETE and every write without a rule of its own
}

}  // namespace fleetprof
