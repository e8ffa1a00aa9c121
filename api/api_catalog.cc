#include "api/api_catalog.h"

#include <cstdio>
#include <cstdlib>
#include <set>

#include "absl/container/inlined_vector.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "proto/api_files.h"

namespace fleetprof {
namespace {

using google::protobuf::FieldDescriptor;
using google::protobuf::FileDescriptor;
using google::protobuf::MethodDescriptor;

std::optional<Scope> ScopeOf(v1::AccessScope scope) {
  switch (scope) {
    case v1::SCOPE_READ: return Scope::kRead;
    case v1::SCOPE_INGEST: return Scope::kIngest;
    case v1::SCOPE_CAPTURE: return Scope::kCapture;
    case v1::SCOPE_AGENT: return Scope::kAgent;
    case v1::SCOPE_ADMIN: return Scope::kAdmin;
    default: return std::nullopt;
  }
}

bool IsScalar(const FieldDescriptor* field) {
  switch (field->cpp_type()) {
    case FieldDescriptor::CPPTYPE_STRING:
      return field->type() == FieldDescriptor::TYPE_STRING;  // bytes have no text form here
    case FieldDescriptor::CPPTYPE_INT32:
    case FieldDescriptor::CPPTYPE_INT64:
    case FieldDescriptor::CPPTYPE_UINT32:
    case FieldDescriptor::CPPTYPE_UINT64:
    case FieldDescriptor::CPPTYPE_DOUBLE:
    case FieldDescriptor::CPPTYPE_FLOAT:
    case FieldDescriptor::CPPTYPE_BOOL:
      return true;
    default:
      return false;
  }
}

// Whether a query string can fill `field`: a scalar, a repeated scalar (one value per
// occurrence), or a map from string to a scalar (NAME=KEY=VALUE per occurrence).
bool FitsQuery(const FieldDescriptor* field) {
  if (field->is_map()) {
    const auto* entry = field->message_type();
    return entry->map_key()->type() == FieldDescriptor::TYPE_STRING && IsScalar(entry->map_value());
  }
  return IsScalar(field);
}

std::string QueryNameOf(const FieldDescriptor* field) {
  const std::string& name = field->options().GetExtension(v1::query_name);
  return name.empty() ? field->name() : name;
}

}  // namespace

const ApiCatalog& ApiCatalog::Get() {
  static const ApiCatalog* catalog = [] {
    std::vector<const FileDescriptor*> files;
    for (const std::string& name : ApiProtoFileNames()) {
      const FileDescriptor* file = google::protobuf::DescriptorPool::generated_pool()->FindFileByName(name);
      if (file == nullptr) {
        std::fprintf(stderr, "fleetprof: %s is not in the descriptor pool\n", name.c_str());
        std::abort();
      }
      files.push_back(file);
    }
    absl::StatusOr<std::unique_ptr<ApiCatalog>> built = Build(files);
    if (!built.ok()) {
      std::fprintf(stderr, "fleetprof: the API declarations are invalid: %s\n", built.status().ToString().c_str());
      std::abort();
    }
    return built->release();
  }();
  return *catalog;
}

absl::StatusOr<std::unique_ptr<ApiCatalog>> ApiCatalog::Build(const std::vector<const FileDescriptor*>& files) {
  std::unique_ptr<ApiCatalog> catalog(new ApiCatalog());
  for (const FileDescriptor* file : files) {
    for (int s = 0; s < file->service_count(); ++s) {
      if (absl::Status added = catalog->AddService(file->service(s)); !added.ok()) return added;
    }
  }
  // Two routes on one verb and template would make the winner an accident of file order.
  std::set<std::pair<std::string, std::string>> seen;
  for (const ApiRoute& route : catalog->routes_) {
    std::string shape;
    for (const ApiRoute::Segment& segment : route.segments) {
      absl::StrAppend(&shape, "/", segment.field != nullptr ? "{}" : segment.literal);
    }
    if (!seen.insert({route.verb, shape}).second) {
      return absl::InvalidArgumentError(absl::StrCat("two methods serve ", route.verb, " ", route.path));
    }
  }
  return catalog;
}

absl::Status ApiCatalog::AddService(const google::protobuf::ServiceDescriptor* service) {
  for (int m = 0; m < service->method_count(); ++m) {
    const MethodDescriptor* descriptor = service->method(m);
    auto method = std::make_unique<ApiMethod>();
    method->descriptor = descriptor;
    method->grpc_path = absl::StrCat("/", service->full_name(), "/", descriptor->name());
    method->scope = ScopeOf(descriptor->options().GetExtension(v1::scope));
    method->connect = service->options().GetExtension(v1::connect);
    if (method->connect && !method->scope.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(descriptor->full_name(), " is served with Connect but has no (scope)"));
    }
    const ApiMethod* added = method.get();
    by_grpc_path_[method->grpc_path] = added;
    methods_.push_back(std::move(method));
    const int routes = descriptor->options().ExtensionSize(v1::http);
    if (routes > 0 && !added->scope.has_value()) {
      return absl::InvalidArgumentError(absl::StrCat(descriptor->full_name(), " has HTTP routes but no (scope)"));
    }
    for (int r = 0; r < routes; ++r) {
      if (absl::Status status = AddRoute(added, descriptor->options().GetExtension(v1::http, r)); !status.ok()) {
        return absl::InvalidArgumentError(absl::StrCat(descriptor->full_name(), ": ", status.message()));
      }
    }
  }
  return absl::OkStatus();
}

