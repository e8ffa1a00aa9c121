// The HTTP/JSON API of the real server binary: every /api/v1 section equals the CLI's --json
// (both print the same proto through the same writer) and the corpus references; errors carry
// the JSON shape and the mapped status; limits answer 413 and the server keeps serving.

#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "httplib.h"
#include "simdjson.h"
#include "tests/e2e/http_get.h"
#include "tests/e2e/reference_compare.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

struct CorpusCase {
  const char* trace;
  const char* reference;
};

const CorpusCase kCorpus[] = {
    {"kineto/v100_resnet_rank0.pt.trace.json.gz", "reference/v100_resnet_rank0.pt.trace.ref.json"},
    {"kineto/v100_resnet50_legacy_schema.pt.trace.json.gz",
     "reference/v100_resnet50_legacy_schema.pt.trace.ref.json"},
    {"kineto/a100_alexnet.json.gz", "reference/a100_alexnet.ref.json"},
    {"kineto/a100_nccl_rank0.json.gz", "reference/a100_nccl_rank0.ref.json"},
    {"kineto/mi250_rocm62.json.gz", "reference/mi250_rocm62.ref.json"},
    {"kineto/mtia_inference_rank0.json.gz", "reference/mtia_inference_rank0.ref.json"},
    {"xspace/tf_8gpu_multi_worker.xplane.pb", "reference/tf_8gpu_multi_worker.xplane.ref.json"},
};

std::string TrimNewline(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}

class HttpApiTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
    http_ = std::make_unique<httplib::Client>("http://" + cluster_.http_addr());
    http_->set_read_timeout(30, 0);
  }

  std::string Upload(const std::string& path) {
    CommandResult r = cluster_.Cli({"upload", path, "--job", "corpus", "--json"});
    EXPECT_EQ(r.exit_code, 0) << r.err << cluster_.ServerLog();
    return JsonStringField(r.out, "profile_id");
  }

  // GETs `path`; expects `status` and returns the body.
  std::string Get(const std::string& path, int status = 200) { return ExpectGet(*http_, path, status); }

  // The CLI's --json output (trailing newline removed).
  std::string CliJson(std::vector<std::string> args) {
    args.push_back("--json");
    CommandResult r = cluster_.Cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return TrimNewline(r.out);
  }

  // Expects the error shape with `code` and a message containing `mention`.
  void ExpectError(const std::string& body, const std::string& code, const std::string& mention) {
    simdjson::dom::parser parser;
    simdjson::dom::element doc;
    ASSERT_EQ(parser.parse(body).get(doc), simdjson::SUCCESS) << body;
    std::string_view got_code, message;
    ASSERT_EQ(doc["error"]["code"].get(got_code), simdjson::SUCCESS) << body;
    ASSERT_EQ(doc["error"]["message"].get(message), simdjson::SUCCESS) << body;
    EXPECT_EQ(got_code, code) << body;
    EXPECT_NE(message.find(mention), std::string_view::npos) << body;
  }

  TestCluster cluster_;
  std::unique_ptr<httplib::Client> http_;
};

TEST_F(HttpApiTest, EverySectionEqualsTheCliAndTheReferenceForTheWholeCorpus) {
  for (const CorpusCase& c : kCorpus) {
    SCOPED_TRACE(c.trace);
    const std::string trace = CorpusPath(c.trace);
    FLEETPROF_REQUIRE_PATH(trace);
    const std::string id = Upload(trace);
    ASSERT_FALSE(id.empty());
    const std::string base = "/api/v1/profiles/" + id;
    // The CLI and the API print the same message through the same writer: byte-equal.
    EXPECT_EQ(Get(base + "/ops"), CliJson({"ops", id}));
    EXPECT_EQ(Get(base + "/kernels"), CliJson({"kernels", id}));
    EXPECT_EQ(Get(base + "/devices"), CliJson({"breakdown", id}));
    const std::string profile = Get(base);
    EXPECT_EQ(profile, CliJson({"profile", id}));

    // Field for field against the corpus reference, section by section.
    const std::string reference = ReadSmallFile(CorpusPath(c.reference));
    for (const char* section : {"devices", "kernels", "ops"}) {
      if (reference.find(std::string("\"") + section + "\"") == std::string::npos) continue;
      EXPECT_EQ(CompareSection(Get(base + "/" + section), reference, section), "") << section;
    }

    // The stored summary equals the offline analysis in every field, and each section route
    // answers exactly that section.
    CommandResult analyzed = RunCommand({BinDir() + "/fleetprof", "analyze", trace, "--json"});
    ASSERT_EQ(analyzed.exit_code, 0) << analyzed.err;
    simdjson::dom::parser p1, p2, p3;
    simdjson::dom::element local, served;
    ASSERT_EQ(p1.parse(analyzed.out).get(local), simdjson::SUCCESS);
    ASSERT_EQ(p2.parse(profile).get(served), simdjson::SUCCESS);
    simdjson::dom::object summary = served["summary"].get_object();
    for (auto [key, value] : local.get_object()) {
      simdjson::dom::element stored;
      ASSERT_EQ(summary[key].get(stored), simdjson::SUCCESS) << key;
      EXPECT_EQ(simdjson::minify(stored), simdjson::minify(value)) << key;
    }
    for (const char* section : {"steps", "memory", "xla_ops"}) {
      const std::string one = Get(base + "/" + section);
      simdjson::dom::element doc;
      ASSERT_EQ(p3.parse(one).get(doc), simdjson::SUCCESS) << one;
      EXPECT_EQ(simdjson::minify(doc[section]), simdjson::minify(local[section])) << section;
    }
  }
}

