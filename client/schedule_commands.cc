// `fleetprof schedule`, `schedules` and `unschedule`: periodic captures kept by the server.

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/duration_flag.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "fleetprof/v1/schedule.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/proto_json.h"
#include "rpc/upload_client.h"

namespace fleetprof::cli {
namespace {

std::unique_ptr<v1::ScheduleService::Stub> Stub(const CliOptions& options) {
  return v1::ScheduleService::NewStub(MakeChannel(options.server, options.security));
}

std::string ScheduleTable(const v1::ListSchedulesResponse& response) {
  TablePrinter table({"SCHEDULE", "JOB", ">EVERY", ">DURATION", ">RUNS", ">SKIPPED", "NEXT RUN", "LAST"});
  for (const v1::Schedule& s : response.schedules()) {
    table.AddRow({s.schedule_id(), s.job() + (s.node().empty() ? "" : " @" + s.node()),
                  absl::FormatDuration(absl::Milliseconds(s.every_ms())),
                  absl::FormatDuration(absl::Milliseconds(s.duration_ms())), absl::StrCat(s.runs()),
                  absl::StrCat(s.skipped()),
                  absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixNanos(s.next_run_ns()), absl::LocalTimeZone()),
                  Ellipsize(s.last_capture_id().empty() ? "-" : s.last_capture_id() + " " + s.last_outcome(), 60)});
  }
  return table.Render();
}

}  // namespace

int RunSchedule(const CliOptions& options) {
  if (options.job.empty() || options.every.empty() || !options.args.empty()) {
    return FailUsage("schedule");
  }
  absl::Duration every;
  if (!ParseDurationFlag(options.every, &every)) {
    return Fail("--every wants a duration such as 45s, 30m, 2h or 7d, not '" + options.every + "'");
  }
  v1::CreateScheduleRequest request;
  request.set_job(options.job);
  request.set_node(options.node);
  request.set_every_ms(absl::ToInt64Milliseconds(every));
  request.set_duration_ms(options.duration_ms);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::Schedule schedule;
  if (grpc::Status s = Stub(options)->CreateSchedule(&context, request, &schedule); !s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::cout << ProtoToJson(schedule) << "\n";
  } else {
    std::cout << "schedule " << schedule.schedule_id() << ": job " << schedule.job() << " every "
              << absl::FormatDuration(every) << " for " << schedule.duration_ms()
              << " ms, first run now (fleetprof captures --job " << schedule.job() << " lists the runs)\n";
  }
  return 0;
}

int RunSchedules(const CliOptions& options) {
  v1::ListSchedulesRequest request;
  request.set_job(options.job);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListSchedulesResponse response;
  if (grpc::Status s = Stub(options)->ListSchedules(&context, request, &response); !s.ok()) return FailRpc(s, options);
  std::cout << (options.json ? ProtoToJson(response) + "\n" : ScheduleTable(response));
  return 0;
}

int RunUnschedule(const CliOptions& options) {
  if (options.args.size() != 1) return FailUsage("unschedule");
  v1::DeleteScheduleRequest request;
  request.set_schedule_id(options.args[0]);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::DeleteScheduleResponse response;
  if (grpc::Status s = Stub(options)->DeleteSchedule(&context, request, &response); !s.ok()) return FailRpc(s, options);
  std::cout << (options.json ? ProtoToJson(response) : "removed schedule " + response.schedule_id()) << "\n";
  return 0;
}

}  // namespace fleetprof::cli
