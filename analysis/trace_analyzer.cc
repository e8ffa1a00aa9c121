#include "analysis/trace_analyzer.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <optional>
#include <thread>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis/call_tree.h"
#include "analysis/device_breakdown.h"
#include "analysis/memory_timeline.h"
#include "analysis/op_breakdown.h"
#include "analysis/stats_reports.h"
#include "analysis/step_breakdown.h"
#include "analysis/trace_events.h"
#include "analysis/trace_formats.h"
#include "common/threads.h"

namespace fleetprof::analysis {
namespace {

// Fails a read past `max_bytes`: a decompression bomb ends here, whatever the format.
class CappedSource : public ByteSource {
 public:
  CappedSource(ByteSource& inner, int64_t max_mb) : inner_(inner), max_mb_(max_mb) {}
  CappedSource(std::unique_ptr<ByteSource> owned, int64_t max_mb)
      : inner_(*owned), max_mb_(max_mb), owned_(std::move(owned)) {}
  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    absl::StatusOr<size_t> got = inner_.Read(buf, n);
    if (!got.ok()) return got;
    return Count(*got);
  }
  absl::StatusOr<uint64_t> Skip(uint64_t n) override {
    absl::StatusOr<uint64_t> got = inner_.Skip(n);
    if (!got.ok()) return got;
    absl::StatusOr<size_t> counted = Count(*got);
    if (!counted.ok()) return counted.status();
    return *got;
  }
  const std::string& name() const override { return inner_.name(); }
  std::unique_ptr<ByteSource> Reopen() const override {
    std::unique_ptr<ByteSource> again = inner_.Reopen();
    if (again == nullptr) return nullptr;
    return std::make_unique<CappedSource>(std::move(again), max_mb_);
  }
  int64_t SizeHint() const override { return inner_.SizeHint(); }
  bool SkipReadsThrough() const override { return inner_.SkipReadsThrough(); }
  void StopReading() override { inner_.StopReading(); }

 private:
  absl::StatusOr<size_t> Count(size_t got) {
    read_ += got;
    if (read_ > static_cast<uint64_t>(max_mb_) << 20) {
      return TraceLimitError(name(), "MiB after decompression", max_mb_, "max_trace_mb", read_);
    }
    return got;
  }

  ByteSource& inner_;
  int64_t max_mb_;
  std::unique_ptr<ByteSource> owned_;  // when reopened
  uint64_t read_ = 0;
};

// From this many events on, a second thread computes some views beside the others.
constexpr size_t kParallelSummaryEvents = 50000;

TraceSummary Summarize(const TraceEvents& events, SummaryParts parts, bool spare_thread) {
  TraceSummary summary;
  OpViews op_views;
  // The heaviest views (the call tree and stats reports, or without them the op views) are
  // computed beside the others on a large trace; they only read the events.
  const auto tree_and_stats = [&summary, &events] {
    summary.call_tree = BuildCallTree(events);
    summary.stats = ComputeStatsReports(events);
  };
  const auto ops = [&op_views, &events] { op_views = OpAndScopeBreakdown(events); };
  const bool all = parts == SummaryParts::kAll;
  std::optional<std::thread> side;
  if (spare_thread && events.activity.size() + events.host.size() >= kParallelSummaryEvents) {
    absl::StatusOr<std::thread> thread =
        all ? StartThread("the call tree of a trace", tree_and_stats) : StartThread("the op views of a trace", ops);
    if (thread.ok()) side = *std::move(thread);
  }
  if (!side.has_value() && all) tree_and_stats();
  summary.format = events.format;
  summary.events = events.events;
  summary.skipped_events = events.skipped_events;
  summary.unknown_category_events = events.unknown_category_events;
  summary.metadata = events.metadata;
  Ticks start = std::numeric_limits<Ticks>::max();
  Ticks end = std::numeric_limits<Ticks>::min();
  for (const DeviceActivity& a : events.activity) {
    start = std::min(start, a.start);
    end = std::max(end, a.start + a.dur);
  }
  for (const HostEvent& h : events.host) {
    start = std::min(start, h.start);
    end = std::max(end, h.start + h.dur);
  }
  if (start <= end) {
    summary.start_ns = events.TimeNs(start);
    summary.end_ns = events.TimeNs(end);
  }
  summary.devices = DeviceBreakdown(events);
  summary.kernels = KernelBreakdown(events);
  if (all || !side.has_value()) ops();
  summary.steps = StepBreakdown(events);
  summary.memory = MemoryBreakdown(events);
  summary.xla_ops = events.xla_ops;
  if (side.has_value()) side->join();
  summary.ops = std::move(op_views.ops);
  summary.scopes = std::move(op_views.scopes);
  MakeStringsValidUtf8(&summary);
  return summary;
}

}  // namespace

