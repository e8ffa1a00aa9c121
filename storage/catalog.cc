#include "storage/catalog.h"

#include "absl/strings/cord.h"
#include "spdlog/spdlog.h"
#include "storage/record_table.h"

namespace fleetprof {

const char* CatalogTableName(CatalogTable table) {
  switch (table) {
    case CatalogTable::kProfiles: return "profiles";
    case CatalogTable::kIndex: return "index";
    case CatalogTable::kUploads: return "uploads";
    case CatalogTable::kAgents: return "agents";
    case CatalogTable::kCaptures: return "captures";
    case CatalogTable::kSchedules: return "schedules";
  }
  return "?";
}

namespace {
constexpr char kOutcomeUnknownPayload[] = "fleetprof/commit-outcome-unknown";
}  // namespace

absl::Status CommitOutcomeUnknown(std::string_view message) {
  absl::Status status = absl::UnavailableError(absl::string_view(message.data(), message.size()));
  status.SetPayload(kOutcomeUnknownPayload, absl::Cord("1"));
  return status;
}

bool IsCommitOutcomeUnknown(const absl::Status& status) {
  return status.GetPayload(kOutcomeUnknownPayload).has_value();
}

void UnreadableLog::Report(std::string_view kind, std::string_view key) {
  ++count_;
  spdlog::error("stored {} record {} does not parse; it is left in place and not listed", kind, key);
}

}  // namespace fleetprof
