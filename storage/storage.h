#pragma once
// Storage owns fleetprof's stores: one per kind of record, each over the engine's catalog
// (small consistent records) or blob store (bytes). No other module knows a key or a table.
//
// The embedded engine (rocks_engine.h) keeps everything in one RocksDB database, one column
// family per table, in the layout every release wrote:
//   profiles   profile_id                      -> ProfileInfo          catalog
//   index      "t/" inv_time id                -> ""   (all profiles, newest ingest first)
//              "j/" job \0 inv_time id         -> ""
//              "l/" key=value \0 inv_time id   -> ""
//              "h/" job \0 inv_time id         -> RegressionPoint (regression_store.h)
//              "r/" job \0 inv_time id/n       -> Regression
//              "sampling/state"                -> SamplingState (sampling_state_store.h)
//              "trg/" trigger_id               -> Trigger (trigger_table.h)
//              "f/" by \0 be64(hour) job \0 labels -> FleetRollupCell (fleet_rollup_store.h)
//   uploads    upload_id                       -> UploadRecord (partial or committed)
//   agents     node                            -> AgentInfo
//   captures   capture_id                      -> Capture
//   schedules  schedule_id                     -> Schedule
//   summaries  profile_id                      -> ProfileSummary       blob objects
//   raw        upload_id \0 be64(offset)       -> original bytes       blob parts (RocksDB compresses them)
//   events     profile_id \0 'b'|'n'|'d' ...   -> event blocks, names, directory (timeline/): segments
// inv_time is big-endian (INT64_MAX - ingested_at_ns), so a forward scan is newest first.

#include <cstdint>
#include <memory>
#include <set>
#include <string>

#include "absl/status/statusor.h"
#include "storage/event_store.h"
#include "storage/fleet_tables.h"
#include "storage/profile_table.h"
#include "storage/regression_store.h"
#include "storage/rocks_engine.h"
#include "storage/storage_engine.h"
#include "storage/trigger_table.h"
#include "storage/upload_table.h"

namespace fleetprof {

class Storage {
 public:
  // The embedded engine under `dir` (created if needed).
  static absl::StatusOr<std::unique_ptr<Storage>> Open(const std::string& dir,
                                                       const StoreOptions& options = StoreOptions());
  // Unit tests: everything in memory.
  static std::unique_ptr<Storage> InMemory();
  explicit Storage(std::unique_ptr<StorageEngine> engine);
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;

  ProfileTable& profiles() { return profiles_; }
  UploadTable& uploads() { return uploads_; }
  EventStore& events() { return events_; }
  AgentTable& agents() { return agents_; }
  CaptureTable& captures() { return captures_; }
  ScheduleTable& schedules() { return schedules_; }
  RegressionStore& regressions() { return regressions_; }
  TriggerTable& triggers() { return triggers_; }
  StorageEngine& engine() { return *engine_; }
  // Where a table of a layer above counts its records that do not parse (UnreadableRecords).
  UnreadableLog* unreadable() { return &unreadable_; }

  // Blobs that no catalog record owns: event segments and summaries of profiles never committed
  // (or deleted by a process that died before their blobs went), bytes of uploads without a record.
  // Only at startup: an ingest in flight writes its blobs before it commits. Returns how many.
  absl::StatusOr<int> CollectOrphans();

  // The same for a cluster, where some replica always has an ingest in flight: only blobs that
  // were orphans in the previous pass too (`*seen`, replaced by this pass's orphans) go, so a
  // blob lives at least one period between passes without an owner before it is collected.
  struct Orphans {
    std::set<std::string> segments, summaries, uploads;
  };
  absl::StatusOr<int> CollectOrphansSeenTwice(Orphans* seen);

  // Records of agents, captures, schedules, uploads and profiles (in retention's walk) that did
  // not parse, since the store opened (each is also logged); ListProfiles reports its own.
  int64_t UnreadableRecords() const { return unreadable_.count(); }

 private:
  std::unique_ptr<StorageEngine> engine_;
  UnreadableLog unreadable_;
  ProfileTable profiles_;
  UploadTable uploads_;
  EventStore events_;
  AgentTable agents_;
  CaptureTable captures_;
  ScheduleTable schedules_;
  RegressionStore regressions_;
  TriggerTable triggers_;
};

}  // namespace fleetprof
