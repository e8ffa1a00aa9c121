#pragma once
// Pull-style byte streams that trace readers consume, so no reader ever needs a whole file
// in memory. A file, a gzip stream over another source, or chunks pushed by a gRPC upload.

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace fleetprof::analysis {

class ByteSource {
 public:
  virtual ~ByteSource() = default;
  // Reads up to `n` bytes into `buf`. Returns the number read; 0 means end of stream.
  virtual absl::StatusOr<size_t> Read(char* buf, size_t n) = 0;
  // For error messages: the file name or upload it reads.
  virtual const std::string& name() const = 0;
};

// Opens `path` for reading.
absl::StatusOr<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path);

// Wraps `inner`, inflating it when it starts with the gzip magic bytes (concatenated gzip
// members included) and passing it through unchanged otherwise. Errors name the compressed
// byte offset, e.g. "trace.json.gz: truncated gzip stream at compressed byte 1234".
// Gzip input is inflated on a worker thread, so `inner` is read from that thread.
std::unique_ptr<ByteSource> MaybeGunzip(std::unique_ptr<ByteSource> inner);

// Hands back `prefix` (bytes already read from `inner`, e.g. to sniff a format), then the rest
// of `inner`.
std::unique_ptr<ByteSource> PrefixedSource(std::string prefix, std::unique_ptr<ByteSource> inner);

// A source over bytes already in memory (an upload, a test input). Each Read returns at most
// `max_chunk` bytes, which lets tests exercise every refill boundary of a reader.
std::unique_ptr<ByteSource> OpenStringSource(std::string name, std::string data,
                                             size_t max_chunk = SIZE_MAX);

}  // namespace fleetprof::analysis
