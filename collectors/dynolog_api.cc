#include "collectors/dynolog_api.h"

#include <netdb.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "auth/token_hash.h"
#include "collectors/kineto_config.h"
#include "collectors/kineto_endpoint.h"
#include "common/safe_paths.h"
#include "simdjson.h"
#include "spdlog/spdlog.h"

namespace fleetprof {
namespace {

using SteadyClock = std::chrono::steady_clock;

// `dyno gputrace` sends a limit of 3 by default; a request without one gets the same.
constexpr int kDefaultProcessLimit = 3;

std::string JsonString(std::string_view text) {
  std::string out = "\"";
  for (char c : text) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          out += absl::StrFormat("\\u%04x", static_cast<unsigned char>(c));
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

std::string ErrorReply(std::string_view message) {
  return absl::StrCat("{\"error\":", JsonString(message), "}");
}

std::string TriggerReply(const TriggerResult& result) {
  return absl::StrCat("{\"processesMatched\":[", absl::StrJoin(result.matched, ","),
                      "],\"activityProfilersTriggered\":[", absl::StrJoin(result.triggered, ","),
                      "],\"eventProfilersTriggered\":[],\"activityProfilersBusy\":", result.busy,
                      ",\"eventProfilersBusy\":0}");
}

// Waits until `fd` is ready for `events`, the deadline passes, or the server is stopping.
bool WaitReady(int fd, short events, int wake_fd, SteadyClock::time_point deadline) {
  while (true) {
    const auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - SteadyClock::now());
    if (left.count() <= 0) return false;
    pollfd fds[2] = {{fd, events, 0}, {wake_fd, POLLIN, 0}};
    const int rc = ::poll(fds, 2, static_cast<int>(left.count()));
    if (rc < 0 && errno == EINTR) continue;
    if (rc <= 0 || (fds[1].revents & POLLIN)) return false;
    return true;  // readable, writable, or an error that the next read/write reports
  }
}

bool ReadFull(int fd, char* data, size_t size, int wake_fd, SteadyClock::time_point deadline) {
  while (size > 0) {
    if (!WaitReady(fd, POLLIN, wake_fd, deadline)) return false;
    const ssize_t n = ::recv(fd, data, size, MSG_DONTWAIT);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool WriteFull(int fd, const char* data, size_t size, int wake_fd,
               SteadyClock::time_point deadline) {
  while (size > 0) {
    if (!WaitReady(fd, POLLOUT, wake_fd, deadline)) return false;
    const ssize_t n = ::send(fd, data, size, MSG_DONTWAIT | MSG_NOSIGNAL);
    if (n < 0 && (errno == EINTR || errno == EAGAIN)) continue;
    if (n <= 0) return false;
    data += n;
    size -= static_cast<size_t>(n);
  }
  return true;
}

bool SendFramed(int fd, const std::string& reply, int wake_fd, SteadyClock::time_point deadline) {
  const int32_t length = static_cast<int32_t>(reply.size());
  return WriteFull(fd, reinterpret_cast<const char*>(&length), sizeof(length), wake_fd,
                   deadline) &&
         WriteFull(fd, reply.data(), reply.size(), wake_fd, deadline);
}

// Splits "host:port" or "[v6]:port".
bool SplitHostPort(const std::string& address, std::string* host, std::string* port) {
  const size_t colon = address.rfind(':');
  if (colon == std::string::npos || colon + 1 == address.size()) return false;
  *host = address.substr(0, colon);
  *port = address.substr(colon + 1);
  if (host->size() >= 2 && host->front() == '[' && host->back() == ']') {
    *host = host->substr(1, host->size() - 2);
  }
  return !host->empty();
}

}  // namespace

DynologApiServer::DynologApiServer(KinetoEndpoint& endpoint, Options options)
    : endpoint_(endpoint), options_(std::move(options)) {}

DynologApiServer::~DynologApiServer() { Stop(); }

absl::Status DynologApiServer::Start() {
  if (listen_fd_ >= 0) return absl::FailedPreconditionError("dynolog API already started");
  const std::string& address = options_.listen_address;
  std::string host, port;
  if (!SplitHostPort(address, &host, &port)) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynolog API address \"", address, "\" is not host:port"));
  }
  addrinfo hints{};
  hints.ai_family = AF_UNSPEC;
  hints.ai_socktype = SOCK_STREAM;
  hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
  addrinfo* found = nullptr;
  if (int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("dynolog API address ", address, ": ", ::gai_strerror(rc)));
  }
  std::string last_error = "no usable address";
  for (addrinfo* ai = found; ai != nullptr && listen_fd_ < 0; ai = ai->ai_next) {
    int fd = ::socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
    if (fd < 0) continue;
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (::bind(fd, ai->ai_addr, ai->ai_addrlen) == 0 && ::listen(fd, 16) == 0) {
      listen_fd_ = fd;
    } else {
      last_error = std::strerror(errno);
      ::close(fd);
    }
  }
  ::freeaddrinfo(found);
  if (listen_fd_ < 0) {
    return absl::UnavailableError(
        absl::StrCat("dynolog API cannot listen on ", address, ": ", last_error));
  }
  sockaddr_storage bound{};
  socklen_t bound_len = sizeof(bound);
  ::getsockname(listen_fd_, reinterpret_cast<sockaddr*>(&bound), &bound_len);
  port_ = ntohs(bound.ss_family == AF_INET6 ? reinterpret_cast<sockaddr_in6*>(&bound)->sin6_port
                                            : reinterpret_cast<sockaddr_in*>(&bound)->sin_port);
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  spdlog::info("dynolog-compatible API listening on {} (port {})", address, port_);
  thread_ = std::thread([this] { AcceptLoop(); });
  return absl::OkStatus();
}

