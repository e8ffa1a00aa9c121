// The HTTP binder and the catalog it reads, without a server: each route's path, query and
// body land in the request fields the .proto declares, errors name what is wrong, and an
// invalid declaration is refused with its reason.
#include "api/http_binder.h"

#include <memory>

#include "api/access_policy.h"
#include "api/api_catalog.h"
#include "fleetprof/v1/capture.pb.h"
#include "fleetprof/v1/compare.pb.h"
#include "fleetprof/v1/query.pb.h"
#include "google/protobuf/descriptor.pb.h"
#include "google/protobuf/text_format.h"
#include "google/protobuf/util/message_differencer.h"
#include "gtest/gtest.h"

namespace fleetprof {
namespace {

// Operations that keep the last request each method received and answer a fixed message.
class RecordingOperations {
 public:
  RecordingOperations() {
    ops_.AddUnary<v1::ListProfilesRequest, v1::ListProfilesResponse>(
        "fleetprof.v1.QueryService.ListProfiles", [this](const v1::ListProfilesRequest& r) {
          list_ = r;
          v1::ListProfilesResponse response;
          response.set_next_page_token("next");
          return absl::StatusOr<v1::ListProfilesResponse>(response);
        });
    ops_.AddUnary<v1::TraceWindowRequest, v1::TraceWindow>("fleetprof.v1.QueryService.GetTraceWindow",
                                                           [this](const v1::TraceWindowRequest& r) {
                                                             trace_ = r;
                                                             return absl::StatusOr<v1::TraceWindow>(v1::TraceWindow());
                                                           });
    ops_.AddUnary<v1::DiffRequest, v1::DiffResponse>("fleetprof.v1.QueryService.Diff", [this](const v1::DiffRequest& r) {
      diff_ = r;
      return absl::StatusOr<v1::DiffResponse>(v1::DiffResponse());
    });
    ops_.AddUnary<v1::DiagnoseRequest, v1::DiagnoseResponse>(
        "fleetprof.v1.QueryService.Diagnose", [this](const v1::DiagnoseRequest& r) {
          diagnose_ = r;
          return absl::StatusOr<v1::DiagnoseResponse>(v1::DiagnoseResponse());
        });
    ops_.AddUnary<v1::GetProfileRequest, v1::GetProfileResponse>(
        "fleetprof.v1.QueryService.GetProfile", [](const v1::GetProfileRequest& r) -> absl::StatusOr<v1::GetProfileResponse> {
          return absl::NotFoundError("profile " + r.profile_id() + " not found");
        });
    ops_.AddUnary<v1::StartCaptureRequest, v1::Capture>("fleetprof.v1.CaptureService.StartCapture",
                                                        [this](const v1::StartCaptureRequest& r) {
                                                          capture_ = r;
                                                          return absl::StatusOr<v1::Capture>(v1::Capture());
                                                        });
  }
  HttpAnswer Serve(absl::string_view verb, absl::string_view path, absl::string_view query = "",
                   absl::string_view body = "") {
    HttpBinder binder(&ApiCatalog::Get(), &ops_);
    return binder.Serve(HttpCall{verb, path, query, body});
  }

