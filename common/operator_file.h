#pragma once
// Files an operator hands a daemon by flag (the tokens file, etcd's keys, the job owners
// list). Whoever may write one decides what the daemon trusts, so it is read only when it is a
// regular file that belongs to root or to this process's user and that nobody else may write.
// The file is opened once and that open file is judged (fstat) and read, so nothing can be
// swapped in between; open() follows links, so a Kubernetes Secret (a chain of symlinks) is
// judged by the file it ends at. Opened non-blocking: a FIFO is refused, never waited on.

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace fleetprof {

struct OperatorFile {
  std::string what;          // how errors name it: "tokens file", "--etcd_key_file"
  size_t max_bytes = 1 << 20;
  bool secret = false;       // a key or tokens: warn (once per read) when others may read it
};

// The whole file, or NOT_FOUND (cannot be opened), PERMISSION_DENIED (owner or mode),
// INVALID_ARGUMENT (not a regular file, or larger than max_bytes); each names the path.
absl::StatusOr<std::string> ReadOperatorFile(const OperatorFile& rules, const std::string& path);

}  // namespace fleetprof
