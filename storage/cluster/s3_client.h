#pragma once
// Objects on an S3-compatible store over its HTTP API (libcurl; requests signed with AWS
// Signature V4 by curl's CURLOPT_AWS_SIGV4, the payload hash sent as x-amz-content-sha256).
// Path-style requests to --s3_endpoint when it is given (MinIO, s3rver, Ceph), virtual-hosted
// to AWS otherwise. Every request is retried with capped exponential backoff and full jitter on
// 5xx, 429, timeouts, resets and short bodies; errors name the object and S3's reason.

#include <memory>
#include <string>

#include "storage/cluster/object_client.h"

namespace fleetprof::cluster {

struct S3Location {
  std::string bucket;
  std::string prefix;  // empty or ending in '/'
};

// Test seams: a fixed signing time and a host to connect to instead of the URL's (so that a
// request for AWS's published SigV4 example can be signed as AWS's and captured locally).
struct S3TestHooks {
  std::string amz_date;    // "20130524T000000Z"
  std::string connect_to;  // curl's CONNECT_TO: "HOST:PORT:CONNECT_HOST:CONNECT_PORT"
  std::string bucket_url;  // "http://examplebucket.s3.amazonaws.com": virtual-hosted at this URL
};

absl::StatusOr<std::unique_ptr<ObjectClient>> OpenS3Client(const S3Location& where, const S3Settings& settings,
                                                            const S3TestHooks& hooks = S3TestHooks());

}  // namespace fleetprof::cluster
