// `fleetprof job-trace` and `fleetprof collectives`: every rank of a capture on one clock
// (docs/using.md, Job timeline). --json prints the server's answer as is; the tables
// show each profile's clock offset and where it came from, then the tracks or the collectives.

#include <algorithm>
#include <iostream>

#include "absl/strings/str_cat.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "fleetprof/v1/query.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/proto_json.h"

namespace fleetprof::cli {
namespace {

constexpr int64_t kDefaultRows = 30;

// JOB plus --capture_id or --profile…: the selection both commands share.
template <typename Request>
bool FillSelection(const CliOptions& options, const char* command, Request* request) {
  if (options.args.size() != 1 || options.capture_id.empty() == options.profiles.empty()) return false;
  request->set_job(options.args[0]);
  request->set_capture_id(options.capture_id);
  for (const std::string& id : options.profiles) request->add_profile_ids(id);
  return true;
}

std::string ClocksTable(const google::protobuf::RepeatedPtrField<v1::JobTraceProfile>& profiles) {
  TablePrinter table({"RANK", "PROFILE", "NODE", ">CLOCK OFFSET", ">±", "SOURCE", ">MATCHED"});
  for (const v1::JobTraceProfile& p : profiles) {
    table.AddRow({p.rank(), p.profile_id(), p.node(), p.reference() ? "reference" : FormatNanos(p.clock_offset_ns()),
                  FormatNanos(p.offset_uncertainty_ns()), p.offset_source(), absl::StrCat(p.matched_collectives())});
  }
  return table.Render();
}

}  // namespace

int RunJobTrace(const CliOptions& options) {
  v1::JobTraceRequest request;
  if (!FillSelection(options, "job-trace", &request)) return FailUsage("job-trace");
  FillWindowFlags(options, &request);
  auto stub = v1::QueryService::NewStub(MakeChannel(options.server, options.security));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::JobTraceWindow window;
  if (grpc::Status s = stub->JobTrace(&context, request, &window); !s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::cout << ProtoToJson(window) << "\n";
    return 0;
  }
  std::cout << ClocksTable(window.profiles()) << "\nwindow [" << window.start_ns() << ", " << window.end_ns()
            << ") ns on rank " << (window.profiles().empty() ? "" : window.profiles(0).rank()) << "'s clock, resolution "
            << window.resolution_ns() << " ns\n\n";
  TablePrinter table({"RANK", "TRACK", "KIND", ">EVENTS", ">FOLDED"});
  for (const v1::TraceTrack& track : window.tracks()) {
    int64_t folded = 0;
    for (const v1::MergedBlock& m : track.merged()) folded += m.count();
    if (track.events().empty() && folded == 0) continue;
    std::string events = absl::StrCat(track.events_size());
    if (track.truncated()) absl::StrAppend(&events, " (+", track.omitted_events(), " left out)");
    table.AddRow({track.rank(), track.id(), track.kind(), events, absl::StrCat(folded)});
  }
  std::cout << table.Render();
  return 0;
}

int RunCollectives(const CliOptions& options) {
  v1::JobCollectivesRequest request;
  if (!FillSelection(options, "collectives", &request)) return FailUsage("collectives");
  request.set_limit(static_cast<int32_t>(options.limit));
  auto stub = v1::QueryService::NewStub(MakeChannel(options.server, options.security));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::JobCollectivesResponse answer;
  if (grpc::Status s = stub->JobCollectives(&context, request, &answer); !s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::cout << ProtoToJson(answer) << "\n";
    return 0;
  }
  std::cout << ClocksTable(answer.profiles()) << "\n" << answer.instances() << " collective instances matched\n\n";
  TablePrinter ranks({"RANK", "PROFILE", ">INSTANCES", ">LAST", ">WAITED", ">UNOVERLAPPED COMM"});
  for (const v1::CollectiveRankTotals& r : answer.ranks()) {
    ranks.AddRow({r.rank(), r.profile_id(), absl::StrCat(r.instances()), absl::StrCat(r.last_count()),
                  FormatNanos(r.wait_ns()), FormatNanos(r.unoverlapped_comm_ns())});
  }
  std::cout << ranks.Render() << "\n";
  TablePrinter instances({">SEQ", "OP", "NAME", "LAST", ">LONGEST WAIT"});
  const int64_t rows = options.limit > 0 ? options.limit : kDefaultRows;
  for (int i = 0; i < answer.collectives_size() && i < rows; ++i) {
    const v1::CollectiveInstance& c = answer.collectives(i);
    int64_t longest = 0;
    for (const auto& t : c.ranks()) longest = std::max(longest, t.wait_ns());
    instances.AddRow({absl::StrCat(c.seq()), c.op(), c.name().substr(0, 48), c.last_rank().empty() ? "-" : c.last_rank(),
                      FormatNanos(longest)});
  }
  std::cout << instances.Render();
  return 0;
}

}  // namespace fleetprof::cli