TEST_F(HttpApiTest, UnknownCategoryEventsSurviveUpload) {
  const std::string path = cluster_.root() + "/new_category.json";
  {
    std::ofstream out(path);
    out << R"({"traceEvents":[)"
        << R"({"ph":"X","cat":"cpu_op","name":"aten::mm","pid":1,"tid":1,"ts":10,"dur":5},)"
        << R"({"ph":"X","cat":"brand_new_category","name":"x","pid":1,"tid":1,"ts":20,"dur":5},)"
        << R"({"ph":"X","cat":"brand_new_category","name":"y","pid":1,"tid":1,"ts":30,"dur":5}]})";
  }
  const std::string id = Upload(path);
  ASSERT_FALSE(id.empty());
  simdjson::dom::parser parser;
  simdjson::dom::element doc;
  const std::string body = Get("/api/v1/profiles/" + id);
  ASSERT_EQ(parser.parse(body).get(doc), simdjson::SUCCESS);
  EXPECT_EQ(int64_t(doc["summary"]["unknown_category_events"]), 2) << body;
}

// Export of the original: byte for byte the uploaded file, over HTTP and the CLI, for every
// corpus trace (gzip, plain JSON and XSpace alike).
TEST_F(HttpApiTest, ExportGivesBackTheUploadedBytesExactly) {
  for (const CorpusCase& c : kCorpus) {
    SCOPED_TRACE(c.trace);
    FLEETPROF_REQUIRE_PATH(CorpusPath(c.trace));
    const std::string original = ReadSmallFile(CorpusPath(c.trace));
    const std::string id = Upload(CorpusPath(c.trace));
    ASSERT_FALSE(id.empty());
    auto res = http_->Get("/api/v1/profiles/" + id + "/export?format=original");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    EXPECT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/octet-stream");
    const std::string base_name = std::string(c.trace).substr(std::string(c.trace).rfind('/') + 1);
    EXPECT_EQ(res->get_header_value("Content-Disposition"), "attachment; filename=\"" + base_name + "\"");
    EXPECT_TRUE(res->body == original) << "HTTP export differs: " << res->body.size() << " vs " << original.size();

    const std::string out = cluster_.root() + "/exported_" + base_name;
    CommandResult cli = cluster_.Cli({"export", id, "-o", out, "--json"});
    ASSERT_EQ(cli.exit_code, 0) << cli.err;
    EXPECT_NE(cli.out.find("\"bytes\":" + std::to_string(original.size())), std::string::npos) << cli.out;
    EXPECT_TRUE(ReadSmallFile(out) == original) << "CLI export differs";
    EXPECT_FALSE(PathExists(out + ".tmp"));
  }
  // What is not there yet says so, and an unknown profile is a 404.
  ExpectError(Get("/api/v1/profiles/nope/export", 404), "NOT_FOUND", "nope");
  const std::string id = Upload(CorpusPath(kCorpus[0].trace));
  ExpectError(Get("/api/v1/profiles/" + id + "/export?format=speedscope", 400), "INVALID_ARGUMENT",
              "'original' (the uploaded file), 'chrome_json'");
  CommandResult missing = cluster_.Cli({"export", "nope", "-o", cluster_.root() + "/never.json"});
  EXPECT_EQ(missing.exit_code, 1);
  EXPECT_FALSE(PathExists(cluster_.root() + "/never.json"));
  EXPECT_FALSE(PathExists(cluster_.root() + "/never.json.tmp"));
}

