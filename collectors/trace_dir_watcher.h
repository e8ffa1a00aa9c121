#pragma once
// Finds finished trace files in folders that jobs write into. A file is handed out once its
// size and modification time have held still for `settle_ms` (a writer that renames a
// finished file into place passes at the next scans). Temporary and hidden files are ignored,
// and so are names that are not printable UTF-8 (a newline in one would forge lines of the
// log and of the upload journal).

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "collectors/job_owners.h"

namespace fleetprof {

struct TraceFile {
  std::string path;      // root + "/" + relative, for logs and the journal
  std::string root;      // the watched folder it was found in
  std::string relative;  // its path beneath root: open it with CheckedFile::OpenBeneath
  std::string folder;    // the first folder under root ("" for a file directly in root)
  int64_t size = 0;
  int64_t mtime_ns = 0;
};

// An Nsight Systems report: not a format the server reads, the agent exports it to SQLite
// first (the agent's --nsys).
inline constexpr std::string_view kNsysReportSuffix = ".nsys-rep";

// True for *.json, *.json.gz, *.xplane.pb, Nsight Systems' SQLite exports (*.sqlite,
// *.sqlite.gz) and reports (*.nsys-rep); not *.tmp, not hidden.
bool IsTraceFileName(const std::string& name);

// The job a trace-dir file is filed under, and the job its folder claimed when that is not it.
struct TraceFileJob {
  std::string job;
  std::string claimed_job;  // the folder, when the file's owner may not use it; else ""
};

// docs/operating.md, fleetprof-agent: `fixed_job` (--job) when set; else the file's first folder,
// when `owner_uid` (the owner of the file as opened) may use that job (JobOwners::MayUse: a job
// listed in the job owners file is its uid's and root's, an unlisted one anyone's); else
// "unassigned", with the folder as `claimed_job`. Whoever may write a watched folder may make any
// folder in it: the folder's name alone never files a trace under another user's job.
TraceFileJob JobOfTraceFile(const TraceFile& file, const std::string& fixed_job, int64_t owner_uid,
                            JobOwners& owners);

class TraceDirWatcher {
 public:
  TraceDirWatcher(std::vector<std::string> dirs, int64_t settle_ms);

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
  int64_t settle_ns_;
  std::map<std::string, Seen> seen_;
  uint64_t scan_ = 0;
};

}  // namespace fleetprof
