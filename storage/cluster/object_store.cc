// --object_store URLs to engines: "s3://BUCKET[/PREFIX]" and "file:///DIR".

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "storage/cluster/file_object_client.h"
#include "storage/cluster/object_client.h"
#include "storage/cluster/s3_client.h"

namespace fleetprof::cluster {

absl::StatusOr<std::unique_ptr<ObjectClient>> OpenObjectStore(std::string_view url, const S3Settings& s3) {
  if (url.starts_with("file://")) {
    std::string_view dir = url.substr(7);
    if (!dir.starts_with("/")) {
      return absl::InvalidArgumentError(absl::StrCat("--object_store ", std::string(url), ": file:// needs an absolute path (file:///DIR)"));
    }
    return OpenFileObjectClient(std::string(dir));
  }
  if (url.starts_with("s3://")) {
    std::string_view rest = url.substr(5);
    const size_t slash = rest.find('/');
    S3Location where;
    where.bucket = std::string(rest.substr(0, slash));
    if (slash != std::string_view::npos) {
      where.prefix = std::string(rest.substr(slash + 1));
      while (!where.prefix.empty() && where.prefix.back() == '/') where.prefix.pop_back();
      if (!where.prefix.empty()) where.prefix += '/';
    }
    for (char c : where.prefix) {
      const bool unreserved = absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '/' || c == '.';
      if (!unreserved) {
        return absl::InvalidArgumentError(absl::StrCat("--object_store ", std::string(url),
                                                       ": the prefix may hold only letters, digits, '-', '_', '.' and '/'"));
      }
    }
    return OpenS3Client(where, s3);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--object_store ", std::string(url), ": expected s3://BUCKET[/PREFIX] or file:///DIR"));
}

}  // namespace fleetprof::cluster
