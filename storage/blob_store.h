#pragma once
// The blob store seam: what is too big for a catalog record. Three kinds of blob, each in a
// namespace of its own:
//   objects   whole values written once (a profile's summary), by name;
//   parts     an upload's original bytes, written part by part as they arrive;
//   segments  a profile's event store: blocks appended by name, then finished with an index;
//             read back block by block (a ranged read on object storage).
// The embedded implementation keeps RocksDB's per-key layout (storage.h); the cluster puts each
// blob in an S3-compatible object store. A blob is invisible to queries until the catalog
// lists what it belongs to; blobs whose catalog record never came are orphans, collected later.

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "analysis/byte_source.h"

namespace fleetprof {

class SegmentWriter {
 public:
  virtual ~SegmentWriter() = default;
  // Appends a block; `name` is unique within the segment.
  virtual absl::Status Append(std::string_view name, std::string bytes) = 0;
  // Writes what is still buffered and the index. Before it returns, readers may see some of the
  // blocks or none; the caller's own "last block" (the event directory) says whether it is whole.
  virtual absl::Status Finish() = 0;
};

class SegmentReader {
 public:
  virtual ~SegmentReader() = default;
  // NOT_FOUND when the segment has no such block.
  virtual absl::StatusOr<std::string> Read(std::string_view name) = 0;
};

// Sees one blob's name; returns false to stop.
using BlobVisitor = std::function<bool(std::string_view name)>;

// Whether a deletion gives the disk back before it returns (embedded: compacts the range), or
// leaves that to the engine's own pace.
enum class Reclaim { kLater, kNow };

class BlobStore {
 public:
  virtual ~BlobStore() = default;

  virtual absl::Status PutObject(std::string_view name, std::string_view bytes) = 0;
  // NOT_FOUND when there is none.
  virtual absl::StatusOr<std::string> GetObject(std::string_view name) = 0;
  virtual absl::Status DeleteObject(std::string_view name) = 0;
  virtual absl::Status ListObjects(const BlobVisitor& visit) = 0;

  // Stores `bytes` at `offset` of upload `name`'s bytes. Parts are written in order, each at the
  // end of the previous; a part written again at the same offset replaces it (a resume after a
  // crash between this write and the catalog's record of it).
  virtual absl::Status PutPart(std::string_view name, int64_t offset, std::string_view bytes) = 0;
  // At most the first `length` bytes of the upload, in order (fewer only when parts are gone:
  // a deleted upload reads as empty). Bytes past what the catalog counts as received are never read.
  virtual std::unique_ptr<analysis::ByteSource> ReadParts(std::string_view name, int64_t length) = 0;
  virtual absl::Status DeleteParts(std::string_view name, Reclaim reclaim) = 0;
  // Makes every part written so far durable (the upload is complete; object storage: the
  // multipart upload is completed). Until then a crash may lose the latest parts.
  virtual absl::Status FinishParts(std::string_view name) = 0;
  // After a crash: drops the parts that follow a gap, if any, and returns how many bytes from
  // offset 0 are left without one (the catalog's count is cut back to it).
  virtual absl::StatusOr<int64_t> KeepContiguousParts(std::string_view name) = 0;
  virtual absl::Status ListParts(const BlobVisitor& visit) = 0;

  virtual std::unique_ptr<SegmentWriter> NewSegment(std::string_view name) = 0;
  virtual std::unique_ptr<SegmentReader> OpenSegment(std::string_view name) = 0;
  virtual absl::Status DeleteSegment(std::string_view name, Reclaim reclaim) = 0;
  virtual absl::Status ListSegments(const BlobVisitor& visit) = 0;
};

}  // namespace fleetprof
