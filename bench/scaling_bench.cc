// How the analysis scales on the two inputs that used to be quadratic (issue 10): steps that
// all span the whole trace (the step breakdown walked every busy interval per step), and one
// XSpace event with many stats (each stat searched the group's sums). For each size it prints
// the median of 3 runs, the ratio to the previous size (2.0 is linear, about 2.1 n log n,
// 4.0 quadratic) and, as the same run's baseline, the time of the same trace without the
// steps (or with the stats spread over one-stat events).
//
//   scaling_bench [--max_n 800000]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "analysis/byte_source.h"
#include "analysis/trace_analyzer.h"
#include "common/flags.h"

namespace fleetprof {
namespace {

using Clock = std::chrono::steady_clock;

std::string KernelsAndSteps(int64_t n, bool steps) {
  std::string events;
  events.reserve(static_cast<size_t>(n) * (steps ? 180 : 90));
  for (int64_t i = 0; i < n; ++i) {
    absl::StrAppend(&events, i > 0 ? "," : "", R"({"ph":"X","cat":"kernel","name":"k","ts":)", i * 10,
                    R"(,"dur":5,"pid":0,"tid":7,"args":{"device":0}})");
  }
  for (int64_t s = 0; steps && s < n; ++s) {
    absl::StrAppend(&events, R"(,{"ph":"X","cat":"user_annotation","name":"ProfilerStep#)", s, R"(","ts":0,"dur":)",
                    n * 10, R"(,"pid":1,"tid":1})");
  }
  return absl::StrCat(R"({"traceEvents":[)", events, "]}");
}

// Protobuf wire bytes of an XSpace: one device plane, one "Stream #1" line, `events` events
// with `stats` integer stats each (distinct stat ids), event metadata 1 named "fusion".
void Varint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}
void Field(std::string* out, int field, const std::string& payload) {
  Varint(out, static_cast<uint64_t>(field) << 3 | 2);
  Varint(out, payload.size());
  out->append(payload);
}
std::string XSpaceWithStats(int64_t events, int64_t stats) {
  std::string line;
  Field(&line, 2, "Stream #1");
  for (int64_t e = 0; e < events; ++e) {
    std::string event;
    Varint(&event, 1 << 3);
    Varint(&event, 1);
    Varint(&event, 2 << 3);
    Varint(&event, static_cast<uint64_t>(e) * 10);
    Varint(&event, 3 << 3);
    Varint(&event, 5);
    for (int64_t s = 0; s < stats; ++s) {
      std::string stat;
      Varint(&stat, 1 << 3);
      Varint(&stat, static_cast<uint64_t>(1000 + s));
      Varint(&stat, 4 << 3);
      Varint(&stat, 1);
      Field(&event, 4, stat);
    }
    Field(&line, 4, event);
  }
  std::string metadata_value;
  Varint(&metadata_value, 1 << 3);
  Varint(&metadata_value, 1);
  Field(&metadata_value, 2, "fusion");
  std::string metadata;
  Varint(&metadata, 1 << 3);
  Varint(&metadata, 1);
  Field(&metadata, 2, metadata_value);
  std::string plane;
  Field(&plane, 2, "/device:GPU:0");
  Field(&plane, 3, line);
  Field(&plane, 4, metadata);
  std::string space;
  Field(&space, 1, plane);
  return space;
}

double MedianMs(const std::string& bytes, analysis::TraceFormat format, const analysis::TraceLimits& limits) {
  std::vector<double> ms;
  for (int run = 0; run < 3; ++run) {
    auto source = analysis::OpenStringSource("bench", bytes);
    const auto start = Clock::now();
    auto summary = analysis::AnalyzeTrace(*source, format, nullptr, limits);
    ms.push_back(std::chrono::duration<double, std::milli>(Clock::now() - start).count());
    if (!summary.ok()) {
      std::fprintf(stderr, "analysis failed: %s\n", std::string(summary.status().message()).c_str());
      std::exit(1);
    }
  }
  std::sort(ms.begin(), ms.end());
  return ms[1];
}

int Run(int argc, char** argv) {
  int64_t max_n = 800000;
  FlagSet flags("scaling_bench [--max_n N]");
  flags.AddInt("max_n", &max_n, "largest number of kernels (and of steps), and of stats");
  if (absl::Status s = flags.Parse(argc, argv); !s.ok()) {
    std::fprintf(stderr, "%s\n%s", std::string(s.message()).c_str(), flags.HelpText().c_str());
    return 2;
  }
  analysis::TraceLimits limits;
  limits.max_trace_events = 1 << 30;
  limits.max_event_stats = 1 << 30;
  limits.max_trace_stats = int64_t{1} << 40;

  std::printf("%-34s %9s %10s %9s %12s %9s\n", "case", "n", "median ms", "x prev", "baseline ms", "x base");
  double previous = 0;
  for (int64_t n = max_n / 8; n <= max_n; n *= 2) {
    const double ms = MedianMs(KernelsAndSteps(n, true), analysis::TraceFormat::kKinetoJson, limits);
    const double base = MedianMs(KernelsAndSteps(n, false), analysis::TraceFormat::kKinetoJson, limits);
    std::printf("%-34s %9lld %10.1f %9.2f %12.1f %9.2f\n", "n steps spanning n kernels", static_cast<long long>(n), ms,
                previous > 0 ? ms / previous : 0.0, base, ms / base);
    previous = ms;
  }
  previous = 0;
  for (int64_t n = max_n / 8; n <= max_n; n *= 2) {
    const double ms = MedianMs(XSpaceWithStats(1, n), analysis::TraceFormat::kXSpace, limits);
    const double base = MedianMs(XSpaceWithStats(n, 1), analysis::TraceFormat::kXSpace, limits);
    std::printf("%-34s %9lld %10.1f %9.2f %12.1f %9.2f\n", "one XSpace event with n stats", static_cast<long long>(n),
                ms, previous > 0 ? ms / previous : 0.0, base, ms / base);
    previous = ms;
  }
  return 0;
}

}  // namespace
}  // namespace fleetprof

int main(int argc, char** argv) { return fleetprof::Run(argc, argv); }
