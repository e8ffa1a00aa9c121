#pragma once
// The collectives of one profile, read back from its event store: what the job timeline
// matches across ranks to put them on one clock and to see which rank the others wait for.
// Device communication activity (NCCL/RCCL/HCCL kernels, XLA collectives) when the profile
// has any; else the host's collective scopes (`nccl:all_reduce`, `gloo:…`, `c10d::…`).

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "timeline/timeline.h"

namespace fleetprof::jobtrace {

// A collective's operation, whatever the library version named its kernel:
// ncclKernel_AllReduce_RING_LL_Sum_float, ncclDevKernel_AllReduce_Sum_f32_RING_LL,
// nccl:all_reduce and all-reduce.3 are all kAllReduce.
enum class CollectiveOp : uint8_t {
  kAllReduce, kAllGather, kReduceScatter, kAllToAll, kBroadcast, kReduce, kSendRecv, kOther
};
CollectiveOp CollectiveOpOf(std::string_view name);
const char* CollectiveOpName(CollectiveOp op);  // "all_reduce", …, "collective"

struct Collective {
  int64_t start_ns = 0;  // the profile's own clock
  int64_t end_ns = 0;
  uint32_t name = 0;     // index into ProfileCollectives::names
  uint32_t stream = 0;   // the profile's n-th track with collectives, in directory order
  CollectiveOp op = CollectiveOp::kOther;
  int64_t bytes = -1;    // message size where the trace gave one (Kineto "In msg nelems" x dtype)
};

struct ProfileCollectives {
  std::vector<std::string> names;
  // Sorted by (stream, op, start): the k-th of a (stream, op) is its k-th instance.
  std::vector<Collective> events;
  // The clock's grain: 1000 when every collective starts and ends on a whole µs (Kineto
  // files of integer microseconds), else 1.
  int64_t resolution_ns = 1;
  bool from_host = false;        // no device collectives: host scopes were read
  // Per device, the union of communication activity that compute activity does not cover,
  // summed over devices (the profile rule unoverlapped_communication's numerator).
  int64_t unoverlapped_comm_ns = 0;

  size_t memory_bytes() const;
};

// Reads every device track's events once (every host track's too when no device track holds
// a collective). Errors only when a stored block cannot be read.
absl::StatusOr<ProfileCollectives> ReadCollectives(const timeline::Timeline& timeline,
                                                    timeline::TimelineReader& reader);

}  // namespace fleetprof::jobtrace
