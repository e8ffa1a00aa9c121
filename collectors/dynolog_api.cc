#include "collectors/dynolog_api.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <limits>
#include <system_error>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "auth/token_hash.h"
#include "collectors/kineto_config.h"
#include "collectors/kineto_endpoint.h"
#include "collectors/peer_identity.h"
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
  std::string reply = absl::StrCat(
      "{\"processesMatched\":[", absl::StrJoin(result.matched, ","), "],\"activityProfilersTriggered\":[",
      absl::StrJoin(result.triggered, ","), "],\"eventProfilersTriggered\":[],\"activityProfilersBusy\":",
      result.busy, ",\"eventProfilersBusy\":0");
  // `dyno` prints the reply: say why a process the user expected was left out.
  if (result.other_users > 0) {
    absl::StrAppend(&reply, ",\"processesOfOtherUsers\":", result.other_users, ",\"note\":",
                    JsonString(absl::StrCat(result.other_users,
                                            " selected process(es) belong to another user and were not "
                                            "triggered: only root or a process's own user may trace it")));
  }
  return reply + "}";
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

// Counts of connections by caller; callers the kernel could not name share one.
int64_t UidKey(std::optional<int64_t> uid) { return uid.value_or(-1); }

// Refuses a connection past a limit without waiting on it: the reply fits the fresh
// socket's buffer, and a request already there is read so that closing sends no reset.
void Refuse(int fd, const std::string& message) {
  const std::string reply = ErrorReply(message);
  const int32_t length = static_cast<int32_t>(reply.size());
  std::string framed(reinterpret_cast<const char*>(&length), sizeof(length));
  framed += reply;
  if (::send(fd, framed.data(), framed.size(), MSG_DONTWAIT | MSG_NOSIGNAL) < 0) return;
  ::shutdown(fd, SHUT_WR);
  // At most a request's worth: a client streaming into a refused connection must not hold
  // the accept loop.
  char sink[4096];
  for (int i = 0; i < 16 && ::recv(fd, sink, sizeof(sink), MSG_DONTWAIT) > 0; ++i) {
  }
}

// What a setKinetOnDemandRequest asks for, checked.
struct TriggerRequest {
  std::vector<int32_t> pids;
  int64_t job_id = 0;
  int process_limit = kDefaultProcessLimit;
  // The strict reading of the client's config: the job gets a config rebuilt from it alone.
  KinetoTraceRequest trace;
};

// InvalidArgument with the message of the error reply for a request that cannot be served.
absl::StatusOr<TriggerRequest> ReadTriggerRequest(simdjson::dom::object& object, const std::string& log_dir) {
  std::string_view config;
  if (object["config"].get_string().get(config) || config.empty()) {
    return absl::InvalidArgumentError("setKinetOnDemandRequest needs a non-empty string \"config\"");
  }
  // Never the client's text: libkineto reads some lines differently than any check here
  // would ("\vKEY=…" hides a second log file), so the job gets a config rebuilt from what
  // the strict reading found, and only that.
  absl::StatusOr<KinetoTraceRequest> trace = ParseKinetoConfig(config);
  if (!trace.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("config refused: ", trace.status().message()));
  }
  // The agent reads and uploads the file the config names, as root: only a plain file in
  // the Kineto trace folder, never /etc/... or another user's file.
  if (!trace->log_file.empty()) {
    if (log_dir.empty()) return absl::InvalidArgumentError("this agent accepts no ACTIVITIES_LOG_FILE");
    auto confined = FileDirectlyIn(log_dir, trace->log_file);
    if (!confined.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("ACTIVITIES_LOG_FILE refused: ", confined.status().message(),
                                                     " (write traces directly into ", log_dir, ")"));
    }
    trace->log_file = *confined;
  }
  TriggerRequest out;
  if (simdjson::dom::element value; !object["pids"].get(value)) {
    simdjson::dom::array array;
    if (value.get_array().get(array)) return absl::InvalidArgumentError("\"pids\" must be an array of integers");
    for (simdjson::dom::element item : array) {
      int64_t pid = 0;
      if (item.get_int64().get(pid) || pid < 0 || pid > std::numeric_limits<int32_t>::max()) {
        return absl::InvalidArgumentError("\"pids\" must be an array of integers");
      }
      out.pids.push_back(static_cast<int32_t>(pid));
    }
  }
  if (simdjson::dom::element value; !object["job_id"].get(value) && value.get_int64().get(out.job_id)) {
    return absl::InvalidArgumentError("\"job_id\" must be an integer");
  }
  int64_t process_limit = kDefaultProcessLimit;
  if (simdjson::dom::element value;
      !object["process_limit"].get(value) && value.get_int64().get(process_limit)) {
    return absl::InvalidArgumentError("\"process_limit\" must be an integer");
  }
  out.process_limit = static_cast<int>(std::clamp<int64_t>(process_limit, std::numeric_limits<int>::min(),
                                                            std::numeric_limits<int>::max()));
  out.trace = *std::move(trace);
  return out;
}

}  // namespace

