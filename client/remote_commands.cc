// CLI commands that talk to fleetprof-server.

#include <chrono>
#include <iostream>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "rpc/upload_client.h"
#include "common/clock.h"
#include "common/runtime.h"
#include "fleetprof/v1/agent.grpc.pb.h"
#include "fleetprof/v1/query.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/proto_json.h"

namespace fleetprof::cli {
namespace {


std::string LabelsText(const google::protobuf::Map<std::string, std::string>& labels) {
  std::map<std::string, std::string> sorted(labels.begin(), labels.end());
  std::string out;
  for (const auto& [key, value] : sorted) absl::StrAppend(&out, out.empty() ? "" : ",", key, "=", value);
  return out;
}

std::string RequireProfileId(const CliOptions& options, const char* command) {
  if (options.args.size() != 1) {
    FailUsage(command);
    return "";
  }
  return options.args[0];
}

}  // namespace

int RunUpload(const CliOptions& options) {
  if (options.args.size() != 1) {
    return FailUsage("upload");
  }
  UploadOptions upload;
  upload.path = options.args[0];
  upload.job = options.job.empty() ? "unassigned" : options.job;
  upload.node = options.node.empty() ? HostName() : options.node;
  upload.format = options.format;
  upload.upload_id = options.upload_id;
  std::string error;
  if (!ParseLabels(options.labels, &upload.labels, &error)) return Fail(error);
  const bool show_progress = isatty(STDERR_FILENO) != 0;
  if (show_progress) {
    upload.progress = [](int64_t sent, int64_t total) {
      std::cerr << "\rupload: " << (sent >> 20) << " / " << (total >> 20) << " MiB" << std::flush;
    };
  }
  auto response = UploadFile(MakeChannel(options.server, options.security), upload);
  if (show_progress) std::cerr << "\r\033[K";
  if (!response.ok()) return Fail(std::string(response.status().message()));
  if (options.json) {
    v1::UploadResponse printed;
    printed.set_profile_id(response->profile_id());  // the documented shape: {"profile_id":…}
    std::cout << ProtoToJson(printed) << "\n";
  } else {
    std::cout << "profile " << response->profile_id()
              << (response->already_existed() ? " (already uploaded)" : "") << "\n";
  }
  return 0;
}

int RunProfiles(const CliOptions& options) {
  auto stub = v1::QueryService::NewStub(MakeChannel(options.server, options.security));
  v1::ListProfilesRequest request;
  request.set_job(options.job);
  std::map<std::string, std::string> labels;
  std::string error;
  if (!ParseLabels(options.labels, &labels, &error)) return Fail(error);
  for (const auto& [key, value] : labels) (*request.mutable_labels())[key] = value;
  request.set_page_size(1000);
  v1::ListProfilesResponse all;
  auto& profiles = *all.mutable_profiles();
  do {
    grpc::ClientContext context;
    SetDeadline(&context, options);
    v1::ListProfilesResponse response;
    grpc::Status s = stub->ListProfiles(&context, request, &response);
    if (!s.ok()) return FailRpc(s, options);
    for (auto& p : *response.mutable_profiles()) profiles.Add(std::move(p));
    for (auto& bad : *response.mutable_unreadable()) *all.add_unreadable() = std::move(bad);
    request.set_page_token(response.next_page_token());
  } while (!request.page_token().empty() &&
           (options.limit <= 0 || static_cast<int64_t>(profiles.size()) < options.limit));

  if (options.json) {
    std::cout << ProtoToJson(all) << "\n";
    return 0;
  }
  for (const v1::UnreadableProfile& bad : all.unreadable()) {
    std::cerr << "warning: stored profile " << bad.profile_id() << " cannot be read: " << bad.error() << "\n";
  }
  TablePrinter table({"PROFILE", "JOB", "NODE", "FORMAT", ">DURATION", ">EVENTS", "FILE", "LABELS"});
  for (const auto& p : profiles) {
    table.AddRow({p.profile_id(), p.job(), p.node(), p.format(), FormatNanos(p.end_ns() - p.start_ns()),
                  absl::StrCat(p.events()), p.file_name(), LabelsText(p.labels())});
  }
  std::cout << table.Render();
  return 0;
}

namespace {

// Calls one breakdown RPC for the profile named on the command line and prints its answer:
// the response message as JSON, or `table` of it.
template <typename Response, typename Call, typename Table>
int PrintSection(const CliOptions& options, const char* command, Call call, Table table) {
  std::string id = RequireProfileId(options, command);
  if (id.empty()) return 1;
  auto stub = v1::QueryService::NewStub(MakeChannel(options.server, options.security));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::BreakdownRequest request;
  request.set_profile_id(id);
  Response response;
  grpc::Status s = ((*stub).*call)(&context, request, &response);
  if (!s.ok()) return FailRpc(s, options);
  std::cout << (options.json ? ProtoToJson(response) + "\n" : table(response));
  return 0;
}

}  // namespace

int RunOps(const CliOptions& options) {
  return PrintSection<v1::OpBreakdownResponse>(
      options, "ops", &v1::QueryService::Stub::OpBreakdown,
      [&](const v1::OpBreakdownResponse& r) { return OpsTable(r.ops(), options.limit); });
}
int RunKernels(const CliOptions& options) {
  return PrintSection<v1::KernelBreakdownResponse>(
      options, "kernels", &v1::QueryService::Stub::KernelBreakdown,
      [&](const v1::KernelBreakdownResponse& r) { return KernelsTable(r.kernels(), options.limit); });
}
int RunBreakdown(const CliOptions& options) {
  return PrintSection<v1::TemporalBreakdownResponse>(
      options, "breakdown", &v1::QueryService::Stub::TemporalBreakdown,
      [](const v1::TemporalBreakdownResponse& r) { return DevicesTable(r.devices()); });
}

int RunAgents(const CliOptions& options) {
  auto stub = v1::AgentService::NewStub(MakeChannel(options.server, options.security));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListAgentsResponse response;
  grpc::Status s = stub->ListAgents(&context, v1::ListAgentsRequest(), &response);
  if (!s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::cout << ProtoToJson(response) << "\n";
    return 0;
  }
  TablePrinter table({"NODE", "STATE", ">LAST SEEN", ">TARGETS", "VERSION"});
  const int64_t now = RealClock()->Now();
  for (const auto& a : response.agents()) {
    table.AddRow({a.node(), v1::AgentInfo::State_Name(a.state()), FormatNanos(now - a.last_seen_ns()) + " ago",
                  absl::StrCat(a.targets_size()), a.version()});
  }
  std::cout << table.Render();
  return 0;
}

}  // namespace fleetprof::cli
