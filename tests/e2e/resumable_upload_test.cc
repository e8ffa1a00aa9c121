// An upload that breaks off keeps what arrived; the client resumes at the offset the server
// reports, and the stored profile equals a one-shot upload.

#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "fleetprof/v1/ingest.grpc.pb.h"
#include "fleetprof/v1/query.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "gtest/gtest.h"
#include "rpc/upload_client.h"
#include "tests/e2e/reference_compare.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

v1::UploadRequest Metadata(const std::string& id, int64_t offset, int64_t total) {
  v1::UploadRequest request;
  auto* m = request.mutable_metadata();
  m->set_upload_id(id);
  m->set_job("resume");
  m->set_file_name("v100_resnet_rank0.pt.trace.json.gz");
  m->set_resume_offset(offset);
  m->set_total_bytes(total);
  return request;
}

// Where the server stands on upload `id` (GetUploadState).
v1::UploadState UploadStateOf(v1::IngestService::Stub& ingest, const std::string& id) {
  grpc::ClientContext context;
  v1::GetUploadStateRequest request;
  request.set_upload_id(id);
  v1::UploadState state;
  grpc::Status status = ingest.GetUploadState(&context, request, &state);
  EXPECT_TRUE(status.ok()) << status.error_message();
  return state;
}

TEST(ResumableUploadTest, InterruptedUploadResumesFromServerOffset) {
  const std::string trace = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer());
  const std::string bytes = ReadAll(trace);
  const int64_t total = static_cast<int64_t>(bytes.size());
  const size_t chunk = 256 << 10;
  auto channel = grpc::CreateChannel(cluster.grpc_addr(), grpc::InsecureChannelCredentials());
  auto ingest = v1::IngestService::NewStub(channel);

  {  // First attempt: half the file, then the stream ends early.
    grpc::ClientContext context;
    v1::UploadResponse response;
    auto writer = ingest->Upload(&context, &response);
    ASSERT_TRUE(writer->Write(Metadata("resume-1", 0, total)));
    for (size_t at = 0; at < bytes.size() / 2; at += chunk) {
      v1::UploadRequest request;
      request.set_chunk(bytes.substr(at, std::min(chunk, bytes.size() / 2 - at)));
      ASSERT_TRUE(writer->Write(request));
    }
    writer->WritesDone();
    grpc::Status status = writer->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED) << status.error_message();
  }
  const v1::UploadState state = UploadStateOf(*ingest, "resume-1");
  EXPECT_EQ(state.state(), v1::UploadState::PARTIAL);
  const int64_t offset = state.received_bytes();
  EXPECT_GT(offset, 0);
  EXPECT_LE(offset, total / 2 + 1);

  // Nothing is listed while the upload is partial.
  EXPECT_EQ(cluster.Cli({"profiles", "--json"}).out, "{\"profiles\":[],\"next_page_token\":\"\",\"unreadable\":[]}\n");

  {  // Wrong offset: refused with the right one.
    grpc::ClientContext context;
    v1::UploadResponse response;
    auto writer = ingest->Upload(&context, &response);
    writer->Write(Metadata("resume-1", 7, total));
    writer->WritesDone();
    grpc::Status status = writer->Finish();
    EXPECT_EQ(status.error_code(), grpc::StatusCode::FAILED_PRECONDITION);
    EXPECT_NE(status.error_message().find("resume from offset " + std::to_string(offset)),
              std::string::npos)
        << status.error_message();
  }

  std::string profile_id;
  {  // Resume: the rest of the file.
    grpc::ClientContext context;
    v1::UploadResponse response;
    auto writer = ingest->Upload(&context, &response);
    ASSERT_TRUE(writer->Write(Metadata("resume-1", offset, total)));
    for (size_t at = static_cast<size_t>(offset); at < bytes.size(); at += chunk) {
      v1::UploadRequest request;
      request.set_chunk(bytes.substr(at, chunk));
      ASSERT_TRUE(writer->Write(request));
    }
    writer->WritesDone();
    grpc::Status status = writer->Finish();
    ASSERT_TRUE(status.ok()) << status.error_message();
    profile_id = response.profile_id();
  }
  CommandResult served = cluster.Cli({"kernels", profile_id, "--json"});
  ASSERT_EQ(served.exit_code, 0) << served.err;
  EXPECT_EQ(CompareSection(served.out,
                           ReadSmallFile(CorpusPath("reference/v100_resnet_rank0.pt.trace.ref.json")),
                           "kernels"),
            "");
}