TraceFormat DetectTraceFormat(const std::string& file_name, std::string_view first_bytes) {
  for (const TraceFormatSpec& spec : TraceFormats()) {
    if (spec.looks_like(first_bytes)) return spec.format;
  }
  std::string_view name = file_name;
  if (name.ends_with(".gz")) name.remove_suffix(3);
  for (const TraceFormatSpec& spec : TraceFormats()) {
    for (std::string_view suffix : spec.suffixes) {
      if (name.ends_with(suffix)) return spec.format;
    }
  }
  return TraceFormat::kUnknown;
}

absl::StatusOr<TraceSummary> AnalyzeTrace(ByteSource& source, TraceFormat format,
                                          TraceEventsSink* sink, const TraceLimits& limits,
                                          SummaryParts parts) {
  if (absl::Status valid = limits.Validate(); !valid.ok()) return valid;
  const TraceFormatSpec* spec = FindTraceFormat(format);
  if (spec == nullptr) {
    return absl::InvalidArgumentError(absl::StrCat(
        source.name(),
        ": unknown trace format (expected Chrome-trace JSON, an XSpace .xplane.pb or an Nsight "
        "Systems SQLite export)"));
  }
  TraceEvents events;
  events.limits = limits;
  CappedSource capped(source, limits.max_trace_mb);
  if (absl::Status status = spec->read(capped, &events); !status.ok()) return status;
  if (sink == nullptr) return Summarize(events, parts, /*spare_thread=*/true);
  // The sink (the server's event store) and the summaries only read the events: on a thread of
  // its own the sink is off the upload's critical path. Without a thread, one after the other.
  absl::Status consumed = absl::UnknownError("the sink did not run");
  auto consumer = StartThread(absl::StrCat("the event sink of ", source.name()),
                              [&consumed, sink, &events] { consumed = sink->Consume(events); });
  if (!consumer.ok()) {
    if (absl::Status status = sink->Consume(events); !status.ok()) return status;
    return Summarize(events, parts, /*spare_thread=*/false);
  }
  TraceSummary summary = Summarize(events, parts, /*spare_thread=*/false);
  consumer->join();
  if (!consumed.ok()) return consumed;
  return summary;
}

absl::StatusOr<TraceSummary> AnalyzeTraceStream(std::unique_ptr<ByteSource> raw, TraceFormat format,
                                                TraceEventsSink* sink, const TraceLimits& limits,
                                                SummaryParts parts) {
  std::unique_ptr<ByteSource> plain = MaybeGunzip(std::move(raw));
  // Sniff the first bytes after gunzip, then hand them back to the reader.
  std::string head(64, '\0');
  size_t filled = 0;
  while (filled < head.size()) {
    absl::StatusOr<size_t> got = plain->Read(head.data() + filled, head.size() - filled);
    if (!got.ok()) return got.status();
    if (*got == 0) break;
    filled += *got;
  }
  head.resize(filled);
  if (filled == 0) return absl::InvalidArgumentError(absl::StrCat(plain->name(), ": empty trace (no bytes)"));
  if (format == TraceFormat::kUnknown) format = DetectTraceFormat(plain->name(), head);
  std::unique_ptr<ByteSource> source = PrefixedSource(std::move(head), std::move(plain));
  return AnalyzeTrace(*source, format, sink, limits, parts);  // names the formats it knows when it is neither
}

absl::StatusOr<TraceSummary> AnalyzeTraceFile(const std::string& path, TraceEventsSink* sink,
                                              const TraceLimits& limits, SummaryParts parts) {
  absl::StatusOr<std::unique_ptr<ByteSource>> file = OpenFileSource(path);
  if (!file.ok()) return file.status();
  return AnalyzeTraceStream(*std::move(file), TraceFormat::kUnknown, sink, limits, parts);
}

}  // namespace fleetprof::analysis
