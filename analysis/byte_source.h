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

  // A second source over the same stream from its first byte, independent of this one, for a
  // second thread to read a far part of a file in parallel (kineto_json_reader.h); null where
  // the stream can be read only once (an upload). Safe to call while another thread reads.
  virtual std::unique_ptr<ByteSource> Reopen() const { return nullptr; }
  // The stream's length in bytes when known before reading it (a file's size, a gzip file's
  // recorded length), else -1: a hint for where to split work, never trusted for results.
  virtual int64_t SizeHint() const { return -1; }
  // True when Skip costs about what Read does (a gzip stream inflates what it skips), false
  // when it is nearly free (a file seeks): where a second thread had best start.
  virtual bool SkipReadsThrough() const { return false; }
  // The reader is done with this source before its end (a second reader read the rest): what
  // it holds ahead (a gzip stream's buffers and thread) may go now. It is not read again.
  virtual void StopReading() {}
  // Skips the next `n` bytes; returns how many were skipped (fewer only at the end of the
  // stream). The default reads them into a scratch buffer.
  virtual absl::StatusOr<uint64_t> Skip(uint64_t n);
};

// Opens `path` for reading.
absl::StatusOr<std::unique_ptr<ByteSource>> OpenFileSource(const std::string& path);

// Wraps `inner`, inflating it when it starts with the gzip magic bytes (concatenated gzip
// members included) and passing it through unchanged otherwise. Errors name the compressed
// byte offset, e.g. "trace.json.gz: truncated gzip stream at compressed byte 1234".
// Gzip input is inflated on a worker thread, so `inner` is read from that thread.
std::unique_ptr<ByteSource> MaybeGunzip(std::unique_ptr<ByteSource> inner);

// Hands back `prefix` (bytes already read from `inner`, e.g. to sniff a format), then the rest
// of `inner`. Reopen reopens `inner`: `prefix` must be the first bytes `inner` gave.
std::unique_ptr<ByteSource> PrefixedSource(std::string prefix, std::unique_ptr<ByteSource> inner);

// A source over bytes already in memory (an upload, a test input). Each Read returns at most
// `max_chunk` bytes, which lets tests exercise every refill boundary of a reader.
std::unique_ptr<ByteSource> OpenStringSource(std::string name, std::string data,
                                             size_t max_chunk = SIZE_MAX);

}  // namespace fleetprof::analysis