DynologApiServer::DynologApiServer(KinetoEndpoint& endpoint, Options options)
    : endpoint_(endpoint), options_(std::move(options)) {}

DynologApiServer::~DynologApiServer() { Stop(); }

absl::Status DynologApiServer::Start() {
  if (listen_fd_ >= 0 || unix_.fd() >= 0) return absl::FailedPreconditionError("dynolog API already started");
  if (options_.listen_address.empty() && options_.unix_socket.empty()) {
    return absl::InvalidArgumentError("dynolog API has neither a TCP address nor a unix socket");
  }
  if (!options_.listen_address.empty()) {
    absl::StatusOr<int> fd = ListenTcp(options_.listen_address, &port_);
    if (!fd.ok()) return fd.status();
    listen_fd_ = *fd;
  }
  if (!options_.unix_socket.empty()) {
    absl::StatusOr<UnixListener> listener = UnixListener::Listen(options_.unix_socket);
    if (!listener.ok()) {
      Stop();
      return listener.status();
    }
    unix_ = *std::move(listener);
  }
  wake_fd_ = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  if (wake_fd_ < 0) {  // without it Stop() could never wake the accept loop
    const int err = errno;
    Stop();
    return absl::UnavailableError(absl::StrCat("dynolog API: eventfd: ", std::strerror(err)));
  }
  spdlog::info("dynolog-compatible API listening on {}{}{}", options_.listen_address,
               port_ > 0 ? absl::StrCat(" (port ", port_, ")") : "",
               unix_.fd() >= 0 ? absl::StrCat(" and ", unix_.path()) : "");
  thread_ = std::thread([this] { AcceptLoop(); });
  return absl::OkStatus();
}

