#include "analysis/xspace_stats.h"

#include <bit>
#include <cmath>
#include <cstring>
#include <limits>

#include "absl/strings/str_cat.h"
#include "analysis/trace_events.h"
#include "analysis/trace_limits.h"

namespace fleetprof::analysis {

bool StatScratch::HasInteger() const {
  for (const RawStat& s : stats) {
    if (s.IsInteger()) return true;
  }
  return false;
}

void PlaneStats::Clear() {
  strings = NameTable();
  stat_names.clear();
  metadata_stats.clear();
}

std::string_view PlaneStats::StatName(int64_t id) const {
  auto it = stat_names.find(id);
  return it == stat_names.end() ? std::string_view() : strings.Get(it->second);
}

const RawStat* PlaneStats::Find(const std::vector<RawStat>& stats, std::string_view name) const {
  for (const RawStat& s : stats) {
    if (StatName(s.id) == name) return &s;
  }
  return nullptr;
}

std::string PlaneStats::Text(const RawStat& stat) const {
  switch (stat.kind) {
    case StatKind::kString:
      return std::string(strings.Get(static_cast<NameId>(stat.value)));
    case StatKind::kRef:
      return std::string(StatName(stat.value));
    case StatKind::kInt64:
      return absl::StrCat(stat.value);
    case StatKind::kUint64:
      return absl::StrCat(static_cast<uint64_t>(stat.value));
    case StatKind::kDouble:
      return absl::StrCat(std::bit_cast<double>(stat.value));
  }
  return "";
}

void PlaneStats::InternTexts(const StatScratch& scratch, std::vector<RawStat>* out) {
  for (RawStat s : scratch.stats) {
    if (s.kind == StatKind::kString) {
      s.value = strings.Intern(scratch.texts[static_cast<size_t>(s.value)]);
    }
    out->push_back(s);
  }
}

void StatSum::Add(const RawStat& stat) {
  switch (stat.kind) {
    case StatKind::kInt64:
      integer += stat.value;
      break;
    case StatKind::kUint64:
      integer += static_cast<uint64_t>(stat.value);
      break;
    case StatKind::kDouble: {
      double d = std::bit_cast<double>(stat.value);
      if (std::isfinite(d)) real += d;
      break;
    }
    default:
      break;
  }
}

__int128 StatSum::Exact() const {
  // Beyond int64 a double saturates rather than overflow llround.
  constexpr double kLimit = 9.2e18;
  double r = real > kLimit ? kLimit : real < -kLimit ? -kLimit : real;
  return integer + std::llround(r);
}

int64_t ClampToInt64(__int128 value) {
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  constexpr int64_t kMin = std::numeric_limits<int64_t>::min();
  return value > kMax ? kMax : value < kMin ? kMin : static_cast<int64_t>(value);
}

bool ReadXStat(ProtoReader& in, uint64_t limit, StatScratch* scratch) {
  RawStat stat;
  bool has_value = false;
  while (in.More(limit, "XStat")) {
    uint32_t field;
    int wire;
    if (!in.ReadTag(&field, &wire, "XStat")) return false;
    uint64_t value = 0;
    if (wire == kVarint && (field == 1 || field == 3 || field == 4 || field == 7)) {
      if (!in.ReadVarint(&value, "XStat field")) return false;
      if (field == 1) {
        stat.id = static_cast<int64_t>(value);
        continue;
      }
      stat.kind = field == 3 ? StatKind::kUint64 : field == 4 ? StatKind::kInt64 : StatKind::kRef;
      stat.value = static_cast<int64_t>(value);
      has_value = true;
    } else if (wire == kFixed64 && field == 2) {
      std::string bits;  // 8 bytes: held inline, no allocation
      if (!in.ReadBytes(8, 8, &bits, "XStat.double_value")) return false;
      std::memcpy(&value, bits.data(), 8);
      stat.kind = StatKind::kDouble;
      stat.value = static_cast<int64_t>(value);
      has_value = true;
    } else if (wire == kLengthDelimited && field == 5) {
      uint64_t end;
      if (!in.ReadLength(limit, &end, "XStat.str_value", "XStat")) return false;
      if (scratch->texts.size() <= scratch->used_texts) scratch->texts.emplace_back();
      std::string* text = &scratch->texts[scratch->used_texts];
      if (!in.ReadBytes(end - in.Offset(), in.name_cap(), text, "XStat.str_value")) return false;
      stat.value = static_cast<int64_t>(scratch->used_texts++);
      stat.kind = StatKind::kString;
      has_value = true;
    } else {
      // bytes_value (6) and unknown fields. A bytes_value after another value wins the oneof.
      if (field == 6) has_value = false;
      if (!in.SkipField(wire, limit, "XStat field", "XStat")) return false;
    }
  }
  if (!in.ok()) return false;
  if (has_value) scratch->stats.push_back(stat);
  return true;
}

bool ReadEventMetadataEntryFields(ProtoReader& in, uint64_t limit, int64_t* id, std::string* name,
                                  StatScratch* stats, int64_t max_stats) {
  const uint64_t entry_offset = in.Offset();
  int64_t stat_count = 0;
  int64_t key = 0;
  int64_t value_id = 0;
  bool has_key = false;
  name->clear();
  if (stats != nullptr) stats->Clear();
  while (in.More(limit, "event_metadata entry")) {
    uint32_t field;
    int wire;
    if (!in.ReadTag(&field, &wire, "event_metadata entry")) return false;
    uint64_t value;
    if (field == 1 && wire == kVarint) {
      if (!in.ReadVarint(&value, "event_metadata key")) return false;
      key = static_cast<int64_t>(value);
      has_key = true;
      continue;
    }
    if (field != 2 || wire != kLengthDelimited) {
      if (!in.SkipField(wire, limit, "event_metadata field", "event_metadata entry")) return false;
      continue;
    }
    uint64_t end;
    if (!in.ReadLength(limit, &end, "XEventMetadata", "event_metadata entry")) return false;
    while (in.More(end, "XEventMetadata")) {  // id = 1, name = 2, stats = 5
      if (!in.ReadTag(&field, &wire, "XEventMetadata")) return false;
      uint64_t field_end;
      if (field == 1 && wire == kVarint) {
        if (!in.ReadVarint(&value, "XEventMetadata.id")) return false;
        value_id = static_cast<int64_t>(value);
      } else if (field == 2 && wire == kLengthDelimited) {
        if (!in.ReadLength(end, &field_end, "XEventMetadata.name", "XEventMetadata") ||
            !in.ReadBytes(field_end - in.Offset(), in.name_cap(), name, "XEventMetadata.name")) {
          return false;
        }
      } else if (field == 5 && ++stat_count > max_stats) {
        return in.FailWith(TraceLimitError(in.source_name(), "stats on one event metadata",
                                           max_stats, "max_event_stats", entry_offset));
      } else if (field == 5 && wire == kLengthDelimited && stats != nullptr) {
        if (!in.ReadLength(end, &field_end, "XEventMetadata.stats", "XEventMetadata") ||
            !ReadXStat(in, field_end, stats)) {
          return false;
        }
      } else if (!in.SkipField(wire, end, "XEventMetadata field", "XEventMetadata")) {
        return false;
      }
    }
    if (!in.ok()) return false;
  }
  if (!in.ok()) return false;
  *id = has_key ? key : value_id;
  return true;
}

bool ReadStatMetadataEntry(ProtoReader& in, uint64_t limit, PlaneStats* plane) {
  int64_t key = 0;
  int64_t value_id = 0;
  bool has_key = false;
  std::string name;
  while (in.More(limit, "stat_metadata entry")) {
    uint32_t field;
    int wire;
    if (!in.ReadTag(&field, &wire, "stat_metadata entry")) return false;
    uint64_t value;
    if (field == 1 && wire == kVarint) {
      if (!in.ReadVarint(&value, "stat_metadata key")) return false;
      key = static_cast<int64_t>(value);
      has_key = true;
      continue;
    }
    if (field != 2 || wire != kLengthDelimited) {
      if (!in.SkipField(wire, limit, "stat_metadata field", "stat_metadata entry")) return false;
      continue;
    }
    uint64_t end;
    if (!in.ReadLength(limit, &end, "XStatMetadata", "stat_metadata entry")) return false;
    while (in.More(end, "XStatMetadata")) {  // id = 1, name = 2, description = 3
      if (!in.ReadTag(&field, &wire, "XStatMetadata")) return false;
      if (field == 1 && wire == kVarint) {
        if (!in.ReadVarint(&value, "XStatMetadata.id")) return false;
        value_id = static_cast<int64_t>(value);
      } else if (field == 2 && wire == kLengthDelimited) {
        uint64_t name_end;
        if (!in.ReadLength(end, &name_end, "XStatMetadata.name", "XStatMetadata")) return false;
        if (!in.ReadBytes(name_end - in.Offset(), in.name_cap(), &name, "XStatMetadata.name")) {
          return false;
        }
      } else if (!in.SkipField(wire, end, "XStatMetadata field", "XStatMetadata")) {
        return false;
      }
    }
    if (!in.ok()) return false;
  }
  if (!in.ok()) return false;
  plane->stat_names[has_key ? key : value_id] = plane->strings.Intern(name);
  return true;
}

}  // namespace fleetprof::analysis