// Trace windows after upload: the HTTP answer equals `fleetprof trace --json`; with every event
// exact (resolution 1 ns) the device tracks hold each reference device's events and kernels;
// the Chrome-trace export analyses back to the same kernels, devices and ops.
TEST_F(HttpApiTest, TraceWindowsEqualTheCliAndTheReferenceAndExportReadsBack) {
  for (const CorpusCase& c : kCorpus) {
    SCOPED_TRACE(c.trace);
    FLEETPROF_REQUIRE_PATH(CorpusPath(c.trace));
    const std::string id = Upload(CorpusPath(c.trace));
    ASSERT_FALSE(id.empty());
    EXPECT_EQ(Get("/api/v1/profiles/" + id + "/trace?resolution_ns=1000"),
              CliJson({"trace", id, "--resolution_ns", "1000"}));
    const std::string window = Get("/api/v1/profiles/" + id + "/trace?resolution_ns=1&max_events_per_track=100000");
    simdjson::dom::parser p1, p2;
    simdjson::dom::element w, ref;
    ASSERT_EQ(p1.parse(window).get(w), simdjson::SUCCESS);
    ASSERT_EQ(p2.parse(ReadSmallFile(CorpusPath(c.reference))).get(ref), simdjson::SUCCESS);
    // Only zero-length events are shorter than 1 ns: they are counted in merged blocks.
    std::map<std::string, int64_t> events_by_device, kernels_by_name;
    int64_t folded = 0;
    for (simdjson::dom::element track : w["tracks"].get_array()) {
      if (std::string_view(track["kind"]) != "device") continue;
      EXPECT_FALSE(bool(track["truncated"]));
      const std::string device{std::string_view(track["group"])};
      for (simdjson::dom::element e : track["events"].get_array()) {
        ++events_by_device[device];
        ++kernels_by_name[std::string(std::string_view(e["name"]))];
      }
      for (simdjson::dom::element m : track["merged"].get_array()) {
        events_by_device[device] += int64_t(m["count"]);
        folded += int64_t(m["count"]);
      }
    }
    std::map<std::string, int64_t> want_devices, want_kernels;
    for (simdjson::dom::element d : ref["devices"].get_array()) {
      want_devices[std::string(std::string_view(d["device"]))] = int64_t(d["events"]);
    }
    for (simdjson::dom::element k : ref["kernels"].get_array()) {
      want_kernels[std::string(std::string_view(k["name"]))] += int64_t(k["count"]);
    }
    EXPECT_EQ(events_by_device, want_devices);
    int64_t named = 0, want_named = 0;
    for (const auto& [name, count] : kernels_by_name) {
      EXPECT_LE(count, want_kernels[name]) << name;
      named += count;
    }
    for (const auto& [name, count] : want_kernels) want_named += count;
    EXPECT_EQ(named + folded, want_named);
    if (folded == 0) {
      EXPECT_EQ(kernels_by_name, want_kernels);
    }

    auto res = http_->Get("/api/v1/profiles/" + id + "/export?format=chrome_json");
    ASSERT_TRUE(res) << httplib::to_string(res.error());
    ASSERT_EQ(res->status, 200);
    EXPECT_EQ(res->get_header_value("Content-Type"), "application/json");
    const std::string exported = cluster_.root() + "/" + id + ".trace.json";
    std::ofstream(exported) << res->body;
    CommandResult again = cluster_.Cli({"analyze", exported, "--json"});
    ASSERT_EQ(again.exit_code, 0) << again.err;
    simdjson::dom::parser p3, p4;
    simdjson::dom::element a, stored;
    ASSERT_EQ(p3.parse(again.out).get(a), simdjson::SUCCESS);
    const std::string profile = Get("/api/v1/profiles/" + id);
    ASSERT_EQ(p4.parse(profile).get(stored), simdjson::SUCCESS);
    for (const char* section : {"devices", "kernels", "ops"}) {
      EXPECT_EQ(simdjson::minify(a[section]), simdjson::minify(stored["summary"][section])) << section;
    }
    // The CLI writes the same file.
    const std::string cli_out = cluster_.root() + "/" + id + ".cli.trace.json";
    CommandResult cli = cluster_.Cli({"export", id, "--format", "chrome_json", "-o", cli_out});
    ASSERT_EQ(cli.exit_code, 0) << cli.err;
    EXPECT_TRUE(ReadSmallFile(cli_out) == res->body);
  }
  ExpectError(Get("/api/v1/profiles/nope/trace", 404), "NOT_FOUND", "nope");
  const std::string id = Upload(CorpusPath(kCorpus[0].trace));
  ExpectError(Get("/api/v1/profiles/" + id + "/trace?start_ns=10&end_ns=5", 400), "INVALID_ARGUMENT", "empty window");
  ExpectError(Get("/api/v1/profiles/" + id + "/trace?track=nope", 400), "INVALID_ARGUMENT", "no track 'nope'");
  ExpectError(Get("/api/v1/profiles/" + id + "/trace?resolution=5", 400), "INVALID_ARGUMENT", "resolution_ns");
  ExpectError(Get("/api/v1/profiles/" + id + "/range?start_ns=9&end_ns=9", 400), "INVALID_ARGUMENT", "empty window");
}

