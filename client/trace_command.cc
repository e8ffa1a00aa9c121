// `fleetprof trace PROFILE [window flags]`: one trace window (docs/using.md, Trace
// viewer). --json prints the server's answer as is; the table lists each track with what
// it holds in the window and its longest events.

#include <algorithm>
#include <iostream>
#include <vector>

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

constexpr int kLongestShown = 3;

std::string TraceTable(const v1::TraceWindow& window) {
  std::string out = absl::StrCat("window [", window.start_ns(), ", ", window.end_ns(), ") ns, resolution ",
                                 window.resolution_ns(), " ns\n\n");
  TablePrinter table({"TRACK", "KIND", ">EVENTS", ">FOLDED", "LONGEST"});
  for (const v1::TraceTrack& track : window.tracks()) {
    int64_t folded = 0;
    for (const v1::MergedBlock& m : track.merged()) folded += m.count();
    if (track.events().empty() && folded == 0) continue;
    std::vector<const v1::TraceEvent*> longest;
    for (const v1::TraceEvent& e : track.events()) longest.push_back(&e);
    std::partial_sort(longest.begin(), longest.begin() + std::min<size_t>(kLongestShown, longest.size()),
                      longest.end(), [](auto* a, auto* b) { return a->dur_ns() > b->dur_ns(); });
    std::string names;
    for (size_t i = 0; i < longest.size() && i < kLongestShown; ++i) {
      absl::StrAppend(&names, i ? ", " : "", longest[i]->name().substr(0, 40), " (", FormatNanos(longest[i]->dur_ns()),
                      ")");
    }
    std::string events = absl::StrCat(track.events_size());
    if (track.truncated()) absl::StrAppend(&events, " (+", track.omitted_events(), " left out)");
    table.AddRow({track.id(), track.kind(), events, absl::StrCat(folded), names});
  }
  return out + table.Render();
}

}  // namespace

int RunTrace(const CliOptions& options) {
  if (options.args.size() != 1) {
    return FailUsage("trace");
  }
  auto stub = v1::QueryService::NewStub(MakeChannel(options.server, options.security));
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::TraceWindowRequest request;
  request.set_profile_id(options.args[0]);
  FillWindowFlags(options, &request);
  v1::TraceWindow window;
  grpc::Status s = stub->GetTraceWindow(&context, request, &window);
  if (!s.ok()) return FailRpc(s, options);
  std::cout << (options.json ? ProtoToJson(window) + "\n" : TraceTable(window));
  return 0;
}

}  // namespace fleetprof::cli
