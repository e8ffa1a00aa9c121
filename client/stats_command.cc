// `fleetprof stats PROFILE|FILE`: the `nsys stats` reports (docs/analysis.md) of a stored
// profile, or of a trace file analysed here, as tables, as JSON, or as the CSV `nsys stats
// --format csv` prints, so scripts written for nsys read ours.

#include <filesystem>
#include <iostream>
#include <sstream>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "analysis/trace_analyzer.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "fleetprof/v1/query.grpc.pb.h"
#include "proto/proto_json.h"
#include "proto/summary_codec.h"

namespace fleetprof::cli {
namespace {

constexpr double kBytesPerMb = 1e6;  // nsys's MB

// One row's cells, whatever its report: its names (name, or style and range) and numbers.
struct StatsCells {
  std::vector<std::string> names;
  double time_pct;
  int64_t total, instances, min, max;
  double avg, med, stddev;
};

template <typename Row>
StatsCells NumbersOf(const Row& row, std::vector<std::string> names) {
  return {std::move(names), row.time_pct(), row.total(), row.instances(), row.min(),
          row.max(), row.avg(),  row.med(),   row.stddev()};
}

// A report as nsys lays it out: its title, the CSV header, and its rows' cells.
struct ReportView {
  const char* name;
  const char* title;
  const char* csv_header;
  bool in_bytes;
  std::vector<StatsCells> rows;
};

std::vector<ReportView> ViewsOf(const v1::StatsResponse& answer) {
  const v1::StatsReports& r = answer.reports();
  std::vector<ReportView> views;
  const auto named = [&](const char* name, const char* title, const char* header, const v1::StatsNameReport& report) {
    ReportView view{name, title, header, false, {}};
    for (const v1::StatsNameRow& row : report.rows()) view.rows.push_back(NumbersOf(row, {row.name()}));
    views.push_back(std::move(view));
  };
  const auto operations = [&](const char* name, const char* title, const char* header, bool bytes,
                              const v1::StatsOperationReport& report) {
    ReportView view{name, title, header, bytes, {}};
    for (const v1::StatsOperationRow& row : report.rows()) view.rows.push_back(NumbersOf(row, {row.operation()}));
    views.push_back(std::move(view));
  };
  if (r.has_cuda_gpu_kern_sum()) {
    named("cuda_gpu_kern_sum", "CUDA GPU Kernel Summary",
          "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name", r.cuda_gpu_kern_sum());
  }
  if (r.has_cuda_gpu_mem_time_sum()) {
    operations("cuda_gpu_mem_time_sum", "CUDA GPU MemOps Summary (by Time)",
               "Time (%),Total Time (ns),Count,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Operation", false,
               r.cuda_gpu_mem_time_sum());
  }
  if (r.has_cuda_gpu_mem_size_sum()) {
    operations("cuda_gpu_mem_size_sum", "CUDA GPU MemOps Summary (by Size)",
               "Total (MB),Count,Avg (MB),Med (MB),Min (MB),Max (MB),StdDev (MB),Operation", true,
               r.cuda_gpu_mem_size_sum());
  }
  if (r.has_cuda_api_sum()) {
    named("cuda_api_sum", "CUDA API Summary",
          "Time (%),Total Time (ns),Num Calls,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Name", r.cuda_api_sum());
  }
  if (r.has_nvtx_sum()) {
    ReportView view{"nvtx_sum", "NVTX Range Summary",
                    "Time (%),Total Time (ns),Instances,Avg (ns),Med (ns),Min (ns),Max (ns),StdDev (ns),Style,Range",
                    false,
                    {}};
    for (const v1::StatsRangeRow& row : r.nvtx_sum().rows()) {
      view.rows.push_back(NumbersOf(row, {row.style(), row.range()}));
    }
    views.push_back(std::move(view));
  }
  return views;
}

// A CSV field: quoted when it holds a comma, a quote or a line break (RFC 4180).
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string out = "\"";
  for (char c : text) {
    if (c == '"') out.push_back('"');
    out.push_back(c);
  }
  out.push_back('"');
  return out;
}

std::string Mb(double bytes) { return absl::StrFormat("%.3f", bytes / kBytesPerMb); }

std::string Csv(const std::vector<ReportView>& views) {
  std::string out;
  for (const ReportView& view : views) {
    if (!out.empty()) out += "\n";
    absl::StrAppend(&out, view.csv_header, "\n");
    for (const StatsCells& c : view.rows) {
      std::vector<std::string> cells;
      if (view.in_bytes) {
        cells = {Mb(static_cast<double>(c.total)), absl::StrCat(c.instances), Mb(c.avg), Mb(c.med),
                 Mb(static_cast<double>(c.min)), Mb(static_cast<double>(c.max)), Mb(c.stddev)};
      } else {
        cells = {absl::StrFormat("%.1f", c.time_pct), absl::StrCat(c.total), absl::StrCat(c.instances),
                 absl::StrFormat("%.1f", c.avg), absl::StrFormat("%.1f", c.med), absl::StrCat(c.min),
                 absl::StrCat(c.max), absl::StrFormat("%.1f", c.stddev)};
      }
      for (const std::string& name : c.names) cells.push_back(CsvField(name));
      std::string line;
      for (const std::string& cell : cells) absl::StrAppend(&line, line.empty() ? "" : ",", cell);
      absl::StrAppend(&out, line, "\n");
    }
  }
  return out;
}

std::string Tables(const std::vector<ReportView>& views, const v1::StatsResponse& answer, int64_t limit) {
  const size_t shown = limit > 0 ? static_cast<size_t>(limit) : 30;
  std::ostringstream out;
  for (const ReportView& view : views) {
    out << view.title << " (" << view.name << "):\n";
    if (view.rows.empty()) {
      out << "  (none)\n\n";
      continue;
    }
    std::vector<std::string> headers = view.in_bytes
                                           ? std::vector<std::string>{">TOTAL (MB)", ">COUNT", ">AVG (MB)", ">MED (MB)",
                                                                      ">MIN (MB)", ">MAX (MB)", ">STDDEV (MB)"}
                                           : std::vector<std::string>{">TIME (%)", ">TOTAL",  ">COUNT", ">AVG",
                                                                      ">MED",      ">MIN",    ">MAX",   ">STDDEV"};
    if (view.rows.front().names.size() == 2) headers.push_back("STYLE");
    headers.push_back("NAME");
    TablePrinter table(headers);
    for (size_t i = 0; i < view.rows.size() && i < shown; ++i) {
      const StatsCells& c = view.rows[i];
      std::vector<std::string> cells;
      if (view.in_bytes) {
        cells = {Mb(static_cast<double>(c.total)), absl::StrCat(c.instances), Mb(c.avg), Mb(c.med),
                 Mb(static_cast<double>(c.min)), Mb(static_cast<double>(c.max)), Mb(c.stddev)};
      } else {
        cells = {absl::StrFormat("%.1f", c.time_pct), FormatNanos(c.total), absl::StrCat(c.instances),
                 FormatNanos(static_cast<int64_t>(c.avg)), FormatNanos(static_cast<int64_t>(c.med)),
                 FormatNanos(c.min), FormatNanos(c.max), FormatNanos(static_cast<int64_t>(c.stddev))};
      }
      for (const std::string& name : c.names) cells.push_back(Ellipsize(name, 100));
      table.AddRow(std::move(cells));
    }
    out << table.Render();
    if (view.rows.size() > shown) out << "  … " << view.rows.size() - shown << " more rows (--limit N, --json)\n";
    out << "\n";
  }
  if (answer.nvtx_open_ranges() > 0) {
    out << answer.nvtx_open_ranges() << " NVTX ranges were still open when the trace ended (not in nvtx_sum)\n";
  }
  return out.str();
}

// The answer for a file on this machine: analysed here, as `fleetprof analyze` does.
absl::StatusOr<v1::StatsResponse> LocalStats(const CliOptions& options, const std::string& path) {
  auto analysed = analysis::AnalyzeTraceFile(path, nullptr, options.trace_limits);
  if (!analysed.ok()) return analysed.status();
  return StatsAnswer(SummaryToProto(*analysed), options.report);
}

}  // namespace

