#include "analysis/kineto_event.h"

#include <limits>
#include <string_view>

namespace fleetprof::analysis {
namespace {

enum class Category {
  kKernel,    // device activity, kind from the name
  kMemory,    // device activity, memcpy/memset
  kExcluded,  // neither device activity nor host event
  kRuntime,   // host event that launches device work
  kHost,      // other known host categories, and events without a cat
  kUnknownHost,
};

// Device work by category (docs/analysis.md, Device activity). Each accelerator backend names
// its own category; a new backend is one line here. `dma_is_memory`: names starting with
// "dma" are memory transfers, every other name a kernel.
struct DeviceCategory {
  std::string_view cat;
  Category category;
  bool dma_is_memory = false;
};
constexpr DeviceCategory kDeviceCategories[] = {
    {"kernel", Category::kKernel},         {"Kernel", Category::kKernel},       // CUDA, ROCm (2021: Kernel)
    {"gpu_memcpy", Category::kMemory},     {"gpu_memset", Category::kMemory},
    {"Memcpy", Category::kMemory},         {"Memset", Category::kMemory},
    {"mtia_ccp_events", Category::kKernel, /*dma_is_memory=*/true},                // Meta's MTIA
};

}  // namespace

// Runtime calls of every backend: cuda_runtime, cuda_driver, mtia_runtime,
// privateuse1_runtime, privateuse1_driver, …, and the 2021 schema's Runtime.
bool IsRuntimeCategory(std::string_view cat) {
  return cat == "Runtime" || cat.ends_with("_runtime") || cat.ends_with("_driver");
}

namespace {

Category Classify(const KinetoRawEvent& e) {
  if (!e.has_cat) return Category::kHost;  // legacy profiler: "pid": "CPU functions"
  std::string_view cat = e.cat;
  for (const DeviceCategory& device : kDeviceCategories) {
    if (cat != device.cat) continue;
    if (device.dma_is_memory && e.has_name && e.name.substr(0, 3) == "dma") return Category::kMemory;
    return device.category;
  }
  if (cat == "Trace" || cat == "gpu_user_annotation" || cat == "cuda_sync") {
    return Category::kExcluded;
  }
  if (IsRuntimeCategory(cat)) return Category::kRuntime;
  // Host categories of current and 2021 Kineto, and the flow categories, which only
  // appear on X events in hand-edited files.
  if (cat == "cpu_op" || cat == "user_annotation" || cat == "python_function" ||
      cat == "Operator" || cat == "cpu_instant_event" || cat == "overhead" || cat == "ac2g" ||
      cat == "fwdbwd" || cat == "async") {
    return Category::kHost;
  }
  return Category::kUnknownHost;
}

inline char Lower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c + 32) : c; }

}  // namespace

int64_t ScalarTypeBytes(std::string_view dtype) {
  static constexpr std::pair<std::string_view, int64_t> kSizes[] = {
      {"Float", 4},  {"Double", 8}, {"Half", 2},  {"BFloat16", 2}, {"Int", 4},   {"Long", 8},
      {"Short", 2},  {"Byte", 1},   {"Char", 1},  {"Bool", 1},     {"UInt16", 2}, {"UInt32", 4},
      {"UInt64", 8}, {"ComplexFloat", 8}, {"ComplexDouble", 16}, {"Float8_e4m3fn", 1}, {"Float8_e5m2", 1},
      {"Float8_e4m3fnuz", 1}, {"Float8_e5m2fnuz", 1},
  };
  for (const auto& [name, size] : kSizes) {
    if (name == dtype) return size;
  }
  return 0;
}

bool IsCollectiveKernelName(std::string_view name) {
  for (size_t i = 0; i + 4 <= name.size(); ++i) {
    char c = Lower(name[i]);
    if ((c == 'n' || c == 'r' || c == 'h') && Lower(name[i + 1]) == 'c' &&
        Lower(name[i + 2]) == 'c' && Lower(name[i + 3]) == 'l') {
      return true;
    }
  }
  return false;
}

void KinetoRawEvent::Reset() {
  ph = cat = name = pid = tid = device = dtype = std::string_view();
  has_ph = has_cat = has_name = has_pid = has_tid = false;
  bad_type = false;
  ts = dur = Number::kAbsent;
  ts_ns = dur_ns = 0;
  out_of_range.clear();
  has_device = has_correlation = has_memory_device_id = false;
  correlation = 0;  // copied into every record: never the previous event's
  has_total_allocated = has_bytes = has_copy_bytes = has_msg_nelems = has_dtype = false;
}

bool KinetoEventSink::Add(const KinetoRawEvent& e) {
  if (!e.has_ph) {
    ++out_->skipped_events;
    return true;
  }
  if (e.ph == "X") return AddComplete(e);
  if ((e.ph == "i" || e.ph == "I") && e.has_name && e.name == "[memory]") return AddMemory(e);
  // Flows, metadata and other instants are not analysed (docs/analysis.md, Chrome-trace JSON).
  return true;
}