TEST_F(HttpApiTest, DeleteRemovesTheProfileFromEveryRoute) {
  const std::string trace = CorpusPath(kCorpus[0].trace);
  FLEETPROF_REQUIRE_PATH(trace);
  const std::string id = Upload(trace);
  const std::string other = Upload(trace);
  ASSERT_FALSE(id.empty());
  ASSERT_FALSE(Get("/api/v1/profiles/" + id + "/trace?max_events_per_track=1").empty());  // cached
  auto res = http_->Delete("/api/v1/profiles/" + id);
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 200);
  EXPECT_EQ(res->body, "{\"profile_id\":\"" + id + "\",\"deleted\":true}");
  for (const std::string& route : {"", "/kernels", "/trace", "/export?format=original", "/export?format=chrome_json"}) {
    ExpectError(Get("/api/v1/profiles/" + id + route, 404), "NOT_FOUND", id);
  }
  EXPECT_EQ(Get("/api/v1/profiles").find(id), std::string::npos);
  auto again = http_->Delete("/api/v1/profiles/" + id);
  ASSERT_TRUE(again);
  EXPECT_EQ(again->status, 404);
  CommandResult cli = cluster_.Cli({"delete", other, "--json"});
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  EXPECT_EQ(cli.out, "{\"profile_id\":\"" + other + "\",\"deleted\":true}\n");
  EXPECT_EQ(cluster_.Cli({"profile", other}).exit_code, 1);
}

TEST_F(HttpApiTest, ListsEqualTheCli) {
  const std::string trace = CorpusPath(kCorpus[0].trace);
  FLEETPROF_REQUIRE_PATH(trace);
  ASSERT_FALSE(Upload(trace).empty());
  EXPECT_EQ(Get("/api/v1/profiles"), CliJson({"profiles"}));
  EXPECT_EQ(Get("/api/v1/profiles?job=corpus"), CliJson({"profiles", "--job", "corpus"}));
  EXPECT_EQ(Get("/api/v1/profiles?job=nobody"), "{\"profiles\":[],\"next_page_token\":\"\",\"unreadable\":[]}");
  EXPECT_EQ(Get("/api/v1/agents"), CliJson({"agents"}));
  EXPECT_EQ(Get("/api/v1/captures"), CliJson({"captures"}));
  EXPECT_EQ(Get("/api/v1/jobs"), CliJson({"jobs"}));
}

TEST_F(HttpApiTest, ErrorsNameWhatIsWrongWithMappedStatus) {
  ExpectError(Get("/api/v1/profiles/no-such-profile", 404), "NOT_FOUND", "no-such-profile");
  ExpectError(Get("/api/v1/profiles/no-such-profile/kernels", 404), "NOT_FOUND", "no-such-profile");
  ExpectError(Get("/api/v1/captures/no-such-capture", 404), "NOT_FOUND", "no-such-capture");
  ExpectError(Get("/api/v1/profiles?since_ns=yesterday", 400), "INVALID_ARGUMENT", "since_ns");
  ExpectError(Get("/api/v1/profiles?jobb=x", 400), "INVALID_ARGUMENT", "jobb");
  ExpectError(Get("/api/v1/profiles?page_size=5000", 400), "INVALID_ARGUMENT", "page_size");
  ExpectError(Get("/api/v1/profiles?label=novalue", 400), "INVALID_ARGUMENT", "label");
  ExpectError(Get("/api/v1/profiles?page_token=zz", 400), "INVALID_ARGUMENT", "page_token");
  ExpectError(Get("/api/v1/profiles/x/limits", 404), "NOT_FOUND", "limits");
  ExpectError(Get("/api/v1/nothing/here", 404), "NOT_FOUND", "/api/v1/nothing/here");

  auto bad_body = http_->Post("/api/v1/captures", R"({"jobb":"x"})", "application/json");
  ASSERT_TRUE(bad_body);
  EXPECT_EQ(bad_body->status, 400);
  ExpectError(bad_body->body, "INVALID_ARGUMENT", "jobb");
  auto not_json = http_->Post("/api/v1/captures", "job=x", "application/x-www-form-urlencoded");
  ASSERT_TRUE(not_json);
  EXPECT_EQ(not_json->status, 400) << not_json->body;

  // A capture of a job nobody runs is a capture that failed, with the reason.
  auto nobody = http_->Post("/api/v1/captures", R"({"job":"nobody","duration_ms":100})", "application/json");
  ASSERT_TRUE(nobody);
  EXPECT_EQ(nobody->status, 200) << nobody->body;
  EXPECT_NE(nobody->body.find("\"state\":\"FAILED\""), std::string::npos) << nobody->body;
  EXPECT_NE(nobody->body.find("no process matched"), std::string::npos) << nobody->body;
}

