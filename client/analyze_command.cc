// `fleetprof analyze FILE`: the whole analysis offline, no server.

#include <iostream>

#include "analysis/summary_json.h"
#include "analysis/trace_analyzer.h"
#include "client/cli.h"

namespace fleetprof::cli {

int RunAnalyze(const CliOptions& options) {
  if (options.args.size() != 1) return Fail("usage: fleetprof analyze FILE [--json]");
  auto summary = analysis::AnalyzeTraceFile(options.args[0]);
  if (!summary.ok()) return Fail(std::string(summary.status().message()));
  if (options.json) {
    std::cout << analysis::SummaryToJson(*summary) << "\n";
    return 0;
  }
  std::cout << options.args[0] << ": " << analysis::TraceFormatName(summary->format) << ", "
            << summary->events << " events";
  if (summary->skipped_events > 0) std::cout << " (" << summary->skipped_events << " skipped)";
  std::cout << "\n\nDevices\n" << DevicesTable(summary->devices) << "\nKernels\n"
            << KernelsTable(summary->kernels, options.limit);
  if (!summary->ops.empty()) std::cout << "\nOps\n" << OpsTable(summary->ops, options.limit);
  if (!summary->xla_ops.empty()) std::cout << "\nXLA ops\n" << XlaOpsTable(summary->xla_ops, options.limit);
  return 0;
}

}  // namespace fleetprof::cli
