#pragma once
// Reads an upload's file and makes each chunk's body (one gzip member of the chunk's bytes, or
// the bytes of a file that is gzip already) on a thread of its own, a few chunks ahead of the
// sender. The sender then spends its time on the network only: the first chunks are ready
// while the channel connects and the server is asked where the upload stands, and each chunk's
// deflate overlaps the previous chunk's send.

#include <cstdint>
#include <deque>
#include <exception>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "common/gzip_member.h"

namespace fleetprof {

class ChunkProducer {
 public:
  // Chunks of `chunk_bytes` of `path` from `offset` up to `end`. Without a thread (none could
  // be started) each chunk is made when it is asked for.
  ChunkProducer(std::string path, int64_t offset, int64_t end, size_t chunk_bytes);
  ~ChunkProducer();
  ChunkProducer(const ChunkProducer&) = delete;
  ChunkProducer& operator=(const ChunkProducer&) = delete;

  // NOT_FOUND when the file could not be opened; every chunk is then missing.
  const absl::Status& status() const { return open_; }
  int64_t offset() const { return offset_; }
  // Whether chunks go as gzip members: the file does not start with gzip's magic bytes.
  bool compressed() const { return compressed_; }

  struct Chunk {
    std::string body;        // what goes on the wire
    int64_t file_bytes = 0;  // how many of the file's bytes it carries
  };
  // The next chunk in file order; nullopt after the last, or where the file ends before `end`
  // (it shrank: the server then holds fewer bytes than announced and says so). What the thread
  // threw making a chunk (std::bad_alloc) is thrown here, in its place.
  std::optional<Chunk> Next();

 private:
  static constexpr size_t kAhead = 2;  // chunks made and not yet sent, at most

  void Run();
  std::optional<Chunk> Make();

  const std::string path_;
  const int64_t offset_;
  const int64_t end_;
  const size_t chunk_bytes_;
  bool compressed_ = false;
  // Read by Make only: by the thread while it runs, else by Next.
  std::ifstream file_;
  std::string buffer_;
  GzipDeflater deflater_;
  int64_t made_to_;
  absl::Status open_;

  // The hand-off between the reader thread and the sender, nothing else: the file is read and
  // compressed, and the chunks sent, outside it.
  absl::Mutex mu_;
  std::deque<std::optional<Chunk>> ready_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool finished_ ABSL_GUARDED_BY(mu_) = false;  // the last (nullopt) was handed out
  std::exception_ptr error_ ABSL_GUARDED_BY(mu_);  // what ended the thread's chunks early
  std::thread thread_;
};

}  // namespace fleetprof
