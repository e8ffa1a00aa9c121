#pragma once
// The blob store on object storage (S3 or a folder), laid out under the store's prefix as:
//   summaries/NAME                 a summary: one zstd frame
//   raw/NAME/OFFSET                one part of an upload (OFFSET: 16 hex digits), one zstd frame,
//                                  durable when PutPart returns, so another replica resumes from
//                                  what the catalog counts
//   events/NAME                    a profile's whole event store as ONE object: each block a
//                                  zstd frame, then a compressed index of (name, offset, length),
//                                  then a 24-byte footer; read back by byte range
// NAME is the blob's name as one key word (blob_codec.h). Segments are streamed out as multipart
// uploads, so no profile's blocks sit whole in memory.

#include <memory>
#include <string>
#include <vector>

#include "storage/blob_store.h"
#include "storage/cluster/object_client.h"

namespace fleetprof::cluster {

// `objects` outlives the store.
std::unique_ptr<BlobStore> NewObjectBlobStore(ObjectClient* objects);
// The prefixes whose objects are written once and never rewritten (summaries, event segments:
// names are unique profile ids), so a replica may cache them (object_cache.h). Raw parts are
// not among them: they are read once, by export, and would only push the rest out.
std::vector<std::string> WriteOnceObjectPrefixes();
// Blocks in every segment (tests: nothing left behind); reads each segment's index.
absl::StatusOr<int64_t> CountSegmentBlocks(ObjectClient* objects);

}  // namespace fleetprof::cluster
