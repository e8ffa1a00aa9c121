// One profile's flame graph, in process, as the server answers it from a cached summary: the
// stored call tree decoded, rendered in Pyroscope's layout and written as JSON.
//   flamegraph_bench TRACE [--iterations N]   (default: the corpus's largest Kineto trace)
// Prints median and p99 per value (device_ns, host_self_ns, count), the tree's size and the
// answer's size; then the same for a synthetic tree at the ingest cap (kMaxCallTreeNodes frames),
// the largest a stored tree can be.
//   flamegraph_bench --http HOST:PORT --profile ID [--iterations N]   (bench/flamegraph.sh)
// measures GET /api/v1/profiles/ID/flamegraph end to end over one keep-alive connection instead.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "analysis/call_tree.h"
#include "analysis/trace_analyzer.h"
#include "flame/flame_graph.h"
#include "httplib.h"
#include "proto/call_tree_codec.h"
#include "proto/proto_json.h"
#include "proto/summary_codec.h"

namespace {

double Ms(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

// Decode, render and write `cached`'s tree `iterations` times per value; prints median and p99.
int Measure(const fleetprof::v1::ProfileSummary& cached, int iterations) {
  for (const auto& [label, value] : {std::pair<const char*, fleetprof::flame::FlameValue>{
                                         "device_ns", fleetprof::flame::FlameValue::kDeviceNs},
                                     {"host_self_ns", fleetprof::flame::FlameValue::kHostSelfNs},
                                     {"count", fleetprof::flame::FlameValue::kCount}}) {
    std::vector<double> ms;
    size_t bytes = 0;
    for (int i = 0; i < iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto tree = fleetprof::CallTreeFromProto(cached);
      if (!tree.ok()) return 1;
      const std::string json = fleetprof::ProtoToJson(fleetprof::flame::RenderFlameGraph(*tree, value));
      ms.push_back(Ms(std::chrono::steady_clock::now() - t0));
      bytes = json.size();
    }
    std::sort(ms.begin(), ms.end());
    std::printf("  flamegraph value=%-13s median %.3f ms  p99 %.3f ms  (%d runs, answer %zu bytes)\n", label,
                ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], iterations, bytes);
  }
  return 0;
}

// A stored tree of `nodes` frames, 16 deep, 300 distinct names, as the codec writes it.
fleetprof::v1::ProfileSummary SyntheticSummary(int nodes) {
  fleetprof::v1::ProfileSummary summary;
  fleetprof::v1::CallTree* tree = summary.mutable_call_tree();
  for (int i = 0; i < 300; ++i) tree->add_names("aten::synthetic_frame_" + std::to_string(i));
  tree->add_names("total");
  for (int i = 0; i < nodes; ++i) {
    const uint32_t depth = i == 0 ? 0 : 1 + (i - 1) % 16;
    tree->add_name(i == 0 ? 300 : static_cast<uint32_t>((i * 7919) % 300));
    tree->add_depth_kind(depth * 4 + (depth == 16 ? 1 : 0));
    tree->add_count(1 + i % 50);
    tree->add_host_self_ns(depth == 16 ? 0 : 1000 + i);
    tree->add_device_ns(depth == 16 ? 50000 + i : 0);
  }
  return summary;
}

// GET /api/v1/profiles/ID/flamegraph?value=… against a running server.
int MeasureHttp(const std::string& address, const std::string& profile, int iterations) {
  httplib::Client client("http://" + address);
  client.set_keep_alive(true);
  for (const char* value : {"device_ns", "host_self_ns", "count"}) {
    const std::string path = "/api/v1/profiles/" + profile + "/flamegraph?value=" + value;
    std::vector<double> ms;
    size_t bytes = 0;
    for (int i = 0; i < iterations; ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      auto res = client.Get(path);
      ms.push_back(Ms(std::chrono::steady_clock::now() - t0));
      if (!res || res->status != 200) {
        std::fprintf(stderr, "GET %s failed\n", path.c_str());
        return 1;
      }
      bytes = res->body.size();
    }
    std::sort(ms.begin(), ms.end());
    std::printf("  GET flamegraph value=%-13s median %.3f ms  p99 %.3f ms  (%d requests, answer %zu bytes)\n", value,
                ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], iterations, bytes);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  std::string trace = std::string(FLEETPROF_BENCH_SHARED_DIR) + "/corpus/kineto/v100_resnet_rank0.pt.trace.json.gz";
  int iterations = 2000;
  std::string http, profile;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iterations") == 0 && i + 1 < argc) {
      if (!absl::SimpleAtoi(argv[++i], &iterations) || iterations < 1) return 2;
    } else if (std::strcmp(argv[i], "--http") == 0 && i + 1 < argc) {
      http = argv[++i];
    } else if (std::strcmp(argv[i], "--profile") == 0 && i + 1 < argc) {
      profile = argv[++i];
    } else {
      trace = argv[i];
    }
  }
  if (!http.empty()) return MeasureHttp(http, profile, iterations);
  auto summary = fleetprof::analysis::AnalyzeTraceFile(trace);
  if (!summary.ok()) {
    std::fprintf(stderr, "%s\n", std::string(summary.status().message()).c_str());
    return 1;
  }
  // The summary as the server keeps it: stored bytes, parsed once into its cache.
  std::string stored;
  fleetprof::SummaryToProto(*summary).SerializeToString(&stored);
  fleetprof::v1::ProfileSummary cached;
  cached.ParseFromString(stored);
  std::printf("%s: %zu tree nodes built, %d stored, summary %zu bytes\n", trace.c_str(),
              summary->call_tree.nodes.size(), cached.call_tree().name_size(), stored.size());
  if (Measure(cached, iterations) != 0) return 1;
  const fleetprof::v1::ProfileSummary synthetic = SyntheticSummary(fleetprof::analysis::kMaxCallTreeNodes);
  std::printf("synthetic tree at the ingest cap: %d nodes\n", synthetic.call_tree().name_size());
  if (Measure(synthetic, iterations) != 0) return 1;
  return 0;
}