TEST(ResumableUploadTest, EmptyChunksDoNotEndTheStream) {
  const std::string trace = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer());
  const std::string bytes = ReadAll(trace);
  auto channel = grpc::CreateChannel(cluster.grpc_addr(), grpc::InsecureChannelCredentials());
  auto ingest = v1::IngestService::NewStub(channel);
  grpc::ClientContext context;
  v1::UploadResponse response;
  auto writer = ingest->Upload(&context, &response);
  ASSERT_TRUE(writer->Write(Metadata("empty-chunks", 0, static_cast<int64_t>(bytes.size()))));
  v1::UploadRequest empty;
  empty.set_chunk("");
  ASSERT_TRUE(writer->Write(empty));
  const size_t half = bytes.size() / 2;
  for (const std::string& part : {bytes.substr(0, half), std::string(), bytes.substr(half)}) {
    v1::UploadRequest request;
    request.set_chunk(part);
    ASSERT_TRUE(writer->Write(request));
  }
  writer->WritesDone();
  grpc::Status status = writer->Finish();
  EXPECT_TRUE(status.ok()) << status.error_message();
  EXPECT_FALSE(response.profile_id().empty());
}

int ThreadsOf(pid_t pid) {
  int n = 0;
  std::error_code ec;
  for (std::filesystem::directory_iterator it("/proc/" + std::to_string(pid) + "/task", ec), end; !ec && it != end;
       it.increment(ec)) {
    ++n;
  }
  return n;
}

// Before: every upload stream held a server thread for as long as its client kept it open, and
// stalled ones pinned three each (400 of them: 1,220 threads). Now an upload waits for its
// client on gRPC's callback API, holding no thread, until the idle timeout breaks it off.
TEST(ResumableUploadTest, StalledUploadsHoldNoServerThread) {
  const std::string trace = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer("127.0.0.1:0", {"--upload_idle_timeout_s=3", "--max_concurrent_uploads=64",
                                                  "--max_uploads_per_peer=64"}));
  auto channel = grpc::CreateChannel(cluster.grpc_addr(), grpc::InsecureChannelCredentials());
  auto ingest = v1::IngestService::NewStub(channel);
  {  // One whole upload first, so that every pool the server has is started.
    grpc::ClientContext context;
    v1::UploadResponse response;
    const std::string bytes = ReadAll(trace);
    auto writer = ingest->Upload(&context, &response);
    ASSERT_TRUE(writer->Write(Metadata("warm-up", 0, static_cast<int64_t>(bytes.size()))));
    v1::UploadRequest request;
    request.set_chunk(bytes);
    ASSERT_TRUE(writer->Write(request));
    writer->WritesDone();
    ASSERT_TRUE(writer->Finish().ok());
  }
  const int idle_threads = ThreadsOf(cluster.server_pid());

  constexpr int kStalled = 48;
  struct Stalled {
    grpc::ClientContext context;
    v1::UploadResponse response;
    std::unique_ptr<grpc::ClientWriter<v1::UploadRequest>> writer;
  };
  std::vector<std::unique_ptr<Stalled>> stalled;
  const auto started = std::chrono::steady_clock::now();
  for (int i = 0; i < kStalled; ++i) {
    auto s = std::make_unique<Stalled>();
    s->writer = ingest->Upload(&s->context, &s->response);
    // The metadata promises bytes that never come.
    ASSERT_TRUE(s->writer->Write(Metadata("stalled-" + std::to_string(i), 0, 1 << 20)));
    stalled.push_back(std::move(s));
  }
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // all are waiting on the server
  const int stalled_threads = ThreadsOf(cluster.server_pid());
  EXPECT_LE(stalled_threads, idle_threads + 4) << kStalled << " stalled uploads; " << idle_threads
                                               << " threads before";
  for (auto& s : stalled) {
    grpc::Status status = s->writer->Finish();  // ends when the server breaks the upload off
    EXPECT_EQ(status.error_code(), grpc::StatusCode::ABORTED) << status.error_message();
    EXPECT_NE(status.error_message().find("--upload_idle_timeout_s"), std::string::npos) << status.error_message();
  }
  EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(60));
  // Each stays resumable: its metadata is kept, no byte of it came.
  const v1::UploadState state = UploadStateOf(*ingest, "stalled-0");
  EXPECT_EQ(state.state(), v1::UploadState::PARTIAL);
  EXPECT_EQ(state.received_bytes(), 0);
  EXPECT_LE(ThreadsOf(cluster.server_pid()), idle_threads + 4);
}

