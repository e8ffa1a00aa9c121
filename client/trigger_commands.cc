// `fleetprof trigger add|rm` and `fleetprof triggers`: captures that start by themselves when a
// condition holds (server/fleet/trigger_store.h).

#include <iostream>

#include "absl/strings/str_cat.h"
#include "absl/time/time.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/duration_flag.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "fleetprof/v1/trigger.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/proto_json.h"
#include "rpc/upload_client.h"

namespace fleetprof::cli {
namespace {

std::unique_ptr<v1::TriggerService::Stub> Stub(const CliOptions& options) {
  return v1::TriggerService::NewStub(MakeChannel(options.server, options.security));
}

std::string WhenFired(const v1::Trigger& t) {
  if (t.last_fired_ns() == 0) return "never";
  return absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixNanos(t.last_fired_ns()), absl::LocalTimeZone());
}

std::string TriggerTable(const v1::ListTriggersResponse& response) {
  TablePrinter table({"TRIGGER", "JOB", "WHEN", ">DURATION", ">COOLDOWN", ">FIRED", ">HELD", "LAST FIRED", "EVIDENCE"});
  for (const v1::Trigger& t : response.triggers()) {
    table.AddRow({t.trigger_id(), t.job(), t.when(), absl::FormatDuration(absl::Milliseconds(t.duration_ms())),
                  absl::FormatDuration(absl::Milliseconds(t.cooldown_ms())), absl::StrCat(t.fired()),
                  absl::StrCat(t.suppressed()), WhenFired(t),
                  Ellipsize(t.last_evidence().empty() ? "-" : t.last_evidence(), 60)});
  }
  return table.Render();
}

int AddTrigger(const CliOptions& options) {
  if (options.job.empty() || options.when.empty() || options.args.size() != 1) return FailUsage("trigger");
  v1::AddTriggerRequest request;
  request.set_job(options.job);
  request.set_when(options.when);
  request.set_duration_ms(options.duration_ms);
  if (!options.cooldown.empty()) {
    absl::Duration cooldown;
    if (!ParseDurationFlag(options.cooldown, &cooldown)) {
      return Fail("--cooldown wants a duration such as 45s, 10m, 2h or 1d, not '" + options.cooldown + "'");
    }
    request.set_cooldown_ms(absl::ToInt64Milliseconds(cooldown));
  }
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::Trigger trigger;
  if (grpc::Status s = Stub(options)->AddTrigger(&context, request, &trigger); !s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::cout << ProtoToJson(trigger) << "\n";
  } else {
    std::cout << "trigger " << trigger.trigger_id() << ": job " << trigger.job() << " when " << trigger.when()
              << ", captures " << trigger.duration_ms() << " ms, at most once every "
              << absl::FormatDuration(absl::Milliseconds(trigger.cooldown_ms())) << " (fleetprof captures --job "
              << trigger.job() << " lists what it starts)\n";
  }
  return 0;
}

int RemoveTrigger(const CliOptions& options) {
  if (options.args.size() != 2) return FailUsage("trigger");
  v1::DeleteTriggerRequest request;
  request.set_trigger_id(options.args[1]);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::DeleteTriggerResponse response;
  if (grpc::Status s = Stub(options)->DeleteTrigger(&context, request, &response); !s.ok()) return FailRpc(s, options);
  std::cout << (options.json ? ProtoToJson(response) : "removed trigger " + response.trigger_id()) << "\n";
  return 0;
}

}  // namespace

int RunTrigger(const CliOptions& options) {
  if (options.args.empty()) return FailUsage("trigger");
  if (options.args[0] == "add") return AddTrigger(options);
  if (options.args[0] == "rm") return RemoveTrigger(options);
  return FailUsage("trigger");
}

int RunTriggers(const CliOptions& options) {
  if (!options.args.empty()) return FailUsage("triggers");
  v1::ListTriggersRequest request;
  request.set_job(options.job);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::ListTriggersResponse response;
  if (grpc::Status s = Stub(options)->ListTriggers(&context, request, &response); !s.ok()) return FailRpc(s, options);
  std::cout << (options.json ? ProtoToJson(response) + "\n" : TriggerTable(response));
  return 0;
}

}  // namespace fleetprof::cli
