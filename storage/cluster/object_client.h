#pragma once
// The object-storage seam under the cluster's blob store: whole objects by key, ranged reads,
// listing by prefix, and a streamed writer for objects too large to hold in memory. Two
// engines: S3's HTTP API (s3_client.h) and a local folder (file_object_client.h), so the blob
// store above (object_blob_store.h) and its tests are the same for both.
//
// Keys are '/'-separated words of unreserved characters ([A-Za-z0-9-_]) only; the blob store
// encodes every name it is given (object_key.h), so no engine has to escape or guard paths.

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace fleetprof::cluster {

// Bytes [offset, offset + length) of an object.
struct ByteRange {
  int64_t offset = 0;
  int64_t length = 0;
};

// Sees one key under a listed prefix (and the object's stored size); returns false to stop.
using ObjectVisitor = std::function<bool(std::string_view key, int64_t size)>;

// A large object written as it is produced; it exists for readers only after Finish. Dropping
// a writer without Finish abandons what it wrote.
class ObjectWriter {
 public:
  virtual ~ObjectWriter() = default;
  virtual absl::Status Append(std::string_view bytes) = 0;
  virtual absl::Status Finish() = 0;
};

class ObjectClient {
 public:
  virtual ~ObjectClient() = default;
  // Where objects go, for messages and /api/v1/cluster (no credentials in it).
  virtual std::string Describe() const = 0;
  // Whether the last request got an answer that was not a server error.
  virtual bool healthy() const { return true; }

  virtual absl::Status Put(std::string_view key, std::string_view bytes) = 0;
  // The whole object or the range; NOT_FOUND when there is none. A range past the end is cut.
  virtual absl::StatusOr<std::string> Get(std::string_view key, std::optional<ByteRange> range = std::nullopt) = 0;
  // The object's size; NOT_FOUND when there is none.
  virtual absl::StatusOr<int64_t> Size(std::string_view key) = 0;
  // OK when there was nothing to delete.
  virtual absl::Status Delete(std::string_view key) = 0;
  // Every key that starts with `prefix`, in key order.
  virtual absl::Status List(std::string_view prefix, const ObjectVisitor& visit) = 0;
  virtual absl::StatusOr<std::unique_ptr<ObjectWriter>> NewWriter(std::string_view key) = 0;
};

// Opens the engine a --object_store URL names: "s3://BUCKET[/PREFIX]" or "file:///DIR".
struct S3Settings {
  std::string endpoint;  // http(s)://HOST:PORT: path-style requests to it; empty: AWS itself
  std::string region = "us-east-1";
  std::string access_key;
  std::string secret_key;
  std::string session_token;
  int max_attempts = 6;            // per request, the first try included
  int64_t part_bytes = 8 << 20;    // multipart part size of streamed objects (S3's minimum is 5 MiB)
  // Hears every request's outcome (metrics): op "GET", "PUT", …; result "ok", "retried",
  // "not_found" or "error"; and how long it took, retries included.
  std::function<void(std::string_view op, std::string_view result, double seconds)> on_request;
};
absl::StatusOr<std::unique_ptr<ObjectClient>> OpenObjectStore(std::string_view url, const S3Settings& s3);

}  // namespace fleetprof::cluster
