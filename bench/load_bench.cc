// Load on a running fleetprof-server (bench/load.sh starts one): simulated agents holding their
// Connect streams and sending heartbeats with device samples and targets, concurrent uploads of
// a trace in a loop, and queries at a fixed rate. Samples the server's threads and RSS from
// /proc every second, and prints errors, query latency percentiles and the memory an agent
// costs (RSS with the agents connected minus before, divided by their number).
//
//   load_bench --server HOST:PORT --server_pid PID --trace FILE
//              [--agents 500] [--uploads 16] [--qps 50] [--seconds 120] [--heartbeat_ms 2000]
//              [--stalled_uploads N] [--max_server_threads N]
// --stalled_uploads opens N upload streams that send their metadata and then nothing;
// --max_server_threads fails the run (exit 1) when the server ever has that many threads.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "fleetprof/v1/agent.grpc.pb.h"
#include "fleetprof/v1/ingest.grpc.pb.h"
#include "fleetprof/v1/query.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "rpc/channel.h"
#include "rpc/upload_client.h"

namespace fleetprof {
namespace {

using Clock = std::chrono::steady_clock;

struct ProcSample {
  int64_t threads = 0;
  int64_t rss_kb = 0;
};

ProcSample ReadProc(int64_t pid) {
  ProcSample s;
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  std::string line;
  while (std::getline(in, line)) {
    if (line.rfind("Threads:", 0) == 0) s.threads = std::stoll(line.substr(8));
    if (line.rfind("VmRSS:", 0) == 0) s.rss_kb = std::stoll(line.substr(6));
  }
  return s;
}

// One simulated agent: its stream, a hello with targets, then a heartbeat every interval with
// 8 devices' samples. Reads what the server sends on a thread of its own.
class FakeAgent {
 public:
  FakeAgent(std::shared_ptr<grpc::Channel> channel, int index) : stub_(v1::AgentService::NewStub(channel)), index_(index) {}

  bool Connect() {
    stream_ = stub_->Connect(&context_);
    v1::AgentMessage hello;
    hello.mutable_hello()->set_node(absl::StrCat("load-node-", index_));
    hello.mutable_hello()->set_version("load_bench");
    for (int t = 0; t < 4; ++t) {
      v1::Target* target = hello.mutable_hello()->add_targets();
      target->set_job(absl::StrCat("job-", index_ % 50));
      target->set_kind(v1::Target::kineto);
      target->set_pid(1000 + t);
    }
    if (!stream_->Write(hello)) return false;
    v1::ServerMessage welcome;
    if (!stream_->Read(&welcome) || !welcome.has_welcome()) return false;
    reader_ = std::thread([this] {
      v1::ServerMessage message;
      while (stream_->Read(&message)) {
      }
    });
    return true;
  }

  bool Heartbeat() {
    v1::AgentMessage message;
    v1::AgentHeartbeat* heartbeat = message.mutable_heartbeat();
    const int64_t now = std::chrono::duration_cast<std::chrono::nanoseconds>(
                            std::chrono::system_clock::now().time_since_epoch()).count();
    heartbeat->set_sent_at_ns(now);
    for (int t = 0; t < 4; ++t) {
      v1::Target* target = heartbeat->add_targets();
      target->set_job(absl::StrCat("job-", index_ % 50));
      target->set_kind(v1::Target::kineto);
      target->set_pid(1000 + t);
    }
    for (int d = 0; d < 8; ++d) {
      v1::DeviceSample* sample = heartbeat->add_devices();
      sample->set_device(std::to_string(d));
      sample->set_uuid(absl::StrCat("GPU-", index_, "-", d));
      sample->set_model("NVIDIA H100 80GB HBM3");
      sample->set_memory_used_bytes(int64_t{40} << 30);
      sample->set_memory_total_bytes(int64_t{80} << 30);
      sample->set_utilization_ratio(0.9);
      sample->set_has_utilization(true);
      (*sample->mutable_job_memory_used_bytes())[absl::StrCat("job-", index_ % 50)] = int64_t{40} << 30;
      sample->set_sampled_at_ns(now);
    }
    return stream_->Write(message);
  }

  void Close() {
    if (!stream_) return;
    stream_->WritesDone();
    context_.TryCancel();
    if (reader_.joinable()) reader_.join();
    stream_->Finish().ok();
  }

