#include "server/http/connect_api.h"

#include <set>
#include <string>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "api/http_status.h"
#include "google/protobuf/message.h"
#include "proto/proto_json.h"
#include "server/http/http_call_bounds.h"

namespace fleetprof {
namespace {

enum class Encoding { kJson, kProto, kUnsupported };

// "application/json; charset=utf-8" -> kJson; the Connect names of the two codecs.
Encoding EncodingOf(std::string_view content_type) {
  std::string type(content_type.substr(0, content_type.find(';')));
  type = absl::AsciiStrToLower(absl::StripAsciiWhitespace(type));
  if (type == "application/json") return Encoding::kJson;
  if (type == "application/proto") return Encoding::kProto;
  return Encoding::kUnsupported;
}

void Fail(const absl::Status& status, HttpResponse& res) {
  res.status = HttpStatusFor(status.code());
  res.SetContent(ConnectErrorJson(status), "application/json");
}

absl::Status Decode(Encoding encoding, const std::string& body, google::protobuf::Message* request) {
  if (encoding == Encoding::kProto) {
    if (!request->ParseFromString(body)) {
      return absl::InvalidArgumentError(
          absl::StrCat("the body is not a binary ", request->GetDescriptor()->full_name(), " message"));
    }
    return absl::OkStatus();
  }
  // A newer client may send fields this protocol version lacks: they are ignored, as
  // Connect's own servers do; a body that is not JSON, or a wrong type, is refused.
  return ProtoFromJson(body.empty() ? std::string_view("{}") : std::string_view(body), request,
                       /*ignore_unknown_fields=*/true);
}

void Serve(const ApiCatalog* catalog, const Operations* operations, const HttpRequest& req, HttpResponse& res) {
  const Encoding encoding = EncodingOf(req.Header("Content-Type"));
  if (encoding == Encoding::kUnsupported) {
    res.SetHeader("Accept-Post", "application/json, application/proto");
    res.status = 415;
    res.SetContent(ConnectErrorJson(absl::InvalidArgumentError(absl::StrCat(
                       "Content-Type '", std::string(req.Header("Content-Type")),
                       "' is not a Connect unary encoding: send application/json or application/proto"))),
                   "application/json");
    return;
  }
  if (const std::string_view coding = req.Header("Content-Encoding"); !coding.empty() && coding != "identity") {
    return Fail(absl::UnimplementedError(absl::StrCat("Content-Encoding '", std::string(coding),
                                                      "' is not supported: send the body uncompressed")),
                res);
  }
  const ApiMethod* method = catalog->FindConnectMethod(req.path);
  const Operations::UnaryFn* run = method == nullptr ? nullptr : operations->FindUnary(method->descriptor);
  if (run == nullptr) return Fail(absl::UnimplementedError(absl::StrCat(req.path, " is not served here")), res);
  const google::protobuf::Message* prototype =
      google::protobuf::MessageFactory::generated_factory()->GetPrototype(method->descriptor->input_type());
  std::unique_ptr<google::protobuf::Message> request(prototype->New());
  if (absl::Status decoded = Decode(encoding, req.body, request.get()); !decoded.ok()) return Fail(decoded, res);
  const CallBounds bounds = HttpCallBounds(req);
  ScopedCallBounds scope(&bounds);
  absl::StatusOr<std::unique_ptr<google::protobuf::Message>> response = (*run)(*request, req.caller);
  if (!response.ok()) return Fail(response.status(), res);
  if (encoding == Encoding::kProto) {
    res.SetContent((*response)->SerializeAsString(), "application/proto");
  } else {
    res.SetContent(ProtoToProto3Json(**response), "application/json");
  }
}

}  // namespace

void RegisterConnectApi(HttpServer& server, const ApiCatalog* catalog, const Operations* operations) {
  std::set<std::string> services;
  for (const auto& method : catalog->methods()) {
    if (method->connect) services.insert(method->descriptor->service()->full_name());
  }
  for (const std::string& service : services) {
    server.Route("POST", absl::StrCat("/", service, "/*"),
                 [catalog, operations](const HttpRequest& req, HttpResponse& res) {
                   Serve(catalog, operations, req, res);
                 });
  }
}

}  // namespace fleetprof
