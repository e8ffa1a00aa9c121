#include "collectors/xprof_client.h"

#include "absl/synchronization/mutex.h"

#include <algorithm>
#include <chrono>
#include <climits>
#include <filesystem>
#include <fstream>
#include <memory>
#include <system_error>
#include <thread>
#include <vector>

#include <grpcpp/create_channel_posix.h>
#include <grpcpp/grpcpp.h>

#include "absl/status/status.h"
#include "common/system_time.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "spdlog/spdlog.h"
#include "tensorflow/profiler_service.grpc.pb.h"

namespace fleetprof {
namespace {

namespace fs = std::filesystem;

// How often a blocking call looks at `cancelled()`.
constexpr auto kCancelPollInterval = std::chrono::milliseconds(50);
// Backoff before retry k (k = 1, 2, ...) is kFirstBackoff * 2^(k-1), at most kMaxBackoff.
constexpr auto kFirstBackoff = std::chrono::milliseconds(500);
constexpr auto kMaxBackoff = std::chrono::milliseconds(5000);
// The reference client waits at least this long for Profile, however short the capture.
constexpr int64_t kMinDeadlineMs = 60'000;
// Terminate is best effort on the way out of a cancelled capture: don't hang on it.
constexpr auto kTerminateDeadline = std::chrono::seconds(2);
// The XSpace the reference client asks older servers for by tool name.
constexpr char kXplaneTool[] = "xplane.pb";
constexpr char kXplaneSuffix[] = ".xplane.pb";

absl::Status FromGrpc(const grpc::Status& status, std::string message) {
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()), message);
}

// Sleeps `duration` on `clock` in slices; returns false (early) when `cancelled()` turns true.
bool SleepUnlessCancelled(const Clock& clock, std::chrono::nanoseconds duration,
                          const std::function<bool()>& cancelled) {
  const int64_t until = clock.MonotonicNanos() + duration.count();
  while (clock.MonotonicNanos() < until) {
    if (cancelled && cancelled()) return false;
    SleepUntil(clock, std::min<int64_t>(clock.MonotonicNanos() + std::chrono::nanoseconds(kCancelPollInterval).count(),
                                        until));
  }
  return !(cancelled && cancelled());
}

// Writes `bytes` to `path` through `path.tmp` + rename, so a reader never sees half a trace.
absl::Status WriteFileAtomically(const std::string& path, const std::string& bytes) {
  std::error_code error;
  fs::create_directories(fs::path(path).parent_path(), error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot create folder for ", path, ": ", error.message()));
  }
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    out.close();
    if (!out) {
      fs::remove(tmp, error);
      return absl::InternalError(absl::StrCat("cannot write ", tmp));
    }
  }
  fs::rename(tmp, path, error);
  if (error) {
    return absl::InternalError(absl::StrCat("cannot rename ", tmp, " to ", path, ": ", error.message()));
  }
  return absl::OkStatus();
}

// Finds the trace an older server wrote itself: the expected name first, else any
// *.xplane.pb in the session folder (servers that name the file after their own hostname or
// `override_hostname`). Returns "" when there is none, PERMISSION_DENIED when the session
// folder is a link.
absl::StatusOr<std::string> FindServerWrittenTrace(const std::string& expected_path) {
  // The job writes this folder: a symlink (to the folder or a file) could make the agent,
  // as root, upload and then delete a file elsewhere. Links are never followed.
  std::error_code error;
  if (fs::is_symlink(fs::path(expected_path).parent_path(), error)) {
    return absl::PermissionDeniedError(absl::StrCat(fs::path(expected_path).parent_path().string(),
                                                    " is a symbolic link: a trace is never read through one"));
  }
  if (fs::is_regular_file(fs::symlink_status(expected_path, error))) return expected_path;
  std::vector<std::string> candidates;
  for (fs::directory_iterator it(fs::path(expected_path).parent_path(), error), end;
       !error && it != end; it.increment(error)) {
    const std::string name = it->path().filename().string();
    if (name.ends_with(kXplaneSuffix) && fs::is_regular_file(it->symlink_status(error))) {
      candidates.push_back(it->path().string());
    }
  }
  if (candidates.empty()) return "";
  std::sort(candidates.begin(), candidates.end());
  return candidates.front();
}

// One capture against one address: the request, the channel it is sent on, and the rules for
// retrying, cancelling and turning the response into a local file.
class XprofCapture {
 public:
  XprofCapture(XprofCaptureOptions options, const std::function<bool()>& cancelled)
      : options_(std::move(options)), cancelled_(cancelled) {}