 private:
  std::unique_ptr<v1::AgentService::Stub> stub_;
  int index_;
  grpc::ClientContext context_;
  std::unique_ptr<grpc::ClientReaderWriter<v1::AgentMessage, v1::ServerMessage>> stream_;
  std::thread reader_;
};

int64_t Percentile(std::vector<int64_t> values, double p) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  return values[std::min(values.size() - 1, static_cast<size_t>(p * static_cast<double>(values.size())))];
}

int Run(int argc, char** argv) {
  std::string server;
  std::string trace;
  int64_t server_pid = 0, agents = 500, uploads = 16, qps = 50, seconds = 120, heartbeat_ms = 2000;
  int64_t stalled_uploads = 0, max_server_threads = 0;
  FlagSet flags("load_bench --server HOST:PORT --server_pid PID --trace FILE [flags]");
  flags.AddString("server", &server, "fleetprof-server gRPC address");
  flags.AddInt("server_pid", &server_pid, "the server's pid, to sample its threads and RSS");
  flags.AddString("trace", &trace, "trace file the uploaders send, again and again");
  flags.AddInt("agents", &agents, "simulated agents");
  flags.AddInt("uploads", &uploads, "concurrent uploaders");
  flags.AddInt("qps", &qps, "queries per second (ListProfiles, then the ops of a listed profile)");
  flags.AddInt("seconds", &seconds, "how long the load runs");
  flags.AddInt("heartbeat_ms", &heartbeat_ms, "heartbeat interval of each agent");
  flags.AddInt("stalled_uploads", &stalled_uploads, "upload streams that send their metadata, then nothing");
  flags.AddInt("max_server_threads", &max_server_threads, "fail when the server reaches this many threads (0: no check)");
  if (absl::Status s = flags.Parse(argc, argv); !s.ok() || server.empty() || server_pid <= 0 || trace.empty()) {
    std::cerr << (s.ok() ? "" : std::string(s.message()) + "\n") << flags.HelpText();
    return 2;
  }

  const ProcSample idle = ReadProc(server_pid);
  // Several connections, as many nodes would make (each channel with its own arguments).
  std::vector<std::shared_ptr<grpc::Channel>> channels;
  for (int i = 0; i < 16; ++i) {
    grpc::ChannelArguments args;
    args.SetInt("fleetprof.load_channel", i);
    channels.push_back(grpc::CreateCustomChannel(server, grpc::InsecureChannelCredentials(), args));
  }
  std::vector<std::unique_ptr<FakeAgent>> fleet;
  int64_t connect_errors = 0;
  for (int64_t i = 0; i < agents; ++i) {
    fleet.push_back(std::make_unique<FakeAgent>(channels[static_cast<size_t>(i) % channels.size()], static_cast<int>(i)));
    if (!fleet.back()->Connect()) ++connect_errors;
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));
  const ProcSample connected = ReadProc(server_pid);

  // Clients that start an upload and go silent: the server refuses those past its limits and
  // breaks the others off after --upload_idle_timeout_s; none may pin a thread for good.
  struct Stalled {
    grpc::ClientContext context;
    v1::UploadResponse response;
    std::unique_ptr<grpc::ClientWriter<v1::UploadRequest>> writer;
  };
  std::vector<std::unique_ptr<Stalled>> stalled;
  {
    auto stub = v1::IngestService::NewStub(channels[1]);
    for (int64_t i = 0; i < stalled_uploads; ++i) {
      auto s = std::make_unique<Stalled>();
      s->writer = stub->Upload(&s->context, &s->response);
      v1::UploadRequest first;
      first.mutable_metadata()->set_upload_id(absl::StrCat("stalled-", i));
      first.mutable_metadata()->set_job("stalled");
      first.mutable_metadata()->set_file_name("stalled.json");
      s->writer->Write(first);
      stalled.push_back(std::move(s));
    }
  }

