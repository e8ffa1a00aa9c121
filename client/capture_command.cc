// `fleetprof capture`: capture running jobs across the fleet, optionally following progress.

#include <chrono>
#include <iostream>
#include <map>
#include <thread>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "proto/proto_json.h"
#include "client/cli.h"
#include "common/clock.h"
#include "common/runtime.h"
#include "client/commands.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "rpc/upload_client.h"
#include "fleetprof/v1/capture.grpc.pb.h"
#include "grpcpp/grpcpp.h"

namespace fleetprof::cli {
namespace {

std::string CaptureTable(const v1::Capture& capture) {
  TablePrinter table({"NODE", "TARGET", "JOB", "STATE", "PROFILE", "ERROR"});
  for (const auto& t : capture.targets()) {
    table.AddRow({t.node(), t.target(), t.job(), v1::CaptureTarget::State_Name(t.state()), t.profile_id(), t.error()});
  }
  std::string out = absl::StrCat("capture ", capture.capture_id(), ": ", v1::Capture::State_Name(capture.state()), "\n");
  if (!capture.error().empty()) absl::StrAppend(&out, capture.error(), "\n");
  if (capture.targets_size() > 0) absl::StrAppend(&out, table.Render());
  return out;
}

int ExitCode(const v1::Capture& capture) {
  if (capture.state() == v1::Capture::DONE) return 0;
  if (capture.state() == v1::Capture::PARTIAL) return 3;
  return 1;
}

// Prints each target's state changes to stderr as they happen, timed from its creation.
class ProgressPrinter {
 public:
  explicit ProgressPrinter(const Clock& clock) : clock_(clock), start_ns_(clock.MonotonicNanos()) {}

  void Show(const v1::Capture& capture) {
    const double seconds = static_cast<double>(clock_.MonotonicNanos() - start_ns_) / 1e9;
    if (!start_shown_ && capture.start_time_unix_ns() > 0) {
      // When the trace starts and why then: a PyTorch job's start lies seconds out.
      start_shown_ = true;
      std::cerr << absl::StrFormat("[%6.1fs] trace starts %s (in %.1f s)%s\n", seconds,
                                   absl::FormatTime("%H:%M:%S", absl::FromUnixNanos(capture.start_time_unix_ns()),
                                                    absl::LocalTimeZone()),
                                   (capture.start_time_unix_ns() - clock_.Now()) / 1e9,
                                   capture.start_note().empty() ? "" : ": " + capture.start_note());
    }
    for (const auto& t : capture.targets()) {
      std::string key = t.node() + " " + t.target();
      std::string now = v1::CaptureTarget::State_Name(t.state());
      if (!t.error().empty()) {
        absl::StrAppend(&now, ": ", t.error());
      } else if (!t.note().empty() && t.state() <= v1::CaptureTarget::RUNNING) {
        absl::StrAppend(&now, ": ", t.note());
      }
      if (t.start_time_unix_ns() > capture.start_time_unix_ns() && capture.start_time_unix_ns() > 0) {
        absl::StrAppend(&now, absl::StrFormat(" (its trace starts %.1f s after the shared start)",
                                              (t.start_time_unix_ns() - capture.start_time_unix_ns()) / 1e9));
      }
      if (seen_[key] == now) continue;
      seen_[key] = now;
      std::cerr << absl::StrFormat("[%6.1fs] %s  %s\n", seconds, key, now);
    }
  }

 private:
  const Clock& clock_;
  const int64_t start_ns_;
  bool start_shown_ = false;
  std::map<std::string, std::string> seen_;
};

}  // namespace

int RunCapture(const CliOptions& options, Clock* clock) {
  if (options.job.empty() && options.node.empty() && options.target.empty()) {
    return FailUsage("capture");
  }
  auto stub = v1::CaptureService::NewStub(MakeChannel(options.server, options.security));
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
  // The channel retries a start that failed UNAVAILABLE on another replica: with this id the
  // server answers a repeat with the capture the first one started, never a second capture.
  request.set_request_id(RandomHex(12));
  v1::Capture capture;
  {
    grpc::ClientContext context;
    SetDeadline(&context, options);
    grpc::Status s = stub->StartCapture(&context, request, &capture);
    if (!s.ok()) {
      return FailRpc(s, options);
    }
  }
  if (options.wait && capture.state() == v1::Capture::RUNNING) {
    ProgressPrinter progress(*clock);
    progress.Show(capture);
    // The server fails a capture's targets soon after its deadline; a watch that outlives
    // that by a minute is talking to a server that stopped answering.
    const std::chrono::system_clock::time_point give_up =
        capture.deadline_unix_ns() > 0 ? GrpcDeadlineAt(capture.deadline_unix_ns()) + std::chrono::minutes(1)
                                       : GrpcDeadlineAt(clock->Now()) + std::chrono::hours(2);
    v1::GetCaptureRequest watch;
    watch.set_capture_id(capture.capture_id());
    // A replica that restarts or goes away ends the watch; the capture goes on (its record is in
    // the catalog), so the watch is opened again, on whichever replica the channel reaches.
    while (capture.state() == v1::Capture::RUNNING) {
      grpc::ClientContext context;
      context.set_deadline(give_up);
      auto reader = stub->WatchCapture(&context, watch);
      v1::Capture update;
      while (reader->Read(&update)) {
        capture = update;
        progress.Show(capture);
      }
      grpc::Status s = reader->Finish();
      if (s.ok() || capture.state() != v1::Capture::RUNNING) break;
      const bool reconnect = s.error_code() == grpc::StatusCode::UNAVAILABLE || s.error_code() == grpc::StatusCode::CANCELLED ||
                             s.error_code() == grpc::StatusCode::UNKNOWN;
      if (!reconnect || GrpcDeadlineAt(clock->Now()) >= give_up) {
        return Fail(absl::StrCat("lost track of capture ", capture.capture_id(), ": ", s.error_message()));
      }
      std::cerr << "[watch] " << s.error_message() << "; following capture " << capture.capture_id() << " again\n";
      std::this_thread::sleep_for(std::chrono::milliseconds(500));
    }
  }
  if (options.json) {
    std::cout << ProtoToJson(capture) << "\n";
  } else {
    std::cout << CaptureTable(capture);
  }
  if (!options.wait) return capture.state() == v1::Capture::FAILED ? 1 : 0;
  return ExitCode(capture);
}

int RunCaptures(const CliOptions& options) {
  auto stub = v1::CaptureService::NewStub(MakeChannel(options.server, options.security));
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
    std::cout << ProtoToJson(response) << "\n";
    return 0;
  }
  TablePrinter table({"CAPTURE", "JOB", "REASON", "STATE", ">TARGETS", ">INDEXED"});
  for (const auto& c : response.captures()) {
    int indexed = 0;
    for (const auto& t : c.targets()) indexed += t.state() == v1::CaptureTarget::INDEXED ? 1 : 0;
    // Captures stored before reasons were kept: a schedule's run, else a user's.
    const std::string reason = c.has_reason() ? v1::Capture::Reason_Name(c.reason())
                               : c.schedule_id().empty() ? "MANUAL" : "SCHEDULED";
    table.AddRow({c.capture_id(), c.request().job(), reason, v1::Capture::State_Name(c.state()),
                  absl::StrCat(c.targets_size()), absl::StrCat(indexed)});
  }
  std::cout << table.Render();
  return 0;
}

}  // namespace fleetprof::cli
