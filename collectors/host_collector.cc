#include "collectors/host_collector.h"

#include <unistd.h>

#include <charconv>
#include <filesystem>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "common/safe_paths.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

// Whitespace-separated words of a procfs line.
std::vector<std::string_view> Words(std::string_view text) {
  std::vector<std::string_view> words;
  size_t pos = 0;
  while (true) {
    pos = text.find_first_not_of(" \t\n", pos);
    if (pos == std::string_view::npos) return words;
    size_t end = text.find_first_of(" \t\n", pos);
    words.push_back(text.substr(pos, end - pos));
    if (end == std::string_view::npos) return words;
    pos = end;
  }
}

template <typename Number>
bool ParseNumber(std::string_view text, Number* value) {
  auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), *value);
  return error == std::errc() && end == text.data() + text.size();
}

// Values of /proc/meminfo in bytes, keyed by name ("MemTotal").
std::map<std::string, uint64_t, std::less<>> ParseMeminfo(std::string_view text) {
  std::map<std::string, uint64_t, std::less<>> values;
  while (!text.empty()) {
    size_t end = text.find('\n');
    std::vector<std::string_view> parts = Words(text.substr(0, end));
    text.remove_prefix(end == std::string_view::npos ? text.size() : end + 1);
    if (parts.size() < 2 || parts[0].empty() || parts[0].back() != ':') continue;
    uint64_t value = 0;
    if (!ParseNumber(parts[1], &value)) continue;
    if (parts.size() >= 3 && parts[2] == "kB") value *= 1024;
    values.emplace(std::string(parts[0].substr(0, parts[0].size() - 1)), value);
  }
  return values;
}

std::optional<int> PidOf(std::string_view name) {
  int pid = 0;
  auto [end, error] = std::from_chars(name.data(), name.data() + name.size(), pid);
  if (error != std::errc() || end != name.data() + name.size() || pid <= 0) return std::nullopt;
  return pid;
}

}  // namespace

HostCollector::HostCollector(Options options)
    : options_(std::move(options)), job_cache_(options_.proc_root) {
  if (options_.ticks_per_second <= 0) options_.ticks_per_second = ::sysconf(_SC_CLK_TCK);
  if (options_.page_size_bytes <= 0) options_.page_size_bytes = ::sysconf(_SC_PAGESIZE);
}

HostSample HostCollector::Sample() {
  HostSample sample;
  absl::StatusOr<std::string> stat = ReadProcFile(options_.proc_root + "/stat");
  absl::StatusOr<std::string> meminfo = ReadProcFile(options_.proc_root + "/meminfo");
  if (!stat.ok() || !meminfo.ok()) {
    if (!logged_down_) {
      logged_down_ = true;
      spdlog::warn("host: cannot read procfs ({}); host metrics are off until it can",
                   std::string((!stat.ok() ? stat.status() : meminfo.status()).message()));
    }
    return sample;
  }
  if (logged_down_) spdlog::info("host: procfs readable again");
  logged_down_ = false;
  sample.up = true;
  SampleCpu(*stat, sample);

  auto memory = ParseMeminfo(*meminfo);
  if (auto total = memory.find("MemTotal"); total != memory.end()) {
    sample.memory_total_bytes = total->second;
    if (auto available = memory.find("MemAvailable"); available != memory.end()) {
      sample.memory_used_bytes = total->second - std::min(total->second, available->second);
    }
  }
  SampleJobs(sample);
  return sample;
}

void HostCollector::SampleCpu(const std::string& stat, HostSample& sample) {
  // "cpu  user nice system idle iowait irq softirq steal guest guest_nice". Guest time is
  // already inside user/nice, so it is not added again.
  std::string_view first_line = std::string_view(stat).substr(0, stat.find('\n'));
  std::vector<std::string_view> fields = Words(first_line);
  if (fields.size() < 9 || fields[0] != "cpu") return;
  uint64_t ticks[8] = {};
  for (size_t i = 0; i < 8; ++i) {
    if (!ParseNumber(fields[i + 1], &ticks[i])) return;
  }
  CpuTicks now;
  for (uint64_t value : ticks) now.total += value;
  now.busy = now.total - ticks[3] - ticks[4];  // minus idle and iowait
  if (previous_cpu_ && now.total > previous_cpu_->total && now.busy >= previous_cpu_->busy) {
    sample.cpu_utilization_ratio = static_cast<double>(now.busy - previous_cpu_->busy) /
                                   static_cast<double>(now.total - previous_cpu_->total);
  }
  previous_cpu_ = now;
}

void HostCollector::SampleJobs(HostSample& sample) {
  ++scan_;
  std::error_code error;
  std::filesystem::directory_iterator dir(options_.proc_root, error);
  std::map<std::string, uint64_t> resident_pages;
  for (; !error && dir != std::filesystem::directory_iterator(); dir.increment(error)) {
    std::optional<int> pid = PidOf(dir->path().filename().native());
    if (!pid) continue;
    // Processes come and go during the scan; a vanished one is simply skipped.
    absl::StatusOr<std::string> text = ReadProcFile(absl::StrCat(dir->path().native(), "/stat"));
    if (!text.ok()) continue;
    std::optional<ProcessStat> stat = ParseProcessStat(*text);
    if (!stat) continue;
    std::optional<std::string> job = job_cache_.JobOf(*pid, stat->start_ticks, stat->command);
    if (!job) continue;
    if (options_.job_owners && !options_.job_owners->Claim(*job, ProcessUid(options_.proc_root, *pid), *pid)) {
      continue;  // another uid's name: its numbers are not that job's
    }

    TrackedProcess& tracked = processes_[*pid];
    if (tracked.seen_in_scan == 0 || tracked.start_ticks != stat->start_ticks) {
      // New to us (or a recycled pid): all of its CPU time so far is the job's.
      tracked = TrackedProcess{stat->start_ticks, 0, 0};
    }
    if (stat->cpu_ticks > tracked.cpu_ticks) {
      job_cpu_ticks_[*job] += stat->cpu_ticks - tracked.cpu_ticks;
      tracked.cpu_ticks = stat->cpu_ticks;
    }
    tracked.seen_in_scan = scan_;
    resident_pages[*job] += stat->resident_pages;
  }
  job_cache_.Sweep();
  std::erase_if(processes_, [this](const auto& item) { return item.second.seen_in_scan != scan_; });
  // A job without a live process is over; forgetting it keeps label values bounded.
  std::erase_if(job_cpu_ticks_,
                [&](const auto& item) { return !resident_pages.contains(item.first); });

  for (const auto& [job, pages] : resident_pages) {
    JobHostSample& out = sample.jobs[job];
    out.resident_bytes = pages * static_cast<uint64_t>(options_.page_size_bytes);
    out.cpu_seconds_total = static_cast<double>(job_cpu_ticks_[job]) /
                            static_cast<double>(options_.ticks_per_second);
  }
}

}  // namespace fleetprof
