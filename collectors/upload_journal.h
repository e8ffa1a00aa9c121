#pragma once
// What the agent has already uploaded (or found unreadable), kept in an append-only file so
// a restarted agent uploads nothing twice. One line per file:
//   <profile_id or "rejected">\t<size>\t<mtime_ns>\t<path>

#include <cstdint>
#include <mutex>
#include <set>
#include <string>

#include "absl/status/status.h"
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
  size_t size() const { return done_.size(); }

 private:
  static std::string Key(const std::string& path, int64_t size, int64_t mtime_ns);
  std::string path_;
  std::set<std::string> done_;
  mutable std::mutex mu_;
};

// A stable id for this file on this node, so the server dedupes even a lost journal.
std::string UploadIdFor(const std::string& node, const TraceFile& file);

}  // namespace fleetprof
