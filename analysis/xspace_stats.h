#pragma once
// XStats of XSpace events and event metadata, held in a compact form until the plane says
// what they are. An XPlane names its stats in `stat_metadata`, which writers serialise after
// the lines and the event metadata, so while events stream by a stat is only an id and a
// value; the XLA op view and the allocator timeline keep those (few, per group or per
// candidate event) and resolve names once the plane has ended.

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "analysis/name_table.h"
#include "analysis/proto_reader.h"

namespace fleetprof::analysis {

// Which member of XStat's value oneof was set (bytes_value is never needed and dropped).
enum class StatKind : uint8_t { kInt64, kUint64, kDouble, kString, kRef };

struct RawStat {
  int64_t id = 0;  // XStat.metadata_id
  // kInt64/kUint64: the value's bits; kDouble: the double's bits; kRef: ref_value (a
  // stat_metadata id whose name is the text); kString: an id in PlaneStats::strings, or
  // while in a StatScratch, an index into its texts.
  int64_t value = 0;
  StatKind kind = StatKind::kInt64;

  bool IsInteger() const { return kind == StatKind::kInt64 || kind == StatKind::kUint64; }
  bool IsText() const { return kind == StatKind::kString || kind == StatKind::kRef; }
};

// The stats of the event being read, reused from event to event so that reading them
// allocates nothing once warm.
struct StatScratch {
  std::vector<RawStat> stats;
  std::vector<std::string> texts;  // str_values; only the first `used_texts` are current
  size_t used_texts = 0;

  void Clear() {
    stats.clear();
    used_texts = 0;
  }
  bool HasInteger() const;
};

// What one XPlane message says about its stats and event metadata.
struct PlaneStats {
  NameTable strings;                                // str_values kept, stat names
  absl::flat_hash_map<int64_t, NameId> stat_names;  // stat_metadata id -> name
  // Stats of event metadata (kept for device planes only): where XLA puts per-op facts.
  absl::flat_hash_map<int64_t, std::vector<RawStat>> metadata_stats;

  void Clear();
  // "" when the plane has no stat_metadata entry `id`.
  std::string_view StatName(int64_t id) const;
  // The first stat named `name` in `stats`, or null.
  const RawStat* Find(const std::vector<RawStat>& stats, std::string_view name) const;
  // A stat as text: str_value, the name a ref_value points to, or an integer in decimal.
  std::string Text(const RawStat& stat) const;
  // Turns the scratch's str_values into ids in `strings` (kString values become NameIds).
  void InternTexts(const StatScratch& scratch, std::vector<RawStat>* out);
};

// Integer sum of integer and double stat values: exact for integers, doubles rounded once.
struct StatSum {
  __int128 integer = 0;
  double real = 0;
  void Add(const RawStat& stat);
  __int128 Exact() const;  // the doubles rounded; doubles beyond int64 saturate
};

// `value` clamped to int64.
int64_t ClampToInt64(__int128 value);

// Reads one XStat message ending at `limit` into scratch->stats (strings into its texts,
// cut to in.name_cap()). bytes_value stats and stats without a value are dropped.
bool ReadXStat(ProtoReader& in, uint64_t limit, StatScratch* scratch);

// Reads one `event_metadata` map entry ending at `limit`: its id (the map key, else the
// value's id), name (cut to in.name_cap()) and, when `stats` is not null, its stats. More
// than `max_stats` stats fail the read (the trace limit --max_event_stats).
bool ReadEventMetadataEntryFields(ProtoReader& in, uint64_t limit, int64_t* id, std::string* name,
                                  StatScratch* stats, int64_t max_stats);

// Reads one `stat_metadata` map entry ending at `limit` into plane->stat_names.
bool ReadStatMetadataEntry(ProtoReader& in, uint64_t limit, PlaneStats* plane);

}  // namespace fleetprof::analysis