void DynologApiServer::Stop() {
  if (thread_.joinable()) {
    // The eventfd stays readable once written: the accept loop and every connection see it.
    const uint64_t one = 1;
    if (::write(wake_fd_, &one, sizeof(one)) < 0) spdlog::warn("waking the dynolog API failed");
    thread_.join();
    absl::MutexLock lock(&connections_->mutex);
    connections_->mutex.Await(absl::Condition(+[](int* active) { return *active == 0; }, &connections_->active));
  }
  if (listen_fd_ >= 0) ::close(listen_fd_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  unix_.Close();
  listen_fd_ = wake_fd_ = -1;
}

void DynologApiServer::AcceptLoop() {
  while (true) {
    pollfd fds[3] = {{wake_fd_, POLLIN, 0}, {listen_fd_, POLLIN, 0}, {unix_.fd(), POLLIN, 0}};
    const int rc = ::poll(fds, 3, -1);  // poll skips the negative fd of a listener not used
    if (rc < 0 && errno == EINTR) continue;
    if (rc < 0) {
      spdlog::error("dynolog API poll(): {}", std::strerror(errno));
      return;
    }
    if (fds[0].revents & POLLIN) return;
    for (int i = 1; i < 3; ++i) {
      if ((fds[i].revents & POLLIN) == 0) continue;
      const int fd = ::accept4(fds[i].fd, nullptr, nullptr, SOCK_CLOEXEC);
      if (fd < 0) {
        // Out of descriptors and the like: back off instead of spinning on the listener.
        if (errno != EINTR && errno != EAGAIN && errno != ECONNABORTED) {
          spdlog::warn("dynolog API accept(): {}", std::strerror(errno));
          ::poll(nullptr, 0, 100);
        }
        continue;
      }
      // Asked now, while the client certainly still holds its socket.
      Admit(fd, i == 1 ? TcpPeerUid(fd) : UnixPeerUid(fd));
    }
  }
}

void DynologApiServer::Admit(int fd, std::optional<int64_t> caller_uid) {
  const int64_t key = UidKey(caller_uid);
  std::string refused;
  {
    ConnectionCounts& counts = *connections_;
    absl::MutexLock lock(&counts.mutex);
    if (counts.active >= options_.max_connections) {
      refused = absl::StrCat("busy: ", counts.active, " connections in progress, try again");
    } else if (counts.by_uid[key] >= options_.max_connections_per_uid) {
      refused = absl::StrCat("busy: ", counts.by_uid[key], " connections of this user in progress, try again");
    } else {
      ++counts.active;
      ++counts.by_uid[key];
    }
  }
  if (refused.empty()) {
    try {
      std::thread([this, fd, caller_uid, key, counts = connections_] {
        ServeConnection(fd, caller_uid);
        ::close(fd);
        counts->Release(key);  // the last use of this server
      }).detach();
      return;
    } catch (const std::system_error&) {
      connections_->Release(key);
      refused = "busy: cannot start a thread";
    }
  }
  spdlog::debug("dynolog API: refused a connection of uid {}: {}", key, refused);
  Refuse(fd, refused);
  ::close(fd);
}

void DynologApiServer::ConnectionCounts::Release(int64_t uid_key) {
  absl::MutexLock lock(&mutex);
  --active;
  if (--by_uid[uid_key] == 0) by_uid.erase(uid_key);
}

void DynologApiServer::ServeConnection(int fd, std::optional<int64_t> caller_uid) {
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
  if (!SendFramed(fd, HandleRequest(request, caller_uid), wake_fd_, deadline)) {
    spdlog::debug("dynolog API: client went away before the reply");
  }
}

std::string DynologApiServer::HandleRequest(std::string_view request, std::optional<int64_t> caller_uid) {
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
    // The token is the operator's secret: a remote holder of it is trusted like root. A
    // local caller stays the user the kernel names.
    if (!caller_uid.has_value()) caller_uid = 0;
  }

  if (fn == "getStatus") return "{\"status\":1}";
  if (fn == "getVersion") return absl::StrCat("{\"version\":", JsonString(options_.version), "}");
  if (fn != "setKinetOnDemandRequest") {
    return ErrorReply(absl::StrCat("unknown fn \"", std::string(fn), "\""));
  }
  if (!caller_uid.has_value()) {
    return ErrorReply(
        "trace requests need a caller the kernel can name: connect over loopback from this host or "
        "use the agent's --dynolog_socket (only root or a process's own user may trace it)");
  }
  absl::StatusOr<TriggerRequest> trigger = ReadTriggerRequest(object, options_.log_dir);
  if (!trigger.ok()) return ErrorReply(std::string(trigger.status().message()));
  spdlog::info("dynolog API: trace request from uid {}", *caller_uid);
  // Root traces any process; everyone else only processes registered with their own uid.
  const std::optional<int64_t> owner = *caller_uid == 0 ? std::nullopt : caller_uid;
  return TriggerReply(endpoint_.Trigger(trigger->pids, trigger->job_id, trigger->trace, trigger->process_limit, owner,
                                       options_.trace_folder_for));
}

}  // namespace fleetprof
