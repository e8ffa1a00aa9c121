#include "analysis/summary_json.h"

#include <charconv>
#include <cmath>

#include "absl/strings/str_cat.h"

namespace fleetprof::analysis {
namespace {

// Appends ,"key":value pieces; `first` tracks whether a comma is due.
class ObjectWriter {
 public:
  explicit ObjectWriter(std::string* out) : out_(out) { out_->push_back('{'); }
  void Int(std::string_view key, int64_t value) {
    Key(key);
    absl::StrAppend(out_, value);
  }
  // Shortest text that reads back as the same double; JSON has no NaN or infinity, so
  // such a value (which the analysis never produces) is left out.
  void Double(std::string_view key, double value) {
    if (!std::isfinite(value)) return;
    Key(key);
    char buf[32];
    auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), value);
    out_->append(buf, end);
  }
  void String(std::string_view key, std::string_view value) {
    Key(key);
    AppendJsonString(out_, value);
  }
  // Starts a member whose value the caller writes.
  void Key(std::string_view key) {
    if (!first_) out_->push_back(',');
    first_ = false;
    AppendJsonString(out_, key);
    out_->push_back(':');
  }
  void Close() { out_->push_back('}'); }

 private:
  std::string* out_;
  bool first_ = true;
};

template <typename T, typename F>
void WriteArray(std::string* out, const std::vector<T>& items, F write_item) {
  out->push_back('[');
  for (size_t i = 0; i < items.size(); ++i) {
    if (i > 0) out->push_back(',');
    ObjectWriter item(out);
    write_item(item, items[i]);
    item.Close();
  }
  out->push_back(']');
}

}  // namespace

void AppendJsonString(std::string* out, std::string_view s) {
  static constexpr char kHex[] = "0123456789abcdef";
  out->push_back('"');
  size_t run = 0;  // start of the pending run of bytes that need no escaping
  for (size_t i = 0; i < s.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(s[i]);
    if (c >= 0x20 && c != '"' && c != '\\') continue;
    out->append(s.data() + run, i - run);
    run = i + 1;
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\r':
        out->append("\\r");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\b':
        out->append("\\b");
        break;
      case '\f':
        out->append("\\f");
        break;
      default:
        out->append("\\u00");
        out->push_back(kHex[c >> 4]);
        out->push_back(kHex[c & 15]);
    }
  }
  out->append(s.data() + run, s.size() - run);
  out->push_back('"');
}

std::string SummaryToJson(const TraceSummary& summary, const SummaryJsonSections& sections) {
  std::string out;
  out.reserve(4096 + 256 * (summary.kernels.size() + summary.ops.size()));
  ObjectWriter top(&out);
  if (sections.metadata) {
    // Trace-wide facts travel with the metadata section, so a single-section query
    // ({"kernels":[…]}) stays alone.
    top.String("format", TraceFormatName(summary.format));
    top.Int("start_ns", summary.start_ns);
    top.Int("end_ns", summary.end_ns);
    top.Int("events", summary.events);
    top.Int("skipped_events", summary.skipped_events);
    top.Int("unknown_category_events", summary.unknown_category_events);
  }
  if (sections.devices) {
    top.Key("devices");
    WriteArray(&out, summary.devices, [](ObjectWriter& w, const DeviceSummary& d) {
      w.String("device", d.device);
      w.Int("events", d.events);
      w.Int("start_ns", d.start_ns);
      w.Int("end_ns", d.end_ns);
      w.Int("span_ns", d.span_ns);
      w.Int("busy_ns", d.busy_ns);
      w.Int("idle_ns", d.idle_ns);
      w.Int("compute_ns", d.compute_ns);
      w.Int("communication_ns", d.communication_ns);
      w.Int("memory_ns", d.memory_ns);
    });
  }
  if (sections.kernels) {
    top.Key("kernels");
    WriteArray(&out, summary.kernels, [](ObjectWriter& w, const KernelSummary& k) {
      w.String("name", k.name);
      w.String("kind", ActivityKindName(k.kind));
      w.Int("count", k.count);
      w.Int("total_ns", k.total_ns);
      w.Int("min_ns", k.min_ns);
      w.Int("max_ns", k.max_ns);
    });
  }
  if (sections.ops) {
    top.Key("ops");
    WriteArray(&out, summary.ops, [](ObjectWriter& w, const OpSummary& o) {
      w.String("name", o.name);
      w.Int("count", o.count);
      w.Int("total_ns", o.total_ns);
      w.Int("self_ns", o.self_ns);
      w.Int("device_self_ns", o.device_self_ns);
      w.Int("device_total_ns", o.device_total_ns);
    });
  }
  if (sections.steps) {
    top.Key("steps");
    WriteArray(&out, summary.steps, [](ObjectWriter& w, const StepSummary& s) {
      w.Int("step", s.step);
      w.Int("start_ns", s.start_ns);
      w.Int("end_ns", s.end_ns);
      w.Int("duration_ns", s.duration_ns);
      w.Int("device_busy_ns", s.device_busy_ns);
      w.Int("device_idle_ns", s.device_idle_ns);
    });
  }
  if (sections.memory) {
    top.Key("memory");
    WriteArray(&out, summary.memory, [&out](ObjectWriter& w, const MemorySummary& m) {
      w.String("device", m.device);
      w.Int("samples", m.samples);
      w.Int("peak_bytes", m.peak_bytes);
      w.Int("peak_ns", m.peak_ns);
      if (m.allocator_peak_bytes != 0) w.Int("allocator_peak_bytes", m.allocator_peak_bytes);
      w.Key("timeline");
      WriteArray(&out, m.timeline, [](ObjectWriter& p, const MemorySample& sample) {
        p.Int("ts_ns", sample.ts_ns);
        p.Int("allocated_bytes", sample.allocated_bytes);
      });
    });
  }
  if (sections.xla_ops && !summary.xla_ops.empty()) {
    top.Key("xla_ops");
    WriteArray(&out, summary.xla_ops, [](ObjectWriter& w, const XlaOpSummary& op) {
      w.String("name", op.name);
      if (!op.category.empty()) w.String("category", op.category);
      if (!op.module.empty()) w.String("module", op.module);
      w.Int("count", op.count);
      w.Int("total_ns", op.total_ns);
      if (op.flops) w.Int("flops", *op.flops);
      if (op.flops_per_second) w.Double("flops_per_second", *op.flops_per_second);
      if (op.bytes_accessed) w.Int("bytes_accessed", *op.bytes_accessed);
      if (op.bytes_accessed_per_second) {
        w.Double("bytes_accessed_per_second", *op.bytes_accessed_per_second);
      }
    });
  }
  if (sections.metadata) {
    top.Key("metadata");
    ObjectWriter meta(&out);
    for (const auto& [key, value] : summary.metadata) meta.String(key, value);
    meta.Close();
  }
  top.Close();
  return out;
}

}  // namespace fleetprof::analysis