void DynologApiServer::Stop() {
  if (thread_.joinable()) {
    const uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof(one)) < 0) spdlog::warn("waking the dynolog API failed");
    thread_.join();
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  listen_fd_ = wake_fd_ = -1;
}

void DynologApiServer::AcceptLoop() {
  while (true) {
    pollfd fds[2] = {{listen_fd_, POLLIN, 0}, {wake_fd_, POLLIN, 0}};
    const int rc = ::poll(fds, 2, -1);
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) {
      spdlog::error("dynolog API poll(): {}", std::strerror(errno));
      return;
    }
    if (fds[1].revents & POLLIN) return;
    const int fd = ::accept4(listen_fd_, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd < 0) {
      // Out of descriptors and the like: back off instead of spinning on the listener.
      if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
        spdlog::warn("dynolog API accept(): {}", std::strerror(errno));
        ::poll(nullptr, 0, 100);
      }
      continue;
    }
    ServeConnection(fd);
    ::close(fd);
  }
}

void DynologApiServer::ServeConnection(int fd) {
  const auto deadline = SteadyClock::now() + options_.request_timeout;
  int32_t length = 0;
  if (!ReadFull(fd, reinterpret_cast<char*>(&length), sizeof(length), wake_fd_, deadline)) {
    spdlog::debug("dynolog API: connection closed or timed out before a length");
    return;
  }
  if (length <= 0 || static_cast<size_t>(length) > options_.max_request_bytes) {
    spdlog::debug("dynolog API: rejected request length {}", length);
    SendFramed(fd,
               ErrorReply(absl::StrCat("request length ", length, " is outside 1..",
                                       options_.max_request_bytes)),
               wake_fd_, deadline);
    return;
  }
  std::string request(static_cast<size_t>(length), '\0');
  if (!ReadFull(fd, request.data(), request.size(), wake_fd_, deadline)) {
    spdlog::debug("dynolog API: request of {} bytes did not arrive in time", length);
    return;
  }
  if (!SendFramed(fd, HandleRequest(request), wake_fd_, deadline)) {
    spdlog::debug("dynolog API: client went away before the reply");
  }
}