  absl::StatusOr<std::string> Run();

 private:
  absl::Status Validate() const;
  tensorflow::ProfileRequest BuildRequest() const;
  std::chrono::milliseconds Deadline() const;
  // One Profile call that gives up when `cancelled_()` turns true.
  grpc::Status Dial();
  grpc::Status CallProfile(std::chrono::milliseconds deadline,
                           const tensorflow::ProfileRequest& request,
                           tensorflow::ProfileResponse* response, bool* was_cancelled);
  void SendTerminate();
  absl::Status DescribeFailure(const grpc::Status& status, int attempts) const;
  absl::StatusOr<std::string> SaveTrace(const tensorflow::ProfileResponse& response) const;

  XprofCaptureOptions options_;
  const std::function<bool()>& cancelled_;
  std::string trace_path_;   // <save_root>/<session_id>/<host>.xplane.pb: an answer's trace
  std::string server_path_;  // <repository_root>/<session_id>/<host>.xplane.pb: a server's file
  std::chrono::milliseconds last_deadline_{0};  // of the latest Profile call, for messages
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<tensorflow::ProfilerService::Stub> stub_;
};

absl::Status XprofCapture::Validate() const {
  if (options_.address.empty()) return absl::InvalidArgumentError("xprof capture: no address");
  if (options_.duration_ms <= 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("xprof capture of ", options_.address, ": duration_ms must be > 0"));
  }
  if (options_.repository_root.empty()) {
    return absl::InvalidArgumentError(
        absl::StrCat("xprof capture of ", options_.address, ": repository_root is required"));
  }
  if (options_.delay_ms < 0 || options_.start_timestamp_ns < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "xprof capture of ", options_.address, ": delay_ms and start_timestamp_ns must be >= 0"));
  }
  return absl::OkStatus();
}

tensorflow::ProfileRequest XprofCapture::BuildRequest() const {
  tensorflow::ProfileRequest request;
  // Servers read the length from opts.duration_ms; the top-level copy is for older ones.
  request.set_duration_ms(options_.duration_ms);
  request.add_tools(kXplaneTool);  // older servers return or save the XSpace by tool name
  request.set_repository_root(options_.repository_root);
  request.set_session_id(options_.session_id);
  request.set_host_name(options_.host_name);
  request.set_emit_xspace(options_.emit_xspace);

  tensorflow::ProfileOptions* opts = request.mutable_opts();
  opts->set_version(1);
  opts->set_host_tracer_level(options_.host_tracer_level);
  opts->set_device_tracer_level(options_.device_tracer_level);
  opts->set_python_tracer_level(options_.python_tracer_level);
  opts->set_duration_ms(options_.duration_ms);
  opts->set_start_timestamp_ns(options_.start_timestamp_ns);
  return request;
}

// max(60 s, 2 x duration) + the time until the shared start, as the reference client does.
std::chrono::milliseconds XprofCapture::Deadline() const {
  const int64_t until_start_ms = std::max<int64_t>(0, options_.start_timestamp_ns - options_.clock->Now()) / 1'000'000;
  return std::chrono::milliseconds(std::max(kMinDeadlineMs, 2 * options_.duration_ms) + until_start_ms);
}

