#pragma once
// Uploads each finished trace file found by the TraceDirWatcher, once: the journal remembers
// uploads across agent restarts, and a per-file upload id makes the server dedupe too. An
// Nsight Systems report (*.nsys-rep) is exported to SQLite first with the node's nsys, run as
// the report's owner into a folder made for it (collectors/nsys_cli.h), and that file goes up;
// without an nsys the report is refused once, with the reason (kNoNsysReason).

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collectors/job_owners.h"
#include "collectors/nsys_cli.h"
#include "collectors/trace_dir_watcher.h"
#include "collectors/upload_journal.h"
#include "common/clock.h"
#include "prometheus/counter.h"
#include "prometheus/registry.h"
#include "rpc/uploader.h"

namespace fleetprof {

struct TraceUploaderOptions {
  std::vector<std::string> dirs;
  std::string job;  // --job: every file's job; empty: JobOfTraceFile decides per file
  // Whose jobs are whose (--job_owners_file), for files filed by their folder. Required.
  std::shared_ptr<JobOwners> job_owners;
  std::string node;
  std::string journal_path;
  int64_t scan_interval_ms = 1000;
  int64_t settle_ms = 2000;
  const Clock* clock = RealClock();  // file ages and the pause between scans
  // *.nsys-rep reports: the node's nsys (--nsys; none: reports are refused), the shared drop
  // folder the agent owns where each export gets a folder of the report owner's (mode 0700, a
  // random name: --kineto_trace_dir), and the largest export taken (--max_trace_mb).
  NsysCli nsys;
  std::string export_dir;
  int64_t max_trace_bytes = int64_t{1} << 30;
};

class TraceUploader {
 public:
  // `upload` sends each file to the server (the daemon's goes over gRPC: rpc/upload_client.h).
  TraceUploader(TraceUploaderOptions options, Uploader upload, prometheus::Registry& registry);
  ~TraceUploader();

  absl::Status Start();
  void Stop();
  int64_t uploaded() const { return uploaded_.load(); }
  int64_t failed() const { return failed_.load(); }

 private:
  void Loop();
  void UploadOne(const TraceFile& file);
  // Counts and logs an upload's answer; records it in the journal unless it is worth a retry
  // (then the file waits in retry_).
  void RecordOutcome(const TraceFile& file, const std::string& shown, const std::string& job,
                     const absl::StatusOr<v1::UploadResponse>& response);
  // The report `checked` exported to SQLite as its owner: the file and the folder made for it
  // (remove it with RemoveExportFolder); the error says why not (no nsys: kNoNsysReason).
  struct Exported {
    CheckedFile sqlite;
    std::string folder;
  };
  absl::StatusOr<Exported> ExportReport(const TraceFile& file, const CheckedFile& checked);
  // Counts and logs a file not uploaded for a reason of its own, and journals it so the next
  // scans leave it alone until it changes.
  void Refuse(const TraceFile& file, const std::string& result, const std::string& why);

  TraceUploaderOptions options_;
  const Clock& clock_;
  Uploader upload_;
  TraceDirWatcher watcher_;
  std::string secret_;  // keys the upload ids (LoadOrCreateUploadSecret)
  UploadJournal journal_;
  std::vector<TraceFile> retry_;  // files the server could not take yet (unreachable)
  prometheus::Family<prometheus::Counter>& results_;
  std::atomic<int64_t> uploaded_{0};
  std::atomic<int64_t> failed_{0};
  absl::Mutex mu_;
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;
  std::thread thread_;
};

}  // namespace fleetprof
