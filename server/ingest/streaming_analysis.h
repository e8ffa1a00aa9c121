#pragma once
// Runs the analysis of an upload on its own thread while the bytes are still arriving, so
// ingest holds only a bounded window of the trace (the ChunkQueue) and the profile's
// summary is ready as soon as the last chunk is in.

#include <memory>
#include <string>
#include <thread>

#include "absl/status/statusor.h"
#include "analysis/trace_analyzer.h"
#include "analysis/trace_summary.h"
#include "server/ingest/chunk_queue.h"

namespace fleetprof {

class StreamingAnalysis {
 public:
  // `already_stored` replays the bytes a resumed upload received before (may be null).
  // `format_name` is "kineto_json", "xspace" or empty to detect from name and content.
  // `sink` (may be null) receives the events once read, on the analysis thread; it must
  // outlive Finish or Cancel.
  // `limits` bound what the analysis may hold.
  StreamingAnalysis(std::string file_name, std::string format_name,
                    std::unique_ptr<analysis::ByteSource> already_stored, analysis::TraceEventsSink* sink,
                    const analysis::TraceLimits& limits);
  ~StreamingAnalysis();  // cancels and joins when Finish was not called

  // Hands the next bytes to the analysis. False once the analysis has failed: call Finish
  // for the error.
  bool Push(std::string chunk);
  // A pushed chunk the analysis has read, to fill again (see ChunkQueue::TakeSpare).
  std::string TakeSpare() { return queue_.TakeSpare(); }
  // No more bytes: waits for the analysis and returns its result.
  absl::StatusOr<analysis::TraceSummary> Finish();
  // The upload broke off: stops the analysis, discarding its result.
  void Cancel();

 private:
  void Run(std::unique_ptr<analysis::ByteSource> already_stored);

  std::string file_name_;
  std::string format_name_;
  analysis::TraceEventsSink* sink_;
  analysis::TraceLimits limits_;
  ChunkQueue queue_;
  absl::StatusOr<analysis::TraceSummary> result_;
  std::thread thread_;
};

}  // namespace fleetprof
