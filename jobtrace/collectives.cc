#include "jobtrace/collectives.h"

#include <algorithm>
#include <map>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/match.h"
#include "analysis/trace_summary.h"
#include "diagnosis/rule_support.h"
#include "timeline/trace_window.h"

namespace fleetprof::jobtrace {
namespace {

// Host scopes that are one collective call each (PyTorch's ProcessGroup record_functions).
bool IsHostCollective(std::string_view name) {
  for (std::string_view prefix : {"nccl:", "rccl:", "gloo:", "c10d::"}) {
    if (name.substr(0, prefix.size()) == prefix) return true;
  }
  return false;
}

}  // namespace

CollectiveOp CollectiveOpOf(std::string_view name) {
  // Letters and digits only, lower case: "AllReduce", "all_reduce" and "all-reduce" meet.
  std::string folded;
  folded.reserve(name.size());
  for (char c : name) {
    if (c >= 'A' && c <= 'Z') folded.push_back(static_cast<char>(c - 'A' + 'a'));
    else if ((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')) folded.push_back(c);
  }
  // Longer words first: "reducescatter" and "allreduce" both contain "reduce".
  static constexpr std::pair<const char*, CollectiveOp> kWords[] = {
      {"reducescatter", CollectiveOp::kReduceScatter}, {"allreduce", CollectiveOp::kAllReduce},
      {"allgather", CollectiveOp::kAllGather},         {"alltoall", CollectiveOp::kAllToAll},
      {"broadcast", CollectiveOp::kBroadcast},         {"sendrecv", CollectiveOp::kSendRecv},
      {"send", CollectiveOp::kSendRecv},               {"recv", CollectiveOp::kSendRecv},
      {"reduce", CollectiveOp::kReduce},
  };
  for (const auto& [word, op] : kWords) {
    if (absl::StrContains(folded, word)) return op;
  }
  return CollectiveOp::kOther;
}

const char* CollectiveOpName(CollectiveOp op) {
  switch (op) {
    case CollectiveOp::kAllReduce: return "all_reduce";
    case CollectiveOp::kAllGather: return "all_gather";
    case CollectiveOp::kReduceScatter: return "reduce_scatter";
    case CollectiveOp::kAllToAll: return "all_to_all";
    case CollectiveOp::kBroadcast: return "broadcast";
    case CollectiveOp::kReduce: return "reduce";
    case CollectiveOp::kSendRecv: return "send_recv";
    case CollectiveOp::kOther: break;
  }
  return "collective";
}

size_t ProfileCollectives::memory_bytes() const {
  size_t bytes = sizeof(*this) + events.capacity() * sizeof(Collective);
  for (const std::string& n : names) bytes += sizeof(n) + n.capacity();
  return bytes;
}

absl::StatusOr<ProfileCollectives> ReadCollectives(const timeline::Timeline& t, timeline::TimelineReader& reader) {
  ProfileCollectives out;
  absl::flat_hash_map<uint32_t, uint32_t> local_name;
  auto add = [&](uint32_t stream, int64_t start, int64_t end, uint32_t name, int64_t bytes) {
    auto [it, inserted] = local_name.try_emplace(name, static_cast<uint32_t>(out.names.size()));
    if (inserted) out.names.emplace_back(t.name(name));
    Collective c;
    c.start_ns = start;
    c.end_ns = end;
    c.name = it->second;
    c.stream = stream;
    c.op = CollectiveOpOf(t.name(name));
    c.bytes = bytes;
    out.events.push_back(c);
  };
  // Per device (the track's group): its communication and compute intervals.
  std::map<std::string, std::pair<std::vector<diagnosis::Interval>, std::vector<diagnosis::Interval>>> devices;
  uint32_t streams = 0;
  for (uint32_t ti = 0; ti < t.tracks(); ++ti) {
    const v1::TimelineTrack& track = t.track(ti);
    if (track.kind() != "device") continue;
    // (References, not a structured binding: clang before 16 cannot capture one in a lambda.)
    auto& intervals = devices[track.group()];
    std::vector<diagnosis::Interval>& comm = intervals.first;
    std::vector<diagnosis::Interval>& compute = intervals.second;
    const uint32_t stream = streams;
    bool has_collective = false;
    absl::Status s = timeline::ForEachOverlapping(t, reader, ti, t.start_ns(), t.end_ns(), [&](const timeline::TimelineEvent& e) {
      const int64_t start = t.TimeNs(e.start), end = start + t.DurationNs(e.dur);
      const auto kind = static_cast<analysis::ActivityKind>(e.kind);
      if (kind == analysis::ActivityKind::kCommunication) {
        comm.push_back({start, end});
        add(stream, start, end, e.name, e.has_bytes() ? e.bytes : -1);
        has_collective = true;
      } else if (kind == analysis::ActivityKind::kCompute) {
        compute.push_back({start, end});
      }
    });
    if (!s.ok()) return s;
    if (has_collective) ++streams;
  }
  for (auto& [device, intervals] : devices) {
    auto& [comm, compute] = intervals;
    out.unoverlapped_comm_ns += diagnosis::TotalLength(
        diagnosis::Subtract(diagnosis::Union(std::move(comm)), diagnosis::Union(std::move(compute))));
  }
  if (out.events.empty()) {
    // A CPU job (gloo) or a trace without device activity: the host's collective calls.
    out.from_host = true;
    for (uint32_t ti = 0; ti < t.tracks(); ++ti) {
      if (t.track(ti).kind() != "host") continue;
      const uint32_t stream = streams;
      bool has_collective = false;
      absl::Status s = timeline::ForEachOverlapping(t, reader, ti, t.start_ns(), t.end_ns(), [&](const timeline::TimelineEvent& e) {
        if (!IsHostCollective(t.name(e.name))) return;
        const int64_t start = t.TimeNs(e.start);
        add(stream, start, start + t.DurationNs(e.dur), e.name, -1);
        has_collective = true;
      });
      if (!s.ok()) return s;
      if (has_collective) ++streams;
    }
  }
  std::sort(out.events.begin(), out.events.end(), [](const Collective& a, const Collective& b) {
    if (a.stream != b.stream) return a.stream < b.stream;
    if (a.op != b.op) return a.op < b.op;
    return a.start_ns < b.start_ns || (a.start_ns == b.start_ns && a.end_ns < b.end_ns);
  });
  const bool whole_us = !out.events.empty() && std::all_of(out.events.begin(), out.events.end(), [](const Collective& c) {
    return c.start_ns % 1000 == 0 && c.end_ns % 1000 == 0;
  });
  out.resolution_ns = whole_us ? 1000 : 1;
  out.events.shrink_to_fit();
  return out;
}

}  // namespace fleetprof::jobtrace
