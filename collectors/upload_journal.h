#pragma once
// What the agent has already uploaded (or found unreadable), kept in an append-only file so
// a restarted agent uploads nothing twice. One line per file:
//   <profile_id or "rejected">\t<size>\t<mtime_ns>\t<path>

#include <cstdint>
#include <set>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "collectors/trace_dir_watcher.h"

namespace fleetprof {

class UploadJournal {
 public:
  // Loads `path` if it exists; later records append to it.
  absl::Status Open(const std::string& path);
  // True when this exact file (path, size, mtime) was recorded.
  bool Contains(const TraceFile& file) const;
  // Records an upload ("rejected" for files the server refused as malformed).
  absl::Status Record(const TraceFile& file, const std::string& outcome);
  size_t size() const {
    absl::MutexLock lock(&mu_);
    return done_.size();
  }

 private:
  static std::string Key(const std::string& path, int64_t size, int64_t mtime_ns);
  std::string path_;
  mutable absl::Mutex mu_;
  std::set<std::string> done_ ABSL_GUARDED_BY(mu_);
};

// A stable id for this file on this node, so the server dedupes even a lost journal. Keyed
// with this agent's `secret`: ids are visible to readers of the profile, and one that others
// could compute for a file not yet uploaded could be taken first.
std::string UploadIdFor(const std::string& secret, const std::string& node, const TraceFile& file);

// The agent's upload-id secret at `path`: read, or created (mode 0600, 32 random bytes as
// hex) on first start. Never follows a symlink.
absl::StatusOr<std::string> LoadOrCreateUploadSecret(const std::string& path);

}  // namespace fleetprof
