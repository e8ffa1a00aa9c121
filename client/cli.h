#pragma once
// The fleetprof CLI's commands. Each returns the process exit status and prints errors as
// one line on stderr; with --json, stdout carries exactly one JSON object.

#include <map>
#include <string>
#include <vector>

#include "analysis/trace_limits.h"
#include "common/clock.h"
#include "fleetprof/v1/profile.pb.h"
#include "google/protobuf/repeated_ptr_field.h"
#include "rpc/channel.h"

namespace fleetprof::cli {

struct CliOptions {
  std::string server = "127.0.0.1:7070";
  ClientSecurity security;  // token and TLS files (--token_file, --tls_*)
  bool json = false;
  std::string job;
  std::string node;
  std::string format;
  std::string upload_id;
  std::vector<std::string> labels;  // "key=value"
  int64_t limit = 0;                // rows in tables; 0 = default (30) for tables, all for JSON
  int64_t timeout_s = 30;
  // capture
  std::string target;
  int64_t duration_ms = 0;
  int64_t iterations = 0;
  int64_t start_delay_ms = 0;
  bool wait = false;
  int64_t capture_timeout_ms = 0;
  bool record_shapes = false;
  bool profile_memory = false;
  bool with_stack = false;
  std::string output;  // export: -o FILE
  // trace (and export --format chrome_json): the window
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  int64_t resolution_ns = 0;
  std::vector<std::string> tracks;
  std::string search;
  bool args_wanted = false;
  // diff, job views, diagnose
  std::string by;
  int64_t since_ns = 0;
  int64_t until_ns = 0;
  std::vector<std::string> thresholds;  // "rule=value"
  std::string every;                     // schedule: "30m"
  std::string when;                      // trigger add: "device_utilization < 30% for 5s"
  std::string cooldown;                  // trigger add: "10m"
  std::string since;                     // fleet top: the window, "24h" (default), "7d"
  std::string max_overhead;              // sampling set: "1%"
  int64_t max_concurrent = 0;            // sampling set
  std::string report;                    // stats: "cuda_gpu_kern_sum,nvtx_sum"
  // job-trace, collectives: the selection
  std::string capture_id;
  std::vector<std::string> profiles;
  analysis::TraceLimits trace_limits;    // analyze: --max_trace_mb, --max_trace_events, …
  std::vector<std::string> args;  // positional arguments after the command word
};

int RunUpload(const CliOptions& options);
int RunProfiles(const CliOptions& options);
int RunOps(const CliOptions& options);
int RunKernels(const CliOptions& options);
int RunBreakdown(const CliOptions& options);
int RunAgents(const CliOptions& options);
int RunAnalyze(const CliOptions& options);
int RunStats(const CliOptions& options);
// Waits (--wait) on `clock`: commands.cc passes RealClock().
int RunCapture(const CliOptions& options, Clock* clock);
int RunCaptures(const CliOptions& options);
int RunProfile(const CliOptions& options);
int RunExport(const CliOptions& options);
int RunTrace(const CliOptions& options);
int RunDelete(const CliOptions& options);
int RunDiff(const CliOptions& options);
int RunJobOps(const CliOptions& options);
int RunJobSeries(const CliOptions& options);
int RunJobTrace(const CliOptions& options);
int RunCollectives(const CliOptions& options);
int RunDiagnose(const CliOptions& options);
int RunSchedule(const CliOptions& options);
int RunSchedules(const CliOptions& options);
int RunUnschedule(const CliOptions& options);
int RunTrigger(const CliOptions& options);
int RunTriggers(const CliOptions& options);
int RunSampling(const CliOptions& options);
int RunFleet(const CliOptions& options);

// Prints "fleetprof: <message>" to stderr and returns 1.
int Fail(const std::string& message);
// Splits "k=v" labels; false (with the message set) on a malformed one.
bool ParseLabels(const std::vector<std::string>& labels, std::map<std::string, std::string>* out,
                 std::string* error);

// Human tables of a summary's sections (the stored form, so local and server answers print
// alike); `limit` rows at most (0 = 30).
template <typename T>
using Rows = google::protobuf::RepeatedPtrField<T>;
std::string DevicesTable(const Rows<v1::DeviceBreakdown>& devices);
std::string KernelsTable(const Rows<v1::KernelStat>& kernels, int64_t limit);
std::string OpsTable(const Rows<v1::OpStat>& ops, int64_t limit);
std::string XlaOpsTable(const Rows<v1::XlaOpStat>& ops, int64_t limit);
// The tables of every non-empty section of `summary`, under their headings.
std::string SummaryTables(const v1::ProfileSummary& summary, int64_t limit);

}  // namespace fleetprof::cli
