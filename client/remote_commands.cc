// CLI commands that talk to fleetprof-server.

#include <chrono>
#include <iostream>
#include <unistd.h>

#include "absl/strings/str_cat.h"
#include "analysis/summary_json.h"
#include "client/cli.h"
#include "client/json_format.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "client/upload_client.h"
#include "common/runtime.h"
#include "fleetprof/v1/agent.grpc.pb.h"
#include "fleetprof/v1/query.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/summary_codec.h"

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
    Fail(absl::StrCat("usage: fleetprof ", command, " PROFILE_ID [--json] [--limit N]"));
    return "";
  }
  return options.args[0];
}

}  // namespace

int RunUpload(const CliOptions& options) {
  if (options.args.size() != 1) {
    return Fail("usage: fleetprof upload FILE --job J [--node N] [--label k=v] [--format F]");
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
  auto response = UploadFile(MakeChannel(options.server), upload);
  if (show_progress) std::cerr << "\r\033[K";
  if (!response.ok()) return Fail(std::string(response.status().message()));
  if (options.json) {
    std::string out = "{\"profile_id\":";
    analysis::AppendJsonString(&out, response->profile_id());
    std::cout << out << "}\n";
  } else {
    std::cout << "profile " << response->profile_id()
              << (response->already_existed() ? " (already uploaded)" : "") << "\n";
  }
  return 0;
}

int RunProfiles(const CliOptions& options) {
  auto stub = v1::QueryService::NewStub(MakeChannel(options.server));
  v1::ListProfilesRequest request;
  request.set_job(options.job);
  std::map<std::string, std::string> labels;
  std::string error;
  if (!ParseLabels(options.labels, &labels, &error)) return Fail(error);
  for (const auto& [key, value] : labels) (*request.mutable_labels())[key] = value;
  request.set_page_size(1000);
  std::vector<v1::ProfileInfo> profiles;
  do {
    grpc::ClientContext context;
    SetDeadline(&context, options);
    v1::ListProfilesResponse response;
    grpc::Status s = stub->ListProfiles(&context, request, &response);
    if (!s.ok()) return FailRpc(s, options);
    for (const auto& p : response.profiles()) profiles.push_back(p);
    request.set_page_token(response.next_page_token());
  } while (!request.page_token().empty() &&
           (options.limit <= 0 || static_cast<int64_t>(profiles.size()) < options.limit));

  if (options.json) {
    std::string out = "{\"profiles\":[";
    for (size_t i = 0; i < profiles.size(); ++i) {
      if (i > 0) out += ",";
      out += ProfileInfoJson(profiles[i]);
    }
    std::cout << out << "]}\n";
    return 0;
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

// Fetches the stored summary of the profile named on the command line.
bool FetchSummary(const CliOptions& options, const char* command, analysis::TraceSummary* out) {
  std::string id = RequireProfileId(options, command);
  if (id.empty()) return false;
  auto stub = v1::QueryService::NewStub(MakeChannel(options.server));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::GetProfileRequest request;
  request.set_profile_id(id);
  v1::GetProfileResponse response;
  grpc::Status s = stub->GetProfile(&context, request, &response);
  if (!s.ok()) {
    FailRpc(s, options);
    return false;
  }
  *out = SummaryFromProto(response.summary());
  return true;
}

int PrintSection(const CliOptions& options, const char* command, bool devices, bool kernels,
                 bool ops) {
  analysis::TraceSummary summary;
  if (!FetchSummary(options, command, &summary)) return 1;
  if (options.json) {
    analysis::SummaryJsonSections sections;
    sections.devices = devices;
    sections.kernels = kernels;
    sections.ops = ops;
    sections.steps = sections.memory = sections.metadata = sections.xla_ops = false;
    std::cout << analysis::SummaryToJson(summary, sections) << "\n";
  } else if (devices) {
    std::cout << DevicesTable(summary.devices);
  } else if (kernels) {
    std::cout << KernelsTable(summary.kernels, options.limit);
  } else {
    std::cout << OpsTable(summary.ops, options.limit);
  }
  return 0;
}

}  // namespace

int RunOps(const CliOptions& options) { return PrintSection(options, "ops", false, false, true); }
int RunKernels(const CliOptions& options) {
  return PrintSection(options, "kernels", false, true, false);
}
int RunBreakdown(const CliOptions& options) {
  return PrintSection(options, "breakdown", true, false, false);
}

int RunAgents(const CliOptions& options) {
  auto stub = v1::AgentService::NewStub(MakeChannel(options.server));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListAgentsResponse response;
  grpc::Status s = stub->ListAgents(&context, v1::ListAgentsRequest(), &response);
  if (!s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::string out = "{\"agents\":[";
    for (int i = 0; i < response.agents_size(); ++i) {
      const auto& a = response.agents(i);
      if (i > 0) out += ",";
      out += "{\"node\":";
      analysis::AppendJsonString(&out, a.node());
      out += ",\"state\":";
      analysis::AppendJsonString(&out, a.state());
      absl::StrAppend(&out, ",\"last_seen_ns\":", a.last_seen_ns(), ",\"targets\":[");
      for (int t = 0; t < a.targets_size(); ++t) {
        const auto& target = a.targets(t);
        if (t > 0) out += ",";
        out += "{\"job\":";
        analysis::AppendJsonString(&out, target.job());
        out += ",\"kind\":";
        analysis::AppendJsonString(&out, target.kind());
        absl::StrAppend(&out, ",\"pid\":", target.pid(), ",\"address\":");
        analysis::AppendJsonString(&out, target.address());
        out += "}";
      }
      out += "]}";
    }
    std::cout << out << "]}\n";
    return 0;
  }
  TablePrinter table({"NODE", "STATE", ">LAST SEEN", ">TARGETS", "VERSION"});
  const int64_t now = UnixNanos();
  for (const auto& a : response.agents()) {
    table.AddRow({a.node(), a.state(), FormatNanos(now - a.last_seen_ns()) + " ago",
                  absl::StrCat(a.targets_size()), a.version()});
  }
  std::cout << table.Render();
  return 0;
}

}  // namespace fleetprof::cli
