#pragma once
// The fleet's records: agents by node, captures by id (ids start with their creation time in
// hex, so key order is creation order), periodic schedules by id.

#include <cstdint>
#include <optional>
#include <utility>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "fleetprof/v1/agent.pb.h"
#include "fleetprof/v1/capture.pb.h"
#include "fleetprof/v1/schedule.pb.h"
#include "storage/record_table.h"

namespace fleetprof {

class AgentTable {
 public:
  AgentTable(Catalog* catalog, UnreadableLog* unreadable)
      : records_(catalog, CatalogTable::kAgents, "agent", unreadable) {}
  absl::Status Put(const v1::AgentInfo& agent) { return records_.Put(agent.node(), agent); }
  absl::StatusOr<std::vector<v1::AgentInfo>> List() { return records_.List(); }
  // nullopt when the node has no record.
  absl::StatusOr<std::optional<v1::AgentInfo>> Find(const std::string& node) { return records_.Find(node); }
  absl::Status Delete(const std::string& node) { return records_.Delete(node); }

 private:
  RecordTable<v1::AgentInfo> records_;
};

class CaptureTable {
 public:
  CaptureTable(Catalog* catalog, UnreadableLog* unreadable)
      : records_(catalog, CatalogTable::kCaptures, "capture", unreadable), catalog_(catalog) {}
  absl::Status Put(const v1::Capture& capture) { return records_.Put(capture.capture_id(), capture); }
  absl::StatusOr<v1::Capture> Get(const std::string& capture_id) { return records_.Get(capture_id); }
  // The stored capture and its bytes (for PutIfUnchanged); nullopt when there is none.
  absl::StatusOr<std::optional<std::pair<v1::Capture, std::string>>> FindWithBytes(const std::string& capture_id);
  // Writes `capture` only while the stored bytes are `expected` (nullopt: no record yet);
  // ABORTED when another replica wrote it meanwhile.
  absl::Status PutIfUnchanged(const v1::Capture& capture, const std::optional<std::string>& expected);
  // Newest first, at most `limit`; `job` empty for every job.
  absl::StatusOr<std::vector<v1::Capture>> List(const std::string& job, int limit);
  // Deletes the captures created before `created_before_ns` and those that do not parse
  // (nothing can show them); returns how many.
  absl::StatusOr<int64_t> DeleteBefore(int64_t created_before_ns);

 private:
  RecordTable<v1::Capture> records_;
  Catalog* catalog_;
};

// Synced: a schedule survives a crash.
class ScheduleTable {
 public:
  ScheduleTable(Catalog* catalog, UnreadableLog* unreadable)
      : records_(catalog, CatalogTable::kSchedules, "schedule", unreadable) {}
  absl::Status Put(const v1::Schedule& schedule) { return records_.Put(schedule.schedule_id(), schedule, /*sync=*/true); }
  // NOT_FOUND when there is no such schedule.
  absl::Status Delete(const std::string& schedule_id);
  absl::StatusOr<std::vector<v1::Schedule>> List() { return records_.List(); }

 private:
  RecordTable<v1::Schedule> records_;
};

}  // namespace fleetprof
