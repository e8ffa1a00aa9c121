#include "analysis/event_array.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"

namespace fleetprof::analysis {
namespace {

// The first mapping of an array; after it, each growth doubles. A small trace's arrays stay
// within one mapping of a few pages, of which only the written ones are ever resident.
constexpr size_t kFirstBytes = size_t{64} << 10;

size_t PageRounded(size_t bytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  if (bytes > SIZE_MAX - page) throw std::bad_alloc();
  return (bytes + page - 1) / page * page;
}

constexpr size_t kSmallestKept = size_t{1} << 20;

// Freed mappings kept for reuse (KeepFreedEventMemory): few (a trace has two arrays), taken
// and given at an array's start, growth and end only.
class KeptMappings {
 public:
  using Mapping = std::pair<char*, size_t>;

  void SetLimit(size_t bytes) {
    std::vector<Mapping> over;
    {
      absl::MutexLock lock(&mu_);
      limit_ = bytes;
      // The largest go first, until what is kept fits.
      std::sort(kept_.begin(), kept_.end(), [](const Mapping& a, const Mapping& b) { return a.second < b.second; });
      while (TotalLocked() > limit_) {
        over.push_back(kept_.back());
        kept_.pop_back();
      }
    }
    Unmap(over);  // outside the lock: other arrays need not wait for the kernel
  }
  void ReleaseAll() {
    std::vector<Mapping> all;
    {
      absl::MutexLock lock(&mu_);
      all.swap(kept_);
    }
    Unmap(all);
  }
  size_t Total() {
    absl::MutexLock lock(&mu_);
    return TotalLocked();
  }

  // The smallest kept mapping of `bytes` to 4 times as many, or {nullptr, 0}.
  Mapping Take(size_t bytes) {
    absl::MutexLock lock(&mu_);
    auto best = kept_.end();
    for (auto it = kept_.begin(); it != kept_.end(); ++it) {
      if (it->second >= bytes && it->second / 4 <= bytes && (best == kept_.end() || it->second < best->second)) best = it;
    }
    if (best == kept_.end()) return {nullptr, 0};
    const Mapping taken = *best;
    kept_.erase(best);
    return taken;
  }
  // Keeps the mapping if there is room for it; else it is the caller's to unmap. Never throws:
  // it runs where an array is destroyed.
  bool Give(char* data, size_t bytes) noexcept {
    if (bytes < kSmallestKept) return false;
    absl::MutexLock lock(&mu_);
    if (bytes > limit_ - std::min(limit_, TotalLocked())) return false;
    try {
      kept_.emplace_back(data, bytes);
    } catch (const std::bad_alloc&) {
      return false;
    }
    return true;
  }

 private:
  size_t TotalLocked() const ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    size_t total = 0;
    for (const Mapping& m : kept_) total += m.second;
    return total;
  }
  static void Unmap(const std::vector<Mapping>& mappings) {
    for (const auto& [data, bytes] : mappings) ::munmap(data, bytes);
  }

  absl::Mutex mu_;
  // The mappings kept (a few: each of 1 MiB or more, together within limit_), and the limit.
  std::vector<Mapping> kept_ ABSL_GUARDED_BY(mu_);
  size_t limit_ ABSL_GUARDED_BY(mu_) = 0;
};

KeptMappings& Kept() {
  static KeptMappings* kept = new KeptMappings;  // never destroyed: arrays may outlive statics
  return *kept;
}

}  // namespace

void KeepFreedEventMemory(size_t bytes) { Kept().SetLimit(bytes); }
void ReleaseKeptEventMemory() { Kept().ReleaseAll(); }
size_t KeptEventMemoryBytes() { return Kept().Total(); }

MappedBytes& MappedBytes::operator=(MappedBytes&& other) noexcept {
  MappedBytes gone(std::move(other));
  Swap(gone);
  return *this;
}

MappedBytes::~MappedBytes() { Release(); }

void MappedBytes::Discard(size_t bytes) {
  const size_t page = static_cast<size_t>(::sysconf(_SC_PAGESIZE));
  const size_t whole = std::min(bytes, capacity_) / page * page;
  if (whole > 0) ::madvise(data_, whole, MADV_DONTNEED);
}

void MappedBytes::Release() {
  if (data_ != nullptr && !Kept().Give(data_, capacity_)) ::munmap(data_, capacity_);
  data_ = nullptr;
  capacity_ = 0;
}

void MappedBytes::Swap(MappedBytes& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(capacity_, other.capacity_);
}

void MappedBytes::Grow(size_t bytes, size_t used) {
  if (bytes <= capacity_) return;
  size_t wanted = std::max(bytes, capacity_ == 0 ? kFirstBytes : capacity_);
  if (capacity_ != 0 && capacity_ <= SIZE_MAX / 2) wanted = std::max(bytes, capacity_ * 2);
  wanted = PageRounded(wanted);
  if (const auto [kept, kept_bytes] = Kept().Take(wanted); kept != nullptr) {
    // Copying what is used costs less than faulting in the pages it would grow into.
    if (data_ != nullptr) {
      std::memcpy(kept, data_, std::min(used, capacity_));
      Release();
    }
    data_ = kept;
    capacity_ = kept_bytes;
    return;
  }
  void* grown;
  if (data_ == nullptr) {
    grown = ::mmap(nullptr, wanted, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  } else {
    grown = ::mremap(data_, capacity_, wanted, MREMAP_MAYMOVE);
  }
  if (grown == MAP_FAILED) throw std::bad_alloc();
  data_ = static_cast<char*>(grown);
  capacity_ = wanted;
}

}  // namespace fleetprof::analysis
