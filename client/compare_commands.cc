// `fleetprof diff`, `job-ops`, `job-series` and `diagnose`: views across profiles and the
// diagnosis rules, answered by the server (QueryService).

#include <iostream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli.h"
#include "client/commands.h"
#include "client/rpc_helpers.h"
#include "client/table_printer.h"
#include "fleetprof/v1/query.grpc.pb.h"
#include "grpcpp/grpcpp.h"
#include "proto/proto_json.h"
#include "rpc/upload_client.h"

namespace fleetprof::cli {
namespace {

std::unique_ptr<v1::QueryService::Stub> Stub(const CliOptions& options) {
  return v1::QueryService::NewStub(MakeChannel(options.server, options.security));
}

int64_t RowTotal(const v1::DiffValue& v) { return v.has_op() ? v.op().total_ns() : v.kernel().total_ns(); }

std::string DiffTable(const v1::DiffResponse& diff, int64_t limit) {
  std::vector<std::string> headers = {"name", "status"};
  for (int i = 0; i < diff.profiles_size(); ++i) {
    headers.push_back(absl::StrCat(">", i == 0 ? "base " : "", diff.by() == "scope" ? "self " : "total ",
                                   Ellipsize(diff.profiles(i), 12)));
  }
  headers.push_back(">change");
  TablePrinter table(headers);
  const int64_t rows = limit > 0 ? limit : 30;
  for (int r = 0; r < diff.rows_size() && r < rows; ++r) {
    const v1::DiffRow& row = diff.rows(r);
    std::vector<std::string> cells = {Ellipsize(row.name(), 60), row.status()};
    for (const v1::DiffValue& v : row.values()) {
      if (v.stat_case() == v1::DiffValue::STAT_NOT_SET) {
        cells.push_back("-");
      } else {
        cells.push_back(FormatNanos(diff.by() == "scope" ? v.op().self_ns() : RowTotal(v)));
      }
    }
    const auto& first = row.values(0);
    const auto& last = row.values(row.values_size() - 1);
    const int64_t a = first.stat_case() == v1::DiffValue::STAT_NOT_SET ? 0 : RowTotal(first);
    const int64_t b = last.stat_case() == v1::DiffValue::STAT_NOT_SET ? 0 : RowTotal(last);
    cells.push_back(a == 0 ? "-" : absl::StrFormat("%+.1f%%", 100.0 * static_cast<double>(b - a) / a));
    table.AddRow(std::move(cells));
  }
  std::string out = table.Render();
  if (diff.rows_size() > rows) absl::StrAppend(&out, "(", diff.rows_size() - rows, " more rows; --limit N)\n");
  return out;
}

bool FillJobRequest(const CliOptions& options, const std::string& job, v1::JobRequest* request, std::string* error) {
  request->set_job(job);
  std::map<std::string, std::string> labels;
  if (!ParseLabels(options.labels, &labels, error)) return false;
  for (const auto& [k, v] : labels) (*request->mutable_labels())[k] = v;
  request->set_since_ns(options.since_ns);
  request->set_until_ns(options.until_ns);
  return true;
}

}  // namespace

int RunDiff(const CliOptions& options) {
  if (options.args.size() < 2) {
    return FailUsage("diff");
  }
  v1::DiffRequest request;
  for (const std::string& id : options.args) request.add_profile_ids(id);
  request.set_by(options.by);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::DiffResponse response;
  if (grpc::Status s = Stub(options)->Diff(&context, request, &response); !s.ok()) return FailRpc(s, options);
  std::cout << (options.json ? ProtoToJson(response) + "\n" : DiffTable(response, options.limit));
  return 0;
}

int RunJobOps(const CliOptions& options) {
  if (options.args.size() != 1) {
    return FailUsage("job-ops");
  }
  v1::JobRequest request;
  if (std::string error; !FillJobRequest(options, options.args[0], &request, &error)) return Fail(error);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::JobOpsResponse response;
  if (grpc::Status s = Stub(options)->JobOps(&context, request, &response); !s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::cout << ProtoToJson(response) << "\n";
    return 0;
  }
  std::cout << response.profiles() << " profiles of job " << options.args[0] << "\n\nOps\n"
            << OpsTable(response.ops(), options.limit) << "\nKernels\n"
            << KernelsTable(response.kernels(), options.limit);
  return 0;
}

int RunJobSeries(const CliOptions& options) {
  if (options.args.size() != 1) {
    return FailUsage("job-series");
  }
  v1::JobRequest request;
  if (std::string error; !FillJobRequest(options, options.args[0], &request, &error)) return Fail(error);
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::JobSeriesResponse response;
  if (grpc::Status s = Stub(options)->JobSeries(&context, request, &response); !s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::cout << ProtoToJson(response) << "\n";
    return 0;
  }
  TablePrinter table({"profile", "node", "rank", ">steps", ">median step", ">busy", ">peak memory"});
  for (const v1::JobProfilePoint& p : response.points()) {
    table.AddRow({p.profile_id(), p.node(), p.rank().empty() ? "-" : p.rank(), absl::StrCat(p.steps()),
                  p.steps() > 0 ? FormatNanos(p.median_step_ns()) : "-",
                  p.has_busy_ratio() ? absl::StrFormat("%.1f%%", 100 * p.busy_ratio()) : "-",
                  p.peak_memory_bytes() > 0 ? absl::StrCat(p.peak_memory_bytes() >> 20, " MiB") : "-"});
  }
  std::cout << table.Render();
  return 0;
}

int RunDiagnose(const CliOptions& options) {
  v1::DiagnoseRequest request;
  if (!options.job.empty()) {
    if (!options.args.empty()) return Fail("diagnose takes a PROFILE or --job J, not both");
    request.set_job(options.job);
    std::map<std::string, std::string> labels;
    if (std::string error; !ParseLabels(options.labels, &labels, &error)) return Fail(error);
    for (const auto& [k, v] : labels) (*request.mutable_labels())[k] = v;
    request.set_since_ns(options.since_ns);
    request.set_until_ns(options.until_ns);
  } else if (options.args.size() == 1) {
    request.set_profile_id(options.args[0]);
  } else {
    return FailUsage("diagnose");
  }
  for (const std::string& t : options.thresholds) {
    const size_t eq = t.find('=');
    double value = 0;
    if (eq == 0 || eq == std::string::npos || !absl::SimpleAtod(t.substr(eq + 1), &value)) {
      return Fail("--threshold wants RULE=NUMBER, got '" + t + "'");
    }
    (*request.mutable_thresholds())[t.substr(0, eq)] = value;
  }
  grpc::ClientContext context;
  SetDeadline(&context, options);
  v1::DiagnoseResponse response;
  if (grpc::Status s = Stub(options)->Diagnose(&context, request, &response); !s.ok()) return FailRpc(s, options);
  if (options.json) {
    std::cout << ProtoToJson(response) << "\n";
    return 0;
  }
  if (response.findings().empty()) std::cout << "no findings (" << response.rules_size() << " rules checked)\n";
  for (const v1::Finding& f : response.findings()) {
    std::cout << f.severity() << "  " << f.rule() << ": " << f.summary() << "\n    " << f.suggestion() << "\n";
    for (const v1::Evidence& e : f.evidence()) {
      std::cout << "    - " << e.track() << " [" << e.start_ns() << ", " << e.end_ns() << ")"
                << (e.note().empty() ? "" : "  " + e.note()) << "\n";
    }
  }
  if (!response.note().empty()) std::cout << "note: " << response.note() << "\n";
  return 0;
}

}  // namespace fleetprof::cli