// A busy server is up: the upload client says it is busy and retries, instead of calling it
// unreachable (before, every UNAVAILABLE read "server unreachable").
TEST(ResumableUploadTest, ABusyServerIsToldApartFromAnUnreachableOne) {
  const std::string trace = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer("127.0.0.1:0", {"--max_concurrent_uploads=1"}));
  auto channel = grpc::CreateChannel(cluster.grpc_addr(), grpc::InsecureChannelCredentials());
  auto ingest = v1::IngestService::NewStub(channel);
  grpc::ClientContext holding_context;
  v1::UploadResponse holding_response;
  auto holding = ingest->Upload(&holding_context, &holding_response);
  ASSERT_TRUE(holding->Write(Metadata("holding", 0, 1 << 20)));  // takes the one place
  std::this_thread::sleep_for(std::chrono::milliseconds(300));

  UploadOptions options;
  options.path = trace;
  options.job = "busy";
  options.max_attempts = 1;
  auto refused = UploadFile(channel, options);
  EXPECT_EQ(refused.status().code(), absl::StatusCode::kUnavailable) << refused.status();
  EXPECT_NE(refused.status().message().find("the server is busy"), std::string::npos) << refused.status();
  EXPECT_NE(refused.status().message().find("--max_concurrent_uploads"), std::string::npos) << refused.status();
  EXPECT_EQ(refused.status().message().find("unreachable"), std::string::npos) << refused.status();

  holding_context.TryCancel();  // the place comes back
  (void)holding->Finish();
  options.max_attempts = 5;
  auto accepted = UploadFile(channel, options);
  EXPECT_TRUE(accepted.ok()) << accepted.status();

  // A server that is not there is still called unreachable.
  options.max_attempts = 1;
  auto nobody = UploadFile(grpc::CreateChannel("127.0.0.1:1", grpc::InsecureChannelCredentials()), options);
  EXPECT_NE(nobody.status().message().find("server unreachable"), std::string::npos) << nobody.status();
}

// Issue 21's final attack: a job's trace that grows after the agent checked its size (uid 1001
// truncated its file to 60 MB when it saw the agent open it) was uploaded to its new end, past
// --max_trace_mb: the upload took the file's size when it started. The checked size
// (UploadOptions.max_bytes) bounds what is sent, whatever the file has become since.
TEST(ResumableUploadTest, AFileThatGrewAfterItsSizeWasCheckedIsSentOnlyUpToThatSize) {
  TestCluster cluster;
  ASSERT_TRUE(cluster.StartServer());
  const std::string path = cluster.root() + "/growing.pt.trace.json";
  const std::string trace =
      R"({"traceEvents":[{"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":1,"dur":2}]})";
  std::ofstream(path) << trace;
  const int64_t checked = static_cast<int64_t>(std::filesystem::file_size(path));  // the agent's check
  std::ofstream(path, std::ios::app) << std::string(4 << 20, ' ');                  // the job's growth
  UploadOptions options;
  options.path = path;
  options.job = "growing";
  options.max_bytes = checked;
  auto channel = grpc::CreateChannel(cluster.grpc_addr(), grpc::InsecureChannelCredentials());
  auto uploaded = UploadFile(channel, options);
  ASSERT_TRUE(uploaded.ok()) << uploaded.status();
  EXPECT_EQ(uploaded->profile().size_bytes(), checked);
  // Without the bound the whole grown file goes (what 4a69254 closed for captures).
  options.max_bytes = -1;
  options.upload_id = "unbounded";
  auto unbounded = UploadFile(channel, options);
  ASSERT_TRUE(unbounded.ok()) << unbounded.status();
  EXPECT_EQ(unbounded->profile().size_bytes(), checked + (4 << 20));
}

}  // namespace
}  // namespace fleetprof::testing
