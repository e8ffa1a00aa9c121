// HTTP API latency against a running fleetprof-server (bench/http_api.sh starts one):
//   http_api_bench --http HOST:PORT --grpc HOST:PORT --trace FILE --work_dir DIR [--profiles 10000]
// Uploads FILE (the profile whose ops are fetched) and --profiles small profiles (for the
// list), then prints p50/p99 of
//   GET /api/v1/profiles/{id}/ops at 1 and 16 concurrent clients,
//   GET /api/v1/profiles (first page of 100) with every profile stored,
// each beside the same run's baseline GET /healthz (the HTTP floor: parse, route, write).

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <thread>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "httplib.h"
#include "rpc/upload_client.h"

namespace {

struct Latencies {
  double p50_ms = 0;
  double p99_ms = 0;
  double per_second = 0;
};

// `clients` threads, each with its own keep-alive connection, GET `path` `per_client` times.
std::string g_token;  // --token: sent on every request (a server with --auth_tokens_file)

Latencies Measure(const std::string& http, const std::string& path, int clients, int per_client) {
  std::vector<std::vector<double>> samples(clients);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client("http://" + http);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      if (!g_token.empty()) client.set_bearer_token_auth(g_token.c_str());
      for (int i = 0; i < per_client; ++i) {
        auto t0 = std::chrono::steady_clock::now();
        auto res = client.Get(path);
        auto t1 = std::chrono::steady_clock::now();
        if (!res || res->status != 200) {
          std::cerr << "GET " << path << " failed\n";
          std::exit(1);
        }
        samples[c].push_back(std::chrono::duration<double, std::milli>(t1 - t0).count());
      }
    });
  }
  for (auto& t : threads) t.join();
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> all;
  for (auto& s : samples) all.insert(all.end(), s.begin(), s.end());
  std::sort(all.begin(), all.end());
  Latencies out;
  out.p50_ms = all[all.size() / 2];
  out.p99_ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  out.per_second = all.size() / seconds;
  return out;
}

void Report(const std::string& what, int clients, const Latencies& l, const Latencies& base) {
  std::printf("%-44s %3d clients  p50 %7.3f ms  p99 %7.3f ms  %8.0f req/s   (healthz p50 %6.3f ms, ratio %5.1fx)\n",
              what.c_str(), clients, l.p50_ms, l.p99_ms, l.per_second, base.p50_ms, l.p50_ms / base.p50_ms);
}

}  // namespace

int main(int argc, char** argv) {
  std::string http, grpc, trace, work_dir;
  int profiles = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--http") http = value;
    else if (flag == "--grpc") grpc = value;
    else if (flag == "--trace") trace = value;
    else if (flag == "--work_dir") work_dir = value;
    else if (flag == "--profiles") (void)absl::SimpleAtoi(value, &profiles);
    else if (flag == "--token") g_token = value;
  }
  if (http.empty() || grpc.empty() || trace.empty() || work_dir.empty()) {
    std::cerr << "usage: http_api_bench --http HOST:PORT --grpc HOST:PORT --trace FILE --work_dir DIR [--profiles N]\n";
    return 2;
  }
  fleetprof::ClientSecurity security;
  security.token = g_token;
  auto channel = fleetprof::MakeChannel(grpc, security);
  fleetprof::UploadOptions big;
  big.path = trace;
  big.job = "bench-big";
  big.node = "bench";
  auto uploaded = fleetprof::UploadFile(channel, big);
  if (!uploaded.ok()) {
    std::cerr << "upload failed: " << uploaded.status() << "\n";
    return 1;
  }
  const std::string id = uploaded->profile_id();
  std::printf("profile %s: %lld events\n", id.c_str(), static_cast<long long>(uploaded->profile().events()));

  // In the run's own folder (bench/http_api.sh makes it with mktemp), never a fixed /tmp name.
  const std::string tiny = work_dir + "/tiny.json";
  std::ofstream(tiny) << R"({"traceEvents":[{"ph":"X","cat":"kernel","name":"k","pid":0,"tid":7,"ts":1,"dur":2,"args":{"device":0}}]})";
  const auto upload_start = std::chrono::steady_clock::now();
  for (int i = 1; i < profiles; ++i) {
    fleetprof::UploadOptions small;
    small.path = tiny;
    small.job = absl::StrCat("bench-", i % 50);
    small.node = absl::StrCat("node-", i % 64);
    if (!fleetprof::UploadFile(channel, small).ok()) {
      std::cerr << "small upload " << i << " failed\n";
      return 1;
    }
  }
  std::printf("stored %d profiles (%.1f s of uploads)\n", profiles,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - upload_start).count());

  for (int clients : {1, 16}) {
    const int per_client = clients == 1 ? 2000 : 250;
    Latencies base = Measure(http, "/healthz", clients, per_client);
    Report("GET /api/v1/profiles/{id}/ops", clients, Measure(http, "/api/v1/profiles/" + id + "/ops", clients, per_client), base);
    Report("GET /api/v1/profiles/{id}/kernels", clients,
           Measure(http, "/api/v1/profiles/" + id + "/kernels", clients, per_client), base);
  }
  for (int clients : {1, 16}) {
    const int per_client = clients == 1 ? 500 : 50;
    Latencies base = Measure(http, "/healthz", clients, per_client);
    Report(absl::StrCat("GET /api/v1/profiles (", profiles, " stored)"), clients,
           Measure(http, "/api/v1/profiles", clients, per_client), base);
    Report("GET /api/v1/profiles?job=bench-7", clients, Measure(http, "/api/v1/profiles?job=bench-7", clients, per_client),
           base);
  }
  return 0;
}
