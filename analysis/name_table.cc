#include "analysis/name_table.h"

#include <cstring>

namespace fleetprof::analysis {

NameId NameTable::Intern(std::string_view s) {
  auto it = ids_.find(s);
  if (it != ids_.end()) return it->second;
  std::string_view stored = Store(s);
  bytes_ += s.size();
  NameId id = static_cast<NameId>(names_.size());
  names_.push_back(stored);
  ids_.emplace(stored, id);
  return id;
}

std::string_view NameTable::Store(std::string_view s) {
  if (s.empty()) return std::string_view();
  // Long strings get a block of their own so that a block is never mostly wasted.
  if (s.size() > kArenaBlockBytes / 4) {
    large_.push_back(std::make_unique<char[]>(s.size()));
    std::memcpy(large_.back().get(), s.data(), s.size());
    return std::string_view(large_.back().get(), s.size());
  }
  if (block_used_ + s.size() > kArenaBlockBytes) {
    blocks_.push_back(std::make_unique<char[]>(kArenaBlockBytes));
    block_used_ = 0;
  }
  char* data = blocks_.back().get() + block_used_;
  std::memcpy(data, s.data(), s.size());
  block_used_ += s.size();
  return std::string_view(data, s.size());
}

}  // namespace fleetprof::analysis
