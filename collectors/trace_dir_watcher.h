#pragma once
// Finds finished trace files in folders that jobs write into. A file is handed out once its
// size and modification time have held still for `settle_ms` (a writer that renames a
// finished file into place passes at the next scans). Temporary and hidden files are ignored.

#include <cstdint>
#include <map>
#include <string>
#include <vector>

namespace fleetprof {

struct TraceFile {
  std::string path;      // root + "/" + relative, for logs and the journal
  std::string root;      // the watched folder it was found in
  std::string relative;  // its path beneath root: open it with CheckedFile::OpenBeneath
  std::string job;
  int64_t size = 0;
  int64_t mtime_ns = 0;
};

// True for *.json, *.json.gz and *.xplane.pb (not *.tmp, not hidden).
bool IsTraceFileName(const std::string& name);

class TraceDirWatcher {
 public:
  // `job` names the job of every file when set; otherwise the first folder under the watched
  // folder does, else "unassigned".
  TraceDirWatcher(std::vector<std::string> dirs, std::string job, int64_t settle_ms);

  // Scans the folders (4 levels deep at most) and returns files that have settled and were
  // not returned before with the same size and mtime.
  std::vector<TraceFile> Scan(int64_t now_ns);

 private:
  struct Seen {
    int64_t size = 0;
    int64_t mtime_ns = 0;
    bool handed_out = false;
    uint64_t scan = 0;  // the last scan that saw the file
  };
  void ScanDir(const std::string& root, int64_t now_ns, std::vector<TraceFile>* out);

  std::vector<std::string> dirs_;
  std::string job_;
  int64_t settle_ns_;
  std::map<std::string, Seen> seen_;
  uint64_t scan_ = 0;
};

}  // namespace fleetprof
