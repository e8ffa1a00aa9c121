#include "collectors/trace_dir_watcher.h"

#include <filesystem>

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

}  // namespace

bool IsTraceFileName(const std::string& name) {
  if (name.empty() || name[0] == '.' || name.ends_with(".tmp")) return false;
  return name.ends_with(".json") || name.ends_with(".json.gz") || name.ends_with(".xplane.pb");
}

TraceDirWatcher::TraceDirWatcher(std::vector<std::string> dirs, std::string job, int64_t settle_ms)
    : dirs_(std::move(dirs)), job_(std::move(job)), settle_ns_(settle_ms * 1'000'000) {}

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
    TraceFile file{path, root, relative.string(), job_, size, mtime};
    if (file.job.empty()) {
      file.job = std::distance(relative.begin(), relative.end()) > 1 ? relative.begin()->string()
                                                                    : "unassigned";
    }
    out->push_back(std::move(file));
  }
}

}  // namespace fleetprof
