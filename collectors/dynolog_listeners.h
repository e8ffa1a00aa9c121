#pragma once
// The sockets the dynolog-compatible API listens on: TCP (what `dyno` dials) and a unix
// stream socket (where the kernel names the caller with SO_PEERCRED).

#include <sys/types.h>

#include <string>

#include "absl/status/statusor.h"

namespace fleetprof {

// A listening TCP socket on "host:port" or "[v6]:port" (port 0 picks one); `*port` gets the
// port bound. Unavailable, naming the address, when it cannot listen.
absl::StatusOr<int> ListenTcp(const std::string& address, int* port);

// A listening unix stream socket at an absolute path, mode 0666 (any local user may connect;
// each request is then judged by the caller's uid). Its folder must belong to the agent's
// user and be writable by nobody else, so nobody can swap the socket or the folder under us;
// it is created (0755) when missing. A stale socket at the path is replaced, a live one (another
// agent answers) or anything else there (a symlink, a file) is refused, never followed.
class UnixListener {
 public:
  static absl::StatusOr<UnixListener> Listen(const std::string& path);
  UnixListener() = default;
  UnixListener(UnixListener&& other) noexcept { *this = std::move(other); }
  UnixListener& operator=(UnixListener&& other) noexcept;
  ~UnixListener();  // Close()s

  // Closes the socket and removes its path, if it is still the socket we created.
  void Close();
  int fd() const { return fd_; }
  const std::string& path() const { return path_; }

 private:
  int fd_ = -1;
  int dir_fd_ = -1;  // the folder, held open so every later step names the same one
  std::string path_;
  std::string name_;
  dev_t dev_ = 0;
  ino_t ino_ = 0;
};

}  // namespace fleetprof
