#pragma once
// Every /api/v1 route, served from the .proto declarations (api/api_catalog.h) and the
// operations the server registered (api/operations.h): path segments and query parameters
// become the request's fields (a POST's JSON body the whole request), the method's
// operation answers, and its response prints through the one JSON writer. Free of any HTTP
// library: the server's HTTP edge hands in what it parsed and sends back what comes out, so
// the library can change without touching a route.
//
// Errors are {"error":{"code","message"}} with the status of the code (api/http_status.h);
// an unknown path is 404 naming it, an unknown query parameter 400 naming it.

#include <memory>
#include <string>
#include "absl/strings/string_view.h"

#include "analysis/byte_source.h"
#include "api/api_catalog.h"
#include "api/operations.h"

namespace fleetprof {

struct HttpCall {
  absl::string_view verb;       // GET, POST, DELETE (HEAD is served as GET)
  absl::string_view path;       // decoded, without the query string
  absl::string_view raw_query;  // after '?', still percent-encoded
  absl::string_view body;
  Principal caller;  // who asks, as the edge's access check found it
};

struct HttpAnswer {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
  // A file answer: its bytes (read as they are sent, then the body is empty) and the name
  // for Content-Disposition.
  std::unique_ptr<analysis::ByteSource> file;
  std::string file_name;
};

class HttpBinder {
 public:
  // Both must outlive the binder.
  HttpBinder(const ApiCatalog* catalog, const Operations* operations) : catalog_(catalog), operations_(operations) {}

  HttpAnswer Serve(const HttpCall& call) const;

 private:
  absl::Status BuildRequest(const ApiCatalog::Match& match, const HttpCall& call,
                            google::protobuf::Message* request) const;

  const ApiCatalog* catalog_;
  const Operations* operations_;
};

}  // namespace fleetprof
