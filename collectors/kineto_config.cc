#include "collectors/kineto_config.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace fleetprof {
namespace {

// `dyno gputrace` traces 500 ms when given no duration.
constexpr int64_t kDefaultDurationMs = 500;
constexpr size_t kMaxIdLength = 128;

std::string WithoutControlCharacters(const std::string& value) {
  std::string out = value;
  std::erase_if(out, [](char c) { return static_cast<unsigned char>(c) < 0x20 || c == 0x7f; });
  return out;
}

const char* Bool(bool value) { return value ? "true" : "false"; }

bool IsKeyChar(char c) { return absl::ascii_isupper(static_cast<unsigned char>(c)) || absl::ascii_isdigit(c) || c == '_'; }

absl::string_view TrimBlanks(absl::string_view text) {
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  return text;
}

// A value's reader: stores into the request or says what is wrong with the text.
using ValueReader = std::function<absl::Status(absl::string_view value, KinetoTraceRequest& request)>;

ValueReader Number(int64_t KinetoTraceRequest::*field, int64_t low, int64_t high) {
  return [=](absl::string_view value, KinetoTraceRequest& request) -> absl::Status {
    int64_t number = 0;
    const bool digits = !value.empty() && std::all_of(value.begin(), value.end(), [](char c) { return absl::ascii_isdigit(c); });
    if (!digits || !absl::SimpleAtoi(value, &number) || number < low || number > high) {
      return absl::InvalidArgumentError(absl::StrCat("wants a whole number in ", low, "..", high));
    }
    request.*field = number;
    return absl::OkStatus();
  };
}

ValueReader Flag(bool KinetoTraceRequest::*field) {
  return [=](absl::string_view value, KinetoTraceRequest& request) -> absl::Status {
    const std::string lower = absl::AsciiStrToLower(std::string(value));
    if (lower != "true" && lower != "false") return absl::InvalidArgumentError("wants true or false");
    request.*field = lower == "true";
    return absl::OkStatus();
  };
}

ValueReader Text(std::string KinetoTraceRequest::*field, size_t max_length) {
  return [=](absl::string_view value, KinetoTraceRequest& request) -> absl::Status {
    if (value.empty() || value.size() > max_length) {
      return absl::InvalidArgumentError(absl::StrCat("wants 1..", max_length, " characters"));
    }
    request.*field = std::string(value);
    return absl::OkStatus();
  };
}

// The keys of docs/protocols.md (PyTorch on-demand tracing), the only ones a job is ever handed.
const std::map<absl::string_view, ValueReader>& Readers() {
  static const auto* readers = new std::map<absl::string_view, ValueReader>{
      {"ACTIVITIES_LOG_FILE", Text(&KinetoTraceRequest::log_file, 4096)},
      {"ACTIVITIES_DURATION_MSECS", Number(&KinetoTraceRequest::duration_ms, 1, 3'600'000)},
      {"ACTIVITIES_ITERATIONS", Number(&KinetoTraceRequest::iterations, 1, 1'000'000)},
      {"PROFILE_START_TIME", Number(&KinetoTraceRequest::start_time_unix_ms, 0, 32'503'680'000'000)},
      {"PROFILE_START_ITERATION", Number(&KinetoTraceRequest::start_iteration, 0, 1'000'000'000'000)},
      {"PROFILE_START_ITERATION_ROUNDUP", Number(&KinetoTraceRequest::iteration_roundup, 1, 1'000'000'000)},
      {"ACTIVITIES_WARMUP_PERIOD_SECS", Number(&KinetoTraceRequest::warmup_secs, 0, 3600)},
      {"PROFILE_REPORT_INPUT_SHAPES", Flag(&KinetoTraceRequest::record_shapes)},
      {"PROFILE_PROFILE_MEMORY", Flag(&KinetoTraceRequest::profile_memory)},
      {"PROFILE_WITH_STACK", Flag(&KinetoTraceRequest::with_stack)},
      {"PROFILE_WITH_FLOPS", Flag(&KinetoTraceRequest::with_flops)},
      {"PROFILE_WITH_MODULES", Flag(&KinetoTraceRequest::with_modules)},
      // What `dyno gputrace --profile-memory` adds to PROFILE_PROFILE_MEMORY.
      {"PROFILE_MEMORY", Flag(&KinetoTraceRequest::memory_snapshot)},
      {"PROFILE_MEMORY_DURATION_MSECS", Number(&KinetoTraceRequest::memory_duration_ms, 1, 3'600'000)},
      {"REQUEST_TRACE_ID", Text(&KinetoTraceRequest::trace_id, kMaxIdLength)},
      {"REQUEST_GROUP_TRACE_ID", Text(&KinetoTraceRequest::group_trace_id, kMaxIdLength)},
  };
  return *readers;
}

absl::Status LineError(size_t line_number, absl::string_view why) {
  return absl::InvalidArgumentError(absl::StrCat("config line ", line_number, ": ", why));
}

}  // namespace

std::string BuildKinetoConfig(const KinetoTraceRequest& request) {
  std::string config;
  if (!request.log_file.empty()) {
    absl::StrAppend(&config, "ACTIVITIES_LOG_FILE=", WithoutControlCharacters(request.log_file), "\n");
  }
  // Like `dyno gputrace`: a start time goes with a duration; iteration mode starts at an
  // iteration boundary instead (kineto rejects a config asking for both).
  if (request.iterations > 0) {
    absl::StrAppend(&config, "PROFILE_START_ITERATION=", std::max<int64_t>(0, request.start_iteration), "\n",
                    "PROFILE_START_ITERATION_ROUNDUP=", std::max<int64_t>(1, request.iteration_roundup), "\n",
                    "ACTIVITIES_ITERATIONS=", request.iterations, "\n");
  } else {
    const int64_t duration = request.duration_ms > 0 ? request.duration_ms : kDefaultDurationMs;
    absl::StrAppend(&config, "PROFILE_START_TIME=", std::max<int64_t>(0, request.start_time_unix_ms), "\n",
                    "ACTIVITIES_DURATION_MSECS=", duration, "\n");
  }
  if (request.warmup_secs >= 0) absl::StrAppend(&config, "ACTIVITIES_WARMUP_PERIOD_SECS=", request.warmup_secs, "\n");
  absl::StrAppend(&config, "PROFILE_REPORT_INPUT_SHAPES=", Bool(request.record_shapes), "\n",
                  "PROFILE_PROFILE_MEMORY=", Bool(request.profile_memory), "\n",
                  "PROFILE_WITH_STACK=", Bool(request.with_stack), "\n",
                  "PROFILE_WITH_FLOPS=", Bool(request.with_flops), "\n",
                  "PROFILE_WITH_MODULES=", Bool(request.with_modules), "\n");
  if (request.memory_snapshot) absl::StrAppend(&config, "PROFILE_MEMORY=true\n");
  if (request.memory_duration_ms > 0) {
    absl::StrAppend(&config, "PROFILE_MEMORY_DURATION_MSECS=", request.memory_duration_ms, "\n");
  }
  if (!request.trace_id.empty()) {
    absl::StrAppend(&config, "REQUEST_TRACE_ID=", WithoutControlCharacters(request.trace_id), "\n");
  }
  if (!request.group_trace_id.empty()) {
    absl::StrAppend(&config, "REQUEST_GROUP_TRACE_ID=", WithoutControlCharacters(request.group_trace_id), "\n");
  }
  return config;
}

absl::StatusOr<KinetoTraceRequest> ParseKinetoConfig(std::string_view whole) {
  const absl::string_view text(whole.data(), whole.size());
  KinetoTraceRequest request;
  std::set<absl::string_view> seen;
  size_t line_number = 0;
  for (absl::string_view raw : absl::StrSplit(text, '\n')) {
    ++line_number;
    for (char c : raw) {
      const auto byte = static_cast<unsigned char>(c);
      if ((byte < 0x20 && c != '\t') || byte == 0x7f) {
        return LineError(line_number, absl::StrCat("holds the control character \\x", absl::Hex(byte, absl::kZeroPad2),
                                                   " (libkineto would read this line differently)"));
      }
      if (byte >= 0x80) return LineError(line_number, "holds a byte outside ASCII");
    }
    const absl::string_view line = TrimBlanks(raw);
    if (line.empty() || line.front() == '#') continue;
    if (line.find('#') != absl::string_view::npos) return LineError(line_number, "has '#' after text (comments go on lines of their own)");
    const size_t eq = line.find('=');
    if (eq == absl::string_view::npos) return LineError(line_number, "is not KEY=VALUE");
    const absl::string_view key = TrimBlanks(line.substr(0, eq));
    const absl::string_view value = TrimBlanks(line.substr(eq + 1));
    if (value.find('=') != absl::string_view::npos) return LineError(line_number, "has a second '='");
    if (key.empty() || !std::all_of(key.begin(), key.end(), IsKeyChar)) {
      return LineError(line_number, absl::StrCat("key '", absl::CHexEscape(key), "' is not A-Z 0-9 _"));
    }
    if (value.find_first_of(" \t") != absl::string_view::npos) return LineError(line_number, "value holds a space");
    const auto reader = Readers().find(key);
    if (reader == Readers().end()) {
      return LineError(line_number, absl::StrCat("unknown key ", key, " (docs/protocols.md, PyTorch on-demand tracing, lists the accepted ones)"));
    }
    if (!seen.insert(reader->first).second) return LineError(line_number, absl::StrCat(key, " is given twice"));
    if (absl::Status s = reader->second(value, request); !s.ok()) {
      return LineError(line_number, absl::StrCat(key, " ", s.message(), ", not '", value, "'"));
    }
  }
  const bool iteration_mode = seen.count("ACTIVITIES_ITERATIONS") > 0;
  if (iteration_mode && (seen.count("ACTIVITIES_DURATION_MSECS") > 0 || seen.count("PROFILE_START_TIME") > 0)) {
    return absl::InvalidArgumentError(
        "the config asks for ACTIVITIES_ITERATIONS and a duration or start time: choose one (libkineto refuses both)");
  }
  if (!iteration_mode && (seen.count("PROFILE_START_ITERATION") > 0 || seen.count("PROFILE_START_ITERATION_ROUNDUP") > 0)) {
    return absl::InvalidArgumentError("PROFILE_START_ITERATION and its ROUNDUP need ACTIVITIES_ITERATIONS");
  }
  return request;
}

std::string KinetoTracePath(const std::string& log_file, int32_t pid) {
  std::string path = log_file;
  for (const char* suffix : {".pt.trace.json", ".json"}) {
    if (size_t at = path.find(suffix); at != std::string::npos) {
      path.insert(at, absl::StrCat("_", pid));
      return path;
    }
  }
  return path;
}

}  // namespace fleetprof