int RunStats(const CliOptions& options) {
  if (options.args.size() != 1) return FailUsage("stats");
  if (!options.format.empty() && options.format != "csv") {
    return Fail(absl::StrCat("stats: unknown --format '", options.format, "' (want csv, or --json)"));
  }
  // The report names are checked here, before a file is read or the server called.
  v1::ProfileSummary no_rows;
  no_rows.mutable_stats();
  if (absl::StatusOr<v1::StatsResponse> checked = StatsAnswer(no_rows, options.report); !checked.ok()) {
    return Fail(std::string(checked.status().message()));
  }
  const std::string& what = options.args[0];
  v1::StatsResponse answer;
  if (std::filesystem::exists(what)) {
    absl::StatusOr<v1::StatsResponse> local = LocalStats(options, what);
    if (!local.ok()) return Fail(std::string(local.status().message()));
    answer = *std::move(local);
  } else {
    auto stub = v1::QueryService::NewStub(MakeChannel(options.server, options.security));
    grpc::ClientContext context;
    SetDeadline(&context, options);
    v1::StatsRequest request;
    request.set_profile_id(what);
    request.set_report(options.report);
    grpc::Status s = stub->GetStats(&context, request, &answer);
    if (!s.ok()) return FailRpc(s, options);
  }
  if (options.json) {
    std::cout << ProtoToJson(answer) << "\n";
  } else if (options.format == "csv") {
    std::cout << Csv(ViewsOf(answer));
  } else {
    std::cout << Tables(ViewsOf(answer), answer, options.limit);
  }
  return 0;
}

}  // namespace fleetprof::cli
