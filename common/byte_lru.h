#pragma once
// A map from id to an immutable value, bounded by the values' bytes: the least recently used
// goes first. The server's caches of loaded timelines and parsed summaries are both this.

#include <cstddef>
#include <list>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/synchronization/mutex.h"

namespace fleetprof {

template <typename T>
class ByteLru {
 public:
  explicit ByteLru(size_t max_bytes) : max_bytes_(max_bytes) {}

  // The value of `id` (now the most recent), or nullptr.
  std::shared_ptr<const T> Find(const std::string& id) {
    absl::MutexLock lock(&mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return nullptr;
    lru_.splice(lru_.begin(), lru_, it->second);
    return it->second->value;
  }

  // Keeps `value` (of `bytes`) under `id` unless another caller did first; returns the kept one.
  // The newest entry always stays, even when it alone is over the bound.
  std::shared_ptr<const T> Insert(const std::string& id, std::shared_ptr<const T> value, size_t bytes) {
    absl::MutexLock lock(&mu_);
    if (auto it = by_id_.find(id); it != by_id_.end()) return it->second->value;
    lru_.push_front(Entry{id, std::move(value), bytes});
    by_id_[id] = lru_.begin();
    bytes_ += bytes;
    while (bytes_ > max_bytes_ && lru_.size() > 1) {
      bytes_ -= lru_.back().bytes;
      by_id_.erase(lru_.back().id);
      lru_.pop_back();
    }
    return lru_.front().value;
  }

  void Clear() {
    absl::MutexLock lock(&mu_);
    lru_.clear();
    by_id_.clear();
    bytes_ = 0;
  }

  void Erase(const std::string& id) {
    absl::MutexLock lock(&mu_);
    auto it = by_id_.find(id);
    if (it == by_id_.end()) return;
    bytes_ -= it->second->bytes;
    lru_.erase(it->second);
    by_id_.erase(it);
  }

 private:
  struct Entry {
    std::string id;
    std::shared_ptr<const T> value;
    size_t bytes;
  };
  const size_t max_bytes_;
  absl::Mutex mu_;
  std::list<Entry> lru_ ABSL_GUARDED_BY(mu_);  // front: most recent
  absl::flat_hash_map<std::string, typename std::list<Entry>::iterator> by_id_ ABSL_GUARDED_BY(mu_);
  size_t bytes_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace fleetprof
