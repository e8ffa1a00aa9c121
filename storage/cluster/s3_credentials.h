#pragma once
// Where S3 credentials come from, in the order every AWS tool uses: the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), else a shared-credentials file
// (--s3_credentials_file, INI sections named by profile: $AWS_PROFILE or "default").

#include <string>

#include "absl/status/status.h"
#include "storage/cluster/object_client.h"

namespace fleetprof::cluster {

// Fills settings' keys. `file` empty: the environment only.
absl::Status LoadS3Credentials(const std::string& file, S3Settings* settings);

}  // namespace fleetprof::cluster