bool KinetoEventSink::AddComplete(const KinetoRawEvent& e) {
  using Number = KinetoRawEvent::Number;
  if (e.ts == Number::kOutOfRange || e.dur == Number::kOutOfRange) return false;
  if (e.bad_type || !e.has_name || e.ts != Number::kOk || e.dur != Number::kOk || e.dur_ns < 0) {
    ++out_->skipped_events;
    return true;
  }
  if (!TicksInRange(e.ts_ns, e.dur_ns)) return false;
  Category category = Classify(e);
  if (category == Category::kExcluded) return true;
  if (category == Category::kKernel || category == Category::kMemory) {
    if (!e.has_device && !e.has_pid) {
      ++out_->skipped_events;  // no device to attribute it to
      return true;
    }
    DeviceActivity a;
    a.start = e.ts_ns;
    a.dur = e.dur_ns;
    a.name = out_->names.Intern(e.name);
    a.device = InternRepeated(e.has_device ? e.device : e.pid, &device_);
    a.stream = InternRepeated(e.has_tid ? e.tid : std::string_view(), &stream_);
    a.category = InternRepeated(e.has_cat ? e.cat : std::string_view(), &activity_category_);
    if (category == Category::kMemory) {
      a.kind = ActivityKind::kMemory;
      // A size past 2^50 bytes is no copy: a damaged value, counted as none.
      if (e.has_copy_bytes && e.copy_bytes > 0 && e.copy_bytes <= (int64_t{1} << 50)) {
        out_->copy_bytes.emplace_back(static_cast<uint32_t>(out_->activity.size()), e.copy_bytes);
      }
    } else {
      // Kernel names run to hundreds of bytes; decide once per distinct name.
      if (a.name >= collective_by_name_.size()) collective_by_name_.resize(a.name + 1, -1);
      if (collective_by_name_[a.name] < 0)
        collective_by_name_[a.name] = IsCollectiveKernelName(e.name);
      a.kind = collective_by_name_[a.name] ? ActivityKind::kCommunication : ActivityKind::kCompute;
    }
    a.correlation = e.correlation;
    a.has_correlation = e.has_correlation;
    if (a.kind == ActivityKind::kCommunication && e.has_msg_nelems && e.has_dtype) {
      const int64_t element = ScalarTypeBytes(e.dtype);
      // A size past 2^50 bytes is no message: a damaged count, left out.
      if (element > 0 && e.msg_nelems >= 0 && e.msg_nelems <= (int64_t{1} << 50) / element) {
        out_->message_bytes.emplace_back(static_cast<uint32_t>(out_->activity.size()), e.msg_nelems * element);
      }
    }
    out_->activity.push_back(a);
    return true;
  }
  if (category == Category::kUnknownHost) ++out_->unknown_category_events;
  // Keys are compared as strings; the separator cannot occur in JSON text unescaped.
  thread_key_.assign(e.has_pid ? e.pid : std::string_view());
  thread_key_.push_back('\x1f');
  thread_key_.append(e.has_tid ? e.tid : std::string_view());
  HostEvent h;
  h.start = e.ts_ns;
  h.dur = e.dur_ns;
  h.name = out_->names.Intern(e.name);
  h.thread = InternRepeated(thread_key_, &thread_);
  h.category = InternRepeated(e.has_cat ? e.cat : std::string_view(), &host_category_);
  h.is_runtime = category == Category::kRuntime;
  h.correlation = e.correlation;
  h.has_correlation = e.has_correlation;
  out_->host.push_back(h);
  return true;
}

NameId KinetoEventSink::InternRepeated(std::string_view text, LastName* last) {
  if (last->set && last->text == text) return last->id;
  last->id = out_->names.Intern(text);
  last->text = out_->names.Get(last->id);
  last->set = true;
  return last->id;
}

bool KinetoEventSink::AddMemory(const KinetoRawEvent& e) {
  if (e.ts == KinetoRawEvent::Number::kOutOfRange) return false;
  if (e.bad_type || e.ts != KinetoRawEvent::Number::kOk || !e.has_memory_device_id ||
      (!e.has_total_allocated && !e.has_bytes)) {
    ++out_->skipped_events;
    return true;
  }
  if (!TicksInRange(e.ts_ns, 0)) return false;
  MemoryEvent m;
  m.ts = e.ts_ns;
  if (!has_memory_device_ || e.memory_device_id != memory_device_id_) {
    memory_device_id_ = e.memory_device_id;
    memory_device_ = memory_device_id_ < 0 ? out_->names.Intern("cpu")
                                           : out_->names.Intern(std::to_string(memory_device_id_));
    has_memory_device_ = true;
  }
  m.device = memory_device_;
  m.is_total = e.has_total_allocated;
  m.bytes = e.has_total_allocated ? e.total_allocated : e.bytes;
  out_->memory.push_back(m);
  return true;
}

}  // namespace fleetprof::analysis
