#include "agent/trace_uploader.h"

#include <filesystem>
#include <optional>

#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "common/runtime.h"
#include "common/safe_paths.h"
#include "spdlog/spdlog.h"

namespace fleetprof {

TraceUploader::TraceUploader(TraceUploaderOptions options, Uploader upload, prometheus::Registry& registry)
    : options_(std::move(options)),
      clock_(*options_.clock),
      upload_(std::move(upload)),
      watcher_(options_.dirs, options_.settle_ms),
      results_(prometheus::BuildCounter()
                   .Name("fleetprof_agent_trace_uploads_total")
                   .Help("Trace files from watched folders, by upload result")
                   .Register(registry)) {
  for (const char* result : {"ok", "duplicate", "rejected", "refused", "retry"}) results_.Add({{"result", result}});
}

TraceUploader::~TraceUploader() { Stop(); }

absl::Status TraceUploader::Start() {
  if (absl::Status s = journal_.Open(options_.journal_path); !s.ok()) return s;
  auto secret = LoadOrCreateUploadSecret(options_.journal_path + ".secret");
  if (!secret.ok()) return secret.status();
  secret_ = *std::move(secret);
  spdlog::info("watching {} trace folder(s); {} files already uploaded", options_.dirs.size(),
               journal_.size());
  thread_ = std::thread([this] { Loop(); });
  return absl::OkStatus();
}

void TraceUploader::Stop() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void TraceUploader::Loop() {
  while (true) {
    std::vector<TraceFile> files = std::move(retry_);
    retry_.clear();
    for (auto& file : watcher_.Scan(clock_.Now())) files.push_back(std::move(file));
    for (const auto& file : files) {
      {
        absl::MutexLock lock(&mu_);
        if (stopping_) return;
      }
      if (!journal_.Contains(file)) UploadOne(file);
    }
    absl::MutexLock lock(&mu_);
    const auto stop = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) { return stopping_; };
    if (clock_.WaitUntil(&mu_, absl::Condition(&stop), clock_.MonotonicNanos() + options_.scan_interval_ms * 1'000'000)) {
      return;
    }
  }
}

void TraceUploader::UploadOne(const TraceFile& file) {
  // Names come from whoever may write the watched folders: escaped in the log, where a
  // newline would forge lines.
  const std::string shown = absl::CHexEscape(file.path);
  // Jobs may write these folders: read the file itself, reached without following a link at
  // any folder on the way (one may have been swapped for a link since the scan).
  auto checked = CheckedFile::OpenBeneath(file.root, file.relative, {});
  if (!checked.ok()) {
    results_.Add({{"result", "refused"}}).Increment();
    spdlog::warn("not uploading {}: {}", shown, std::string(checked.status().message()));
    return;
  }
  // The owner of the file that is read (measured on its descriptor), not of whatever the
  // path names by now, decides whether its folder's job is its job.
  const TraceFileJob filed = JobOfTraceFile(file, options_.job, checked->owner_uid(), *options_.job_owners);
  if (!filed.claimed_job.empty()) {
    spdlog::warn("{}: its folder '{}' is no job that its owner, uid {}, may use (--job_owners_file): filed as {}",
                 shown, absl::CHexEscape(filed.claimed_job), checked->owner_uid(), filed.job);
  }
  // A report goes up as its SQLite export, made as its owner into a folder of its own.
  std::string file_name = std::filesystem::path(file.path).filename().string();
  std::optional<Exported> exported;
  if (file_name.ends_with(kNsysReportSuffix)) {
    absl::StatusOr<Exported> made = ExportReport(file, *checked);
    if (absl::IsCancelled(made.status())) return;  // the agent is stopping; the next start resumes it
    if (!made.ok()) {
      Refuse(file, "refused", std::string(made.status().message()));
      return;
    }
    exported = std::move(*made);
    file_name = absl::StrCat(file_name.substr(0, file_name.size() - kNsysReportSuffix.size()), ".sqlite");
  }
  const CheckedFile& sent = exported ? exported->sqlite : *checked;
  UploadOptions upload;
  upload.path = sent.proc_path();
  upload.file_name = file_name;
  upload.job = filed.job;
  upload.node = options_.node;
  upload.upload_id = UploadIdFor(secret_, options_.node, file);
  upload.labels["source"] = "trace_dir";
  if (!filed.claimed_job.empty()) upload.labels["claimed_job"] = filed.claimed_job;
  upload.max_attempts = 2;
  upload.cancelled = [this] {
    absl::MutexLock lock(&mu_);
    return stopping_;
  };
  if (exported) upload.max_bytes = sent.size_bytes();  // as checked
  auto response = upload_(upload);
  if (exported) {
    // Sent or not, the export goes: a retry exports the report again.
    if (absl::Status s = RemoveExportFolder(options_.export_dir, exported->folder); !s.ok()) {
      spdlog::warn("nsys export of {}: {}", shown, std::string(s.message()));
    }
  }
  RecordOutcome(file, shown, filed.job, response);
}