  Operations ops_;
  v1::ListProfilesRequest list_;
  v1::TraceWindowRequest trace_;
  v1::DiffRequest diff_;
  v1::DiagnoseRequest diagnose_;
  v1::StartCaptureRequest capture_;
};

TEST(HttpBinder, QueryParametersFillTheFieldsTheProtoNames) {
  RecordingOperations ops;
  ASSERT_TRUE(ops.ops_.status().ok()) << ops.ops_.status();
  HttpAnswer answer = ops.Serve("GET", "/api/v1/profiles",
                                "job=train%20a&label=rank=0&label=host%3Dx=n%2B1&since_ns=5&until_ns=9&page_size=7");
  EXPECT_EQ(answer.status, 200) << answer.body;
  EXPECT_EQ(answer.body, "{\"profiles\":[],\"next_page_token\":\"next\",\"unreadable\":[]}");
  EXPECT_EQ(ops.list_.job(), "train a");
  EXPECT_EQ(ops.list_.labels().at("rank"), "0");
  EXPECT_EQ(ops.list_.labels().at("host"), "x=n+1");  // split at the first '=' only
  EXPECT_EQ(ops.list_.start_after_ns(), 5);            // since_ns, as (query_name) says
  EXPECT_EQ(ops.list_.end_before_ns(), 9);
  EXPECT_EQ(ops.list_.page_size(), 7);
}

TEST(HttpBinder, PathSegmentsRepeatedFieldsBoolsAndOptionalFields) {
  RecordingOperations ops;
  EXPECT_EQ(ops.Serve("GET", "/api/v1/profiles/p%201/trace", "track=a&track=b&args=true&start_ns=3").status, 200);
  EXPECT_EQ(ops.trace_.profile_id(), "p%201");  // the path arrives decoded by the HTTP edge
  ASSERT_EQ(ops.trace_.tracks_size(), 2);
  EXPECT_EQ(ops.trace_.tracks(1), "b");
  EXPECT_TRUE(ops.trace_.args());
  EXPECT_EQ(ops.trace_.start_ns(), 3);
  EXPECT_FALSE(ops.trace_.has_correlation());
  EXPECT_EQ(ops.Serve("GET", "/api/v1/profiles/p/trace", "correlation=0").status, 200);
  EXPECT_TRUE(ops.trace_.has_correlation()) << "present, even as 0";
}

TEST(HttpBinder, BadParametersAreOneClearError) {
  RecordingOperations ops;
  const struct {
    const char* path;
    const char* query;
    int status;
    const char* message;
  } cases[] = {
      {"/api/v1/profiles", "jobb=x", 400, "unknown query parameter 'jobb' (this route takes: job, label, page_size"},
      {"/api/v1/profiles", "since_ns=yesterday", 400, "query parameter 'since_ns' must be an integer, not 'yesterday'"},
      {"/api/v1/profiles", "page_size=99999999999", 400, "query parameter 'page_size' is out of range"},
      {"/api/v1/profiles", "label=novalue", 400, "query parameter 'label' must be key=value, not 'novalue'"},
      {"/api/v1/profiles", "job=%zz", 400, "malformed %-escape"},
      {"/api/v1/profiles", "job=%ff", 400, "not valid UTF-8"},
      {"/api/v1/profiles/p/trace", "args=maybe", 400, "query parameter 'args' must be 0/1 or true/false"},
      {"/api/v1/diff", "profile=a", 400, "query parameter 'base' is required"},
      {"/api/v1/diff", "base=&profile=a&profile=b", 400, "query parameter 'base' is required"},
      {"/api/v1/profiles/p/diagnosis", "threshold=device_idle=lots", 400, "the value of 'device_idle' must be a number"},
      {"/api/v1/profiles/p/diagnosis", "label=a=b", 400, "(this route takes: threshold)"},
      {"/api/v1/profiles/nope", "", 404, "profile nope not found"},
      {"/api/v1/profiles/x/limits", "", 404, "no such page or API route: GET /api/v1/profiles/x/limits"},
      {"/api/v1/nothing/here", "", 404, "/api/v1/nothing/here"},
      {"/api/v1/profiles/p/ops", "", 501, "does not serve fleetprof.v1.QueryService.OpBreakdown"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(std::string(c.path) + "?" + c.query);
    HttpAnswer answer = ops.Serve("GET", c.path, c.query);
    EXPECT_EQ(answer.status, c.status);
    EXPECT_EQ(answer.body.rfind("{\"error\":{\"code\":", 0), 0u) << answer.body;
    EXPECT_NE(answer.body.find(c.message), std::string::npos) << answer.body;
  }
}

TEST(HttpBinder, DiffTakesTheBaseFirstAndMapsOfNumbers) {
  RecordingOperations ops;
  EXPECT_EQ(ops.Serve("GET", "/api/v1/diff", "profile=b&base=a&profile=c&by=kernel").status, 200);
  EXPECT_EQ(ops.diff_.base_profile_id(), "a");
  ASSERT_EQ(ops.diff_.profile_ids_size(), 2);
  EXPECT_EQ(ops.diff_.profile_ids(0), "b");
  EXPECT_EQ(ops.diff_.by(), "kernel");
  EXPECT_EQ(ops.Serve("GET", "/api/v1/jobs/j1/diagnosis", "threshold=straggler_rank=1.5&label=rank=2").status, 200);
  EXPECT_EQ(ops.diagnose_.job(), "j1");
  EXPECT_DOUBLE_EQ(ops.diagnose_.thresholds().at("straggler_rank"), 1.5);
  EXPECT_EQ(ops.diagnose_.labels().at("rank"), "2");
}

TEST(HttpBinder, APostTakesItsBodyAndNoQuery) {
  RecordingOperations ops;
  EXPECT_EQ(ops.Serve("POST", "/api/v1/captures", "", R"({"job":"j","duration_ms":100})").status, 200);
  EXPECT_EQ(ops.capture_.job(), "j");
  EXPECT_EQ(ops.capture_.duration_ms(), 100);
  HttpAnswer bad = ops.Serve("POST", "/api/v1/captures", "", R"({"jobb":"x"})");
  EXPECT_EQ(bad.status, 400) << bad.body;
  HttpAnswer query = ops.Serve("POST", "/api/v1/captures", "job=x", "{}");
  EXPECT_EQ(query.status, 400);
  EXPECT_NE(query.body.find("(this route takes: none)"), std::string::npos) << query.body;
}

TEST(ApiCatalog, EveryRouteHasAScopeAndEveryMethodOfOursIsListed) {
  const ApiCatalog& catalog = ApiCatalog::Get();
  EXPECT_GE(catalog.methods().size(), 27u);
  for (const ApiRoute& route : catalog.routes()) {
    SCOPED_TRACE(route.verb + " " + route.path);
    ASSERT_TRUE(route.method->scope.has_value());
    // The access policy asks the same catalog: the route's scope is what a request needs.
    std::string path;
    for (const auto& segment : route.segments) path += "/" + (segment.field ? "x" : segment.literal);
    const AccessRule rule = RuleForHttp(route.verb, path);
    EXPECT_FALSE(rule.is_public);
    EXPECT_EQ(rule.scope, *route.method->scope);
  }
  EXPECT_EQ(RuleForGrpcMethod("/fleetprof.v1.QueryService/DeleteProfile")->scope, Scope::kAdmin);
  EXPECT_EQ(RuleForGrpcMethod("/fleetprof.v1.IngestService/Upload")->scope, Scope::kIngest);
}

// A file declaring one service in a pool over the generated one (so the options resolve).
absl::StatusOr<std::unique_ptr<ApiCatalog>> CatalogOf(google::protobuf::DescriptorPool* pool,
                                                      const std::string& method_options) {
  const std::string text = R"(
    name: "bad.proto" package: "bad" syntax: "proto3"
    dependency: "fleetprof/v1/api_options.proto"
    dependency: "fleetprof/v1/query.proto"
    service { name: "S" method { name: "M" input_type: ".fleetprof.v1.BreakdownRequest"
      output_type: ".fleetprof.v1.OpBreakdownResponse" options { )" + method_options + R"( } } })";
  google::protobuf::FileDescriptorProto proto;
  if (!google::protobuf::TextFormat::ParseFromString(text, &proto)) return absl::InternalError("bad test proto");
  const google::protobuf::FileDescriptor* file = pool->BuildFile(proto);
  if (file == nullptr) return absl::InternalError("cannot build the test proto");
  return ApiCatalog::Build({file});
}

TEST(ApiCatalog, AnInvalidDeclarationIsRefusedWithItsReason) {
  const struct {
    const char* options;
    const char* message;
  } cases[] = {
      {R"([fleetprof.v1.http] { method: "GET" path: "/api/x" })", "has HTTP routes but no (scope)"},
      {R"([fleetprof.v1.scope]: SCOPE_READ [fleetprof.v1.http] { method: "PUT" path: "/api/x" })",
       "is not GET, POST or DELETE"},
      {R"([fleetprof.v1.scope]: SCOPE_READ [fleetprof.v1.http] { method: "GET" path: "/x" })", "is not under /api/"},
      {R"([fleetprof.v1.scope]: SCOPE_READ [fleetprof.v1.http] { method: "GET" path: "/api/{limit}" })",
       "path field {limit} is not a string field"},
      {R"([fleetprof.v1.scope]: SCOPE_READ [fleetprof.v1.http] { method: "GET" path: "/api/x" query: "nope" })",
       "query 'nope' names no open field"},
      {R"([fleetprof.v1.scope]: SCOPE_READ [fleetprof.v1.http] { method: "GET" path: "/api/x" body: "*" })",
       "only on POST"},
      {R"([fleetprof.v1.scope]: SCOPE_READ [fleetprof.v1.http] { method: "GET" path: "/api/{profile_id}" }
          [fleetprof.v1.http] { method: "GET" path: "/api/{profile_id}" })",
       "two methods serve GET /api/{profile_id}"},
  };
  for (const auto& c : cases) {
    SCOPED_TRACE(c.options);
    google::protobuf::DescriptorPool pool(google::protobuf::DescriptorPool::generated_pool());
    absl::StatusOr<std::unique_ptr<ApiCatalog>> catalog = CatalogOf(&pool, c.options);
    ASSERT_FALSE(catalog.ok());
    EXPECT_NE(catalog.status().message().find(c.message), absl::string_view::npos) << catalog.status();
  }
  google::protobuf::DescriptorPool pool(google::protobuf::DescriptorPool::generated_pool());
  auto good = CatalogOf(&pool, R"([fleetprof.v1.scope]: SCOPE_READ [fleetprof.v1.http] { method: "GET" path: "/api/{profile_id}/x" })");
  ASSERT_TRUE(good.ok()) << good.status();
  auto match = (*good)->MatchRoute("GET", "/api/p7/x");
  ASSERT_TRUE(match.has_value());
  EXPECT_EQ(match->path_values.at(0).second, "p7");
  EXPECT_EQ((*good)->routes().at(0).query.count("limit"), 1u) << "every open field is a query parameter";
}

}  // namespace
}  // namespace fleetprof
