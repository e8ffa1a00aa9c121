#pragma once
// A bounded hand-off of byte chunks from an upload (producer: the worker storing its chunks)
// to its analysis thread (consumer, through the ByteSource interface). Bounded so that a fast
// client cannot make the server hold more than `capacity_bytes` of a trace in memory (the
// chunks' capacities are counted: a reused buffer holds more than a short chunk's bytes).

#include <deque>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "analysis/byte_source.h"

namespace fleetprof {

class ChunkQueue : public analysis::ByteSource {
 public:
  ChunkQueue(std::string name, size_t capacity_bytes);

  // Producer: queues `chunk`, waiting while the queue is full. Returns false when the
  // consumer has stopped (see StopReading), so the producer can stop too.
  bool Push(std::string chunk);
  // Producer: no more chunks; the consumer sees end of stream after draining.
  void CloseWriting();
  // Producer: the stream broke; the consumer's next Read fails with `status`.
  void Fail(absl::Status status);
  // Consumer: it will read no more (it failed or finished early); unblocks Push.
  void StopReading() override;
  // Producer: a chunk the consumer has read to its end (its length and bytes as they were),
  // or an empty string. Refilling it writes over memory already faulted in, where a new
  // chunk's would be allocated and zeroed first: for an upload's inflated 1 MiB chunks, a
  // fifth of the worker's CPU.
  std::string TakeSpare();

  absl::StatusOr<size_t> Read(char* buf, size_t n) override;
  const std::string& name() const override { return name_; }

 private:
  const std::string name_;
  const size_t capacity_;
  absl::Mutex mu_;
  std::deque<std::string> chunks_ ABSL_GUARDED_BY(mu_);
  std::string spare_ ABSL_GUARDED_BY(mu_);  // one is enough: the producer takes it for its next chunk
  size_t queued_bytes_ ABSL_GUARDED_BY(mu_) = 0;
  size_t front_pos_ ABSL_GUARDED_BY(mu_) = 0;
  bool writing_closed_ ABSL_GUARDED_BY(mu_) = false;
  bool reading_stopped_ ABSL_GUARDED_BY(mu_) = false;
  absl::Status failure_ ABSL_GUARDED_BY(mu_);
};

// Reads `first` to its end, then `second`.
class ConcatSource : public analysis::ByteSource {
 public:
  ConcatSource(std::unique_ptr<analysis::ByteSource> first, analysis::ByteSource* second)
      : first_(std::move(first)), second_(second) {}
  absl::StatusOr<size_t> Read(char* buf, size_t n) override;
  const std::string& name() const override { return second_->name(); }

 private:
  std::unique_ptr<analysis::ByteSource> first_;
  analysis::ByteSource* second_;
};

}  // namespace fleetprof
