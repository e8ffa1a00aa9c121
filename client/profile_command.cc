// `fleetprof profile PROFILE`: everything stored about one profile — its record and the whole
// summary (devices, kernels, ops, steps, memory and, for captures, the node's device samples
// during the capture window in summary.device_samples).

#include <chrono>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "rpc/upload_client.h"
#include "fleetprof/v1/query.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/proto_json.h"

namespace fleetprof::cli {

int RunProfile(const CliOptions& options) {
  if (options.args.size() != 1) return FailUsage("profile");
  auto stub = v1::QueryService::NewStub(MakeChannel(options.server, options.security));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::GetProfileRequest request;
  request.set_profile_id(options.args[0]);
  v1::GetProfileResponse response;
  grpc::Status s = stub->GetProfile(&context, request, &response);
  if (!s.ok()) {
    return FailRpc(s, options);
  }
  if (options.json) {
    std::cout << ProtoToJson(response) << "\n";
    return 0;
  }
  const v1::ProfileSummary& summary = response.summary();
  const v1::ProfileInfo& p = response.profile();
  std::cout << "profile " << p.profile_id() << "  job " << p.job() << "  node " << p.node() << "  "
            << p.format() << "  " << p.file_name() << "\n"
            << "span " << FormatNanos(p.end_ns() - p.start_ns()) << ", " << p.events() << " events, "
            << summary.steps_size() << " steps, " << summary.device_samples_size()
            << " device samples\n\n" << SummaryTables(summary, options.limit);
  return 0;
}

// `fleetprof delete PROFILE`: removes the profile and everything stored for it (needs the
// admin scope when tokens are on).
int RunDelete(const CliOptions& options) {
  if (options.args.size() != 1) return FailUsage("delete");
  auto stub = v1::QueryService::NewStub(MakeChannel(options.server, options.security));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::DeleteProfileRequest request;
  request.set_profile_id(options.args[0]);
  v1::DeleteProfileResponse response;
  grpc::Status s = stub->DeleteProfile(&context, request, &response);
  if (!s.ok()) return FailRpc(s, options);
  std::cout << (options.json ? ProtoToJson(response) : "deleted profile " + response.profile_id()) << "\n";
  return 0;
}

}  // namespace fleetprof::cli
