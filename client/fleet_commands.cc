// `fleetprof fleet top`: where the fleet's device-time went, estimated from the sampled profiles
// (QueryService.FleetTop, server/query/fleet_top_query.h), as a table or DESIGN.md's JSON.

#include <algorithm>
#include <iostream>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/time.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/duration_flag.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "fleetprof/v1/query.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/proto_json.h"

namespace fleetprof::cli {
namespace {

constexpr int64_t kTableRows = 30;  // a table without --limit

// Device-time the way a fleet owner reads it: device-hours past an hour, else seconds and less.
std::string DeviceTime(int64_t ns) {
  if (ns >= int64_t{3600} * 1'000'000'000) return absl::StrFormat("%.2f device-h", static_cast<double>(ns) / 3600e9);
  return FormatNanos(ns);
}

std::string Share(double share) { return absl::StrFormat("%.1f%%", 100 * share); }

std::string FleetTopText(const v1::FleetTopResponse& r) {
  std::string text = absl::StrCat(
      "fleet top by ", r.by(), " since ",
      absl::FormatTime("%Y-%m-%d %H:%M %Z", absl::FromUnixNanos(r.since_ns()), absl::UTCTimeZone()), ": ",
      r.samples(), " sampled profiles\n");
  if (r.samples() == 0) {
    return text + "  nothing sampled in the window (fleetprof sampling set ... starts sampled captures)\n";
  }
  const int64_t total = r.total_device_ns();
  absl::StrAppend(&text, "  device-time ", DeviceTime(total), ": busy ", DeviceTime(r.busy_device_ns()), " (",
                  FormatPercent(r.busy_device_ns(), total), "), idle ", DeviceTime(r.idle_device_ns()), " (",
                  FormatPercent(r.idle_device_ns(), total), ")\n\n");
  TablePrinter table({"NAME", ">DEVICE-TIME", ">95% INTERVAL", ">SHARE", ">SAMPLES"});
  for (const v1::FleetTopRow& row : r.rows()) {
    table.AddRow({Ellipsize(row.name(), 60), DeviceTime(row.device_ns()),
                  absl::StrCat(DeviceTime(row.ci95_low_ns()), " - ", DeviceTime(row.ci95_high_ns())), Share(row.share()),
                  absl::StrCat(row.samples())});
  }
  return text + table.Render();
}

// The request from the flags, or a usage error (a bad --since, a bad label).
int BuildRequest(const CliOptions& options, v1::FleetTopRequest* request) {
  request->set_by(options.by.empty() ? "kernel" : options.by);
  if (!options.since.empty()) {
    absl::Duration since;
    if (!ParseDurationFlag(options.since, &since)) {
      return Fail("--since wants a duration such as 45m, 2h or 7d, not '" + options.since + "'");
    }
    request->set_since_ms(absl::ToInt64Milliseconds(since));
  }
  std::map<std::string, std::string> labels;
  std::string error;
  if (!ParseLabels(options.labels, &labels, &error)) return Fail(error);
  request->mutable_labels()->insert(labels.begin(), labels.end());
  if (options.limit < 0) return Fail("--limit wants a row count, 0 or more");
  // JSON without --limit is every row; a table shows 30 unless told.
  request->set_limit(static_cast<int32_t>(std::min<int64_t>(
      options.limit > 0 ? options.limit : (options.json ? 0 : kTableRows), std::numeric_limits<int32_t>::max())));
  return 0;
}

}  // namespace

int RunFleet(const CliOptions& options) {
  if (options.args.size() != 1 || options.args[0] != "top") return FailUsage("fleet");
  v1::FleetTopRequest request;
  if (int rc = BuildRequest(options, &request); rc != 0) return rc;
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::FleetTopResponse response;
  grpc::Status s =
      v1::QueryService::NewStub(MakeChannel(options.server, options.security))->FleetTop(&context, request, &response);
  if (!s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::cout << ProtoToJson(response) << "\n";
  } else {
    std::cout << FleetTopText(response);
  }
  return 0;
}

}  // namespace fleetprof::cli
