#include "api/http_binder.h"

#include "absl/strings/str_cat.h"
#include "api/http_status.h"
#include "api/query_binding.h"
#include "google/protobuf/message.h"
#include "proto/proto_json.h"

namespace fleetprof {
namespace {

HttpAnswer ErrorAnswer(const absl::Status& status) {
  HttpAnswer answer;
  answer.status = HttpStatusFor(status.code());
  answer.body = HttpErrorJson(status);
  return answer;
}

}  // namespace

absl::Status HttpBinder::BuildRequest(const ApiCatalog::Match& match, const HttpCall& call,
                                      google::protobuf::Message* request) const {
  const ApiRoute& route = *match.route;
  if (route.json_body) {
    // The whole request is the body; a query string would be ignored, so it is refused.
    if (absl::Status none = FillFromQuery(route, call.raw_query, request); !none.ok()) return none;
    if (absl::Status parsed = ProtoFromJson(call.body.empty() ? std::string_view("{}") : std::string_view(call.body.data(), call.body.size()), request); !parsed.ok()) {
      return parsed;
    }
  } else if (absl::Status filled = FillFromQuery(route, call.raw_query, request); !filled.ok()) {
    return filled;
  }
  // The path last, so a body cannot name another resource than the URL does.
  for (const auto& [field, value] : match.path_values) {
    if (absl::Status set = SetFieldFromText(field, field->name(), value, request); !set.ok()) return set;
  }
  return absl::OkStatus();
}

HttpAnswer HttpBinder::Serve(const HttpCall& call) const {
  const absl::string_view verb = call.verb == "HEAD" ? "GET" : call.verb;
  std::optional<ApiCatalog::Match> match = catalog_->MatchRoute(verb, call.path);
  if (!match.has_value()) {
    return ErrorAnswer(absl::NotFoundError(absl::StrCat("no such page or API route: ", call.verb, " ", call.path)));
  }
  const google::protobuf::MethodDescriptor* method = match->route->method->descriptor;
  const google::protobuf::Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(method->input_type());
  std::unique_ptr<google::protobuf::Message> request(prototype->New());
  if (absl::Status built = BuildRequest(*match, call, request.get()); !built.ok()) return ErrorAnswer(built);

  if (match->route->file_answer) {
    const Operations::FileFn* serve = operations_->FindFile(method);
    if (serve == nullptr) {
      return ErrorAnswer(absl::UnimplementedError(absl::StrCat("this server does not serve ", method->full_name())));
    }
    absl::StatusOr<FileAnswer> file = (*serve)(*request);
    if (!file.ok()) return ErrorAnswer(file.status());
    HttpAnswer answer;
    answer.content_type = std::move(file->content_type);
    answer.file_name = std::move(file->file_name);
    answer.file = std::move(file->bytes);
    return answer;
  }
  const Operations::UnaryFn* serve = operations_->FindUnary(method);
  if (serve == nullptr) {
    return ErrorAnswer(absl::UnimplementedError(absl::StrCat("this server does not serve ", method->full_name())));
  }
  absl::StatusOr<std::unique_ptr<google::protobuf::Message>> response = (*serve)(*request, call.caller);
  if (!response.ok()) return ErrorAnswer(response.status());
  HttpAnswer answer;
  answer.body = ProtoToJson(**response);
  return answer;
}

}  // namespace fleetprof