std::string DynologApiServer::HandleRequest(std::string_view request) {
  simdjson::dom::parser parser;
  simdjson::padded_string padded(request);
  simdjson::dom::element document;
  if (auto error = parser.parse(padded).get(document); error) {
    return ErrorReply(absl::StrCat("request is not JSON: ", simdjson::error_message(error)));
  }
  simdjson::dom::object object;
  if (document.get_object().get(object)) return ErrorReply("request is not a JSON object");
  std::string_view fn;
  if (object["fn"].get_string().get(fn)) return ErrorReply("request has no string \"fn\"");
  if (!options_.token.empty()) {
    std::string_view token;
    if (object["auth_token"].get_string().get(token) || !ConstantTimeEquals(token, options_.token)) {
      return ErrorReply("this API requires \"auth_token\" (the agent's --dynolog_token_file)");
    }
  }

  if (fn == "getStatus") return "{\"status\":1}";
  if (fn == "getVersion") return absl::StrCat("{\"version\":", JsonString(options_.version), "}");
  if (fn != "setKinetOnDemandRequest") {
    return ErrorReply(absl::StrCat("unknown fn \"", std::string(fn), "\""));
  }

  std::string_view config;
  if (object["config"].get_string().get(config) || config.empty()) {
    return ErrorReply("setKinetOnDemandRequest needs a non-empty string \"config\"");
  }
  // Never the client's text: libkineto reads some lines differently than any check here
  // would ("\vKEY=…" hides a second log file), so the job gets a config rebuilt from what
  // the strict reading found, and only that.
  absl::StatusOr<KinetoTraceRequest> trace = ParseKinetoConfig(config);
  if (!trace.ok()) return ErrorReply(absl::StrCat("config refused: ", std::string(trace.status().message())));
  // The agent reads and uploads the file the config names, as root: only a plain file in
  // the Kineto trace folder, never /etc/... or another user's file.
  if (!trace->log_file.empty()) {
    if (options_.log_dir.empty()) return ErrorReply("this agent accepts no ACTIVITIES_LOG_FILE");
    auto confined = FileDirectlyIn(options_.log_dir, trace->log_file);
    if (!confined.ok()) {
      return ErrorReply(absl::StrCat("ACTIVITIES_LOG_FILE refused: ", std::string(confined.status().message()),
                                     " (write traces directly into ", options_.log_dir, ")"));
    }
    trace->log_file = *confined;
  }
  std::vector<int32_t> pids;
  if (simdjson::dom::element value; !object["pids"].get(value)) {
    simdjson::dom::array array;
    if (value.get_array().get(array)) return ErrorReply("\"pids\" must be an array of integers");
    for (simdjson::dom::element item : array) {
      int64_t pid = 0;
      if (item.get_int64().get(pid) || pid < 0 || pid > std::numeric_limits<int32_t>::max()) {
        return ErrorReply("\"pids\" must be an array of integers");
      }
      pids.push_back(static_cast<int32_t>(pid));
    }
  }
  int64_t job_id = 0;
  if (simdjson::dom::element value; !object["job_id"].get(value) && value.get_int64().get(job_id)) {
    return ErrorReply("\"job_id\" must be an integer");
  }
  int64_t process_limit = kDefaultProcessLimit;
  if (simdjson::dom::element value;
      !object["process_limit"].get(value) && value.get_int64().get(process_limit)) {
    return ErrorReply("\"process_limit\" must be an integer");
  }
  process_limit = std::clamp<int64_t>(process_limit, std::numeric_limits<int>::min(),
                                      std::numeric_limits<int>::max());
  return TriggerReply(endpoint_.Trigger(pids, job_id, BuildKinetoConfig(*trace),
                                        static_cast<int>(process_limit)));
}

}  // namespace fleetprof
