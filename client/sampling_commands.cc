// `fleetprof sampling [set|off]`: the fleet's sampling policy (server/fleet/sampler.h) and what
// it has done.

#include <algorithm>
#include <charconv>
#include <iostream>
#include <map>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/time/time.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/duration_flag.h"
#include "client/rpc_helpers.h"
#include "fleetprof/v1/sampling.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/proto_json.h"
#include "rpc/upload_client.h"

namespace fleetprof::cli {
namespace {

std::unique_ptr<v1::SamplingService::Stub> Stub(const CliOptions& options) {
  return v1::SamplingService::NewStub(MakeChannel(options.server, options.security));
}

// "1%", "0.5%" or a fraction "0.01": the fraction; false when it is neither.
bool ParseOverhead(const std::string& text, double* out) {
  const bool percent = !text.empty() && text.back() == '%';
  const std::string number = percent ? text.substr(0, text.size() - 1) : text;
  double value = 0;
  if (!absl::SimpleAtod(number, &value) || !(value > 0)) return false;
  *out = percent ? value / 100 : value;
  return true;
}

std::string Percent(double fraction) { return absl::StrCat(fraction * 100, "%"); }

std::string StatusText(const v1::SamplingStatus& s) {
  if (s.every_ms() == 0) return "sampling: off (never set; fleetprof sampling set --every D --duration_ms MS --max_overhead P%)\n";
  std::vector<std::string> labels;
  for (const auto& [k, v] : s.labels()) labels.push_back(k + "=" + v);
  std::string text = absl::StrCat(
      "sampling: ", s.enabled() ? "on" : "off", "\n",
      "  every ", absl::FormatDuration(absl::Milliseconds(s.every_ms())), ", ", s.duration_ms(), " ms captures, at most ",
      Percent(s.max_overhead()), " of the fleet's device-time, ", s.max_concurrent(), " at once",
      labels.empty() ? "" : ", jobs labelled " + absl::StrJoin(labels, ","), "\n",
      "  periods ", s.periods(), ", captures ", s.captures(), ", skipped (target busy) ", s.skipped_busy(), "\n",
      "  overhead in the last hour: ", Percent(s.overhead_last_hour()), "\n");
  if (s.enabled() && s.next_period_ns() > 0) {
    absl::StrAppend(&text, "  next period: ",
                    absl::FormatTime("%Y-%m-%d %H:%M:%S", absl::FromUnixNanos(s.next_period_ns()), absl::LocalTimeZone()),
                    "\n");
  }
  if (!s.set_by().empty()) absl::StrAppend(&text, "  set by ", s.set_by(), "\n");
  return text;
}

// The shortest text that reads back as `value` (as the API's JSON writes doubles).
std::string JsonDouble(double value) {
  char buffer[64];
  auto [end, ec] = std::to_chars(buffer, buffer + sizeof(buffer), value);
  return ec == std::errc() ? std::string(buffer, end) : "0";
}

// DESIGN.md's keys, in its order, and no others (the next period and who set it are the
// table's; GET /api/v1/sampling has them too).
std::string StatusJson(const v1::SamplingStatus& s) {
  std::string labels = "{";
  std::map<std::string, std::string> sorted(s.labels().begin(), s.labels().end());
  for (const auto& [k, v] : sorted) {
    if (labels.size() > 1) labels += ",";
    AppendJsonString(&labels, k);
    labels += ":";
    AppendJsonString(&labels, v);
  }
  labels += "}";
  return absl::StrCat("{\"enabled\":", s.enabled() ? "true" : "false", ",\"every_ms\":", s.every_ms(),
                      ",\"duration_ms\":", s.duration_ms(), ",\"max_overhead\":", JsonDouble(s.max_overhead()),
                      ",\"labels\":", labels, ",\"max_concurrent\":", s.max_concurrent(), ",\"periods\":", s.periods(),
                      ",\"captures\":", s.captures(), ",\"skipped_busy\":", s.skipped_busy(),
                      ",\"overhead_last_hour\":", JsonDouble(s.overhead_last_hour()), "}");
}

// The request of `sampling set`, or a usage error.
int BuildSetRequest(const CliOptions& options, v1::SetSamplingRequest* request) {
  if (options.every.empty() || options.max_overhead.empty() || options.args.size() != 1) return FailUsage("sampling");
  absl::Duration every;
  if (!ParseDurationFlag(options.every, &every)) {
    return Fail("--every wants a duration such as 45s, 5m, 2h or 7d, not '" + options.every + "'");
  }
  double overhead = 0;
  if (!ParseOverhead(options.max_overhead, &overhead)) {
    return Fail("--max_overhead wants a percentage such as 1% or 0.5%, not '" + options.max_overhead + "'");
  }
  std::map<std::string, std::string> labels;
  std::string error;
  if (!ParseLabels(options.labels, &labels, &error)) return Fail(error);
  request->set_every_ms(absl::ToInt64Milliseconds(every));
  request->set_duration_ms(options.duration_ms);
  request->set_max_overhead(overhead);
  request->mutable_labels()->insert(labels.begin(), labels.end());
  request->set_max_concurrent(static_cast<int32_t>(std::clamp<int64_t>(options.max_concurrent, -1, 1'000'000)));
  return 0;
}

}  // namespace

int RunSampling(const CliOptions& options) {
  const std::string verb = options.args.empty() ? "" : options.args[0];
  if (options.args.size() > 1 || (verb != "" && verb != "set" && verb != "off")) return FailUsage("sampling");
  if (verb != "set" && (!options.every.empty() || !options.max_overhead.empty() || options.duration_ms != 0 ||
                        options.max_concurrent != 0 || !options.labels.empty())) {
    return Fail("--every, --duration_ms, --max_overhead, --label and --max_concurrent go with `fleetprof sampling set`");
  }
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::SamplingStatus status;
  grpc::Status s;
  if (verb == "set") {
    v1::SetSamplingRequest request;
    if (int rc = BuildSetRequest(options, &request); rc != 0) return rc;
    s = Stub(options)->SetSampling(&context, request, &status);
  } else if (verb == "off") {
    s = Stub(options)->DisableSampling(&context, v1::DisableSamplingRequest(), &status);
  } else {
    s = Stub(options)->GetSampling(&context, v1::GetSamplingRequest(), &status);
  }
  if (!s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::cout << StatusJson(status) << "\n";
  } else {
    std::cout << StatusText(status);
  }
  return 0;
}

}  // namespace fleetprof::cli