absl::Status ApiCatalog::AddRoute(const ApiMethod* method, const v1::HttpRoute& option) {
  const MethodDescriptor* descriptor = method->descriptor;
  const auto* input = descriptor->input_type();
  ApiRoute route;
  route.method = method;
  route.verb = option.method();
  route.path = option.path();
  route.json_body = option.body() == "*";
  route.file_answer = option.answer() == v1::HttpRoute::FILE;
  if (route.verb != "GET" && route.verb != "POST" && route.verb != "DELETE") {
    return absl::InvalidArgumentError(absl::StrCat("method '", route.verb, "' is not GET, POST or DELETE"));
  }
  if (!absl::StartsWith(route.path, "/api/")) {
    return absl::InvalidArgumentError(absl::StrCat("path '", route.path, "' is not under /api/"));
  }
  if (!option.body().empty() && (!route.json_body || route.verb != "POST")) {
    return absl::InvalidArgumentError("body must be \"*\" and only on POST");
  }
  if (route.file_answer && (descriptor->client_streaming() || route.verb != "GET")) {
    return absl::InvalidArgumentError("a FILE answer is a GET of a method with one request");
  }
  if (!route.file_answer && (descriptor->client_streaming() || descriptor->server_streaming())) {
    return absl::InvalidArgumentError("a streaming method needs a handler kind (answer: FILE)");
  }
  std::set<const FieldDescriptor*> bound;
  for (absl::string_view text : absl::StrSplit(absl::string_view(route.path).substr(1), '/')) {
    ApiRoute::Segment segment;
    if (text.size() > 2 && text.front() == '{' && text.back() == '}') {
      const std::string name(text.substr(1, text.size() - 2));
      segment.field = input->FindFieldByName(name);
      if (segment.field == nullptr || segment.field->is_repeated() ||
          segment.field->type() != FieldDescriptor::TYPE_STRING) {
        return absl::InvalidArgumentError(
            absl::StrCat("path field {", name, "} is not a string field of ", input->full_name()));
      }
      bound.insert(segment.field);
    } else if (text.empty() || absl::StrContains(text, "{") || absl::StrContains(text, "}")) {
      return absl::InvalidArgumentError(absl::StrCat("path '", route.path, "' has an empty or malformed segment"));
    } else {
      segment.literal = std::string(text);
    }
    route.segments.push_back(std::move(segment));
  }
  if (route.json_body) {
    if (option.query_size() > 0) return absl::InvalidArgumentError("a route with a JSON body takes no query");
  } else {
    // The query names of every field the path leaves open, then the route's own list.
    std::map<std::string, const FieldDescriptor*> open;
    for (int f = 0; f < input->field_count(); ++f) {
      const FieldDescriptor* field = input->field(f);
      if (bound.count(field) || !FitsQuery(field)) continue;
      if (!open.emplace(QueryNameOf(field), field).second) {
        return absl::InvalidArgumentError(absl::StrCat("two fields take the query name '", QueryNameOf(field), "'"));
      }
    }
    if (option.query_size() == 0) {
      route.query = std::move(open);
    } else {
      for (const std::string& name : option.query()) {
        auto it = open.find(name);
        if (it == open.end()) {
          return absl::InvalidArgumentError(
              absl::StrCat("query '", name, "' names no open field of ", input->full_name()));
        }
        route.query.insert(*it);
      }
    }
    for (const auto& [name, field] : route.query) {
      if (field->options().GetExtension(v1::query_required)) route.required.push_back(name);
    }
  }
  routes_.push_back(std::move(route));
  return absl::OkStatus();
}

const ApiMethod* ApiCatalog::FindMethod(absl::string_view grpc_path) const {
  auto it = by_grpc_path_.find(grpc_path);
  return it == by_grpc_path_.end() ? nullptr : it->second;
}

namespace {

using PathParts = absl::InlinedVector<absl::string_view, 8>;

// "/a/b/c" -> {a, b, c}; false for a path that does not start with '/'.
bool SplitPath(absl::string_view path, PathParts* parts) {
  if (path.empty() || path.front() != '/') return false;
  for (size_t start = 1;;) {
    const size_t slash = path.find('/', start);
    parts->push_back(path.substr(start, slash == absl::string_view::npos ? absl::string_view::npos : slash - start));
    if (slash == absl::string_view::npos) return true;
    start = slash + 1;
  }
}

}  // namespace

const ApiRoute* ApiCatalog::FindRoute(absl::string_view verb, absl::string_view path) const {
  PathParts parts;
  return SplitPath(path, &parts) ? Best(verb, parts) : nullptr;
}

std::optional<ApiCatalog::Match> ApiCatalog::MatchRoute(absl::string_view verb, absl::string_view path) const {
  PathParts parts;
  const ApiRoute* best = SplitPath(path, &parts) ? Best(verb, parts) : nullptr;
  if (best == nullptr) return std::nullopt;
  Match match{best, {}};
  for (size_t i = 0; i < parts.size(); ++i) {
    if (best->segments[i].field != nullptr) match.path_values.emplace_back(best->segments[i].field, std::string(parts[i]));
  }
  return match;
}

const ApiRoute* ApiCatalog::Best(absl::string_view verb, absl::Span<const absl::string_view> parts) const {
  // Runs on every request (the access check and the binder): no allocation.
  const ApiRoute* best = nullptr;
  int best_literals = -1;
  for (const ApiRoute& route : routes_) {
    if (route.segments.size() != parts.size() || route.verb != verb) continue;
    int literals = 0;
    bool fits = true;
    for (size_t i = 0; i < parts.size() && fits; ++i) {
      const ApiRoute::Segment& segment = route.segments[i];
      if (segment.field == nullptr) {
        fits = segment.literal == parts[i];
        ++literals;
      } else {
        fits = !parts[i].empty();
      }
    }
    if (fits && literals > best_literals) {
      best = &route;
      best_literals = literals;
    }
  }
  return best;
}

}  // namespace fleetprof
