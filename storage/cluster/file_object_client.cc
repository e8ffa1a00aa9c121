#include "storage/cluster/file_object_client.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <vector>

#include "absl/strings/str_cat.h"

namespace fleetprof::cluster {
namespace {

namespace fs = std::filesystem;

absl::Status Errno(std::string_view what, const std::string& path) {
  const int e = errno;
  std::string message = absl::StrCat(std::string(what), " ", path, ": ", std::strerror(e));
  return e == ENOENT ? absl::NotFoundError(message) : absl::UnavailableError(message);
}

// Writes all of `bytes`, resuming short writes.
absl::Status WriteAll(int fd, std::string_view bytes, const std::string& path) {
  while (!bytes.empty()) {
    ssize_t n = ::write(fd, bytes.data(), bytes.size());
    if (n < 0) {
      if (errno == EINTR) continue;
      return Errno("write", path);
    }
    bytes.remove_prefix(static_cast<size_t>(n));
  }
  return absl::OkStatus();
}

// Temporary names are unique per process and call, and start with '.', which no key word does,
// so List never reports one.
std::string TempPath(const fs::path& final_path) {
  static std::atomic<uint64_t> counter{0};
  return (final_path.parent_path() / absl::StrCat(".tmp-", ::getpid(), "-", counter.fetch_add(1))).string();
}

// Creates the parent folders, writes to a temporary file, fsyncs it and renames it into place.
class FileWriter : public ObjectWriter {
 public:
  static absl::StatusOr<std::unique_ptr<FileWriter>> Create(fs::path path) {
    std::error_code ec;
    fs::create_directories(path.parent_path(), ec);
    if (ec) return absl::UnavailableError(absl::StrCat("create ", path.parent_path().string(), ": ", ec.message()));
    std::string temp = TempPath(path);
    int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
    if (fd < 0) return Errno("create", temp);
    return std::unique_ptr<FileWriter>(new FileWriter(std::move(path), std::move(temp), fd));
  }
  ~FileWriter() override {
    if (fd_ >= 0) ::close(fd_);
    if (!finished_) ::unlink(temp_.c_str());
  }

  absl::Status Append(std::string_view bytes) override { return WriteAll(fd_, bytes, temp_); }
  absl::Status Finish() override {
    if (::fsync(fd_) != 0) return Errno("fsync", temp_);
    ::close(fd_);
    fd_ = -1;
    if (::rename(temp_.c_str(), path_.c_str()) != 0) return Errno("rename into", path_.string());
    finished_ = true;
    return absl::OkStatus();
  }

 private:
  FileWriter(fs::path path, std::string temp, int fd) : path_(std::move(path)), temp_(std::move(temp)), fd_(fd) {}
  fs::path path_;
  std::string temp_;
  int fd_;
  bool finished_ = false;
};

class FileObjectClient : public ObjectClient {
 public:
  explicit FileObjectClient(fs::path root) : root_(std::move(root)) {}

  std::string Describe() const override { return absl::StrCat("file://", root_.string()); }

  absl::Status Put(std::string_view key, std::string_view bytes) override {
    auto writer = FileWriter::Create(PathOf(key));
    if (!writer.ok()) return writer.status();
    if (absl::Status s = (*writer)->Append(bytes); !s.ok()) return s;
    return (*writer)->Finish();
  }

  absl::StatusOr<std::string> Get(std::string_view key, std::optional<ByteRange> range) override {
    const std::string path = PathOf(key).string();
    int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
    if (fd < 0) return Errno("open", path);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
      absl::Status s = Errno("stat", path);
      ::close(fd);
      return s;
    }
    int64_t offset = range ? std::clamp<int64_t>(range->offset, 0, st.st_size) : 0;
    int64_t length = range ? std::clamp<int64_t>(range->length, 0, st.st_size - offset) : st.st_size;
    std::string out(static_cast<size_t>(length), '\0');
    int64_t got = 0;
    while (got < length) {
      ssize_t n = ::pread(fd, out.data() + got, static_cast<size_t>(length - got), offset + got);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) {
        absl::Status s = n < 0 ? Errno("read", path) : absl::DataLossError(absl::StrCat(path, " ended early"));
        ::close(fd);
        return s;
      }
      got += n;
    }
    ::close(fd);
    return out;
  }

  absl::StatusOr<int64_t> Size(std::string_view key) override {
    const std::string path = PathOf(key).string();
    struct stat st {};
    if (::lstat(path.c_str(), &st) != 0) return Errno("stat", path);
    return static_cast<int64_t>(st.st_size);
  }

  absl::Status Delete(std::string_view key) override {
    const std::string path = PathOf(key).string();
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) return Errno("delete", path);
    return absl::OkStatus();
  }

  absl::Status List(std::string_view prefix, const ObjectVisitor& visit) override {
    // The folder of the prefix's last '/', walked whole and filtered: keys are few levels deep.
    const size_t slash = prefix.rfind('/');
    const fs::path start = slash == std::string_view::npos ? root_ : root_ / std::string(prefix.substr(0, slash));
    std::vector<std::pair<std::string, int64_t>> found;
    std::error_code ec;
    fs::recursive_directory_iterator it(start, ec), end;
    if (ec) return ec == std::errc::no_such_file_or_directory ? absl::OkStatus()
                                                              : absl::UnavailableError(absl::StrCat("list ", start.string(), ": ", ec.message()));
    for (; it != end; it.increment(ec)) {
      if (ec) return absl::UnavailableError(absl::StrCat("list ", start.string(), ": ", ec.message()));
      if (!it->is_regular_file(ec) || it->path().filename().string().starts_with(".")) continue;
      std::string key = it->path().lexically_relative(root_).string();
      if (!key.starts_with(prefix)) continue;
      found.emplace_back(std::move(key), static_cast<int64_t>(it->file_size(ec)));
    }
    std::sort(found.begin(), found.end());
    for (const auto& [key, size] : found) {
      if (!visit(key, size)) break;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<std::unique_ptr<ObjectWriter>> NewWriter(std::string_view key) override {
    auto writer = FileWriter::Create(PathOf(key));
    if (!writer.ok()) return writer.status();
    return std::unique_ptr<ObjectWriter>(std::move(*writer));
  }

 private:
  fs::path PathOf(std::string_view key) const { return root_ / std::string(key); }
  fs::path root_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ObjectClient>> OpenFileObjectClient(const std::string& dir) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  if (ec) return absl::InvalidArgumentError(absl::StrCat("object store folder ", dir, ": ", ec.message()));
  return std::make_unique<FileObjectClient>(fs::path(dir));
}

}  // namespace fleetprof::cluster