absl::StatusOr<std::string> XprofCapture::Run() {
  if (absl::Status valid = Validate(); !valid.ok()) return valid;
  if (options_.session_id.empty()) options_.session_id = absl::StrCat("fleetprof_", options_.clock->Now() / 1'000'000);
  if (options_.host_name.empty()) options_.host_name = options_.address;
  if (options_.start_timestamp_ns == 0) {
    options_.start_timestamp_ns = options_.clock->Now() + options_.delay_ms * 1'000'000;
  }
  const std::string file = XprofTraceFileName(options_.host_name);
  trace_path_ = (fs::path(options_.save_root.empty() ? options_.repository_root : options_.save_root) /
                 options_.session_id / file).string();
  server_path_ = (fs::path(options_.repository_root) / options_.session_id / file).string();

  const tensorflow::ProfileRequest request = BuildRequest();
  const int max_attempts = std::max(1, options_.max_attempts);
  spdlog::info("xprof: capturing {} ms from {} (session {}, host {})", options_.duration_ms,
               options_.address, options_.session_id, options_.host_name);
  for (int attempt = 1;; ++attempt) {
    tensorflow::ProfileResponse response;
    bool was_cancelled = false;
    last_deadline_ = Deadline();
    grpc::Status status = Dial();
    if (status.ok()) status = CallProfile(last_deadline_, request, &response, &was_cancelled);
    if (was_cancelled) {
      SendTerminate();
      return absl::CancelledError(
          absl::StrCat("xprof capture from ", options_.address,
                       " cancelled (sent Terminate for session ", options_.session_id, ")"));
    }
    if (status.ok()) return SaveTrace(response);

    const bool retryable = status.error_code() == grpc::StatusCode::UNAVAILABLE ||
                           status.error_code() == grpc::StatusCode::ALREADY_EXISTS;
    if (!retryable || attempt >= max_attempts) return DescribeFailure(status, attempt);
    const auto backoff = std::min<std::chrono::nanoseconds>(kFirstBackoff * (1 << std::min(attempt - 1, 10)), kMaxBackoff);
    spdlog::warn("xprof: attempt {}/{} at {} failed ({}); retrying in {} ms", attempt, max_attempts,
                 options_.address, status.error_message(),
                 std::chrono::duration_cast<std::chrono::milliseconds>(backoff).count());
    if (!SleepUnlessCancelled(*options_.clock, backoff, cancelled_)) {
      return absl::CancelledError(
          absl::StrCat("xprof capture from ", options_.address, " cancelled while retrying"));
    }
  }
}

// A channel for the next attempt: a fresh socket through options_.connect (a channel made
// from a descriptor never reconnects), else one gRPC dials and redials itself.
grpc::Status XprofCapture::Dial() {
  grpc::ChannelArguments args;
  // Traces are hundreds of MB (gRPC's default is 4 MB), but never more than the agent allows.
  args.SetMaxReceiveMessageSize(static_cast<int>(std::clamp<int64_t>(options_.max_trace_bytes, 1, INT_MAX)));
  if (options_.connect) {
    absl::StatusOr<int> fd = options_.connect();
    if (!fd.ok()) {
      // Abseil's codes are gRPC's numbers: UNAVAILABLE is retried, a job gone (NOT_FOUND) is not.
      return grpc::Status(static_cast<grpc::StatusCode>(fd.status().code()), std::string(fd.status().message()));
    }
    channel_ = grpc::CreateCustomInsecureChannelFromFd(options_.address, *fd, args);
  } else if (channel_ == nullptr) {
    // Reconnect soon enough that a retry after UNAVAILABLE really dials again.
    args.SetInt(GRPC_ARG_INITIAL_RECONNECT_BACKOFF_MS, 200);
    args.SetInt(GRPC_ARG_MIN_RECONNECT_BACKOFF_MS, 200);
    args.SetInt(GRPC_ARG_MAX_RECONNECT_BACKOFF_MS, 2000);
    channel_ = grpc::CreateCustomChannel(options_.address, grpc::InsecureChannelCredentials(), args);
  }
  stub_ = tensorflow::ProfilerService::NewStub(channel_);
  return grpc::Status::OK;
}

grpc::Status XprofCapture::CallProfile(std::chrono::milliseconds deadline,
                                       const tensorflow::ProfileRequest& request,
                                       tensorflow::ProfileResponse* response, bool* was_cancelled) {
  grpc::ClientContext context;
  context.set_deadline(DeadlineAfter(*RealClock(), deadline));  // gRPC waits on real time
  absl::Mutex mutex;
  bool finished = false;  // both under `mutex`
  grpc::Status result;
  stub_->async()->Profile(&context, &request, response, [&](grpc::Status status) {
    absl::MutexLock lock(&mutex);
    result = std::move(status);
    finished = true;
  });

  absl::MutexLock lock(&mutex);
  const auto done = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mutex) { return finished; };
  while (!mutex.AwaitWithTimeout(absl::Condition(&done), absl::FromChrono(kCancelPollInterval))) {
    if (!*was_cancelled && cancelled_ && cancelled_()) {
      *was_cancelled = true;
      context.TryCancel();  // the callback still runs (CANCELLED); wait for it below
    }
  }
  return result;
}

