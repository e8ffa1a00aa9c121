// ByteSource over a file descriptor and over an in-memory string.

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "analysis/byte_source.h"

namespace fleetprof::analysis {
namespace {

// Small reads are served from one 1 MiB block so that a caller asking for a few bytes at a
// time (the protobuf reader's varints) does not turn into a syscall per read.
constexpr size_t kFileBlockBytes = 1 << 20;

class FileSource : public ByteSource {
 public:
  FileSource(int fd, std::string name) : fd_(fd), name_(std::move(name)) {}
  ~FileSource() override { ::close(fd_); }

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    if (n == 0) return 0;
    if (block_pos_ < block_end_) {
      size_t take = std::min(n, block_end_ - block_pos_);
      std::memcpy(buf, block_.get() + block_pos_, take);
      block_pos_ += take;
      return take;
    }
    // Large reads go straight into the caller's buffer: no copy.
    if (n >= kFileBlockBytes / 4) return ReadFd(buf, n);
    if (block_ == nullptr) block_ = std::make_unique<char[]>(kFileBlockBytes);
    absl::StatusOr<size_t> got = ReadFd(block_.get(), kFileBlockBytes);
    if (!got.ok() || *got == 0) return got;
    block_pos_ = 0;
    block_end_ = *got;
    return Read(buf, n);
  }

  const std::string& name() const override { return name_; }

  // The same open file (through /proc, so a rename or replacement of the path since does not
  // matter), with an offset of its own.
  std::unique_ptr<ByteSource> Reopen() const override {
    const int fd = ::open(absl::StrCat("/proc/self/fd/", fd_).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
    return std::make_unique<FileSource>(fd, name_);
  }

  int64_t SizeHint() const override {
    struct stat st;
    if (::fstat(fd_, &st) != 0 || !S_ISREG(st.st_mode)) return -1;
    return static_cast<int64_t>(st.st_size);
  }

  absl::StatusOr<uint64_t> Skip(uint64_t n) override {
    const int64_t size = SizeHint();
    if (size < 0) return ByteSource::Skip(n);  // a pipe: read through
    uint64_t skipped = std::min<uint64_t>(n, block_end_ - block_pos_);
    block_pos_ += skipped;
    const uint64_t left = offset_ < static_cast<uint64_t>(size) ? static_cast<uint64_t>(size) - offset_ : 0;
    const uint64_t seek = std::min(n - skipped, left);
    if (seek > 0) {
      if (::lseek(fd_, static_cast<off_t>(seek), SEEK_CUR) < 0) {
        return absl::DataLossError(
            absl::StrCat(name_, ": seek failed at byte ", offset_, ": ", std::strerror(errno)));
      }
      offset_ += seek;
    }
    return skipped + seek;
  }

 private:
  absl::StatusOr<size_t> ReadFd(char* buf, size_t n) {
    for (;;) {
      ssize_t got = ::read(fd_, buf, n);
      if (got >= 0) {
        offset_ += static_cast<size_t>(got);
        return static_cast<size_t>(got);
      }
      if (errno == EINTR) continue;
      return absl::DataLossError(
          absl::StrCat(name_, ": read failed at byte ", offset_, ": ", std::strerror(errno)));
    }
  }

  int fd_;
  std::string name_;
  size_t offset_ = 0;
  std::unique_ptr<char[]> block_;
  size_t block_pos_ = 0;
  size_t block_end_ = 0;
};

class StringSource : public ByteSource {
 public:
  StringSource(std::string name, std::shared_ptr<const std::string> data, size_t max_chunk)
      : name_(std::move(name)),
        data_(std::move(data)),
        max_chunk_(std::max<size_t>(1, max_chunk)) {}

  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    size_t take = std::min({n, max_chunk_, data_->size() - pos_});
    std::memcpy(buf, data_->data() + pos_, take);
    pos_ += take;
    return take;
  }

  const std::string& name() const override { return name_; }
  std::unique_ptr<ByteSource> Reopen() const override {
    return std::make_unique<StringSource>(name_, data_, max_chunk_);
  }
  int64_t SizeHint() const override { return static_cast<int64_t>(data_->size()); }

 private:
  std::string name_;
  std::shared_ptr<const std::string> data_;
  size_t max_chunk_;
  size_t pos_ = 0;
};

}  // namespace

absl::StatusOr<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    int err = errno;
    std::string message = absl::StrCat(path, ": cannot open: ", std::strerror(err));
    if (err == ENOENT) return absl::NotFoundError(message);
    if (err == EACCES) return absl::PermissionDeniedError(message);
    return absl::UnavailableError(message);
  }
  // Sequential hint: the kernel reads ahead more aggressively.
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL);
  return std::make_unique<FileSource>(fd, path);
}

namespace {

class PrefixedByteSource : public ByteSource {
 public:
  PrefixedByteSource(std::string prefix, std::unique_ptr<ByteSource> inner)
      : prefix_(std::move(prefix)), inner_(std::move(inner)) {}
  absl::StatusOr<size_t> Read(char* buf, size_t n) override {
    if (pos_ < prefix_.size()) {
      const size_t take = std::min(n, prefix_.size() - pos_);
      std::memcpy(buf, prefix_.data() + pos_, take);
      pos_ += take;
      return take;
    }
    return inner_->Read(buf, n);
  }
  const std::string& name() const override { return inner_->name(); }
  std::unique_ptr<ByteSource> Reopen() const override { return inner_->Reopen(); }
  int64_t SizeHint() const override { return inner_->SizeHint(); }
  bool SkipReadsThrough() const override { return inner_->SkipReadsThrough(); }
  void StopReading() override { inner_->StopReading(); }
  absl::StatusOr<uint64_t> Skip(uint64_t n) override {
    const uint64_t take = std::min<uint64_t>(n, prefix_.size() - pos_);
    pos_ += take;
    if (take == n) return take;
    absl::StatusOr<uint64_t> rest = inner_->Skip(n - take);
    if (!rest.ok()) return rest;
    return take + *rest;
  }

 private:
  std::string prefix_;
  size_t pos_ = 0;
  std::unique_ptr<ByteSource> inner_;
};

}  // namespace

std::unique_ptr<ByteSource> PrefixedSource(std::string prefix, std::unique_ptr<ByteSource> inner) {
  return std::make_unique<PrefixedByteSource>(std::move(prefix), std::move(inner));
}

std::unique_ptr<ByteSource> OpenStringSource(std::string name, std::string data, size_t max_chunk) {
  return std::make_unique<StringSource>(
      std::move(name), std::make_shared<const std::string>(std::move(data)), max_chunk);
}

absl::StatusOr<uint64_t> ByteSource::Skip(uint64_t n) {
  char scratch[16 << 10];
  uint64_t skipped = 0;
  while (skipped < n) {
    absl::StatusOr<size_t> got = Read(scratch, std::min<uint64_t>(sizeof(scratch), n - skipped));
    if (!got.ok()) return got.status();
    if (*got == 0) break;
    skipped += *got;
  }
  return skipped;
}

}  // namespace fleetprof::analysis
