// Trace-window latency against a running fleetprof-server (bench/trace_viewer.sh and
// bench/trace_window_scale.sh start one):
//   trace_window_bench --http HOST:PORT --profile ID [--queries 400] [--warmup 5]
//                      [--first_after_unix_ns T]
// After --warmup whole views and as many random 1 ms windows (at other places than the
// measured ones, so that the measured windows find no block the warm-up read), prints p50/p99
// over one keep-alive connection of
//   the whole profile at the default resolution (the viewer's first view, full zoom-out),
//   random 1 ms windows at the default resolution (1 ms / 2000 = 500 ns),
//   random 1 ms windows with every event exact (resolution 1 ns),
// each beside the same run's baseline GET /healthz (the HTTP floor: parse, route, write).
// The first query of a profile loads its directory into the server's cache: printed apart.
// With --first_after_unix_ns (the wall clock, in ns, when the upload's reply came) that first
// query is the whole view, retried until it answers, and its time is counted from T. A last
// line "RESULT key=value ..." repeats the figures for scripts.

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <random>
#include <string>
#include <vector>

#include <thread>

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

// The whole view, asked for until it answers (the profile is listed once it is indexed):
// milliseconds from `since_unix_ns` (the upload's reply) to its answer.
httplib::Result FirstWholeView(httplib::Client& client, const std::string& path, int64_t since_unix_ns,
                               double* ms) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  while (true) {
    httplib::Result res = client.Get(path);
    const int64_t now_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
    if ((res && res->status == 200) || std::chrono::steady_clock::now() > deadline) {
      *ms = static_cast<double>(now_ns - since_unix_ns) / 1e6;
      return res;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::string http, profile;
  int queries = 400, warmup = 5;
  int64_t first_after_unix_ns = 0;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i];
    if (flag == "--http") http = argv[i + 1];
    if (flag == "--profile") profile = argv[i + 1];
    if (flag == "--queries") (void)absl::SimpleAtoi(argv[i + 1], &queries);
    if (flag == "--warmup") (void)absl::SimpleAtoi(argv[i + 1], &warmup);
    if (flag == "--first_after_unix_ns") (void)absl::SimpleAtoi(argv[i + 1], &first_after_unix_ns);
  }
  if (http.empty() || profile.empty() || queries < 1 || warmup < 0) {
    std::fprintf(stderr,
                 "usage: trace_window_bench --http HOST:PORT --profile ID [--queries N] [--warmup N] "
                 "[--first_after_unix_ns T]\n");
    return 2;
  }
  httplib::Client client("http://" + http);
  client.set_keep_alive(true);
  const std::string base = "/api/v1/profiles/" + profile + "/trace";
  double first_ms = 0;
  const auto t0 = std::chrono::steady_clock::now();
  httplib::Result first = first_after_unix_ns > 0 ? FirstWholeView(client, base, first_after_unix_ns, &first_ms)
                                                  : client.Get(base + "?max_events_per_track=1");
  if (first_after_unix_ns == 0) first_ms = Ms(std::chrono::steady_clock::now() - t0);
  if (!first || first->status != 200) {
    std::fprintf(stderr, "first query failed: %s\n", first ? first->body.c_str() : "no answer");
    return 1;
  }
  const int64_t start = Field(first->body, "start_ns"), end = Field(first->body, "end_ns");
  std::printf("profile %s: [%lld, %lld) ns, span %.3f s; %s %.2f ms\n", profile.c_str(),
              static_cast<long long>(start), static_cast<long long>(end), (end - start) / 1e9,
              first_after_unix_ns > 0 ? "first whole view, from the upload's reply,"
                                      : "first query (loads the directory)",
              first_ms);
  std::mt19937_64 rng(42);
  auto random_starts = [&](int n) {
    std::vector<int64_t> starts(static_cast<size_t>(n));
    for (auto& s : starts) {
      s = start + static_cast<int64_t>(rng() % static_cast<uint64_t>(std::max<int64_t>(1, end - start - 1'000'000)));
    }
    return starts;
  };
  const std::vector<int64_t> warm_starts = random_starts(warmup);
  const std::vector<int64_t> starts = random_starts(queries);
  auto window = [&](int64_t s) { return absl::StrCat(base, "?start_ns=", s, "&end_ns=", s + 1'000'000); };
  if (warmup > 0) {
    (void)Measure(client, warmup, [&](int) { return base; });
    (void)Measure(client, warmup, [&](int i) { return window(warm_starts[static_cast<size_t>(i)]); });
  }
  const Percentiles floor = Measure(client, queries, [](int) { return std::string("/healthz"); });
  const Percentiles full = Measure(client, queries, [&](int) { return base; });
  const Percentiles ms1 = Measure(client, queries, [&](int i) { return window(starts[static_cast<size_t>(i)]); });
  const Percentiles ms1_exact = Measure(client, queries, [&](int i) {
    return absl::StrCat(base, "?start_ns=", starts[i], "&end_ns=", starts[i] + 1'000'000, "&resolution_ns=1");
  });
  auto row = [&](const char* what, const Percentiles& p) {
    std::printf("  %-44s p50 %7.3f ms  p99 %7.3f ms  (%.1fx / %.1fx the /healthz floor)  median body %zu B\n", what,
                p.p50_ms, p.p99_ms, p.p50_ms / floor.p50_ms, p.p99_ms / floor.p99_ms, p.bytes);
  };
  std::printf("%d queries each after %d warm-ups, one keep-alive connection:\n", queries, warmup);
  row("GET /healthz (baseline)", floor);
  row("whole profile, default resolution", full);
  row("random 1 ms windows, default resolution", ms1);
  row("random 1 ms windows, resolution 1 ns", ms1_exact);
  std::printf("RESULT first_ms=%.3f whole_p50=%.3f whole_p99=%.3f whole_bytes=%zu ms1_p50=%.3f ms1_p99=%.3f "
              "ms1_bytes=%zu exact_p50=%.3f exact_p99=%.3f healthz_p50=%.3f healthz_p99=%.3f\n",
              first_ms, full.p50_ms, full.p99_ms, full.bytes, ms1.p50_ms, ms1.p99_ms, ms1.bytes, ms1_exact.p50_ms,
              ms1_exact.p99_ms, floor.p50_ms, floor.p99_ms);
  return 0;
}
