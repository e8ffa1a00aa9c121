#include "analysis/trace_analyzer.h"

#include <algorithm>
#include <cstring>
#include <limits>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis/device_breakdown.h"
#include "analysis/kineto_json_reader.h"
#include "analysis/memory_timeline.h"
#include "analysis/op_breakdown.h"
#include "analysis/step_breakdown.h"
#include "analysis/trace_events.h"
#include "analysis/xspace_reader.h"

namespace fleetprof::analysis {
namespace {

// Hands back bytes read to sniff the format, then the rest of `inner`.
class PrefixedSource : public ByteSource {
 public:
  PrefixedSource(std::string prefix, std::unique_ptr<ByteSource> inner)
      : prefix_(std::move(prefix)), inner_(std::move(inner)) {}
  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    if (pos_ < prefix_.size()) {
      size_t take = std::min(n, prefix_.size() - pos_);
      std::memcpy(buf, prefix_.data() + pos_, take);
      pos_ += take;
      return take;
    }
    return inner_->Read(buf, n);
  }
  const std::string& name() const override { return inner_->name(); }

 private:
  std::string prefix_;
  size_t pos_ = 0;
  std::unique_ptr<ByteSource> inner_;
};

TraceSummary Summarize(const TraceEvents& events) {
  TraceSummary summary;
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
  summary.ops = OpBreakdown(events);
  summary.steps = StepBreakdown(events);
  summary.memory = MemoryBreakdown(events);
  summary.xla_ops = events.xla_ops;
  return summary;
}

}  // namespace

TraceFormat DetectTraceFormat(const std::string& file_name, std::string_view first_bytes) {
  std::string_view name = file_name;
  if (name.ends_with(".gz")) name.remove_suffix(3);
  if (name.ends_with(".pb")) return TraceFormat::kXSpace;  // *.xplane.pb
  if (name.ends_with(".json")) return TraceFormat::kKinetoJson;
  if (first_bytes.starts_with("\xEF\xBB\xBF")) first_bytes.remove_prefix(3);  // BOM
  for (char c : first_bytes) {
    if (c == ' ' || c == '\n' || c == '\r' || c == '\t') continue;
    if (c == '{' || c == '[') return TraceFormat::kKinetoJson;
    break;
  }
  // Field 1 (planes), length-delimited: how every XSpace with a plane starts. The byte is
  // also '\n', hence checked only once JSON is ruled out.
  if (!first_bytes.empty() && first_bytes[0] == '\x0a') return TraceFormat::kXSpace;
  return TraceFormat::kUnknown;
}

absl::StatusOr<TraceSummary> AnalyzeTrace(ByteSource& source, TraceFormat format) {
  TraceEvents events;
  absl::Status status;
  switch (format) {
    case TraceFormat::kKinetoJson:
      status = ReadKinetoJson(source, &events);
      break;
    case TraceFormat::kXSpace:
      status = ReadXSpace(source, &events);
      break;
    case TraceFormat::kUnknown:
      return absl::InvalidArgumentError(absl::StrCat(
          source.name(),
          ": unknown trace format (expected Chrome-trace JSON or an XSpace .xplane.pb)"));
  }
  if (!status.ok()) return status;
  return Summarize(events);
}

absl::StatusOr<TraceSummary> AnalyzeTraceFile(const std::string& path) {
  absl::StatusOr<std::unique_ptr<ByteSource>> file = OpenFileSource(path);
  if (!file.ok()) return file.status();
  std::unique_ptr<ByteSource> source = MaybeGunzip(*std::move(file));
  TraceFormat format = DetectTraceFormat(path, "");
  if (format == TraceFormat::kUnknown) {
    // Sniff the first bytes after gunzip, then hand them back to the reader.
    std::string head(64, '\0');
    size_t filled = 0;
    while (filled < head.size()) {
      absl::StatusOr<size_t> got = source->Read(head.data() + filled, head.size() - filled);
      if (!got.ok()) return got.status();
      if (*got == 0) break;
      filled += *got;
    }
    head.resize(filled);
    format = DetectTraceFormat(path, head);
    source = std::make_unique<PrefixedSource>(std::move(head), std::move(source));
  }
  return AnalyzeTrace(*source, format);
}

}  // namespace fleetprof::analysis
