// `fleetprof analyze FILE`: the whole analysis offline, no server. Prints the summary in its
// stored form, so the output equals what the server answers for the same file.

#include <iostream>

#include "analysis/trace_analyzer.h"
#include "client/cli.h"
#include "client/commands.h"
#include "proto/proto_json.h"
#include "proto/summary_codec.h"

namespace fleetprof::cli {

int RunAnalyze(const CliOptions& options) {
  if (options.args.size() != 1) return FailUsage("analyze");
  // The call tree and stats reports are not part of this answer (cleared below): not computed.
  auto analysed = analysis::AnalyzeTraceFile(options.args[0], nullptr, options.trace_limits,
                                             analysis::SummaryParts::kWithoutTreeAndStats);
  if (!analysed.ok()) return Fail(std::string(analysed.status().message()));
  v1::ProfileSummary summary = SummaryToProto(*analysed);
  // As the server's profile answer: the tree is the flame graph's, the reports `stats`'s.
  summary.clear_call_tree();
  summary.clear_stats();
  summary.clear_nvtx_open_ranges();
  if (options.json) {
    std::cout << ProtoToJson(summary) << "\n";
    return 0;
  }
  std::cout << options.args[0] << ": " << summary.format() << ", " << summary.events() << " events";
  if (summary.skipped_events() > 0) std::cout << " (" << summary.skipped_events() << " skipped)";
  if (summary.unknown_category_events() > 0) {
    std::cout << ", " << summary.unknown_category_events() << " of unknown category (analysed as host events)";
  }
  std::cout << "\n\n" << SummaryTables(summary, options.limit);
  return 0;
}

}  // namespace fleetprof::cli
