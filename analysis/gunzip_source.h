#pragma once
// Gzip inflation for MaybeGunzip (byte_source.h), as a two-stage pipeline: a worker thread
// inflates with ISA-L into a few fixed buffers while the caller's thread parses the previous
// ones, so a .json.gz costs about max(inflate, parse) rather than their sum.

#include <atomic>
#include <cstddef>
#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/status/status.h"
#include "analysis/byte_source.h"

namespace fleetprof::analysis {

class GunzipSource : public ByteSource {
 public:
  // `prefix` holds bytes already read from `inner` (the sniffed magic); they are inflated
  // first. Starts the worker thread immediately: `inner` is read from that thread.
  // Destruction stops the worker; it waits for an inner Read in progress to return.
  GunzipSource(std::unique_ptr<ByteSource> inner, std::string prefix);
  ~GunzipSource() override;

  absl::StatusOr<size_t> Read(char* buf, size_t n) override;
  absl::StatusOr<uint64_t> Skip(uint64_t n) override;
  const std::string& name() const override { return name_; }
  // Stops the worker and frees the buffers; Read fails after.
  void StopReading() override;

 private:
  static constexpr size_t kOutBufferBytes = 128 << 10;
  static constexpr int kOutBuffers = 3;
  static constexpr size_t kInBufferBytes = 256 << 10;

  struct Chunk {
    char* data = nullptr;  // one of out_buffers_, or null for end/error
    size_t size = 0;
  };

  // Reader side: makes current_ hold unread bytes; false at the end of the stream.
  absl::StatusOr<bool> NextChunk();
  void RunInflate();
  absl::Status Inflate();
  // Worker side: waits for a free output buffer; null when the reader went away.
  char* AcquireFree();
  void Publish(Chunk chunk);
  void PublishEnd(absl::Status status);

  std::unique_ptr<ByteSource> inner_;
  std::string name_;
  std::string prefix_;
  std::vector<std::unique_ptr<char[]>> out_buffers_;

  absl::Mutex mu_;
  std::deque<Chunk> ready_ ABSL_GUARDED_BY(mu_);
  std::vector<char*> free_ ABSL_GUARDED_BY(mu_);
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // no more chunks after ready_
  absl::Status end_status_ ABSL_GUARDED_BY(mu_);
  bool cancelled_ ABSL_GUARDED_BY(mu_) = false;
  std::atomic<bool> stop_{false};     // cancelled_, readable without the lock

  // Reader side, touched only by the caller's thread.
  Chunk current_;
  size_t current_pos_ = 0;
  bool done_ = false;
  absl::Status sticky_error_;

  std::thread worker_;
};

}  // namespace fleetprof::analysis
