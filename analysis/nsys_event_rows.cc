// The rows of an Nsight Systems export that become events (docs/analysis.md, Nsight Systems).
#include <limits>

#include "absl/strings/str_cat.h"
#include "analysis/kineto_event.h"
#include "analysis/nsys_names.h"
#include "analysis/nsys_table_reader.h"

namespace fleetprof::analysis {
namespace {

// NVTX_EVENTS.eventType: push/pop ranges (59, and 70 in a domain), start/end ranges (60, 71)
// and a domain's creation (75).
constexpr int64_t kNvtxPushPop = 59;
constexpr int64_t kNvtxPushPopInDomain = 70;
constexpr int64_t kNvtxStartEnd = 60;
constexpr int64_t kNvtxStartEndInDomain = 71;
constexpr std::string_view kNvtxDomainCreate = "eventType = 75";
// CUPTI_ACTIVITY_KIND_RUNTIME.eventClass of calls; others (67: a CUDA backtrace) are not calls.
constexpr int64_t kCudaRuntimeClass = 0;
constexpr int64_t kCudaDriverClass = 1;
// The cache key of a copyKind or textId that is not an integer.
constexpr int64_t kNoId = std::numeric_limits<int64_t>::min();

// Device rows select start, end, deviceId, streamId, correlationId, globalPid, then their name.
constexpr NsysColumn kKernelColumns[] = {{"start", true},         {"end", true},        {"deviceId", true},
                                         {"streamId", false},     {"correlationId", false}, {"globalPid", false},
                                         {"demangledName", true}};
constexpr NsysColumn kMemcpyColumns[] = {{"start", true},         {"end", true},        {"deviceId", true},
                                         {"streamId", false},     {"correlationId", false}, {"globalPid", false},
                                         {"copyKind", true},      {"bytes", false}};
constexpr NsysColumn kMemsetColumns[] = {{"start", true},     {"end", true},            {"deviceId", true},
                                         {"streamId", false}, {"correlationId", false}, {"globalPid", false},
                                         {"bytes", false}};
constexpr NsysColumn kNvtxDomainColumns[] = {{"domainId", false}, {"text", false}, {"textId", false}, {"eventType", true}};
constexpr NsysColumn kNvtxColumns[] = {{"start", true},    {"end", true},     {"eventType", true}, {"globalTid", false},
                                       {"text", false},    {"textId", false}, {"domainId", false}};
constexpr NsysColumn kCallColumns[] = {{"start", true},     {"end", true},            {"eventClass", true},
                                       {"globalTid", false}, {"correlationId", false}, {"nameId", true}};

}  // namespace

void NsysTableReader::AddActivity(const SqliteStatement& row, Ticks start, Ticks dur, NameId name, NameId category,
                                  ActivityKind kind) {
  DeviceActivity a;
  a.start = start;
  a.dur = dur;
  a.name = name;
  a.device = InternInt(&devices_, *row.Int(2));
  const std::optional<int64_t> stream = row.Int(3);
  a.stream = stream ? InternInt(&streams_, *stream) : out_->names.Intern("");
  a.category = category;
  a.kind = kind;
  const std::optional<int64_t> correlation = row.Int(4);
  const std::optional<int64_t> process = row.Int(5);
  if (correlation && process) {
    a.correlation = correlations_.Key(*process >> 24, *correlation);
    a.has_correlation = true;
  }
  out_->activity.push_back(a);
}

void NsysTableReader::AddCopyBytes(std::optional<int64_t> bytes) {
  // A size past 2^50 bytes is no copy: a damaged value, counted as none.
  if (bytes && *bytes > 0 && *bytes <= (int64_t{1} << 50)) {
    out_->copy_bytes.emplace_back(static_cast<uint32_t>(out_->activity.size()), *bytes);
  }
}

absl::Status NsysTableReader::ReadKernels() {
  const NameId category = out_->names.Intern("kernel");
  return ForEachRow(kNsysKernelTable, kKernelColumns, true,
                    [&](const SqliteStatement& row, int64_t index) -> absl::Status {
                      Ticks start, dur;
                      absl::StatusOr<bool> span = RowSpan(row, kNsysKernelTable, index, &start, &dur);
                      if (!span.ok() || !*span) return span.status();
                      const std::optional<int64_t> name_id = row.Int(6);
                      if (!name_id || !row.Int(2)) {
                        ++out_->skipped_events;
                        return absl::OkStatus();
                      }
                      auto it = kernel_names_.find(*name_id);
                      if (it == kernel_names_.end()) {
                        absl::StatusOr<std::optional<std::string_view>> text = String(*name_id);
                        if (!text.ok()) return text.status();
                        if (!*text) {
                          ++out_->skipped_events;  // a name id without its string
                          return absl::OkStatus();
                        }
                        const NameId name = Intern(**text);
                        it = kernel_names_.emplace(*name_id, name).first;
                        if (!kernel_kinds_.contains(name)) {
                          kernel_kinds_.emplace(name, IsCollectiveKernelName(out_->names.Get(name))
                                                          ? ActivityKind::kCommunication
                                                          : ActivityKind::kCompute);
                        }
                      }
                      AddActivity(row, start, dur, it->second, category, kernel_kinds_.at(it->second));
                      return absl::OkStatus();
                    });
}

absl::Status NsysTableReader::ReadMemcpys() {
  const NameId category = out_->names.Intern("gpu_memcpy");
  return ForEachRow(kNsysMemcpyTable, kMemcpyColumns, true,
                    [&](const SqliteStatement& row, int64_t index) -> absl::Status {
                      Ticks start, dur;
                      absl::StatusOr<bool> span = RowSpan(row, kNsysMemcpyTable, index, &start, &dur);
                      if (!span.ok() || !*span) return span.status();
                      if (!row.Int(2)) {
                        ++out_->skipped_events;
                        return absl::OkStatus();
                      }
                      const std::optional<int64_t> copy_kind = row.Int(6);
                      const int64_t key = copy_kind.value_or(kNoId);
                      auto it = memcpy_names_.find(key);
                      if (it == memcpy_names_.end()) {
                        std::string_view label = "Unknown";
                        if (copy_kind && has_memcpy_kinds_) {
                          auto known = memcpy_kinds_.find(*copy_kind);
                          if (known != memcpy_kinds_.end()) label = known->second;
                        } else if (copy_kind) {
                          label = FixedMemcpyKindLabel(*copy_kind);
                        }
                        it = memcpy_names_.emplace(key, Intern(MemcpyName(label))).first;
                      }
                      AddCopyBytes(row.Int(7));
                      AddActivity(row, start, dur, it->second, category, ActivityKind::kMemory);
                      return absl::OkStatus();
                    });
}

absl::Status NsysTableReader::ReadMemsets() {
  const NameId category = out_->names.Intern("gpu_memset");
  const NameId name = out_->names.Intern(kMemsetName);
  return ForEachRow(kNsysMemsetTable, kMemsetColumns, true,
                    [&](const SqliteStatement& row, int64_t index) -> absl::Status {
                      Ticks start, dur;
                      absl::StatusOr<bool> span = RowSpan(row, kNsysMemsetTable, index, &start, &dur);
                      if (!span.ok() || !*span) return span.status();
                      if (!row.Int(2)) {
                        ++out_->skipped_events;
                        return absl::OkStatus();
                      }
                      AddCopyBytes(row.Int(6));
                      AddActivity(row, start, dur, name, category, ActivityKind::kMemory);
                      return absl::OkStatus();
                    });
}

absl::Status NsysTableReader::ReadNvtxDomains() {
  return ForEachRow(
      kNsysNvtxTable, kNvtxDomainColumns, false,
      [&](const SqliteStatement& row, int64_t) -> absl::Status {
        const std::optional<int64_t> domain = row.Int(0);
        if (!domain || *domain == 0 || nvtx_domains_.contains(*domain)) return absl::OkStatus();
        std::optional<std::string_view> name = row.Text(1);
        const std::optional<int64_t> text_id = row.Int(2);
        if (!name && text_id) {
          absl::StatusOr<std::optional<std::string_view>> text = String(*text_id);
          if (!text.ok()) return text.status();
          name = *text;
        }
        nvtx_domains_.emplace(*domain, Intern(name.value_or("")));
        return absl::OkStatus();
      },
      kNvtxDomainCreate);
}

absl::StatusOr<NsysTableReader::NvtxNames> NsysTableReader::NvtxName(const SqliteStatement& row) {
  const std::optional<int64_t> domain = row.Int(6);
  std::optional<NameId> prefix;
  if (domain && *domain != 0) {
    auto it = nvtx_domains_.find(*domain);
    if (it != nvtx_domains_.end()) prefix = it->second;
  }
  scratch_.clear();
  if (prefix) {
    scratch_.append(out_->names.Get(*prefix));
    scratch_.push_back(':');
  }
  // The full name for nvtx_sum; for ops[] an emit_nvtx name is cut before its ", seq = …".
  const auto both = [this]() -> NvtxNames {
    return {Intern(scratch_), Intern(std::string_view(scratch_).substr(0, EmitNvtxOpNameLength(scratch_)))};
  };
  if (std::optional<std::string_view> text = row.Text(4)) {
    scratch_.append(*text);
    return both();
  }
  // A registered string: the same (domain, textId) always makes the same name.
  const std::optional<int64_t> text_id = row.Int(5);
  const std::pair<int64_t, int64_t> key(prefix ? *domain : 0, text_id.value_or(kNoId));
  auto it = nvtx_names_.find(key);
  if (it != nvtx_names_.end()) return it->second;
  if (text_id) {
    absl::StatusOr<std::optional<std::string_view>> text = String(*text_id);
    if (!text.ok()) return text.status();
    if (*text) scratch_.append(**text);
  }
  const NvtxNames names = both();
  nvtx_names_.emplace(key, names);
  return names;
}

absl::Status NsysTableReader::ReadNvtxRanges() {
  const NameId category = out_->names.Intern("user_annotation");
  out_->has_nvtx_ranges = true;
  return ForEachRow(kNsysNvtxTable, kNvtxColumns, true, [&](const SqliteStatement& row, int64_t index) -> absl::Status {
    const std::optional<int64_t> type = row.Int(2);
    const bool push_pop = type == kNvtxPushPop || type == kNvtxPushPopInDomain;
    if (!push_pop && type != kNvtxStartEnd && type != kNvtxStartEndInDomain) return absl::OkStatus();
    if (row.IsNull(1)) {  // still open: counted apart, in no report or ops[]
      ++out_->nvtx_open_ranges;
      return absl::OkStatus();
    }
    Ticks start, dur;
    absl::StatusOr<bool> span = RowSpan(row, kNsysNvtxTable, index, &start, &dur);
    if (!span.ok() || !*span) return span.status();
    absl::StatusOr<NvtxNames> names = NvtxName(row);
    if (!names.ok()) return names.status();
    out_->nvtx_ranges.push_back({dur, names->full, !push_pop});
    if (!push_pop) return absl::OkStatus();  // ops[] nests the push/pop ranges only
    HostEvent h;
    h.start = start;
    h.dur = dur;
    h.name = names->op;
    h.thread = Thread(row.Int(3));
    h.category = category;
    out_->host.push_back(h);
    return absl::OkStatus();
  });
}

absl::Status NsysTableReader::ReadCudaCalls() {
  const NameId runtime = out_->names.Intern("cuda_runtime");
  const NameId driver = out_->names.Intern("cuda_driver");
  return ForEachRow(
      kNsysRuntimeTable, kCallColumns, true, [&](const SqliteStatement& row, int64_t index) -> absl::Status {
        const std::optional<int64_t> event_class = row.Int(2);
        if (event_class != kCudaRuntimeClass && event_class != kCudaDriverClass) return absl::OkStatus();
        Ticks start, dur;
        absl::StatusOr<bool> span = RowSpan(row, kNsysRuntimeTable, index, &start, &dur);
        if (!span.ok() || !*span) return span.status();
        const std::optional<int64_t> name_id = row.Int(5);
        if (!name_id) {
          ++out_->skipped_events;
          return absl::OkStatus();
        }
        auto it = call_names_.find(*name_id);
        if (it == call_names_.end()) {
          absl::StatusOr<std::optional<std::string_view>> text = String(*name_id);
          if (!text.ok()) return text.status();
          if (!*text) {
            ++out_->skipped_events;
            return absl::OkStatus();
          }
          it = call_names_.emplace(*name_id, Intern(StripCudaVersionSuffix(**text))).first;
        }
        const std::optional<int64_t> thread = row.Int(3);
        const std::optional<int64_t> correlation = row.Int(4);
        HostEvent h;
        h.start = start;
        h.dur = dur;
        h.name = it->second;
        h.thread = Thread(thread);
        h.category = event_class == kCudaRuntimeClass ? runtime : driver;
        h.is_runtime = true;
        if (thread && correlation) {
          h.correlation = correlations_.Key(*thread >> 24, *correlation);
          h.has_correlation = true;
        }
        out_->host.push_back(h);
        return absl::OkStatus();
      });
}

}  // namespace fleetprof::analysis
