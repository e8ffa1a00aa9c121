// `fleetprof capture`: capture running jobs across the fleet, optionally following progress.

#include <chrono>
#include <iostream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/summary_json.h"
#include "client/cli.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "client/upload_client.h"
#include "fleetprof/v1/capture.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace fleetprof::cli {
namespace {

std::string CaptureJson(const v1::Capture& capture) {
  std::string out = "{\"capture_id\":";
  analysis::AppendJsonString(&out, capture.capture_id());
  out += ",\"state\":";
  analysis::AppendJsonString(&out, capture.state());
  if (!capture.error().empty()) {
    out += ",\"error\":";
    analysis::AppendJsonString(&out, capture.error());
  }
  out += ",\"targets\":[";
  for (int i = 0; i < capture.targets_size(); ++i) {
    const auto& t = capture.targets(i);
    if (i > 0) out += ",";
    out += "{\"node\":";
    analysis::AppendJsonString(&out, t.node());
    out += ",\"target\":";
    analysis::AppendJsonString(&out, t.target());
    out += ",\"job\":";
    analysis::AppendJsonString(&out, t.job());
    out += ",\"state\":";
    analysis::AppendJsonString(&out, t.state());
    out += ",\"profile_id\":";
    analysis::AppendJsonString(&out, t.profile_id());
    out += ",\"error\":";
    analysis::AppendJsonString(&out, t.error());
    out += "}";
  }
  return out + "]}";
}

std::string CaptureTable(const v1::Capture& capture) {
  TablePrinter table({"NODE", "TARGET", "JOB", "STATE", "PROFILE", "ERROR"});
  for (const auto& t : capture.targets()) {
    table.AddRow({t.node(), t.target(), t.job(), t.state(), t.profile_id(), t.error()});
  }
  std::string out = absl::StrCat("capture ", capture.capture_id(), ": ", capture.state(), "\n");
  if (!capture.error().empty()) absl::StrAppend(&out, capture.error(), "\n");
  if (capture.targets_size() > 0) absl::StrAppend(&out, table.Render());
  return out;
}

int ExitCode(const v1::Capture& capture) {
  if (capture.state() == "DONE") return 0;
  if (capture.state() == "PARTIAL") return 3;
  return 1;
}

// Prints each target's state changes to stderr as they happen.
class ProgressPrinter {
 public:
  void Show(const v1::Capture& capture) {
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    for (const auto& t : capture.targets()) {
      std::string key = t.node() + " " + t.target();
      std::string now = t.state() + (t.error().empty() ? "" : ": " + t.error());
      if (seen_[key] == now) continue;
      seen_[key] = now;
      std::cerr << absl::StrFormat("[%6.1fs] %s  %s\n", seconds, key, now);
    }
  }

 private:
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
  std::map<std::string, std::string> seen_;
};

}  // namespace

int RunCapture(const CliOptions& options) {
  if (options.job.empty() && options.node.empty() && options.target.empty()) {
    return Fail("usage: fleetprof capture --job J [--node N] [--target T] [--duration_ms MS] [--wait]");
  }
  auto stub = v1::CaptureService::NewStub(MakeChannel(options.server));
  v1::StartCaptureRequest request;
  request.set_job(options.job);
  request.set_node(options.node);
  request.set_target(options.target);
  request.set_duration_ms(options.duration_ms);
  request.set_iterations(options.iterations);
  request.set_start_delay_ms(options.start_delay_ms);
  request.set_record_shapes(options.record_shapes);
  request.set_profile_memory(options.profile_memory);
  request.set_with_stack(options.with_stack);
  request.set_timeout_ms(options.capture_timeout_ms);
  v1::Capture capture;
  {
    grpc::ClientContext context;
    SetDeadline(&context, options);
    grpc::Status s = stub->StartCapture(&context, request, &capture);
    if (!s.ok()) {
      return FailRpc(s, options);
    }
  }
  if (options.wait && capture.state() == "RUNNING") {
    ProgressPrinter progress;
    progress.Show(capture);
    grpc::ClientContext context;
    v1::GetCaptureRequest watch;
    watch.set_capture_id(capture.capture_id());
    auto reader = stub->WatchCapture(&context, watch);
    v1::Capture update;
    while (reader->Read(&update)) {
      capture = update;
      progress.Show(capture);
    }
    grpc::Status s = reader->Finish();
    if (!s.ok()) return Fail(absl::StrCat("lost track of capture ", capture.capture_id(), ": ", s.error_message()));
  }
  if (options.json) {
    std::cout << CaptureJson(capture) << "\n";
  } else {
    std::cout << CaptureTable(capture);
  }
  if (!options.wait) return capture.state() == "FAILED" ? 1 : 0;
  return ExitCode(capture);
}

int RunCaptures(const CliOptions& options) {
  auto stub = v1::CaptureService::NewStub(MakeChannel(options.server));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListCapturesRequest request;
  request.set_job(options.job);
  request.set_limit(static_cast<int32_t>(options.limit));
  v1::ListCapturesResponse response;
  grpc::Status s = stub->ListCaptures(&context, request, &response);
  if (!s.ok()) {
    return FailRpc(s, options);
  }
  if (options.json) {
    std::string out = "{\"captures\":[";
    for (int i = 0; i < response.captures_size(); ++i) {
      if (i > 0) out += ",";
      out += CaptureJson(response.captures(i));
    }
    std::cout << out << "]}\n";
    return 0;
  }
  TablePrinter table({"CAPTURE", "JOB", "STATE", ">TARGETS", ">INDEXED"});
  for (const auto& c : response.captures()) {
    int indexed = 0;
    for (const auto& t : c.targets()) indexed += t.state() == "INDEXED" ? 1 : 0;
    table.AddRow({c.capture_id(), c.request().job(), c.state(), absl::StrCat(c.targets_size()),
                  absl::StrCat(indexed)});
  }
  std::cout << table.Render();
  return 0;
}

}  // namespace fleetprof::cli
