// Pyroscope's query API over Connect (querier.v1) on the real server: the answers of both
// encodings against the HTTP flamegraph route and the breakdowns, labels and time ranges, and
// the errors a Connect client reads (docs/http-api.md, Pyroscope query API).

#include <chrono>
#include <iostream>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "auth/token_hash.h"
#include "fleetprof/v1/query.pb.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"
#include "httplib.h"
#include "proto/proto_json.h"
#include "querier/v1/querier.pb.h"
#include "tests/e2e/process_runner.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

constexpr char kDevice[] = "fleetprof:device_time:nanoseconds:device_time:nanoseconds";
constexpr char kHost[] = "fleetprof:host_self_time:nanoseconds:host_self_time:nanoseconds";
constexpr char kService[] = "/querier.v1.QuerierService/";

int64_t NowMs() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

class ConnectApiTest : public ::testing::Test {
 protected:
  void SetUp() override { Start({}); }

  void Start(const std::vector<std::string>& flags) {
    ASSERT_TRUE(cluster_.StartServer("127.0.0.1:0", flags)) << cluster_.ServerLog();
    http_ = std::make_unique<httplib::Client>("http://" + cluster_.http_addr());
    http_->set_read_timeout(60, 0);
  }

  std::string Upload(const std::string& trace, const std::string& job, const std::string& label) {
    const std::string path = CorpusPath(trace);
    CommandResult r = cluster_.Cli({"upload", path, "--job", job, "--label", label, "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err << cluster_.ServerLog();
    return JsonStringField(r.out, "profile_id");
  }

  httplib::Result Post(const std::string& method, const std::string& body, const std::string& type,
                       const httplib::Headers& headers = {}) {
    return http_->Post(kService + method, headers, body, type);
  }

  // A Connect call in JSON: the answer parsed into `response`; false (with a failure) when
  // it is not 200.
  bool CallJson(const std::string& method, const std::string& body, google::protobuf::Message* response) {
    auto res = Post(method, body, "application/json");
    if (!res || res->status != 200) {
      ADD_FAILURE() << method << " " << body << ": " << (res ? res->body : "no answer");
      return false;
    }
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
    absl::Status parsed = ProtoFromJson(res->body, response);
    EXPECT_TRUE(parsed.ok()) << parsed << res->body;
    return parsed.ok();
  }

  // The same call in binary protobuf.
  bool CallProto(const std::string& method, const google::protobuf::Message& request,
                 google::protobuf::Message* response) {
    auto res = Post(method, request.SerializeAsString(), "application/proto");
    if (!res || res->status != 200) {
      ADD_FAILURE() << method << ": " << (res ? res->body : "no answer");
      return false;
    }
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/proto");
    EXPECT_TRUE(response->ParseFromString(res->body));
    return true;
  }

  // The HTTP route's flame graph.
  v1::FlameGraph Route(const std::string& path) {
    auto res = http_->Get(path);
    v1::FlameGraph graph;
    if (!res || res->status != 200) {
      ADD_FAILURE() << path << ": " << (res ? res->body : "no answer");
      return graph;
    }
    EXPECT_TRUE(ProtoFromJson(res->body, &graph).ok()) << res->body;
    return graph;
  }

  // SelectMergeStacktraces in both encodings, which must agree; the flame graph.
  v1::FlameGraph Merge(const std::string& type, const std::string& selector) {
    querier::v1::SelectMergeStacktracesRequest request;
    request.set_profile_typeid(type);
    request.set_label_selector(selector);
    request.set_start(NowMs() - 3600 * 1000);
    request.set_end(NowMs() + 60 * 1000);
    std::string json;
    AppendJsonString(&json, selector);
    querier::v1::SelectMergeStacktracesResponse from_json, from_proto;
    CallJson("SelectMergeStacktraces",
             "{\"profileTypeID\":\"" + type + "\",\"labelSelector\":" + json + ",\"start\":\"" +
                 std::to_string(request.start()) + "\",\"end\":" + std::to_string(request.end()) + "}",
             &from_json);
    CallProto("SelectMergeStacktraces", request, &from_proto);
    EXPECT_TRUE(google::protobuf::util::MessageDifferencer::Equals(from_json, from_proto));
    return from_json.flamegraph();
  }

  static bool Same(const v1::FlameGraph& a, const v1::FlameGraph& b) {
    return google::protobuf::util::MessageDifferencer::Equals(a, b);
  }

  TestCluster cluster_;
  std::unique_ptr<httplib::Client> http_;
};

TEST_F(ConnectApiTest, MergedStacktracesEqualTheFlameGraphRouteForAProfileAndAJob) {
  FLEETPROF_REQUIRE_PATH(CorpusPath("kineto/a100_alexnet.json.gz"));
  const std::string a = Upload("kineto/a100_alexnet.json.gz", "cj", "team=vision");
  const std::string b = Upload("kineto/v100_resnet_rank0.pt.trace.json.gz", "cj", "team=vision");
  const std::string other = Upload("kineto/mi250_rocm62.json.gz", "other", "team=infra");
  for (const std::string& id : {a, b}) {
    const v1::FlameGraph device = Merge(kDevice, "{profile_id=\"" + id + "\"}");
    EXPECT_TRUE(Same(device, Route("/api/v1/profiles/" + id + "/flamegraph?value=device_ns")));
    EXPECT_GT(device.total(), 0);
    EXPECT_TRUE(Same(Merge(kHost, "{profile_id=\"" + id + "\"}"),
                     Route("/api/v1/profiles/" + id + "/flamegraph?value=host_self_ns")));
  }
  const v1::FlameGraph job = Merge(kDevice, "{service_name=\"cj\"}");
  EXPECT_TRUE(Same(job, Route("/api/v1/jobs/cj/flamegraph?value=device_ns")));
  EXPECT_TRUE(Same(Merge(kHost, "{job=\"cj\", team=~\"vis.*\"}"), Route("/api/v1/jobs/cj/flamegraph?value=host_self_ns")));
  EXPECT_TRUE(Same(Merge(kDevice, "{service_name!=\"other\"}"), job));
  EXPECT_EQ(Merge(kDevice, "{}").total(),
            job.total() + Route("/api/v1/jobs/other/flamegraph?value=device_ns").total());
  EXPECT_EQ(Merge(kDevice, "{service_name=\"nobody\"}").total(), 0);

  // proto3 JSON: lowerCamelCase names and int64 as strings.
  auto res = Post("SelectMergeStacktraces", std::string("{\"profile_typeID\":\"") + kDevice +
                                                "\",\"label_selector\":\"{service_name=\\\"cj\\\"}\"}",
                  "application/json");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200) << res->body;
  EXPECT_NE(res->body.find("\"maxSelf\":\""), std::string::npos) << res->body.substr(0, 300);
  EXPECT_NE(res->body.find("\"total\":\"" + std::to_string(job.total()) + "\""), std::string::npos);

  // max_nodes folds the tree, the total stays.
  auto folded = Post("SelectMergeStacktraces", std::string("{\"profileTypeID\":\"") + kDevice +
                                                   "\",\"labelSelector\":\"{service_name=\\\"cj\\\"}\",\"maxNodes\":8}",
                     "application/json");
  ASSERT_TRUE(folded);
  querier::v1::SelectMergeStacktracesResponse small;
  ASSERT_TRUE(ProtoFromJson(folded->body, &small).ok()) << folded->body;
  EXPECT_EQ(small.flamegraph().total(), job.total());
  int frames = 0;
  for (const auto& level : small.flamegraph().levels()) frames += level.values_size() / 4;
  EXPECT_LE(frames, 8);
  (void)other;

  // A profile uploaded since is added to the kept sum (rollup), one deleted makes it sum anew:
  // either way the same tree as the route's.
  const std::string c = Upload("kineto/a100_nccl_rank0.json.gz", "cj", "team=vision");
  const v1::FlameGraph grown = Merge(kDevice, "{service_name=\"cj\"}");
  EXPECT_TRUE(Same(grown, Route("/api/v1/jobs/cj/flamegraph?value=device_ns")));
  EXPECT_GT(grown.total(), job.total());
  auto deleted = http_->Delete("/api/v1/profiles/" + c);
  ASSERT_TRUE(deleted);
  ASSERT_EQ(deleted->status, 200) << deleted->body;
  EXPECT_TRUE(Same(Merge(kDevice, "{service_name=\"cj\"}"), job));
}

TEST_F(ConnectApiTest, ProfileTypesLabelsAndSeriesAnswerFromTheSelectedProfiles) {
  FLEETPROF_REQUIRE_PATH(CorpusPath("kineto/a100_alexnet.json.gz"));
  const std::string a = Upload("kineto/a100_alexnet.json.gz", "cj", "team=vision");
  const std::string b = Upload("kineto/v100_resnet_rank0.pt.trace.json.gz", "cj", "team=vision");
  Upload("kineto/mi250_rocm62.json.gz", "other", "team=infra");

  querier::v1::ProfileTypesResponse types;
  ASSERT_TRUE(CallJson("ProfileTypes", "{}", &types));
  ASSERT_EQ(types.profile_types_size(), 2);
  EXPECT_EQ(types.profile_types(0).id(), kDevice);
  EXPECT_EQ(types.profile_types(0).sample_type(), "device_time");
  EXPECT_EQ(types.profile_types(0).sample_unit(), "nanoseconds");
  EXPECT_EQ(types.profile_types(1).id(), kHost);

  types::v1::LabelNamesResponse names;
  ASSERT_TRUE(CallJson("LabelNames", "{\"matchers\":[\"{service_name=\\\"cj\\\"}\"]}", &names));
  std::vector<std::string> got(names.names().begin(), names.names().end());
  for (const char* name : {"job", "node", "profile_id", "service_name", "team"}) {
    EXPECT_NE(std::find(got.begin(), got.end(), name), got.end()) << name;
  }
  types::v1::LabelValuesResponse jobs;
  ASSERT_TRUE(CallJson("LabelValues", "{\"name\":\"service_name\"}", &jobs));
  EXPECT_EQ(std::vector<std::string>(jobs.names().begin(), jobs.names().end()),
            (std::vector<std::string>{"cj", "other"}));
  types::v1::LabelValuesResponse ids;
  ASSERT_TRUE(CallJson("LabelValues", "{\"name\":\"profile_id\",\"matchers\":[\"{team=\\\"vision\\\"}\"]}", &ids));
  std::vector<std::string> want = {a, b};
  std::sort(want.begin(), want.end());
  EXPECT_EQ(std::vector<std::string>(ids.names().begin(), ids.names().end()), want);
  // A time range before any ingest selects nothing.
  types::v1::LabelValuesResponse none;
  ASSERT_TRUE(CallJson("LabelValues", "{\"name\":\"service_name\",\"start\":\"1000\",\"end\":\"2000\"}", &none));
  EXPECT_EQ(none.names_size(), 0);

  querier::v1::SelectSeriesRequest request;
  request.set_profile_typeid(kDevice);
  request.set_label_selector("{service_name=\"cj\"}");
  request.add_group_by("profile_id");
  request.set_start(NowMs() - 3600 * 1000);
  request.set_end(NowMs() + 60 * 1000);
  querier::v1::SelectSeriesResponse series;
  ASSERT_TRUE(CallProto("SelectSeries", request, &series));
  ASSERT_EQ(series.series_size(), 2);
  for (const auto& one : series.series()) {
    ASSERT_EQ(one.labels_size(), 1);
    EXPECT_EQ(one.labels(0).name(), "profile_id");
    ASSERT_EQ(one.points_size(), 1);
    EXPECT_EQ(static_cast<int64_t>(one.points(0).value()),
              Route("/api/v1/profiles/" + one.labels(0).value() + "/flamegraph").total());
    EXPECT_NEAR(static_cast<double>(one.points(0).timestamp()), static_cast<double>(NowMs()), 600e3);
  }
  // Without group_by, with a step of an hour: one series, one point, the job's total.
  request.clear_group_by();
  request.set_step(3600);
  ASSERT_TRUE(CallProto("SelectSeries", request, &series));
  ASSERT_EQ(series.series_size(), 1);
  ASSERT_EQ(series.series(0).points_size(), 1);
  EXPECT_EQ(static_cast<int64_t>(series.series(0).points(0).value()), Route("/api/v1/jobs/cj/flamegraph").total());
}

TEST_F(ConnectApiTest, BadRequestsAreConnectErrors) {
  const auto expect = [&](const std::string& method, const std::string& body, const std::string& type, int status,
                          const std::string& code, const std::string& says) {
    SCOPED_TRACE(method + " " + body);
    auto res = Post(method, body, type);
    ASSERT_TRUE(res);
    EXPECT_EQ(res->status, status) << res->body;
    if (!code.empty()) {
      EXPECT_NE(res->body.find("{\"code\":\"" + code + "\""), std::string::npos) << res->body;
    }
    EXPECT_NE(res->body.find(says), std::string::npos) << res->body;
  };
  expect("SelectMergeStacktraces", "{\"profileTypeID\":\"process_cpu:cpu:nanoseconds:cpu:nanoseconds\"}",
         "application/json", 400, "invalid_argument", "unknown profile type 'process_cpu");
  expect("SelectSeries", std::string("{\"profileTypeID\":\"") + kDevice + "\",\"labelSelector\":\"{job=~\\\"(\\\"}\"}",
         "application/json", 400, "invalid_argument", "does not compile");
  expect("SelectMergeStacktraces", std::string("{\"profileTypeID\":\"") + kDevice + "\",\"labelSelector\":\"{job=}\"}",
         "application/json", 400, "invalid_argument", "bad label selector '{job=}': expected a quoted value");
  expect("LabelNames", "{\"matchers\":[\"service_name=\\\"x\\\"\"]}", "application/json", 400, "invalid_argument",
         "expected '{'");
  expect("LabelNames", "{not json", "application/json; charset=utf-8", 400, "invalid_argument", "request body");
  expect("LabelNames", "\x0a\x03\xff", "application/proto", 400, "invalid_argument", "binary");
  expect("LabelNames", "{}", "text/plain", 415, "", "application/json or application/proto");
  expect("Diff", "{}", "application/json", 501, "unimplemented", "not served here");
  // Unknown fields of a newer client are ignored.
  types::v1::LabelNamesResponse names;
  EXPECT_TRUE(CallJson("LabelNames", "{\"matchers\":[],\"someNewField\":1}", &names));
}

// The npm Connect client (scripts/install-deps.sh puts it under /opt/fleetprof-test/connect),
// its code generated here from proto/ by protoc-gen-es: tests/connect_client/connect_check.mjs.
TEST_F(ConnectApiTest, ARealConnectClientReadsTheHttpRoutesTreesAndTheBreakdownsTotals) {
  const char* env = std::getenv("FLEETPROF_CONNECT_CLIENT");
  const std::string client = env != nullptr ? env : "/opt/fleetprof-test/connect";
  FLEETPROF_REQUIRE_PATH(client + "/node_modules/.bin/protoc-gen-es");
  FLEETPROF_REQUIRE_PATH("/usr/bin/node");
  FLEETPROF_REQUIRE_PATH("/usr/bin/protoc");
  FLEETPROF_REQUIRE_PATH(CorpusPath("kineto/a100_alexnet.json.gz"));
  const std::string a = Upload("kineto/a100_alexnet.json.gz", "cj", "team=vision");
  Upload("kineto/v100_resnet_rank0.pt.trace.json.gz", "cj", "team=vision");
  namespace fs = std::filesystem;
  const std::string source = FLEETPROF_SOURCE_DIR;
  const std::string out = cluster_.root() + "/connect";
  fs::create_directories(out + "/gen");
  // Node finds the client's packages from the script's folder up.
  fs::create_directory_symlink(client + "/node_modules", out + "/node_modules");
  fs::copy_file(source + "/tests/connect_client/connect_check.mjs", out + "/connect_check.mjs");
  std::vector<std::string> protoc = {"/usr/bin/protoc", "--plugin=protoc-gen-es=" + client + "/node_modules/.bin/protoc-gen-es",
                                     "--es_out=" + out + "/gen", "--es_opt=target=js,import_extension=js", "--proto_path=" + source + "/proto",
                                     source + "/proto/querier/v1/querier.proto", source + "/proto/types/v1/types.proto"};
  for (const auto& entry : fs::directory_iterator(source + "/proto/fleetprof/v1")) {
    if (entry.path().extension() == ".proto") protoc.push_back(entry.path().string());
  }
  CommandResult generated = RunCommand(protoc, 120);
  ASSERT_EQ(generated.exit_code, 0) << generated.out << generated.err;
  CommandResult check = RunCommand(
      {"/usr/bin/node", out + "/connect_check.mjs", "--url", "http://" + cluster_.http_addr(), "--job", "cj", "--profile", a},
      120);
  EXPECT_EQ(check.exit_code, 0) << check.out << check.err << cluster_.ServerLog();
  EXPECT_NE(check.out.find("connect_check: ok"), std::string::npos) << check.out;
  std::cout << check.out;
}

TEST(ConnectApiWithTokensTest, TokensWorkAsOnEveryOtherRoute) {
  TestCluster cluster;
  std::ofstream(cluster.root() + "/tokens") << Sha256Hex("reader") << " read reader\n"
                                            << Sha256Hex("uploader") << " ingest uploader\n";
  ASSERT_TRUE(cluster.StartServer("127.0.0.1:0", {"--auth_tokens_file=" + cluster.root() + "/tokens"}))
      << cluster.ServerLog();
  httplib::Client http("http://" + cluster.http_addr());
  const auto call = [&](const std::string& token) {
    httplib::Headers headers;
    if (!token.empty()) headers.emplace("Authorization", "Bearer " + token);
    return http.Post(std::string(kService) + "ProfileTypes", headers, "{}", "application/json");
  };
  auto none = call("");
  ASSERT_TRUE(none);
  EXPECT_EQ(none->status, 401);
  EXPECT_NE(none->body.find("{\"code\":\"unauthenticated\""), std::string::npos) << none->body;
  auto wrong = call("uploader");
  ASSERT_TRUE(wrong);
  EXPECT_EQ(wrong->status, 403);
  EXPECT_NE(wrong->body.find("{\"code\":\"permission_denied\""), std::string::npos) << wrong->body;
  auto ok = call("reader");
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200) << ok->body;
}

}  // namespace
}  // namespace fleetprof::testing
