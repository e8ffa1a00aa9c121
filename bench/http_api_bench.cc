// HTTP API latency against a running fleetprof-server (bench/http_api.sh starts one):
//   http_api_bench --http HOST:PORT --grpc HOST:PORT --trace FILE --work_dir DIR [--profiles 10000]
// Uploads FILE (the profile whose ops are fetched) and --profiles small profiles (for the
// list), then prints p50/p99 of
//   GET /api/v1/profiles/{id}/ops at 1 and 16 concurrent clients,
//   GET /api/v1/profiles (first page of 100) with every profile stored,
// each beside the same run's baseline GET /healthz (the HTTP floor: parse, route, write).
//
// With --diff_a A --diff_b B --job_trace T [--profiles N] (bench/compare.sh) it measures the
// diff of A and B and job-ops over N uploads of T instead.
//
// With --http_b/--grpc_b/--token_b (bench/auth_overhead.sh) the same data goes to a second
// server too, and each route is measured on both in alternating batches, so machine noise
// hits both alike; the ratio B/A is printed per route.

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
struct Server {
  std::string http;
  std::string grpc;
  std::string token;  // sent on every request when set (a server with --auth_tokens_file)
};

Latencies Summarize(std::vector<double> all, double seconds) {
  std::sort(all.begin(), all.end());
  Latencies out;
  out.p50_ms = all[all.size() / 2];
  out.p99_ms = all[std::min(all.size() - 1, all.size() * 99 / 100)];
  out.per_second = all.size() / seconds;
  return out;
}

