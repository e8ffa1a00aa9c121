// fleetprof-server as cluster replicas on real etcd and a real S3 server (s3rver): what one
// replica ingests every replica answers, exactly as a single embedded server does; a replica's
// local folder holds nothing the cluster needs; the replica flags come in pairs.

#include <signal.h>
#include <zlib.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <random>
#include <set>
#include <thread>
#include <fstream>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "gtest/gtest.h"
#include "simdjson.h"
#include "tests/cluster/cluster_engines.h"
#include "tests/cluster/tcp_proxy.h"
#include "tests/e2e/reference_compare.h"
#include "tests/e2e/test_cluster.h"
#include "tests/e2e/test_pki.h"
#include "tests/test_support.h"
#include "tests/xprof/profiler_standin_process.h"

namespace fleetprof::testing {
namespace {

// The whole of a gzip file, inflated (a plain-JSON trace as PyTorch writes it).
std::string Gunzip(const std::string& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  std::string out;
  char buf[1 << 16];
  int n;
  while ((n = gzread(in, buf, sizeof(buf))) > 0) out.append(buf, static_cast<size_t>(n));
  gzclose(in);
  return out;
}

class ReplicaTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_CLUSTER_ENGINES();
    ASSERT_TRUE(etcd_.Start(1)) << etcd_.Log(0);
    ASSERT_TRUE(s3_.Start());
    credentials_ = s3_.root() + "/credentials";
    std::ofstream(credentials_) << "[default]\naws_access_key_id = S3RVER\naws_secret_access_key = S3RVER\n";
  }

  std::vector<std::string> ReplicaFlags() const {
    return {"--object_store=s3://" + s3_.bucket() + "/cluster", "--s3_endpoint=" + s3_.endpoint(),
            "--s3_credentials_file=" + credentials_, "--etcd_endpoints=" + etcd_.Endpoints(),
            "--etcd_prefix=/cluster/"};
  }