  std::atomic<bool> stop{false};
  std::atomic<int64_t> heartbeat_errors{0}, heartbeats{0}, upload_errors{0}, uploads_done{0}, query_errors{0};
  std::mutex latencies_mu;
  std::vector<int64_t> latencies_us;
  std::vector<std::thread> workers;
  // Heartbeats: 8 sender threads share the fleet, each agent once per interval.
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([&, w] {
      while (!stop.load()) {
        const auto round = Clock::now();
        for (size_t i = static_cast<size_t>(w); i < fleet.size() && !stop.load(); i += 8) {
          if (fleet[i]->Heartbeat()) {
            ++heartbeats;
          } else {
            ++heartbeat_errors;
          }
        }
        std::this_thread::sleep_until(round + std::chrono::milliseconds(heartbeat_ms));
      }
    });
  }
  for (int64_t u = 0; u < uploads; ++u) {
    workers.emplace_back([&, u] {
      for (int64_t n = 0; !stop.load(); ++n) {
        UploadOptions options;
        options.path = trace;
        options.job = absl::StrCat("load-upload-", u % 4);
        options.node = absl::StrCat("load-node-", u);
        options.max_attempts = 10;  // a busy server answers UNAVAILABLE: retried with backoff
        options.cancelled = [&] { return stop.load(); };
        auto response = UploadFile(channels[static_cast<size_t>(u) % channels.size()], options);
        if (response.ok()) {
          ++uploads_done;
        } else if (!stop.load()) {
          ++upload_errors;
          std::cerr << "upload: " << response.status() << "\n";
        }
      }
    });
  }
  workers.emplace_back([&] {
    auto stub = v1::QueryService::NewStub(channels[0]);
    std::mt19937 rng(1);
    const auto period = std::chrono::microseconds(1'000'000 / std::max<int64_t>(qps, 1));
    auto next = Clock::now();
    std::vector<std::string> ids;
    for (int64_t n = 0; !stop.load(); ++n) {
      next += period;
      std::this_thread::sleep_until(next);
      grpc::ClientContext context;
      context.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
      const auto start = Clock::now();
      grpc::Status status;
      if (n % 2 == 0 || ids.empty()) {
        v1::ListProfilesRequest request;
        request.set_page_size(100);
        v1::ListProfilesResponse response;
        status = stub->ListProfiles(&context, request, &response);
        if (status.ok()) {
          ids.clear();
          for (const auto& p : response.profiles()) ids.push_back(p.profile_id());
        }
      } else {
        v1::BreakdownRequest request;
        request.set_profile_id(ids[rng() % ids.size()]);
        v1::OpBreakdownResponse response;
        status = stub->OpBreakdown(&context, request, &response);
      }
      const int64_t us = std::chrono::duration_cast<std::chrono::microseconds>(Clock::now() - start).count();
      if (!status.ok()) {
        ++query_errors;
        std::cerr << "query: " << status.error_message() << "\n";
        continue;
      }
      std::lock_guard lock(latencies_mu);
      latencies_us.push_back(us);
    }
  });

  ProcSample peak = connected;
  const auto end = Clock::now() + std::chrono::seconds(seconds);
  while (Clock::now() < end) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    ProcSample now = ReadProc(server_pid);
    peak.threads = std::max(peak.threads, now.threads);
    peak.rss_kb = std::max(peak.rss_kb, now.rss_kb);
  }
  stop = true;
  for (auto& w : workers) w.join();
  for (auto& a : fleet) a->Close();
  for (auto& s : stalled) s->context.TryCancel();

  const double per_agent_kb =
      agents > 0 ? static_cast<double>(connected.rss_kb - idle.rss_kb) / static_cast<double>(agents) : 0;
  std::printf("load: %lld agents (heartbeat every %lld ms, 8 devices, 4 targets), %lld concurrent uploads, %lld queries/s, %lld s\n",
              static_cast<long long>(agents), static_cast<long long>(heartbeat_ms), static_cast<long long>(uploads),
              static_cast<long long>(qps), static_cast<long long>(seconds));
  std::printf("errors: connect %lld, heartbeat %lld, upload %lld, query %lld\n", static_cast<long long>(connect_errors),
              static_cast<long long>(heartbeat_errors.load()), static_cast<long long>(upload_errors.load()),
              static_cast<long long>(query_errors.load()));
  std::printf("done: %lld heartbeats, %lld uploads, %zu queries: p50 %.2f ms, p99 %.2f ms, max %.2f ms\n",
              static_cast<long long>(heartbeats.load()), static_cast<long long>(uploads_done.load()), latencies_us.size(),
              Percentile(latencies_us, 0.5) / 1000.0, Percentile(latencies_us, 0.99) / 1000.0,
              Percentile(latencies_us, 1.0) / 1000.0);
  if (stalled_uploads > 0) std::printf("stalled uploads: %lld opened\n", static_cast<long long>(stalled_uploads));
  std::printf("server threads: %lld idle, %lld with the agents connected, %lld at peak\n",
              static_cast<long long>(idle.threads), static_cast<long long>(connected.threads),
              static_cast<long long>(peak.threads));
  std::printf("server RSS: %.1f MiB idle, %.1f MiB with the agents connected, %.1f MiB at peak\n", idle.rss_kb / 1024.0,
              connected.rss_kb / 1024.0, peak.rss_kb / 1024.0);
  std::printf("memory per agent: %.1f KiB (connected minus idle) -> 10,000 agents: %.0f MiB\n", per_agent_kb,
              per_agent_kb * 10000 / 1024.0);
  const bool clean = connect_errors == 0 && heartbeat_errors == 0 && upload_errors == 0 && query_errors == 0;
  if (max_server_threads > 0 && peak.threads >= max_server_threads) {
    std::printf("FAIL: the server reached %lld threads (limit %lld)\n", static_cast<long long>(peak.threads),
                static_cast<long long>(max_server_threads));
    return 1;
  }
  return clean ? 0 : 1;
}

}  // namespace
}  // namespace fleetprof

int main(int argc, char** argv) { return fleetprof::Run(argc, argv); }