void TraceUploader::RecordOutcome(const TraceFile& file, const std::string& shown, const std::string& job,
                                  const absl::StatusOr<v1::UploadResponse>& response) {
  if (response.ok()) {
    const char* result = response->already_existed() ? "duplicate" : "ok";
    results_.Add({{"result", result}}).Increment();
    uploaded_++;
    spdlog::info("uploaded {} job={} profile_id={}{}", shown, absl::CHexEscape(job), response->profile_id(),
                 response->already_existed() ? " (already stored)" : "");
    if (absl::Status s = journal_.Record(file, response->profile_id()); !s.ok()) {
      spdlog::error("journal: {}", std::string(s.message()));
    }
    return;
  }
  const absl::Status& error = response.status();
  if (absl::IsCancelled(error)) return;  // the agent is stopping; the next start resumes it
  if (absl::IsInvalidArgument(error) || absl::IsResourceExhausted(error) || absl::IsNotFound(error)) {
    // The file itself is the problem: say so once and do not retry it until it changes.
    results_.Add({{"result", "rejected"}}).Increment();
    failed_++;
    spdlog::warn("server rejected {}: {}", shown, std::string(error.message()));
    if (absl::Status s = journal_.Record(file, "rejected"); !s.ok()) {
      spdlog::error("journal: {}", std::string(s.message()));
    }
    return;
  }
  results_.Add({{"result", "retry"}}).Increment();
  spdlog::warn("upload of {} failed, will retry: {}", shown, std::string(error.message()));
  retry_.push_back(file);
}

absl::StatusOr<TraceUploader::Exported> TraceUploader::ExportReport(const TraceFile& file, const CheckedFile& checked) {
  if (!options_.nsys.available()) return absl::FailedPreconditionError(kNoNsysReason);
  // nsys reads the report as the user who owns it (measured on the descriptor read here), and
  // writes the SQLite file into a folder only that user and the agent may enter.
  const NsysUser user = NsysUserOf(checked.owner_uid());
  absl::StatusOr<std::string> folder =
      CreatePrivateFolder(options_.export_dir, absl::StrCat("nsys-uid", user.uid), user.uid);
  if (!folder.ok()) return folder.status();
  const std::string stem = std::filesystem::path(file.path).filename().string();
  const std::string name = SafeFileName(stem.substr(0, stem.size() - kNsysReportSuffix.size())) + ".sqlite";
  absl::StatusOr<CheckedFile> sqlite =
      options_.nsys.ExportAndOpen(file.path, options_.export_dir, *folder, name, user, options_.max_trace_bytes, [this] {
        absl::MutexLock lock(&mu_);
        return stopping_;
      });
  if (!sqlite.ok()) {
    if (absl::Status s = RemoveExportFolder(options_.export_dir, *folder); !s.ok()) {
      spdlog::warn("nsys export: {}", std::string(s.message()));
    }
    return sqlite.status();
  }
  return Exported{*std::move(sqlite), *folder};
}

void TraceUploader::Refuse(const TraceFile& file, const std::string& result, const std::string& why) {
  results_.Add({{"result", result}}).Increment();
  failed_++;
  spdlog::warn("not uploading {}: {}", absl::CHexEscape(file.path), why);
  if (absl::Status s = journal_.Record(file, result); !s.ok()) spdlog::error("journal: {}", std::string(s.message()));
}

}  // namespace fleetprof
