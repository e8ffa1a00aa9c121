#include "analysis/trace_limits.h"

#include "absl/strings/str_cat.h"
#include "analysis/trace_events.h"
#include "common/flags.h"

namespace fleetprof::analysis {

void TraceLimits::AddFlags(FlagSet* flags) {
  flags->AddInt("max_trace_mb", &max_trace_mb,
                "refuse a trace larger than this many MiB after decompression");
  flags->AddInt("max_trace_events", &max_trace_events,
                "refuse a trace with more events. Reading one takes up to about 85 bytes of memory per "
                "event (kernels only; a PyTorch trace about 40), so the default stays under about 400 MB; "
                "12000000 takes up to 1 GB (a 10M-event, 2 GB PyTorch trace: 440 MB)");
  flags->AddInt("max_trace_names", &max_trace_names, "refuse a trace with more distinct names");
  flags->AddInt("max_trace_name_mb", &max_trace_name_mb,
                "refuse a trace whose distinct names take more MiB together");
  flags->AddInt("max_name_bytes", &max_name_bytes,
                "cut longer names (kernels, ops, stats) to this many bytes, on a character boundary");
  flags->AddInt("max_trace_depth", &max_trace_depth, "refuse JSON nested deeper than this");
  flags->AddInt("max_event_stats", &max_event_stats,
                "refuse an XSpace event (or event metadata) with more stats");
  flags->AddInt("max_trace_stats", &max_trace_stats,
                "refuse an XSpace plane that keeps more stats (of its distinct ops, allocations and "
                "event metadata)");
}

absl::Status TraceLimits::Validate() const {
  struct Check {
    const char* flag;
    int64_t value;
    int64_t max;
  };
  const Check checks[] = {
      {"max_trace_mb", max_trace_mb, int64_t{1} << 30},  // 1 EiB: MiB → bytes stays in int64
      {"max_trace_events", max_trace_events, int64_t{1} << 40},
      {"max_trace_names", max_trace_names, int64_t{1} << 32},  // NameId is 32 bits
      {"max_trace_name_mb", max_trace_name_mb, int64_t{1} << 30},
      {"max_name_bytes", max_name_bytes, int64_t{1} << 30},
      {"max_trace_depth", max_trace_depth, 100'000},
      {"max_event_stats", max_event_stats, int64_t{1} << 30},
      {"max_trace_stats", max_trace_stats, int64_t{1} << 40},
  };
  for (const Check& c : checks) {
    if (c.value <= 0 || c.value > c.max) {
      return absl::InvalidArgumentError(
          absl::StrCat("--", c.flag, "=", c.value, " must be between 1 and ", c.max));
    }
  }
  return absl::OkStatus();
}

absl::Status TraceLimitError(const std::string& source, const char* what, int64_t limit,
                             const char* flag, uint64_t offset) {
  return TraceLimitErrorAt(source, what, limit, flag, absl::StrCat("byte ", offset));
}

absl::Status TraceLimitErrorAt(const std::string& source, const char* what, int64_t limit,
                               const char* flag, const std::string& where) {
  return absl::ResourceExhaustedError(absl::StrCat(source, ": the trace has more than ", limit, " ",
                                                   what, " (at ", where, "); raise --", flag,
                                                   " to read it"));
}

absl::Status TraceEvents::LimitError(const std::string& source, uint64_t offset,
                                     const NameTable* extra) const {
  return LimitErrorAt(source, absl::StrCat("byte ", offset), extra);
}

absl::Status TraceEvents::LimitErrorAt(const std::string& source, const std::string& where,
                                       const NameTable* extra) const {
  if (events > limits.max_trace_events) {
    return TraceLimitErrorAt(source, "events", limits.max_trace_events, "max_trace_events", where);
  }
  const size_t n = names.size() + (extra != nullptr ? extra->size() : 0);
  if (n > static_cast<uint64_t>(limits.max_trace_names)) {
    return TraceLimitErrorAt(source, "distinct names", limits.max_trace_names, "max_trace_names",
                             where);
  }
  return TraceLimitErrorAt(source, "MiB of distinct names", limits.max_trace_name_mb,
                           "max_trace_name_mb", where);
}

absl::Status TraceEvents::TimeRangeError(const std::string& source, uint64_t offset,
                                         const std::string& times) const {
  return TimeRangeErrorAt(source, absl::StrCat("byte ", offset), times);
}

absl::Status TraceEvents::TimeRangeErrorAt(const std::string& source, const std::string& where,
                                           const std::string& times) const {
  const char* range = ticks_per_ns == 1 ? "2^62 ns (146 years) of the trace's clock zero"
                                        : "2^62 ps (53 days) of the trace's first line";
  return absl::InvalidArgumentError(absl::StrCat(source, ": the event at ", where, " (",
                                                 times, ") lies outside the times fleetprof accepts, "
                                                 "within ", range, "; the trace is rejected"));
}

}  // namespace fleetprof::analysis
