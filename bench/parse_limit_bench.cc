// `fleetprof analyze` against the parse limit (issue 22, item 5): the same plain Kineto JSON
// analysed as the CLI does (AnalyzeTraceFile: read, parse, summarise) and walked with simdjson's
// On Demand API (Debian's libsimdjson-dev, its best kernel for this CPU, one parser reused): the
// whole file loaded, then the key and raw value of every field of every traceEvents entry
// visited, nothing kept. Runs alternate, so both see
// the same machine; it prints each one's median and the analysis's speed as a share of the
// walk's (the goal is >= 0.9).
//
//   parse_limit_bench FILE [--runs 7]

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <string>
#include <vector>

#include "analysis/trace_analyzer.h"
#include "simdjson.h"

namespace {

using Clock = std::chrono::steady_clock;

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// The walk: bytes of every key and raw value visited (so nothing is optimised away), or -1.
// `parser` is reused across runs, as a service would: its buffers (several bytes per input
// byte) are then allocated once, not paid for in every run.
int64_t WalkWithSimdjson(const std::string& path, simdjson::ondemand::parser& parser, double* load_s) {
  const auto start = Clock::now();
  simdjson::padded_string json;
  if (simdjson::padded_string::load(path).get(json) != simdjson::SUCCESS) return -1;
  *load_s = std::chrono::duration<double>(Clock::now() - start).count();
  simdjson::ondemand::document doc;
  if (parser.iterate(json).get(doc) != simdjson::SUCCESS) return -1;
  simdjson::ondemand::array events;
  if (doc["traceEvents"].get_array().get(events) != simdjson::SUCCESS) return -1;
  int64_t seen = 0;
  for (auto entry : events) {
    simdjson::ondemand::object event;
    if (entry.get_object().get(event) != simdjson::SUCCESS) return -1;
    for (auto field : event) {
      std::string_view key;
      if (field.unescaped_key().get(key) != simdjson::SUCCESS) return -1;
      seen += static_cast<int64_t>(key.size());
      simdjson::ondemand::value value = field.value();
      simdjson::ondemand::json_type type;
      if (value.type().get(type) != simdjson::SUCCESS) return -1;
      std::string_view raw;
      simdjson::error_code error;
      if (type == simdjson::ondemand::json_type::object) {
        simdjson::ondemand::object inner;
        error = value.get_object().get(inner);
        if (error == simdjson::SUCCESS) error = inner.raw_json().get(raw);
      } else if (type == simdjson::ondemand::json_type::array) {
        simdjson::ondemand::array inner;
        error = value.get_array().get(inner);
        if (error == simdjson::SUCCESS) error = inner.raw_json().get(raw);
      } else {
        raw = value.raw_json_token();
        error = simdjson::SUCCESS;
      }
      if (error != simdjson::SUCCESS) return -1;
      seen += static_cast<int64_t>(raw.size());
    }
  }
  return seen;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: parse_limit_bench FILE [--runs N]\n");
    return 2;
  }
  const std::string path = argv[1];
  int runs = 7;
  for (int i = 2; i + 1 < argc; i += 2) {
    if (std::string(argv[i]) == "--runs") runs = std::max(1, std::atoi(argv[i + 1]));
  }
  std::vector<double> walk_s, load_s, analyze_s;
  int64_t events = 0;
  simdjson::ondemand::parser parser;
  for (int run = 0; run < runs; ++run) {
    auto t0 = Clock::now();
    double loaded = 0;
    const int64_t seen = WalkWithSimdjson(path, parser, &loaded);
    auto t1 = Clock::now();
    auto summary = fleetprof::analysis::AnalyzeTraceFile(path);
    auto t2 = Clock::now();
    if (seen < 0) {
      std::fprintf(stderr, "simdjson could not walk %s\n", path.c_str());
      return 1;
    }
    if (!summary.ok()) {
      std::fprintf(stderr, "analysis failed: %s\n", std::string(summary.status().message()).c_str());
      return 1;
    }
    events = summary->events;
    walk_s.push_back(std::chrono::duration<double>(t1 - t0).count());
    load_s.push_back(loaded);
    analyze_s.push_back(std::chrono::duration<double>(t2 - t1).count());
  }
  const double walk = Median(walk_s), analyze = Median(analyze_s);
  std::printf("%s: %lld events, %d alternated runs; simdjson %s, On Demand kernel %s\n", path.c_str(),
              static_cast<long long>(events), runs, SIMDJSON_STRINGIFY(SIMDJSON_VERSION), SIMDJSON_STRINGIFY(SIMDJSON_BUILTIN_IMPLEMENTATION));
  std::printf("simdjson on-demand walk (load + every key and raw value): median %.1f ms, of which loading the file %.1f ms\n",
              walk * 1e3, Median(load_s) * 1e3);
  std::printf("fleetprof analysis (AnalyzeTraceFile, as `fleetprof analyze`): median %.1f ms\n", analyze * 1e3);
  std::printf("analysis speed / walk speed: %.2f (goal >= 0.9)\n", walk / analyze);
  return 0;
}
