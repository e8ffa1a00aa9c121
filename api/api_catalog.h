#pragma once
// fleetprof's API as its .proto files declare it (proto/fleetprof/v1/api_options.proto): each
// method's scope and HTTP routes, read once from the descriptor pool. The access policy, the
// HTTP binder, the security test and the route listing all ask this one table, so a method
// is declared in exactly one place: beside its `rpc` line.

#include <map>
#include <memory>
#include <optional>
#include <string>
#include "absl/strings/string_view.h"
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "auth/scopes.h"
#include "fleetprof/v1/api_options.pb.h"
#include "google/protobuf/descriptor.h"

namespace fleetprof {

// One method of one fleetprof service.
struct ApiMethod {
  const google::protobuf::MethodDescriptor* descriptor = nullptr;
  std::string grpc_path;       // "/fleetprof.v1.QueryService/ListProfiles"
  std::optional<Scope> scope;  // nullopt: the method has no (scope) option and nobody may call it
  // Its service has the (connect) option: also served with the Connect protocol on the HTTP
  // listener, at grpc_path (server/http/connect_api.h).
  bool connect = false;
};

// One HTTP route of one method, from its (http) option.
struct ApiRoute {
  const ApiMethod* method = nullptr;
  std::string verb;  // GET, POST or DELETE
  std::string path;  // the template as declared: "/api/v1/profiles/{profile_id}/ops"
  struct Segment {
    std::string literal;                                    // when field is null
    const google::protobuf::FieldDescriptor* field = nullptr;  // a {field} segment
  };
  std::vector<Segment> segments;  // the path split at '/', without the empty first one
  bool json_body = false;         // body "*": the request is the JSON body
  bool file_answer = false;       // answer FILE: a download
  // The query parameters it takes: name in the URL -> the field it fills.
  std::map<std::string, const google::protobuf::FieldDescriptor*> query;
  std::vector<std::string> required;  // URL names that must be present
};

class ApiCatalog {
 public:
  // The catalog of every service in proto/api_files.h, built on first use. The declarations
  // are compiled in, so an invalid one is a bug of this build: it aborts with the reason
  // (every test that touches the API catches it).
  static const ApiCatalog& Get();

  // A catalog of the services in `files`; an invalid declaration is INVALID_ARGUMENT naming
  // the method and what is wrong (an unknown field, a path field that is not a string, two
  // routes on one path, …).
  static absl::StatusOr<std::unique_ptr<ApiCatalog>> Build(
      const std::vector<const google::protobuf::FileDescriptor*>& files);

  const std::vector<std::unique_ptr<ApiMethod>>& methods() const { return methods_; }
  const std::vector<ApiRoute>& routes() const { return routes_; }

  // The method at `grpc_path` ("/fleetprof.v1.QueryService/ListProfiles"); null if none.
  const ApiMethod* FindMethod(absl::string_view grpc_path) const;
  // The Connect method at `path` ("/querier.v1.QuerierService/ProfileTypes"); null if none.
  const ApiMethod* FindConnectMethod(absl::string_view path) const {
    const ApiMethod* method = FindMethod(path);
    return method != nullptr && method->connect ? method : nullptr;
  }

  struct Match {
    const ApiRoute* route = nullptr;
    // The value of each {field} segment, as it stood in the path.
    std::vector<std::pair<const google::protobuf::FieldDescriptor*, std::string>> path_values;
  };
  // The route that serves `verb path` (path without the query string); nullopt if none.
  // Where two templates match, the one with more literal segments wins.
  std::optional<Match> MatchRoute(absl::string_view verb, absl::string_view path) const;
  // The same route without the values (no allocation: the access check asks every request).
  const ApiRoute* FindRoute(absl::string_view verb, absl::string_view path) const;

 private:
  ApiCatalog() = default;
  absl::Status AddService(const google::protobuf::ServiceDescriptor* service);
  const ApiRoute* Best(absl::string_view verb, absl::Span<const absl::string_view> parts) const;
  absl::Status AddRoute(const ApiMethod* method, const v1::HttpRoute& option);

  std::vector<std::unique_ptr<ApiMethod>> methods_;
  std::vector<ApiRoute> routes_;
  absl::flat_hash_map<std::string, const ApiMethod*> by_grpc_path_;
};

}  // namespace fleetprof