// `clients` threads, each with its own keep-alive connection, GET `path` `per_client` times;
// the latencies are appended to `*samples_out` and the wall time returned.
double Run(const Server& server, const std::string& path, int clients, int per_client, std::vector<double>* samples_out) {
  std::vector<std::vector<double>> samples(clients);
  const auto start = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c) {
    threads.emplace_back([&, c] {
      httplib::Client client("http://" + server.http);
      client.set_keep_alive(true);
      client.set_tcp_nodelay(true);
      if (!server.token.empty()) client.set_bearer_token_auth(server.token.c_str());
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
  for (auto& s : samples) samples_out->insert(samples_out->end(), s.begin(), s.end());
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

Latencies Measure(const Server& server, const std::string& path, int clients, int per_client) {
  std::vector<double> all;
  const double seconds = Run(server, path, clients, per_client, &all);
  return Summarize(std::move(all), seconds);
}

// The same route on two servers (`path_b`: its path there), in 10 interleaved batches.
std::pair<Latencies, Latencies> MeasurePair(const Server& a, const std::string& path, const Server& b,
                                            const std::string& path_b, int clients, int per_client) {
  std::vector<double> samples_a, samples_b;
  double seconds_a = 0, seconds_b = 0;
  const int per_batch = std::max(1, per_client / 10);
  for (int batch = 0; batch < 10; ++batch) {
    // Which goes first alternates too, so neither always runs on a warmer machine.
    if (batch % 2 == 0) {
      seconds_a += Run(a, path, clients, per_batch, &samples_a);
      seconds_b += Run(b, path_b, clients, per_batch, &samples_b);
    } else {
      seconds_b += Run(b, path_b, clients, per_batch, &samples_b);
      seconds_a += Run(a, path, clients, per_batch, &samples_a);
    }
  }
  return {Summarize(std::move(samples_a), seconds_a), Summarize(std::move(samples_b), seconds_b)};
}

void Report(const std::string& what, int clients, const Latencies& l, const Latencies& base) {
  std::printf("%-44s %3d clients  p50 %7.3f ms  p99 %7.3f ms  %8.0f req/s   (healthz p50 %6.3f ms, ratio %5.1fx)\n",
              what.c_str(), clients, l.p50_ms, l.p99_ms, l.per_second, base.p50_ms, l.p50_ms / base.p50_ms);
}

void ReportPair(const std::string& what, int clients, const std::pair<Latencies, Latencies>& ab) {
  const auto& [a, b] = ab;
  std::printf("%-44s %3d clients  A p50 %7.3f p99 %7.3f ms | B p50 %7.3f p99 %7.3f ms | B/A p50 x%.3f p99 x%.3f\n",
              what.c_str(), clients, a.p50_ms, a.p99_ms, b.p50_ms, b.p99_ms, b.p50_ms / a.p50_ms, b.p99_ms / a.p99_ms);
}

// Uploads the big trace and `profiles - 1` tiny ones; returns the big one's profile id.
std::string Fill(const Server& server, const std::string& trace, const std::string& work_dir, int profiles) {
  fleetprof::ClientSecurity security;
  security.token = server.token;
  auto channel = fleetprof::MakeChannel(server.grpc, security);
  fleetprof::UploadOptions big;
  big.path = trace;
  big.job = "bench-big";
  big.node = "bench";
  auto uploaded = fleetprof::UploadFile(channel, big);
  if (!uploaded.ok()) {
    std::cerr << "upload failed: " << uploaded.status() << "\n";
    std::exit(1);
  }
  std::printf("%s: profile %s, %lld events\n", server.http.c_str(), uploaded->profile_id().c_str(),
              static_cast<long long>(uploaded->profile().events()));
  // In the run's own folder (the scripts make it with mktemp), never a fixed /tmp name.
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
      std::exit(1);
    }
  }
  std::printf("stored %d profiles (%.1f s of uploads)\n", profiles,
              std::chrono::duration<double>(std::chrono::steady_clock::now() - upload_start).count());
  return uploaded->profile_id();
}

std::string UploadAs(const Server& server, const std::string& path, const std::string& job) {
  fleetprof::ClientSecurity security;
  security.token = server.token;
  fleetprof::UploadOptions options;
  options.path = path;
  options.job = job;
  options.node = "bench";
  auto uploaded = fleetprof::UploadFile(fleetprof::MakeChannel(server.grpc, security), options);
  if (!uploaded.ok()) {
    std::cerr << "upload of " << path << " failed: " << uploaded.status() << "\n";
    std::exit(1);
  }
  return uploaded->profile_id();
}

// --compare: diff of two large profiles and job-ops over many small ones (bench/compare.sh),
// each beside a baseline in the same run: the single-profile read the diff is made of, and
// the listing of the same job's profiles.
int RunCompare(const Server& server, const std::string& diff_a, const std::string& diff_b,
               const std::string& job_trace, int job_profiles) {
  const std::string a = UploadAs(server, diff_a, "bench-diff");
  const std::string b = UploadAs(server, diff_b, "bench-diff");
  const auto upload_start = std::chrono::steady_clock::now();
  for (int i = 0; i < job_profiles; ++i) UploadAs(server, job_trace, "bench-job");
  std::printf("diff profiles %s, %s; %d profiles of job bench-job (%.1f s of uploads)\n", a.c_str(), b.c_str(),
              job_profiles, std::chrono::duration<double>(std::chrono::steady_clock::now() - upload_start).count());
  const Latencies ops = Measure(server, "/api/v1/profiles/" + a + "/ops", 1, 200);
  Report("GET /api/v1/profiles/{a}/ops (baseline)", 1, ops, ops);
  for (const char* by : {"op", "kernel", "scope"}) {
    Report(absl::StrCat("GET /api/v1/diff?base=a&profile=b&by=", by), 1,
           Measure(server, absl::StrCat("/api/v1/diff?base=", a, "&profile=", b, "&by=", by), 1, 200), ops);
  }
  const auto first = std::chrono::steady_clock::now();
  Measure(server, "/api/v1/jobs/bench-job/ops", 1, 1);
  std::printf("first GET /api/v1/jobs/bench-job/ops after the uploads: %.3f ms\n",
              std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - first).count());
  const Latencies list = Measure(server, "/api/v1/profiles?job=bench-job&page_size=1000", 1, 50);
  Report(absl::StrCat("GET /api/v1/profiles?job= (", job_profiles, ", baseline)"), 1, list, list);
  Report(absl::StrCat("GET /api/v1/jobs/bench-job/ops (", job_profiles, " profiles)"), 1,
         Measure(server, "/api/v1/jobs/bench-job/ops", 1, 50), list);
  Report(absl::StrCat("GET /api/v1/jobs/bench-job/series (", job_profiles, " profiles)"), 1,
         Measure(server, "/api/v1/jobs/bench-job/series", 1, 50), list);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  Server a, b;
  std::string trace, work_dir, diff_a, diff_b, job_trace;
  int profiles = 10000;
  for (int i = 1; i + 1 < argc; i += 2) {
    std::string flag = argv[i], value = argv[i + 1];
    if (flag == "--http") a.http = value;
    else if (flag == "--grpc") a.grpc = value;
    else if (flag == "--token") a.token = value;
    else if (flag == "--http_b") b.http = value;
    else if (flag == "--grpc_b") b.grpc = value;
    else if (flag == "--token_b") b.token = value;
    else if (flag == "--trace") trace = value;
    else if (flag == "--work_dir") work_dir = value;
    else if (flag == "--profiles") (void)absl::SimpleAtoi(value, &profiles);
    else if (flag == "--diff_a") diff_a = value;
    else if (flag == "--diff_b") diff_b = value;
    else if (flag == "--job_trace") job_trace = value;
  }
  if (!diff_a.empty() && !diff_b.empty() && !job_trace.empty() && !a.http.empty() && !a.grpc.empty()) {
    return RunCompare(a, diff_a, diff_b, job_trace, profiles);
  }
  if (a.http.empty() || a.grpc.empty() || trace.empty() || work_dir.empty() || b.http.empty() != b.grpc.empty()) {
    std::cerr << "usage: http_api_bench --http HOST:PORT --grpc HOST:PORT [--token T] --trace FILE --work_dir DIR\n"
                 "                      [--profiles N] [--http_b HOST:PORT --grpc_b HOST:PORT [--token_b T]]\n";
    return 2;
  }
  const std::string id = Fill(a, trace, work_dir, profiles);
  const bool paired = !b.http.empty();
  const std::string id_b = paired ? Fill(b, trace, work_dir, profiles) : "";
  const std::string list = absl::StrCat("GET /api/v1/profiles (", profiles, " stored)");

  for (int clients : {1, 16}) {
    const int per_client = clients == 1 ? 2000 : 250;
    if (paired) {
      ReportPair("GET /healthz (no token checked)", clients, MeasurePair(a, "/healthz", b, "/healthz", clients, per_client));
      for (const char* section : {"ops", "kernels"}) {
        ReportPair(absl::StrCat("GET /api/v1/profiles/{id}/", section), clients,
                   MeasurePair(a, absl::StrCat("/api/v1/profiles/", id, "/", section), b,
                               absl::StrCat("/api/v1/profiles/", id_b, "/", section), clients, per_client));
      }
      continue;
    }
    Latencies base = Measure(a, "/healthz", clients, per_client);
    Report("GET /api/v1/profiles/{id}/ops", clients, Measure(a, "/api/v1/profiles/" + id + "/ops", clients, per_client), base);
    Report("GET /api/v1/profiles/{id}/kernels", clients,
           Measure(a, "/api/v1/profiles/" + id + "/kernels", clients, per_client), base);
  }
  for (int clients : {1, 16}) {
    const int per_client = clients == 1 ? 500 : 50;
    if (paired) {
      ReportPair(list, clients, MeasurePair(a, "/api/v1/profiles", b, "/api/v1/profiles", clients, per_client));
      ReportPair("GET /api/v1/profiles?job=bench-7", clients,
                 MeasurePair(a, "/api/v1/profiles?job=bench-7", b, "/api/v1/profiles?job=bench-7", clients, per_client));
      continue;
    }
    Latencies base = Measure(a, "/healthz", clients, per_client);
    Report(list, clients, Measure(a, "/api/v1/profiles", clients, per_client), base);
    Report("GET /api/v1/profiles?job=bench-7", clients, Measure(a, "/api/v1/profiles?job=bench-7", clients, per_client),
           base);
  }
  return 0;
}
