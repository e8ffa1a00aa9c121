#pragma once
// Uploads each finished trace file found by the TraceDirWatcher, once: the journal remembers
// uploads across agent restarts, and a per-file upload id makes the server dedupe too.

#include <atomic>
#include <memory>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "collectors/job_owners.h"
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