// Tells the job to stop the session now rather than profile for the rest of the duration.
void XprofCapture::SendTerminate() {
  grpc::ClientContext context;
  context.set_deadline(DeadlineAfter(*RealClock(), kTerminateDeadline));
  tensorflow::TerminateRequest request;
  request.set_session_id(options_.session_id);
  tensorflow::TerminateResponse response;
  const grpc::Status status = stub_->Terminate(&context, request, &response);
  if (!status.ok()) {
    spdlog::warn("xprof: Terminate of session {} at {} failed: {}", options_.session_id,
                 options_.address, status.error_message());
  }
}

absl::Status XprofCapture::DescribeFailure(const grpc::Status& status, int attempts) const {
  const std::string& address = options_.address;
  const std::string detail = status.error_message();
  switch (status.error_code()) {
    case grpc::StatusCode::UNAVAILABLE:
      return FromGrpc(status, absl::StrCat("profiler server at ", address, " unreachable after ",
                                           attempts, " attempt(s): ", detail));
    case grpc::StatusCode::ALREADY_EXISTS:
      return FromGrpc(status, absl::StrCat("profiler server at ", address,
                                           " is busy with another capture (one at a time) after ",
                                           attempts, " attempt(s): ", detail));
    case grpc::StatusCode::DEADLINE_EXCEEDED:
      return FromGrpc(status, absl::StrCat("profiler server at ", address,
                                           " did not finish the capture within ", last_deadline_.count(),
                                           " ms: ", detail));
    case grpc::StatusCode::UNIMPLEMENTED:
      return FromGrpc(status, absl::StrCat("server at ", address,
                                           " does not serve tensorflow.ProfilerService.Profile "
                                           "(is it the job's profiler port?): ", detail));
    case grpc::StatusCode::RESOURCE_EXHAUSTED:
      return FromGrpc(status, absl::StrCat("profiler server at ", address,
                                           " returned a trace larger than this agent takes (--max_trace_mb=",
                                           options_.max_trace_bytes >> 20, "): ", detail));
    default:
      return FromGrpc(status, absl::StrCat("profiler server at ", address, " failed the capture (",
                                           static_cast<int>(status.error_code()), "): ", detail));
  }
}

absl::StatusOr<std::string> XprofCapture::SaveTrace(const tensorflow::ProfileResponse& response) const {
  // Recent servers: the serialized XSpace in field 8. Older ones that honoured tools=["xplane.pb"]
  // put it in tool_data instead.
  const std::string* xspace = response.xspace().empty() ? nullptr : &response.xspace();
  for (const tensorflow::ProfileToolData& tool : response.tool_data()) {
    if (xspace == nullptr && tool.name().ends_with(kXplaneTool) && !tool.data().empty()) {
      xspace = &tool.data();
    }
  }
  if (xspace != nullptr) {
    if (absl::Status written = WriteFileAtomically(trace_path_, *xspace); !written.ok()) {
      return absl::InternalError(absl::StrCat("trace from profiler server at ", options_.address,
                                              " not saved: ", written.message()));
    }
    spdlog::info("xprof: {} bytes from {} written to {}", xspace->size(), options_.address, trace_path_);
    return trace_path_;
  }
  if (response.empty_trace()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "profiler server at ", options_.address,
        " returned no trace (empty_trace) — was the job running device work during the capture "
        "window?"));
  }
  // Older servers ignore emit_xspace and write the file themselves, on their filesystem; recent
  // ones do when asked to (emit_xspace false).
  absl::StatusOr<std::string> located = FindServerWrittenTrace(server_path_);
  if (!located.ok()) {
    return absl::PermissionDeniedError(absl::StrCat("profiler server at ", options_.address, ": ",
                                                    located.status().message()));
  }
  const std::string& found = *located;
  if (found.empty()) {
    return absl::NotFoundError(absl::StrCat(
        "profiler server at ", options_.address, " returned no trace: no XSpace in the response and no ",
        "*.xplane.pb under ", fs::path(server_path_).parent_path().string(),
        " (an older server writes it there on its own filesystem — does the job share ",
        options_.repository_root, " with this agent?)"));
  }
  spdlog::info("xprof: {} wrote its trace to {}", options_.address, found);
  return found;
}

}  // namespace

std::string XprofTraceFileName(const std::string& host_name) {
  return absl::StrCat(absl::StrReplaceAll(host_name, {{":", "_"}}), kXplaneSuffix);
}

absl::StatusOr<std::string> CaptureXprof(const XprofCaptureOptions& options,
                                         const std::function<bool()>& cancelled) {
  return XprofCapture(options, cancelled).Run();
}

}  // namespace fleetprof
