#pragma once
// The server's operations by method, free of any transport: each layer (query, fleet) adds
// the methods it implements, once, and every edge serves them from here — the HTTP binder
// (api/http_binder.h) by the routes the .proto declares, gRPC by the method's name. So a new
// query is its .proto lines and one Add line beside its implementation.

#include <functional>
#include <memory>
#include <string>
#include <type_traits>
#include "absl/strings/string_view.h"

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "analysis/byte_source.h"
#include "auth/scopes.h"
#include "google/protobuf/descriptor.h"
#include "google/protobuf/message.h"

namespace fleetprof {

// What an operation that answers a file produces: its bytes, read as they are sent.
struct FileAnswer {
  std::string content_type;  // "application/json", "application/octet-stream"
  std::string file_name;     // the download's name (only safe characters: it reaches a header)
  std::unique_ptr<analysis::ByteSource> bytes;
};

class Operations {
 public:
  using Message = google::protobuf::Message;
  // `caller`: the principal the request acts as, as the edge's access check found it.
  using UnaryFn =
      std::function<absl::StatusOr<std::unique_ptr<Message>>(const Message& request, const Principal& caller)>;
  using FileFn = std::function<absl::StatusOr<FileAnswer>(const Message& request)>;

  // Serves `method` ("fleetprof.v1.QueryService.OpBreakdown") with `fn(const Request&)`, or
  // with `fn(const Request&, const Principal& caller)` when what it may do depends on who
  // asks beyond the method's scope; either returns absl::StatusOr<Response>. A method that
  // does not exist, whose types are not Request and Response, or that is added twice makes
  // status() fail: a bug of the build.
  template <typename Request, typename Response, typename F>
  void AddUnary(absl::string_view method, F fn) {
    const auto* descriptor = Check(method, Request::descriptor(), Response::descriptor());
    if (descriptor == nullptr) return;
    unary_[descriptor] = [fn = std::move(fn)](const Message& request,
                                              const Principal& caller) -> absl::StatusOr<std::unique_ptr<Message>> {
      absl::StatusOr<Response> response = [&]() -> absl::StatusOr<Response> {
        if constexpr (std::is_invocable_v<const F&, const Request&, const Principal&>) {
          return fn(static_cast<const Request&>(request), caller);
        } else {
          return fn(static_cast<const Request&>(request));
        }
      }();
      if (!response.ok()) return response.status();
      return std::unique_ptr<Message>(new Response(std::move(*response)));
    };
  }

  // Serves `method` as a file (its HTTP route's answer FILE) with `fn(const Request&)`.
  template <typename Request, typename F>
  void AddFile(absl::string_view method, F fn) {
    const auto* descriptor = Check(method, Request::descriptor(), nullptr);
    if (descriptor == nullptr) return;
    files_[descriptor] = [fn = std::move(fn)](const Message& request) {
      return fn(static_cast<const Request&>(request));
    };
  }

  // OK, or the first registration that was refused.
  const absl::Status& status() const { return status_; }

  // The implementation of `method`, or null.
  const UnaryFn* FindUnary(const google::protobuf::MethodDescriptor* method) const;
  const FileFn* FindFile(const google::protobuf::MethodDescriptor* method) const;

 private:
  // The method's descriptor after checking its types (a null `output`: any); null on error.
  const google::protobuf::MethodDescriptor* Check(absl::string_view method, const google::protobuf::Descriptor* input,
                                                  const google::protobuf::Descriptor* output);

  absl::Status status_;
  absl::flat_hash_map<const google::protobuf::MethodDescriptor*, UnaryFn> unary_;
  absl::flat_hash_map<const google::protobuf::MethodDescriptor*, FileFn> files_;
};

}  // namespace fleetprof