  static std::string Upload(TestCluster& server, const std::string& path) {
    CommandResult r = server.Cli({"upload", path, "--job", "resnet", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err << server.ServerLog();
    return JsonStringField(r.out, "profile_id");
  }

  // A JAX job (the profiler stand-in, with `options` and the corpus's XSpace) and an agent on
  // replica `a` reporting it as target job=jax-train; the job's profiler address once replica `b`
  // lists it, or "" (the test has failed).
  std::string StartJaxJobWithAgent(TestCluster& a, TestCluster& b, ProfilerStandIn& job, StandInOptions options) {
    options.xspace_path = CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
    if (const absl::Status started = job.Start(options, a.root() + "/standin"); !started.ok()) {
      ADD_FAILURE() << started;
      return "";
    }
    const std::string address = job.address();
    if (a.StartAgent({"--node=gpu-a", "--target=job=jax-train,xprof=" + address}) < 0) {
      ADD_FAILURE() << "the agent did not start";
      return "";
    }
    if (!Eventually(30, [&] { return b.Cli({"agents", "--json"}).out.find("\"address\":\"" + address) != std::string::npos; })) {
      ADD_FAILURE() << "replica B does not list the target of the agent on A";
      return "";
    }
    return address;
  }

  EtcdCluster etcd_;
  S3rver s3_;
  std::string credentials_;
};

TEST_F(ReplicaTest, WhatOneReplicaIngestsEveryReplicaAnswersAsOneServerWould) {
  TestCluster a, b, single;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  ASSERT_TRUE(b.StartServer("127.0.0.1:0", ReplicaFlags())) << b.ServerLog();
  ASSERT_TRUE(single.StartServer()) << single.ServerLog();
  for (const char* trace : {"kineto/v100_resnet_rank0.pt.trace.json.gz", "xspace/tf_8gpu_multi_worker.xplane.pb",
                            "kineto/mi250_rocm62.json.gz"}) {
    SCOPED_TRACE(trace);
    FLEETPROF_REQUIRE_PATH(CorpusPath(trace));
    const std::string id = Upload(a, CorpusPath(trace));
    const std::string single_id = Upload(single, CorpusPath(trace));
    ASSERT_FALSE(id.empty());
    ASSERT_FALSE(single_id.empty());
    for (auto [command, section] : {std::pair{"kernels", "kernels"}, {"breakdown", "devices"}, {"ops", "ops"}}) {
      CommandResult on_a = a.Cli({command, id, "--json"});
      CommandResult on_b = b.Cli({command, id, "--json"});
      CommandResult alone = single.Cli({command, single_id, "--json"});
      ASSERT_EQ(on_b.exit_code, 0) << on_b.err << b.ServerLog();
      EXPECT_EQ(on_a.out, on_b.out) << command;
      EXPECT_EQ(CompareSection(on_b.out, alone.out, section), "") << command;
    }
    // The event store, read by byte range from its one object, gives the same window.
    CommandResult window_b = b.Cli({"trace", id, "--json"});
    CommandResult window_alone = single.Cli({"trace", single_id, "--json"});
    ASSERT_EQ(window_b.exit_code, 0) << window_b.err;
    EXPECT_EQ(window_b.out, absl::StrReplaceAll(window_alone.out, {{single_id, id}}));
    CommandResult listed = b.Cli({"profiles", "--json"});
    EXPECT_NE(listed.out.find(id), std::string::npos) << listed.out;
  }
}

// GET /api/v1/cluster (and `fleetprof cluster`): every replica lists every replica, exactly one
// leads, and when the leader stops another takes over.
TEST_F(ReplicaTest, EveryReplicaListsTheReplicasAndOneLeadsUntilItStops) {
  TestCluster a, b;
  std::vector<std::string> flags_a = ReplicaFlags(), flags_b = ReplicaFlags();
  flags_a.push_back("--replica_id=replica-a");
  flags_b.push_back("--replica_id=replica-b");
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", flags_a)) << a.ServerLog();
  ASSERT_TRUE(b.StartServer("127.0.0.1:0", flags_b)) << b.ServerLog();
  const std::string view = HttpGet(b.http_addr(), "/api/v1/cluster");
  EXPECT_NE(view.find("\"replica_id\":\"replica-a\""), std::string::npos) << view;
  EXPECT_NE(view.find("\"replica_id\":\"replica-b\""), std::string::npos) << view;
  EXPECT_NE(view.find("\"kind\":\"etcd\""), std::string::npos) << view;
  EXPECT_NE(view.find(a.grpc_addr()), std::string::npos) << view;
  auto leaders = [](const std::string& json) {
    int n = 0;
    for (size_t at = 0; (at = json.find("\"leader\":true", at)) != std::string::npos; ++at) ++n;
    return n;
  };
  EXPECT_EQ(leaders(view), 1) << view;
  EXPECT_NE(view.find("\"replica_id\":\"replica-a\",\"grpc_addr\":\"" + a.grpc_addr() + "\",\"http_addr\":\"" +
                      a.http_addr() + "\",\"agents\":0,\"leader\":true"),
            std::string::npos)
      << "the first replica leads: " << view;
  CommandResult cli = b.Cli({"cluster", "--json"});
  ASSERT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_NE(cli.out.find("replica-a"), std::string::npos) << cli.out;

  ASSERT_EQ(a.StopServer(), 0);  // leaves: its lease is revoked, b takes over at once
  std::string after;
  EXPECT_TRUE(Eventually(15, [&] {
    after = HttpGet(b.http_addr(), "/api/v1/cluster");
    return after.find("replica-a") == std::string::npos && leaders(after) == 1;
  })) << after;
}

// Every replica lists every agent, with the replica its stream is on; a node that connects
// through another replica ends its stream on the first (one stream per node in the cluster),
// even while the first stream itself still looks alive (its agent frozen, its TCP link open).
TEST_F(ReplicaTest, EveryReplicaListsEveryAgentAndANodeHasOneStreamInTheCluster) {
  TestCluster a, b;
  std::vector<std::string> flags_a = ReplicaFlags(), flags_b = ReplicaFlags();
  flags_a.push_back("--replica_id=replica-a");
  flags_b.push_back("--replica_id=replica-b");
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", flags_a)) << a.ServerLog();
  ASSERT_TRUE(b.StartServer("127.0.0.1:0", flags_b)) << b.ServerLog();
  const int first = a.StartAgent({"--node=shared-node"});
  ASSERT_GE(first, 0);
  std::string on_b;
  EXPECT_TRUE(Eventually(20, [&] {
    on_b = b.Cli({"agents", "--json"}).out;
    return on_b.find("\"node\":\"shared-node\",\"state\":\"CONNECTED\"") != std::string::npos &&
           on_b.find("\"replica_id\":\"replica-a\"") != std::string::npos;
  })) << on_b;
  // The node's agent freezes on A (its stream stays open) and the node comes back through B.
  ::kill(a.agent_pid(first), SIGSTOP);
  ASSERT_GE(b.StartAgent({"--node=shared-node"}), 0);
  std::string on_a;
  // The count reaches the cluster view with the replica's next lease renewal (every 3.3 s).
  EXPECT_TRUE(Eventually(40, [&] {
    on_a = a.Cli({"agents", "--json"}).out;
    return on_a.find("\"replica_id\":\"replica-b\"") != std::string::npos &&
           HttpGet(a.http_addr(), "/api/v1/cluster").find("\"replica_id\":\"replica-a\",\"grpc_addr\":\"" +
                                                           a.grpc_addr() + "\",\"http_addr\":\"" + a.http_addr() +
                                                           "\",\"agents\":0") != std::string::npos;
  })) << on_a << HttpGet(a.http_addr(), "/api/v1/cluster") << a.ServerLog();
  ::kill(a.agent_pid(first), SIGCONT);
}

// A leader cut from etcd (a TCP proxy between it and etcd, reset) stops leading on its own
// lease's clock; the other replica leads only after that, never at the same time.
TEST_F(ReplicaTest, ALeaderCutFromEtcdStopsLeadingBeforeAnotherStarts) {
  const std::string endpoint = etcd_.EndpointList()[0];
  TcpProxy link(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  std::vector<std::string> flags_a = ReplicaFlags(), flags_b = ReplicaFlags();
  for (auto& f : flags_a) {
    if (f.starts_with("--etcd_endpoints=")) f = "--etcd_endpoints=http://" + link.address();
  }
  TestCluster a, b;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", flags_a)) << a.ServerLog();  // first: it leads
  ASSERT_TRUE(b.StartServer("127.0.0.1:0", flags_b)) << b.ServerLog();
  auto leads = [](TestCluster& r) {
    return HttpGet(r.http_addr(), "/metrics").find("\nfleetprof_server_cluster_leader 1") != std::string::npos;
  };
  ASSERT_TRUE(Eventually(10, [&] { return leads(a); })) << a.ServerLog();
  EXPECT_FALSE(leads(b));

  link.Cut();
  const auto cut_at = std::chrono::steady_clock::now();
  bool both = false;
  double a_stopped_s = -1, b_started_s = -1;
  while (std::chrono::steady_clock::now() - cut_at < std::chrono::seconds(40) && b_started_s < 0) {
    // B first, then A: if B already leads while A still says so, that is a double leader.
    const bool b_leads = leads(b), a_leads = leads(a);
    const double t = std::chrono::duration<double>(std::chrono::steady_clock::now() - cut_at).count();
    if (b_leads && a_leads) both = true;
    if (!a_leads && a_stopped_s < 0) a_stopped_s = t;
    if (b_leads) b_started_s = t;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  std::printf("leader cut from etcd: stopped leading after %.1f s; the other replica led after %.1f s\n", a_stopped_s,
              b_started_s);
  EXPECT_FALSE(both) << "two leaders at once";
  EXPECT_GE(a_stopped_s, 0) << "the cut leader went on leading";
  EXPECT_GE(b_started_s, 0) << "nobody took over";
  EXPECT_LE(a_stopped_s, b_started_s);

  link.Restore();  // A comes back as a follower
  EXPECT_TRUE(Eventually(30, [&] {
    return HttpGet(b.http_addr(), "/api/v1/cluster").find(a.grpc_addr()) != std::string::npos;
  })) << "the cut replica registers again";
  EXPECT_FALSE(leads(a));
}

// Issue 45, finding 1: the commit of an upload reached etcd but its reply was lost (a partition
// that held the bytes for 14 s); the server answered UNAVAILABLE and its cleanup deleted the
// events of the profile the commit had listed, so `trace` said "has no stored events". The
// catalog now asks etcd again once it answers, and nothing is deleted before that: twice over,
// every listed profile is whole.
TEST_F(ReplicaTest, UploadsWhoseCommitRepliesAreLostAreListedWhole) {
  const std::string endpoint = etcd_.EndpointList()[0];
  TcpProxy link(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  std::vector<std::string> flags = ReplicaFlags();
  for (auto& f : flags) {
    if (f.starts_with("--etcd_endpoints=")) f = "--etcd_endpoints=http://" + link.address();
  }
  TestCluster a;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", flags)) << a.ServerLog();
  const std::string trace = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  CommandResult analyzed = a.Cli({"analyze", trace, "--json"});
  ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
  for (int round = 0; round < 2; ++round) {
    SCOPED_TRACE(round);
    const std::string job = "lost-reply-" + std::to_string(round);
    link.LoseRepliesAfter("index/j/" + job);  // only the commit writes a job's index keys
    CommandResult upload;
    std::thread uploader([&] { upload = a.Cli({"upload", trace, "--job", job, "--json"}, 240); });
    ASSERT_TRUE(Eventually(120, [&] { return link.losing_replies(); })) << a.ServerLog();
    std::this_thread::sleep_for(std::chrono::seconds(14));  // as long as the partition the fault pass held
    link.Restore();
    uploader.join();
    ASSERT_EQ(upload.exit_code, 0) << upload.err << a.ServerLog();
    const std::string id = JsonStringField(upload.out, "profile_id");
    ASSERT_FALSE(id.empty()) << upload.out;
    EXPECT_NE(a.Cli({"profiles", "--job", job, "--json"}).out.find(id), std::string::npos);
    CommandResult kernels = a.Cli({"kernels", id, "--json"});
    EXPECT_EQ(CompareSection(kernels.out, analyzed.out, "kernels"), "") << kernels.err;
    CommandResult window = a.Cli({"trace", id, "--json"});
    EXPECT_EQ(window.exit_code, 0) << window.err;
    EXPECT_EQ(window.err.find("no stored events"), std::string::npos) << window.err;
    EXPECT_GT(window.out.size(), 1000u) << window.out;
    const std::string exported = a.root() + "/export-" + job;
    CommandResult original = a.Cli({"export", id, "-o", exported, "--format", "original"});
    ASSERT_EQ(original.exit_code, 0) << original.err;
    EXPECT_TRUE(ReadSmallFile(exported) == ReadSmallFile(trace)) << "the original, byte for byte";
  }
  EXPECT_NE(a.ServerLog().find("whose reply was lost: applied"), std::string::npos) << a.ServerLog();
}

// Issue 45, finding 3: with S3 silent, ten uncached trace queries took every query worker and a
// cached `kernels` or the catalog-only `profiles` failed at its deadline. Reads that wait on the
// object store are bounded (half the workers), so those two answer (within 5 s: the CLI's
// deadline here), and the uncached ones end with their callers instead of retrying past them.
TEST_F(ReplicaTest, ASilentObjectStoreLeavesCatalogAndCachedQueriesAnswering) {
  const std::string endpoint = s3_.endpoint();
  TcpProxy link(std::stoi(endpoint.substr(endpoint.rfind(':') + 1)));
  std::vector<std::string> flags = ReplicaFlags();
  for (auto& f : flags) {
    if (f.starts_with("--s3_endpoint=")) f = "--s3_endpoint=http://" + link.address();
  }
  TestCluster a;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", flags)) << a.ServerLog();
  const std::string cached_trace = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  const std::string uncached_trace = CorpusPath("kineto/a100_alexnet.json.gz");
  FLEETPROF_REQUIRE_PATH(cached_trace);
  FLEETPROF_REQUIRE_PATH(uncached_trace);
  const std::string cached_id = Upload(a, cached_trace);
  const std::string uncached_id = Upload(a, uncached_trace);
  // A cold cache, then one profile's summary read into it.
  ASSERT_EQ(a.StopServer(), 0);
  std::filesystem::remove_all(a.root() + "/server/object-cache");
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", flags)) << a.ServerLog();
  const CommandResult kernels_before = a.Cli({"kernels", cached_id, "--json"});
  ASSERT_EQ(kernels_before.exit_code, 0) << kernels_before.err;

  link.Silence();
  std::vector<CommandResult> uncached(10);
  std::vector<std::thread> queries;
  for (auto& result : uncached) {
    queries.emplace_back([&a, &result, &uncached_id] { result = a.Cli({"trace", uncached_id, "--json", "--timeout_s=15"}); });
  }
  std::this_thread::sleep_for(std::chrono::seconds(2));  // all ten in flight
  const auto started = std::chrono::steady_clock::now();
  const CommandResult kernels = a.Cli({"kernels", cached_id, "--json", "--timeout_s=5"});
  const CommandResult profiles = a.Cli({"profiles", "--json", "--timeout_s=5"});
  const double answered_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  EXPECT_EQ(kernels.exit_code, 0) << kernels.err << a.ServerLog();
  EXPECT_EQ(kernels.out, kernels_before.out);
  EXPECT_EQ(profiles.exit_code, 0) << profiles.err;
  EXPECT_NE(profiles.out.find(uncached_id), std::string::npos);
  std::cout << "with S3 silent and 10 uncached queries in flight, a cached kernels and profiles answered in "
            << answered_s << " s\n";
  for (std::thread& t : queries) t.join();
  for (const CommandResult& r : uncached) {
    EXPECT_NE(r.exit_code, 0);
    EXPECT_TRUE(r.err.find("object store") != std::string::npos || r.err.find("s3 ") != std::string::npos ||
                r.err.find("eadline") != std::string::npos)
        << r.err;
  }
  link.Restore();
  const CommandResult window = a.Cli({"trace", uncached_id, "--json"});
  EXPECT_EQ(window.exit_code, 0) << window.err << a.ServerLog();
}

// Issue 45, finding 5: without etcd a capture start was accepted (RUNNING) and failed a minute
// later, and `agents` answered an empty list with exit 0. Both say at once that etcd is missing.
TEST_F(ReplicaTest, WithoutEtcdCaptureStartsAndAgentListsFailNamingEtcd) {
  TestCluster a;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  ASSERT_EQ(a.Cli({"agents", "--json"}).exit_code, 0);
  etcd_.Kill(0);
  const auto started = std::chrono::steady_clock::now();
  CommandResult agents = a.Cli({"agents", "--json"});
  const auto listed = std::chrono::steady_clock::now();
  CommandResult capture = a.Cli({"capture", "--job", "train", "--json"});
  const auto done = std::chrono::steady_clock::now();
  std::printf("without etcd: agents answered in %.1f s (%s), capture in %.1f s (%s)\n",
              std::chrono::duration<double>(listed - started).count(), agents.err.c_str(),
              std::chrono::duration<double>(done - listed).count(), capture.err.c_str());
  EXPECT_NE(agents.exit_code, 0) << agents.out;
  EXPECT_NE(agents.err.find("etcd"), std::string::npos) << agents.err;
  EXPECT_NE(capture.exit_code, 0) << capture.out;
  EXPECT_NE(capture.err.find("etcd"), std::string::npos) << capture.err;
  EXPECT_EQ(capture.out.find("RUNNING"), std::string::npos) << capture.out;
}

// A capture started through replica B reaches the agent connected to replica A (the capture
// record and etcd's watch), and B's `capture --wait` follows it to DONE with A's progress.
TEST_F(ReplicaTest, ACaptureStartedOnOneReplicaReachesAnAgentOnAnother) {
  FLEETPROF_REQUIRE_PATH(XPROF_PYTHON);
  FLEETPROF_REQUIRE(PythonHasGrpc(), XPROF_PYTHON << " able to import grpc and google.protobuf (Debian python3-grpcio)");
  FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
  TestCluster a, b;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  ASSERT_TRUE(b.StartServer("127.0.0.1:0", ReplicaFlags())) << b.ServerLog();
  ProfilerStandIn job;
  const std::string address = StartJaxJobWithAgent(a, b, job, StandInOptions());
  ASSERT_FALSE(address.empty());

  CommandResult capture = b.Cli({"capture", "--job", "jax-train", "--duration_ms", "300", "--wait", "--json"}, 120);
  EXPECT_EQ(capture.exit_code, 0) << capture.out << capture.err << a.ServerLog() << b.ServerLog();
  EXPECT_NE(capture.out.find("\"state\":\"DONE\""), std::string::npos) << capture.out;
  EXPECT_NE(capture.out.find("\"state\":\"INDEXED\""), std::string::npos) << capture.out;
  const std::string id = JsonStringField(capture.out, "capture_id");
  CommandResult on_a = a.Cli({"captures", "--json"});
  EXPECT_NE(on_a.out.find(id), std::string::npos) << on_a.out;
  EXPECT_NE(b.Cli({"profiles", "--job", "jax-train", "--json"}).out.find("\"node\":\"gpu-a\""), std::string::npos);
}

// Issue 45, finding 2, end to end: each of three etcd members in turn goes silent (bytes held,
// as behind a half-open connection) while a capture started on replica B must reach the agent
// on replica A through the catalog's watch. Every capture reaches DONE: the replicas' calls and
// watches leave the silent member (keepalive) and move to another.
TEST_F(ReplicaTest, WithEachEtcdMemberSilentInTurnACaptureAcrossReplicasIsDone) {
  FLEETPROF_REQUIRE_PATH(XPROF_PYTHON);
  FLEETPROF_REQUIRE(PythonHasGrpc(), XPROF_PYTHON << " able to import grpc and google.protobuf (Debian python3-grpcio)");
  FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
  EtcdCluster members;
  ASSERT_TRUE(members.Start(3)) << members.Log(0) << members.Log(1) << members.Log(2);
  std::vector<std::unique_ptr<TcpProxy>> links;
  std::vector<std::string> through;
  for (const std::string& endpoint : members.EndpointList()) {
    links.push_back(std::make_unique<TcpProxy>(std::stoi(endpoint.substr(endpoint.rfind(':') + 1))));
    through.push_back("http://" + links.back()->address());
  }
  std::vector<std::string> flags = ReplicaFlags();
  for (auto& f : flags) {
    if (f.starts_with("--etcd_endpoints=")) f = "--etcd_endpoints=" + absl::StrJoin(through, ",");
  }
  TestCluster a, b;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", flags)) << a.ServerLog();
  ASSERT_TRUE(b.StartServer("127.0.0.1:0", flags)) << b.ServerLog();
  ProfilerStandIn job;
  const std::string address = StartJaxJobWithAgent(a, b, job, StandInOptions());
  ASSERT_FALSE(address.empty());
  for (size_t silent = 0; silent < links.size(); ++silent) {
    SCOPED_TRACE(silent);
    links[silent]->Silence();
    const auto started = std::chrono::steady_clock::now();
    CommandResult capture = b.Cli({"capture", "--job", "jax-train", "--duration_ms", "300", "--wait", "--json",
                                   "--timeout_s", "90"},
                                  150);
    const double took_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    EXPECT_EQ(capture.exit_code, 0) << capture.out << capture.err << a.ServerLog() << b.ServerLog();
    EXPECT_NE(capture.out.find("\"state\":\"DONE\""), std::string::npos) << capture.out << capture.err;
    std::cout << "etcd member " << silent << " silent: the capture across replicas ended in " << took_s << " s\n";
    links[silent]->Restore();
  }
}

// Issue 45, finding 7: `capture --wait` lost track ("Socket closed") when the replica it
// watched through went away, though the capture ended DONE. It reopens its watch on the next
// replica of --server and reports the end.
TEST_F(ReplicaTest, CaptureWaitFollowsTheCaptureWhenItsReplicaGoesAway) {
  FLEETPROF_REQUIRE_PATH(XPROF_PYTHON);
  FLEETPROF_REQUIRE(PythonHasGrpc(), XPROF_PYTHON << " able to import grpc and google.protobuf (Debian python3-grpcio)");
  FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
  TestCluster a, b;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  ASSERT_TRUE(b.StartServer("127.0.0.1:0", ReplicaFlags())) << b.ServerLog();
  ProfilerStandIn job;
  StandInOptions lasts_its_duration;
  lasts_its_duration.sleep_ms = -1;
  const std::string address = StartJaxJobWithAgent(a, b, job, lasts_its_duration);
  ASSERT_FALSE(address.empty());

  // The CLI watches through B (first in --server); B goes away while the capture runs.
  CommandResult capture;
  std::thread waiter([&] {
    capture = RunCommand({BinDir() + "/fleetprof", "capture", "--job", "jax-train", "--duration_ms", "6000", "--wait",
                          "--json", "--server", b.grpc_addr() + "," + a.grpc_addr()},
                         120);
  });
  ASSERT_TRUE(Eventually(30, [&] { return a.Cli({"captures", "--json"}).out.find("RUNNING") != std::string::npos; }))
      << b.ServerLog();
  ASSERT_EQ(b.StopServer(), 0) << b.ServerLog();
  waiter.join();
  EXPECT_EQ(capture.exit_code, 0) << capture.out << capture.err << a.ServerLog();
  EXPECT_NE(capture.out.find("\"state\":\"DONE\""), std::string::npos) << capture.out << capture.err;
  EXPECT_NE(capture.err.find("again"), std::string::npos) << "the watch moved to A: " << capture.err;
}

// Rounds of a kill loop: `ci` in CI, the environment variable `name` for a soak
// (bench/cluster_soak.sh).
int KillRounds(const char* name, int ci) {
  const char* rounds = std::getenv(name);
  return rounds != nullptr ? std::clamp(std::atoi(rounds), 1, 100000) : ci;
}

// The capture `id` as `server` lists it: its state, and each target's state and error.
struct SeenCapture {
  std::string state;
  std::vector<std::pair<std::string, std::string>> targets;  // (state, error)
};
SeenCapture SeeCapture(TestCluster& server, const std::string& id) {
  SeenCapture seen;
  CommandResult listed = server.Cli({"captures", "--json"});
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  if (listed.exit_code != 0 || parser.parse(listed.out).get(doc) != simdjson::SUCCESS) return seen;
  simdjson::dom::array captures;
  if (doc["captures"].get(captures) != simdjson::SUCCESS) return seen;
  for (simdjson::dom::element capture : captures) {
    std::string_view capture_id, state;
    if (capture["capture_id"].get(capture_id) != simdjson::SUCCESS || capture_id != id) continue;
    if (capture["state"].get(state) == simdjson::SUCCESS) seen.state = state;
    simdjson::dom::array targets;
    if (capture["targets"].get(targets) != simdjson::SUCCESS) continue;
    for (simdjson::dom::element target : targets) {
      std::string_view target_state, error;
      if (target["state"].get(target_state) != simdjson::SUCCESS) target_state = "";
      if (target["error"].get(error) != simdjson::SUCCESS) error = "";
      seen.targets.emplace_back(std::string(target_state), std::string(error));
    }
  }
  return seen;
}

// kill -9 of the replica a capture's agent streams to, while the capture runs (started on the
// other replica): the agent moves to the replica still up and the capture ends INDEXED, or
// FAILED with a reason, never RUNNING for good. Three rounds in CI (FLEETPROF_CAPTURE_KILLS for
// a soak); the killed replica comes back on its address each time, so the agent's list stays right.
TEST_F(ReplicaTest, ACaptureRunningWhenItsAgentsReplicaIsKilledEndsIndexedOrFailedWithAReason) {
  FLEETPROF_REQUIRE_PATH(XPROF_PYTHON);
  FLEETPROF_REQUIRE(PythonHasGrpc(), XPROF_PYTHON << " able to import grpc and google.protobuf (Debian python3-grpcio)");
  FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
  TestCluster replicas[2];
  for (auto& r : replicas) ASSERT_TRUE(r.StartServer("127.0.0.1:0", ReplicaFlags())) << r.ServerLog();
  const std::string addresses[2] = {replicas[0].grpc_addr(), replicas[1].grpc_addr()};
  // Each capture lasts its duration (sleep_ms -1), so it is still running when the replica dies.
  ProfilerStandIn job;
  StandInOptions options;
  options.xspace_path = CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb");
  options.sleep_ms = -1;
  const absl::Status standin_started = job.Start(options, replicas[0].root() + "/standin");
  ASSERT_TRUE(standin_started.ok()) << standin_started;
  const std::string address = job.address();
  ASSERT_GE(replicas[0].StartAgent({"--server=" + addresses[0] + "," + addresses[1], "--node=gpu-k",
                                    "--target=job=jax-kill,xprof=" + address}),
            0);
  // The replica holding the agent's stream: the one whose `agents` says CONNECTED.
  auto agents_replica = [&]() -> int {
    for (int r = 0; r < 2; ++r) {
      if (replicas[r].Cli({"agents", "--json"}).out.find("\"CONNECTED\"") != std::string::npos) return r;
    }
    return -1;
  };
  const int rounds = KillRounds("FLEETPROF_CAPTURE_KILLS", 3);
  int indexed = 0;
  std::vector<double> ended_s;  // from the kill to the capture's end, per round
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(round);
    int victim = -1;
    ASSERT_TRUE(Eventually(30, [&] { return (victim = agents_replica()) >= 0; })) << "the agent is connected";
    TestCluster& killed = replicas[victim];
    TestCluster& survivor = replicas[1 - victim];
    CommandResult started = survivor.Cli({"capture", "--job", "jax-kill", "--duration_ms", "2500", "--json"});
    ASSERT_EQ(started.exit_code, 0) << started.err;
    const std::string id = JsonStringField(started.out, "capture_id");
    ASSERT_FALSE(id.empty()) << started.out;
    ASSERT_TRUE(Eventually(20, [&] {
      SeenCapture seen = SeeCapture(survivor, id);
      return !seen.targets.empty() && seen.targets[0].first == "RUNNING";
    })) << "the agent runs the capture";
    ::kill(killed.server_pid(), SIGKILL);
    const auto killed_at = std::chrono::steady_clock::now();
    killed.StopServer();
    SeenCapture ended;
    EXPECT_TRUE(Eventually(120, [&] {
      ended = SeeCapture(survivor, id);
      return !ended.state.empty() && ended.state != "RUNNING";
    })) << "still " << ended.state << survivor.ServerLog();
    ended_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count());
    ASSERT_EQ(ended.targets.size(), 1u);
    if (ended.targets[0].first == "INDEXED") {
      ++indexed;
      EXPECT_EQ(ended.state, "DONE");
    } else {
      EXPECT_EQ(ended.targets[0].first, "FAILED");
      EXPECT_FALSE(ended.targets[0].second.empty()) << "a failure says why";
    }
    std::cout << "round " << round << ": capture " << ended.state << " (" << ended.targets[0].first << " "
              << ended.targets[0].second << ")" << std::endl;
    ASSERT_TRUE(killed.StartServer(addresses[victim], ReplicaFlags())) << killed.ServerLog();
  }
  std::sort(ended_s.begin(), ended_s.end());
  std::cout << "capture kills: " << rounds << ", captures INDEXED: " << indexed << ", FAILED with a reason: "
            << rounds - indexed << "; from a kill to the capture's end: p50 " << ended_s[ended_s.size() / 2]
            << " s, max " << ended_s.back() << " s" << std::endl;
}

// --server takes the replicas: reads move to another when one dies, and so does the agent.
TEST_F(ReplicaTest, TheCliAndTheAgentFailOverToAnotherReplica) {
  TestCluster a, b;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  ASSERT_TRUE(b.StartServer("127.0.0.1:0", ReplicaFlags())) << b.ServerLog();
  const std::string both = a.grpc_addr() + "," + b.grpc_addr();
  const std::string trace = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  CommandResult up = RunCommand({BinDir() + "/fleetprof", "upload", trace, "--job", "resnet", "--server", both, "--json"});
  ASSERT_EQ(up.exit_code, 0) << up.err;
  const std::string id = JsonStringField(up.out, "profile_id");
  ASSERT_GE(a.StartAgent({"--server=" + both, "--node=failover-node"}), 0);
  auto connected_on = [&](TestCluster& server) {
    return server.Cli({"agents", "--json"}).out.find("\"CONNECTED\"") != std::string::npos;
  };
  ASSERT_TRUE(Eventually(20, [&] { return connected_on(a); })) << "the agent takes the first replica";

  ASSERT_EQ(a.StopServer(), 0) << a.ServerLog();
  CommandResult ops = RunCommand({BinDir() + "/fleetprof", "ops", id, "--server", both, "--json"});
  EXPECT_EQ(ops.exit_code, 0) << ops.err;
  EXPECT_NE(ops.out.find("\"ops\""), std::string::npos) << ops.out;
  EXPECT_TRUE(Eventually(30, [&] { return connected_on(b); })) << "the agent moved to the replica still up";
}

// kill -9 of the replica an upload streams to: the CLI resumes on another replica from the
// offset the catalog holds, and the profile equals a one-go upload of the same file.
TEST_F(ReplicaTest, AnUploadCutByAKilledReplicaResumesOnAnotherToTheSameProfile) {
  TestCluster a, b;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  ASSERT_TRUE(b.StartServer("127.0.0.1:0", ReplicaFlags())) << b.ServerLog();
  const std::string gz = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(gz);
  const std::string plain = a.root() + "/plain.json";
  std::ofstream(plain, std::ios::binary) << Gunzip(gz);
  const std::string one_go = Upload(b, plain);

  ChildProcess upload;
  const std::string log = a.root() + "/upload.log";
  upload.Start({BinDir() + "/fleetprof", "upload", plain, "--job", "resnet", "--json", "--upload_id", "cut-upload-1",
                "--server", a.grpc_addr() + "," + b.grpc_addr()},
               log);
  // Once A has stored parts of the upload (they are objects in s3rver's folder), A dies. A part
  // counts for a resume only once the catalog holds its offset, which is written after the part
  // and before the next one: the second part's object means the first is in the catalog.
  ASSERT_TRUE(Eventually(30, [&] {
    std::error_code ec;
    std::set<std::string> parts;
    const std::string marker = "raw/cut-upload-1/";
    for (auto it = std::filesystem::recursive_directory_iterator(s3_.root(), ec);
         it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      const std::string path = it->path().string();
      if (const size_t at = path.find(marker); at != std::string::npos) parts.insert(path.substr(at + marker.size(), 16));
    }
    return parts.size() >= 2;
  }));
  ::kill(a.server_pid(), SIGKILL);
  a.StopServer();
  ASSERT_TRUE(Eventually(120, [&] { return !upload.Running(); }));
  const std::string out = ReadSmallFile(log);
  const std::string id = JsonStringField(out, "profile_id");
  ASSERT_FALSE(id.empty()) << out << b.ServerLog();
  for (auto [command, section] : {std::pair{"kernels", "kernels"}, {"breakdown", "devices"}, {"ops", "ops"}}) {
    EXPECT_EQ(CompareSection(b.Cli({command, id, "--json"}).out, b.Cli({command, one_go, "--json"}).out, section), "")
        << command;
  }
  // B took the one-go upload whole and only the rest of the cut one: it resumed, not restarted.
  const std::string metrics = HttpGet(b.http_addr(), "/metrics");
  const size_t at = metrics.find("\nfleetprof_server_ingested_bytes_total ");
  ASSERT_NE(at, std::string::npos);
  const double ingested = std::stod(metrics.substr(at + 39));
  const double size = static_cast<double>(std::filesystem::file_size(plain));
  EXPECT_GE(ingested, size);
  EXPECT_LT(ingested, 2 * size) << "replica B received the cut upload from its start again";
  const std::string exported = a.root() + "/exported.json";
  ASSERT_EQ(b.Cli({"export", id, "--format", "original", "-o", exported}).exit_code, 0);
  EXPECT_TRUE(ReadSmallFile(exported) == ReadSmallFile(plain)) << "the resumed upload's bytes are the file's";
}


// 20 rounds: two uploads at once through the replica list, and the replica one of them streams
// to is killed -9 at a random moment, then restarted. Every upload ends as one profile equal to
// a one-go upload; the profile list never shows more than were committed, nor a half one.
TEST_F(ReplicaTest, ReplicaKillsDuringConcurrentUploadsLoseNothingAndShowNothingHalfDone) {
  TestCluster replicas[2];
  for (auto& r : replicas) ASSERT_TRUE(r.StartServer("127.0.0.1:0", ReplicaFlags())) << r.ServerLog();
  const std::string gz = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(gz);
  const std::string plain = replicas[0].root() + "/plain.json";
  std::ofstream(plain, std::ios::binary) << Gunzip(gz);
  const std::string reference = replicas[1].Cli({"ops", Upload(replicas[1], plain), "--json"}).out;
  ASSERT_FALSE(reference.empty());
  std::mt19937 rng(2026);
  std::vector<std::string> ids;
  std::vector<double> recovery_s;  // from the kill to both uploads answered, per round
  std::set<std::string> whole;       // listed mid-way and found whole
  const int rounds = KillRounds("FLEETPROF_REPLICA_KILLS", 20);
  for (int round = 0; round < rounds; ++round) {
    SCOPED_TRACE(round);
    const int victim = round % 2;
    TestCluster& killed = replicas[victim];
    TestCluster& other = replicas[1 - victim];
    // The victim first in both lists: the uploads start there.
    const std::string list = killed.grpc_addr() + "," + other.grpc_addr();
    ChildProcess uploads[2];
    for (int u = 0; u < 2; ++u) {
      uploads[u].Start({BinDir() + "/fleetprof", "upload", plain, "--job", "soak", "--json", "--upload_id",
                        absl::StrCat("soak-", round, "-", u), "--server", list},
                       absl::StrCat(killed.root(), "/upload-", round, "-", u, ".log"));
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(std::uniform_int_distribution<int>(50, 600)(rng)));
    ::kill(killed.server_pid(), SIGKILL);
    const auto killed_at = std::chrono::steady_clock::now();
    killed.StopServer();
    // Mid-way: what is listed is whole (every listed profile answers its ops; one found whole
    // in an earlier round stays so, so only the new ones are asked, or a soak's rounds would
    // each take longer than the last).
    CommandResult listed = other.Cli({"profiles", "--job", "soak", "--json"});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    for (size_t at = 0; (at = listed.out.find("\"profile_id\":\"", at)) != std::string::npos;) {
      at += 14;
      const std::string id = listed.out.substr(at, listed.out.find('"', at) - at);
      if (!whole.insert(id).second) continue;
      EXPECT_EQ(other.Cli({"ops", id, "--json"}).exit_code, 0) << "listed but not whole: " << id;
    }
    ASSERT_TRUE(killed.StartServer("127.0.0.1:0", ReplicaFlags())) << killed.ServerLog();
    for (int u = 0; u < 2; ++u) {
      ASSERT_TRUE(Eventually(120, [&] { return !uploads[u].Running(); }));
      const std::string out = ReadSmallFile(absl::StrCat(killed.root(), "/upload-", round, "-", u, ".log"));
      const std::string id = JsonStringField(out, "profile_id");
      ASSERT_FALSE(id.empty()) << out;
      ids.push_back(id);
    }
    recovery_s.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - killed_at).count());
  }
  std::sort(recovery_s.begin(), recovery_s.end());
  std::cout << "replica kills: " << rounds << ", uploads: " << ids.size() << ", from a kill to both uploads answered: p50 "
            << recovery_s[recovery_s.size() / 2] << " s, max " << recovery_s.back() << " s" << std::endl;
  std::sort(ids.begin(), ids.end());
  EXPECT_EQ(std::unique(ids.begin(), ids.end()), ids.end()) << "one profile per upload";
  for (const auto& id : ids) {
    EXPECT_EQ(CompareSection(replicas[0].Cli({"ops", id, "--json"}).out, reference, "ops"), "") << id;
  }
  CommandResult listed = replicas[1].Cli({"profiles", "--job", "soak", "--json"});
  size_t count = 0;
  for (size_t at = 0; (at = listed.out.find("\"profile_id\"", at)) != std::string::npos; ++at) ++count;
  EXPECT_EQ(count, ids.size()) << "every upload committed exactly once";
}

TEST_F(ReplicaTest, AReplicasFolderIsOnlyACacheAndADeleteIsSeenEverywhere) {
  TestCluster a, b;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  const std::string trace = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  const std::string id = Upload(a, trace);
  CommandResult before = a.Cli({"ops", id, "--json"});
  ASSERT_EQ(a.StopServer(), 0);
  std::filesystem::remove_all(a.root() + "/server");
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  EXPECT_EQ(a.Cli({"ops", id, "--json"}).out, before.out) << a.ServerLog();

  ASSERT_TRUE(b.StartServer("127.0.0.1:0", ReplicaFlags())) << b.ServerLog();
  CommandResult deleted = b.Cli({"delete", id});
  ASSERT_EQ(deleted.exit_code, 0) << deleted.err;
  // Replica A kept the profile's summary parsed; etcd's watch tells it of the delete.
  CommandResult gone;
  EXPECT_TRUE(Eventually(10, [&] {
    gone = a.Cli({"ops", id, "--json"});
    return gone.exit_code != 0;
  })) << a.ServerLog();
  EXPECT_NE(gone.err.find("not found"), std::string::npos) << gone.err;
}

// PyTorch writes plain JSON and object stores compress nothing: the replica does, so a plain
// upload costs about what RocksDB's block compression makes of it on one server's disk.
TEST_F(ReplicaTest, PlainJsonIsStoredCompressedAndExportsByteForByte) {
  TestCluster a;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  const std::string gz = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(gz);
  const std::string plain = a.root() + "/plain.json";
  const std::string bytes = Gunzip(gz);
  std::ofstream(plain, std::ios::binary) << bytes;
  const int64_t empty = s3_.DiskBytes();
  const std::string id = Upload(a, plain);
  const int64_t stored = s3_.DiskBytes() - empty;
  EXPECT_LE(stored, static_cast<int64_t>(bytes.size()) * 15 / 100)
      << stored << " bytes in the object store for a " << bytes.size() << "-byte upload";
  std::printf("object store: %lld bytes for a %zu-byte plain JSON upload (%.3f)\n", static_cast<long long>(stored),
              bytes.size(), static_cast<double>(stored) / static_cast<double>(bytes.size()));
  const std::string out = a.root() + "/exported.json";
  CommandResult exported = a.Cli({"export", id, "--format", "original", "-o", out});
  ASSERT_EQ(exported.exit_code, 0) << exported.err;
  EXPECT_TRUE(ReadSmallFile(out) == bytes) << "the original comes back byte for byte";
}

// Sum of a metric's series whose text starts with `series` (name and the first labels).
double MetricSum(const std::string& exposition, const std::string& series) {
  double sum = 0;
  size_t at = 0;
  while ((at = exposition.find("\n" + series, at)) != std::string::npos) {
    const size_t end = exposition.find('\n', at + 1);
    const std::string line = exposition.substr(at + 1, end - at - 1);
    sum += std::stod(line.substr(line.rfind(' ') + 1));
    at = end;
  }
  return sum;
}

// A replica keeps what it read (summaries, event ranges) under --data_dir: restarted, it answers
// the same queries without one object-store GET; with the folder gone, it reads them again.
TEST_F(ReplicaTest, ARestartedReplicaAnswersFromItsDiskCacheAndWithoutItFromTheStore) {
  TestCluster a;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  const std::string trace = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  const std::string id = Upload(a, trace);
  auto query = [&] {
    CommandResult ops = a.Cli({"ops", id, "--json"});
    EXPECT_EQ(ops.exit_code, 0) << ops.err;
    EXPECT_EQ(a.Cli({"trace", id, "--json"}).exit_code, 0);
    return ops.out;
  };
  const std::string before = query();
  auto reads = [&] {
    const std::string metrics = HttpGet(a.http_addr(), "/metrics");
    return std::make_pair(MetricSum(metrics, "fleetprof_server_object_store_requests_total{op=\"GET\"") +
                              MetricSum(metrics, "fleetprof_server_object_store_requests_total{op=\"HEAD\""),
                          MetricSum(metrics, "fleetprof_server_object_cache_lookups_total{result=\"hit\"}"));
  };
  ASSERT_EQ(a.StopServer(), 0);
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  EXPECT_EQ(query(), before);
  auto [warm_reads, warm_hits] = reads();
  EXPECT_EQ(warm_reads, 0) << "every read came from the disk cache";
  EXPECT_GT(warm_hits, 0);

  ASSERT_EQ(a.StopServer(), 0);
  std::filesystem::remove_all(a.root() + "/server/object-cache");
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", ReplicaFlags())) << a.ServerLog();
  EXPECT_EQ(query(), before);
  EXPECT_GT(reads().first, 0) << "a cold cache reads from the object store";
}

// The leader collects objects no catalog record owns once two of its passes found them so,
// and leaves every committed profile's objects alone.
TEST_F(ReplicaTest, TheLeaderCollectsOrphanedObjectsAndNothingElse) {
  std::vector<std::string> flags = ReplicaFlags();
  flags.push_back("--orphan_pass_s=1");
  TestCluster a;
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", flags)) << a.ServerLog();
  const std::string trace = CorpusPath("kineto/v100_resnet_rank0.pt.trace.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  const std::string id = Upload(a, trace);
  const std::string before = a.Cli({"ops", id, "--json"}).out;
  // What a replica that died mid-ingest leaves: a summary object with no profile record.
  const std::string empty_sha = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
  const std::string orphan = s3_.endpoint() + "/" + s3_.bucket() + "/cluster/summaries/lost-profile";
  CommandResult put = RunCommand({"/usr/bin/curl", "-sf", "-X", "PUT", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
                                  "S3RVER:S3RVER", "-H", "x-amz-content-sha256: " + empty_sha, "--data-binary", "",
                                  orphan});
  ASSERT_EQ(put.exit_code, 0) << put.err;
  auto exists = [&] {
    return RunCommand({"/usr/bin/curl", "-sf", "-o", "/dev/null", "--aws-sigv4", "aws:amz:us-east-1:s3", "--user",
                       "S3RVER:S3RVER", "-H", "x-amz-content-sha256: " + empty_sha, orphan})
               .exit_code == 0;
  };
  ASSERT_TRUE(exists());
  EXPECT_TRUE(Eventually(20, [&] { return !exists(); })) << a.ServerLog();
  EXPECT_NE(a.ServerLog().find("removed the objects of 1 profiles"), std::string::npos) << a.ServerLog();
  std::filesystem::remove_all(a.root() + "/server");  // nothing cached: every object is read again
  ASSERT_EQ(a.StopServer(), 0);
  ASSERT_TRUE(a.StartServer("127.0.0.1:0", flags)) << a.ServerLog();
  EXPECT_EQ(a.Cli({"ops", id, "--json"}).out, before);
  EXPECT_EQ(a.Cli({"trace", id, "--json"}).exit_code, 0);
}

TEST_F(ReplicaTest, ReplicaFlagsComeInPairsAndABadStoreIsAnErrorAtStart) {
  const std::string server = BinDir() + "/fleetprof-server";
  CommandResult alone = RunCommand({server, "--object_store=s3://b/p", "--grpc_addr=127.0.0.1:0", "--http_addr=127.0.0.1:0"});
  EXPECT_NE(alone.exit_code, 0);
  EXPECT_NE(alone.err.find("--object_store needs --etcd_endpoints"), std::string::npos) << alone.err;
  CommandResult other = RunCommand({server, "--etcd_endpoints=" + etcd_.Endpoints(), "--grpc_addr=127.0.0.1:0",
                                    "--http_addr=127.0.0.1:0"});
  EXPECT_NE(other.exit_code, 0);
  EXPECT_NE(other.err.find("--etcd_endpoints needs --object_store"), std::string::npos) << other.err;
  CommandResult bounded = RunCommand({server, "--object_store=s3://b/p", "--etcd_endpoints=" + etcd_.Endpoints(),
                                      "--max_disk_mb=100", "--grpc_addr=127.0.0.1:0", "--http_addr=127.0.0.1:0"});
  EXPECT_NE(bounded.exit_code, 0);
  EXPECT_NE(bounded.err.find("--max_disk_mb bounds the embedded store"), std::string::npos) << bounded.err;
  const std::string dir = MakeTempDir();
  CommandResult no_bucket = RunCommand(
      {server, "--object_store=s3://no-such-bucket/p", "--s3_endpoint=" + s3_.endpoint(),
       "--s3_credentials_file=" + credentials_, "--etcd_endpoints=" + etcd_.Endpoints(), "--data_dir=" + dir,
       "--grpc_addr=127.0.0.1:0", "--http_addr=127.0.0.1:0"},
      60);
  EXPECT_NE(no_bucket.exit_code, 0);
  EXPECT_NE(no_bucket.err.find("NoSuchBucket"), std::string::npos) << no_bucket.err;
  // TLS files are for https:// members, and a certificate comes with its key.
  CommandResult plain_with_ca = RunCommand({server, "--object_store=file://" + dir, "--etcd_endpoints=" + etcd_.Endpoints(),
                                            "--etcd_ca_file=/nonexistent", "--grpc_addr=127.0.0.1:0",
                                            "--http_addr=127.0.0.1:0"});
  EXPECT_EQ(plain_with_ca.exit_code, 2);
  EXPECT_NE(plain_with_ca.err.find("are for https:// --etcd_endpoints"), std::string::npos) << plain_with_ca.err;
  CommandResult mixed = RunCommand({server, "--object_store=file://" + dir,
                                    "--etcd_endpoints=https://127.0.0.1:1," + etcd_.Endpoints(),
                                    "--grpc_addr=127.0.0.1:0", "--http_addr=127.0.0.1:0"});
  EXPECT_EQ(mixed.exit_code, 2);
  EXPECT_NE(mixed.err.find("mixes http:// and https://"), std::string::npos) << mixed.err;
  std::filesystem::remove_all(dir);
}

// A replica on an etcd that takes TLS only and asks for client certificates: with the CA and
// its certificate it serves uploads and queries, and `fleetprof cluster` shows the https
// catalog healthy; without the certificate it does not start, and says etcd refused it.
TEST(ReplicaOverTls, AReplicaReachesEtcdOverTlsWithItsClientCertificate) {
  FLEETPROF_REQUIRE_PATH(EtcdPath());
  const std::string trace = CorpusPath("kineto/mi250_rocm62.json.gz");
  FLEETPROF_REQUIRE_PATH(trace);
  const std::string pki = MakeTempDir();
  CommandResult made = MakeTestPki(pki);
  ASSERT_EQ(made.exit_code, 0) << "openssl: " << made.err;
  EtcdCluster etcd;
  etcd.UseTls(pki + "/ca.pem", pki + "/server.pem", pki + "/server.key");
  ASSERT_TRUE(etcd.Start(1)) << etcd.Log(0);
  const std::string objects = MakeTempDir();
  const std::vector<std::string> flags = {"--object_store=file://" + objects, "--etcd_endpoints=" + etcd.Endpoints(),
                                          "--etcd_ca_file=" + pki + "/ca.pem"};
  std::vector<std::string> with_certificate = flags;
  with_certificate.push_back("--etcd_cert_file=" + pki + "/client.pem");
  with_certificate.push_back("--etcd_key_file=" + pki + "/client.key");
  TestCluster replica;
  ASSERT_TRUE(replica.StartServer("127.0.0.1:0", with_certificate)) << replica.ServerLog();
  CommandResult uploaded = replica.Cli({"upload", trace, "--job", "tls", "--json"});
  ASSERT_EQ(uploaded.exit_code, 0) << uploaded.err << replica.ServerLog();
  const std::string id = JsonStringField(uploaded.out, "profile_id");
  CommandResult listed = replica.Cli({"profiles", "--job", "tls", "--json"});
  EXPECT_NE(listed.out.find(id), std::string::npos) << listed.out;
  CommandResult cluster = replica.Cli({"cluster", "--json"});
  EXPECT_NE(cluster.out.find("\"catalog\":{\"kind\":\"etcd\",\"url\":\"" + etcd.Endpoints() + "\",\"healthy\":true}"),
            std::string::npos)
      << cluster.out;

  const std::string dir = MakeTempDir();
  std::vector<std::string> argv = {BinDir() + "/fleetprof-server", "--data_dir=" + dir, "--grpc_addr=127.0.0.1:0",
                                   "--http_addr=127.0.0.1:0"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  CommandResult refused = RunCommand(argv, 90);
  EXPECT_NE(refused.exit_code, 0);
  EXPECT_NE(refused.err.find("etcd"), std::string::npos) << refused.err;
  std::filesystem::remove_all(dir);
  std::filesystem::remove_all(objects);
  std::filesystem::remove_all(pki);
}

}  // namespace
}  // namespace fleetprof::testing
