#pragma once
// Interns the strings of a trace (event names, device ids, thread keys) so that per-event
// records hold a 32-bit id instead of a string: memory grows with the number of distinct
// names, not with the number of events or the size of the text.

#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/hash/hash.h"
#include "absl/strings/string_view.h"

namespace fleetprof::analysis {

using NameId = uint32_t;

class NameTable {
 public:
  NameTable() = default;
  NameTable(const NameTable&) = delete;
  NameTable& operator=(const NameTable&) = delete;
  NameTable(NameTable&&) = default;
  NameTable& operator=(NameTable&&) = default;

  // Returns the id of `s`, adding it on first sight. Ids are dense, starting at 0.
  NameId Intern(std::string_view s);
  // The id of `s` when it was interned; nullopt otherwise (adds nothing).
  std::optional<NameId> Find(std::string_view s) const {
    auto it = ids_.find(s);
    return it == ids_.end() ? std::nullopt : std::optional<NameId>(it->second);
  }
  // REQUIRES: id was returned by Intern. The view lives as long as the table.
  std::string_view Get(NameId id) const { return names_[id]; }
  size_t size() const { return names_.size(); }
  // Bytes of all distinct names together (what the trace limit --max_trace_name_mb counts).
  size_t bytes() const { return bytes_; }

 private:
  // Copies `s` into arena memory that never moves.
  std::string_view Store(std::string_view s);

  static constexpr size_t kArenaBlockBytes = 64 << 10;
  std::vector<std::unique_ptr<char[]>> blocks_;  // shared by short strings
  std::vector<std::unique_ptr<char[]>> large_;   // one per long string
  size_t block_used_ = kArenaBlockBytes;         // forces a first block on first Store
  size_t bytes_ = 0;
  std::vector<std::string_view> names_;
  // Debian's absl has a string_view of its own, and hashes std::string_view through std::hash
  // (a slow byte hash: 3% of a large trace's analysis); its own hash of the same bytes is faster.
  struct Hash {
    size_t operator()(std::string_view s) const {
      return absl::Hash<absl::string_view>()(absl::string_view(s.data(), s.size()));
    }
  };
  absl::flat_hash_map<std::string_view, NameId, Hash> ids_;
};

}  // namespace fleetprof::analysis
