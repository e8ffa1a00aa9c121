#include "server/ingest/streaming_analysis.h"

#include "absl/strings/str_cat.h"
#include "analysis/trace_analyzer.h"
#include "common/threads.h"

namespace fleetprof {
namespace {

constexpr size_t kQueueBytes = 4 << 20;

}  // namespace

StreamingAnalysis::StreamingAnalysis(std::string file_name, std::string format_name,
                                     std::unique_ptr<analysis::ByteSource> already_stored,
                                     analysis::TraceEventsSink* sink,
                                     const analysis::TraceLimits& limits)
    : file_name_(std::move(file_name)),
      format_name_(std::move(format_name)),
      sink_(sink),
      limits_(limits),
      queue_(file_name_, kQueueBytes),
      result_(absl::UnknownError("analysis did not finish")) {
  auto thread = StartThread(absl::StrCat("the analysis thread of ", file_name_),
                            [this, stored = std::move(already_stored)]() mutable { Run(std::move(stored)); });
  if (!thread.ok()) {
    // This upload fails (UNAVAILABLE: it stays resumable); the server keeps serving.
    result_ = thread.status();
    queue_.StopReading();
    return;
  }
  thread_ = *std::move(thread);
}

StreamingAnalysis::~StreamingAnalysis() {
  if (thread_.joinable()) Cancel();
}

void StreamingAnalysis::Run(std::unique_ptr<analysis::ByteSource> already_stored) {
  std::unique_ptr<analysis::ByteSource> raw;
  if (already_stored) {
    raw = std::make_unique<ConcatSource>(std::move(already_stored), &queue_);
  } else {
    // Non-owning view of the queue so MaybeGunzip can own a source.
    struct QueueView : analysis::ByteSource {
      explicit QueueView(ChunkQueue* q) : q(q) {}
      absl::StatusOr<size_t> Read(char* buf, size_t n) override { return q->Read(buf, n); }
      const std::string& name() const override { return q->name(); }
      ChunkQueue* q;
    };
    raw = std::make_unique<QueueView>(&queue_);
  }
  result_ = analysis::AnalyzeTraceStream(std::move(raw), analysis::TraceFormatFromName(format_name_), sink_, limits_);
  // Whatever the outcome, the producer must not block on a queue nobody reads.
  queue_.StopReading();
}

bool StreamingAnalysis::Push(std::string chunk) { return queue_.Push(std::move(chunk)); }

absl::StatusOr<analysis::TraceSummary> StreamingAnalysis::Finish() {
  queue_.CloseWriting();
  if (thread_.joinable()) thread_.join();
  return std::move(result_);
}

void StreamingAnalysis::Cancel() {
  if (!thread_.joinable()) return;
  queue_.Fail(absl::CancelledError("upload interrupted"));
  thread_.join();
}

}  // namespace fleetprof
