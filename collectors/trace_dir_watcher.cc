#include "collectors/trace_dir_watcher.h"

#include <filesystem>

#include "absl/strings/escaping.h"
#include "collectors/process_jobs.h"
#include "common/text_checks.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace fs = std::filesystem;

namespace {

int64_t MtimeNs(const fs::file_time_type& t) {
  // file_clock has its own epoch in libstdc++: convert to unix time before comparing.
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::file_clock::to_sys(t).time_since_epoch())
      .count();
}

constexpr int kMaxDepth = 4;
constexpr size_t kMaxJobBytes = 253;
constexpr size_t kMaxNameBytes = 255;  // NAME_MAX

// Every component of `relative` is printable UTF-8: nothing that could end a log line.
bool IsPrintablePath(const std::filesystem::path& relative) {
  for (const auto& part : relative) {
    if (!IsPrintableUtf8(part.native(), kMaxNameBytes)) return false;
  }
  return true;
}

}  // namespace

bool IsTraceFileName(const std::string& name) {
  if (name.empty() || name[0] == '.' || name.ends_with(".tmp")) return false;
  for (std::string_view suffix :
       {std::string_view(".json"), std::string_view(".json.gz"), std::string_view(".xplane.pb"),
        std::string_view(".sqlite"), std::string_view(".sqlite.gz"), kNsysReportSuffix}) {
    if (name.ends_with(suffix)) return true;
  }
  return false;
}

TraceFileJob JobOfTraceFile(const TraceFile& file, const std::string& fixed_job, int64_t owner_uid,
                            JobOwners& owners) {
  if (!fixed_job.empty()) return {fixed_job, ""};
  if (file.folder.empty() || file.folder == kUnassignedJob) return {std::string(kUnassignedJob), ""};
  if (IsPrintableUtf8(file.folder, kMaxJobBytes) && owners.MayUse(file.folder, owner_uid)) return {file.folder, ""};
  return {std::string(kUnassignedJob), file.folder};
}

TraceDirWatcher::TraceDirWatcher(std::vector<std::string> dirs, int64_t settle_ms)
    : dirs_(std::move(dirs)), settle_ns_(settle_ms * 1'000'000) {}

std::vector<TraceFile> TraceDirWatcher::Scan(int64_t now_ns) {
  std::vector<TraceFile> ready;
  ++scan_;
  for (const auto& dir : dirs_) ScanDir(dir, now_ns, &ready);
  // Files gone from the folders are forgotten, so rotating traces do not grow this map.
  std::erase_if(seen_, [&](const auto& entry) { return entry.second.scan != scan_; });
  return ready;
}

void TraceDirWatcher::ScanDir(const std::string& root, int64_t now_ns, std::vector<TraceFile>* out) {
  std::error_code ec;
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec);
  if (ec) {
    spdlog::debug("trace dir {} not readable: {}", root, ec.message());
    return;
  }
  for (; it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (ec) break;
    if (it.depth() >= kMaxDepth) it.disable_recursion_pending();
    const fs::directory_entry& entry = *it;
    const std::string name = entry.path().filename().string();
    if (entry.is_directory(ec) && !name.empty() && name[0] == '.') {
      it.disable_recursion_pending();
      continue;
    }
    // symlink_status: a link a job planted (to /etc/shadow, say) is not a trace file.
    if (!fs::is_regular_file(entry.symlink_status(ec)) || !IsTraceFileName(name)) continue;
    const int64_t size = static_cast<int64_t>(entry.file_size(ec));
    if (ec) continue;
    const int64_t mtime = MtimeNs(entry.last_write_time(ec));
    if (ec) continue;
    const std::string path = entry.path().string();
    Seen& seen = seen_[path];
    const bool changed = seen.size != size || seen.mtime_ns != mtime;
    if (changed) seen = Seen{size, mtime, false, 0};
    seen.scan = scan_;
    // Settled: unchanged since the last scan and untouched for settle_ns.
    if (seen.handed_out || changed || now_ns - mtime < settle_ns_ || size == 0) continue;
    seen.handed_out = true;
    const fs::path relative = entry.path().lexically_relative(root);
    if (!IsPrintablePath(relative)) {
      spdlog::warn("not uploading '{}': a trace file's path must be printable UTF-8", absl::CHexEscape(path));
      continue;
    }
    const std::string folder = std::distance(relative.begin(), relative.end()) > 1 ? relative.begin()->string() : "";
    out->push_back(TraceFile{path, root, relative.string(), folder, size, mtime});
  }
}

}  // namespace fleetprof