TEST_F(HttpApiTest, OversizedBodyIs413AndTheServerKeepsServing) {
  const std::string huge(3 << 20, 'x');
  auto res = http_->Post("/api/v1/captures", huge, "application/json");
  ASSERT_TRUE(res) << httplib::to_string(res.error());
  EXPECT_EQ(res->status, 413);
  ExpectError(res->body, "RESOURCE_EXHAUSTED", "limit");
  httplib::Client fresh("http://" + cluster_.http_addr());
  auto health = fresh.Get("/healthz");
  ASSERT_TRUE(health);
  EXPECT_EQ(health->status, 200);
  EXPECT_EQ(fresh.Get("/api/v1/profiles")->status, 200);
}

// No SO_REUSEPORT: a second process cannot bind either port and take part of the traffic.
TEST_F(HttpApiTest, ASecondServerCannotShareItsPorts) {
  CommandResult second = RunCommand({BinDir() + "/fleetprof-server", "--grpc_addr=127.0.0.1:0",
                                     "--http_addr=" + cluster_.http_addr(),
                                     "--data_dir=" + cluster_.root() + "/second"},
                                    30);
  EXPECT_EQ(second.exit_code, 1) << second.out << second.err;
  EXPECT_NE((second.out + second.err).find("cannot listen for HTTP"), std::string::npos) << second.err;
  EXPECT_EQ(Get("/healthz"), "ok\n");
  CommandResult grpc_twin = RunCommand({BinDir() + "/fleetprof-server", "--grpc_addr=" + cluster_.grpc_addr(),
                                        "--http_addr=127.0.0.1:0", "--data_dir=" + cluster_.root() + "/third"},
                                       30);
  EXPECT_EQ(grpc_twin.exit_code, 1) << grpc_twin.out << grpc_twin.err;
  EXPECT_NE((grpc_twin.out + grpc_twin.err).find("cannot listen for gRPC"), std::string::npos) << grpc_twin.err;
}

TEST_F(HttpApiTest, ServesTheWebAppAndMetricsOnTheSamePort) {
  for (const char* page : {"/", "/profiles", "/profiles/abc", "/profiles/abc/trace", "/fleet", "/captures",
                           "/compare", "/jobs/llama"}) {
    auto res = http_->Get(page);
    ASSERT_TRUE(res) << page;
    EXPECT_EQ(res->status, 200) << page;
    EXPECT_NE(res->get_header_value("Content-Type").find("text/html"), std::string::npos) << page;
    EXPECT_NE(res->get_header_value("Content-Security-Policy").find("script-src 'self'"), std::string::npos);
    EXPECT_NE(res->body.find("/assets/"), std::string::npos) << page;
  }
  auto css = http_->Get("/assets/app.css");
  ASSERT_TRUE(css);
  EXPECT_EQ(css->status, 200);
  EXPECT_NE(css->get_header_value("Content-Type").find("text/css"), std::string::npos);
  EXPECT_EQ(http_->Get("/assets/../server_main.cc")->status, 404);
  EXPECT_EQ(http_->Get("/assets/missing.js")->status, 404);
  // A mistyped page link: a browser gets the app (its "no such page" view) with 404.
  auto typo = http_->Get("/profilez/abc", {{"Accept", "text/html,application/xhtml+xml"}});
  ASSERT_TRUE(typo);
  EXPECT_EQ(typo->status, 404);
  EXPECT_NE(typo->body.find("/assets/"), std::string::npos) << typo->body;
  ExpectError(Get("/profilez/abc", 404), "NOT_FOUND", "/profilez/abc");
  const std::string metrics = Get("/metrics");
  EXPECT_NE(metrics.find("fleetprof_server_"), std::string::npos) << metrics.substr(0, 500);
  EXPECT_EQ(Get("/healthz"), "ok\n");
}

}  // namespace
}  // namespace fleetprof::testing
