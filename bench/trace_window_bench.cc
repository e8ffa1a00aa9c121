// Trace-window latency against a running fleetprof-server (bench/trace_viewer.sh starts one):
//   trace_window_bench --http HOST:PORT --profile ID [--queries 400]
// Prints p50/p99 over one keep-alive connection of
//   the whole profile at the default resolution (the viewer's first view, full zoom-out),
//   random 1 ms windows at the default resolution (1 ms / 2000 = 500 ns),
//   random 1 ms windows with every event exact (resolution 1 ns),
// each beside the same run's baseline GET /healthz (the HTTP floor: parse, route, write).
// The first query of a profile loads its directory into the server's cache: printed apart.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"

namespace {

struct Percentiles {
  double p50_ms = 0;
  double p99_ms = 0;
  size_t bytes = 0;  // median response size
};

double Ms(std::chrono::steady_clock::duration d) { return std::chrono::duration<double, std::milli>(d).count(); }

template <typename PathFn>
Percentiles Measure(httplib::Client& client, int n, PathFn path) {
  std::vector<double> ms;
  std::vector<size_t> sizes;
  for (int i = 0; i < n; ++i) {
    const std::string p = path(i);
    const auto t0 = std::chrono::steady_clock::now();
    auto res = client.Get(p);
    ms.push_back(Ms(std::chrono::steady_clock::now() - t0));
    if (!res || res->status != 200) {
      std::fprintf(stderr, "GET %s failed: %s\n", p.c_str(), res ? res->body.c_str() : "no answer");
      std::exit(1);
    }
    sizes.push_back(res->body.size());
  }
  std::sort(ms.begin(), ms.end());
  std::sort(sizes.begin(), sizes.end());
  return {ms[ms.size() / 2], ms[std::min(ms.size() - 1, ms.size() * 99 / 100)], sizes[sizes.size() / 2]};
}

int64_t Field(const std::string& json, const std::string& key) {
  size_t at = json.find("\"" + key + "\":");
  int64_t v = 0;
  if (at == std::string::npos) return 0;
  at += key.size() + 3;
  size_t end = json.find_first_of(",}", at);
  (void)absl::SimpleAtoi(json.substr(at, end - at), &v);
  return v;
}

}  // namespace

int main(int argc, char** argv) {
  std::string http, profile;
  int queries = 400;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--http") http = argv[i + 1];
    if (flag == "--profile") profile = argv[i + 1];
    if (flag == "--queries") (void)absl::SimpleAtoi(argv[i + 1], &queries);
  }
  if (http.empty() || profile.empty()) {
    std::fprintf(stderr, "usage: trace_window_bench --http HOST:PORT --profile ID [--queries N]\n");
    return 2;
  }
  httplib::Client client("http://" + http);
  client.set_keep_alive(true);
  const std::string base = "/api/v1/profiles/" + profile + "/trace";
  const auto t0 = std::chrono::steady_clock::now();
  auto first = client.Get(base + "?max_events_per_track=1");
  const double first_ms = Ms(std::chrono::steady_clock::now() - t0);
  if (!first || first->status != 200) {
    std::fprintf(stderr, "first query failed\n");
    return 1;
  }
  const int64_t start = Field(first->body, "start_ns"), end = Field(first->body, "end_ns");
  std::printf("profile %s: [%lld, %lld) ns, span %.3f s; first query (loads the directory) %.2f ms\n",
              profile.c_str(), static_cast<long long>(start), static_cast<long long>(end), (end - start) / 1e9,
              first_ms);
  std::mt19937_64 rng(42);
  std::vector<int64_t> starts(queries);
  for (auto& s : starts) s = start + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(1, end - start - 1'000'000)));
  const Percentiles floor = Measure(client, queries, [](int) { return std::string("/healthz"); });
  const Percentiles full = Measure(client, queries, [&](int) { return base; });
  const Percentiles ms1 = Measure(client, queries, [&](int i) {
    return absl::StrCat(base, "?start_ns=", starts[i], "&end_ns=", starts[i] + 1'000'000);
  });
  const Percentiles ms1_exact = Measure(client, queries, [&](int i) {
    return absl::StrCat(base, "?start_ns=", starts[i], "&end_ns=", starts[i] + 1'000'000, "&resolution_ns=1");
  });
  auto row = [&](const char* what, const Percentiles& p) {
    std::printf("  %-44s p50 %7.3f ms  p99 %7.3f ms  (%.1fx / %.1fx the /healthz floor)  median body %zu B\n", what,
                p.p50_ms, p.p99_ms, p.p50_ms / floor.p50_ms, p.p99_ms / floor.p99_ms, p.bytes);
  };
  std::printf("%d queries each, one keep-alive connection:\n", queries);
  row("GET /healthz (baseline)", floor);
  row("whole profile, default resolution", full);
  row("random 1 ms windows, default resolution", ms1);
  row("random 1 ms windows, resolution 1 ns", ms1_exact);
  return 0;
}
