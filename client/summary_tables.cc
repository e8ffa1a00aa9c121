// Human-readable tables of analysis results, shared by `analyze` and the query commands.

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli.h"
#include "client/table_printer.h"

namespace fleetprof::cli {
namespace {

constexpr int64_t kDefaultRows = 30;
constexpr size_t kNameWidth = 70;

std::string MoreRows(size_t shown, size_t total) {
  if (shown >= total) return "";
  return absl::StrCat("(", total - shown, " more rows; --limit N or --json for all)\n");
}

}  // namespace

std::string DevicesTable(const Rows<v1::DeviceBreakdown>& devices) {
  TablePrinter table({"DEVICE", ">EVENTS", ">SPAN", ">BUSY", ">BUSY%", ">IDLE", ">COMPUTE",
                      ">COMMUNICATION", ">MEMORY"});
  for (const auto& d : devices) {
    table.AddRow({d.device(), absl::StrCat(d.events()), FormatNanos(d.span_ns()), FormatNanos(d.busy_ns()),
                  FormatPercent(d.busy_ns(), d.span_ns()), FormatNanos(d.idle_ns()),
                  FormatNanos(d.compute_ns()), FormatNanos(d.communication_ns()),
                  FormatNanos(d.memory_ns())});
  }
  return table.Render();
}

std::string KernelsTable(const Rows<v1::KernelStat>& kernels, int64_t limit) {
  int64_t all = 0;
  for (const auto& k : kernels) all += k.total_ns();
  TablePrinter table({"KERNEL", "KIND", ">COUNT", ">TOTAL", ">%", ">MIN", ">MAX"});
  const size_t rows = std::min<size_t>(kernels.size(), limit > 0 ? limit : kDefaultRows);
  for (size_t i = 0; i < rows; ++i) {
    const auto& k = kernels[static_cast<int>(i)];
    table.AddRow({Ellipsize(k.name(), kNameWidth), k.kind(), absl::StrCat(k.count()),
                  FormatNanos(k.total_ns()), FormatPercent(k.total_ns(), all), FormatNanos(k.min_ns()),
                  FormatNanos(k.max_ns())});
  }
  return table.Render() + MoreRows(rows, kernels.size());
}

std::string OpsTable(const Rows<v1::OpStat>& ops, int64_t limit) {
  TablePrinter table({"OP", ">COUNT", ">TOTAL", ">SELF", ">DEVICE SELF", ">DEVICE TOTAL"});
  const size_t rows = std::min<size_t>(ops.size(), limit > 0 ? limit : kDefaultRows);
  for (size_t i = 0; i < rows; ++i) {
    const auto& o = ops[static_cast<int>(i)];
    table.AddRow({Ellipsize(o.name(), kNameWidth), absl::StrCat(o.count()), FormatNanos(o.total_ns()),
                  FormatNanos(o.self_ns()), FormatNanos(o.device_self_ns()),
                  FormatNanos(o.device_total_ns())});
  }
  return table.Render() + MoreRows(rows, ops.size());
}

std::string XlaOpsTable(const Rows<v1::XlaOpStat>& ops, int64_t limit) {
  TablePrinter table({"XLA OP", "CATEGORY", ">COUNT", ">TOTAL", ">TFLOP/S", ">GB/S"});
  const size_t rows = std::min<size_t>(ops.size(), limit > 0 ? limit : kDefaultRows);
  for (size_t i = 0; i < rows; ++i) {
    const auto& o = ops[static_cast<int>(i)];
    table.AddRow({Ellipsize(o.name(), kNameWidth), o.category(), absl::StrCat(o.count()),
                  FormatNanos(o.total_ns()),
                  o.has_flops_per_second() ? absl::StrFormat("%.2f", o.flops_per_second() / 1e12) : "-",
                  o.has_bytes_accessed_per_second()
                      ? absl::StrFormat("%.1f", o.bytes_accessed_per_second() / 1e9)
                      : "-"});
  }
  return table.Render() + MoreRows(rows, ops.size());
}

std::string SummaryTables(const v1::ProfileSummary& summary, int64_t limit) {
  std::string out = absl::StrCat("Devices\n", DevicesTable(summary.devices()), "\nKernels\n",
                                 KernelsTable(summary.kernels(), limit));
  if (!summary.ops().empty()) absl::StrAppend(&out, "\nOps\n", OpsTable(summary.ops(), limit));
  if (!summary.xla_ops().empty()) absl::StrAppend(&out, "\nXLA ops\n", XlaOpsTable(summary.xla_ops(), limit));
  return out;
}

}  // namespace fleetprof::cli
