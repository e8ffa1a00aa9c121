#include "analysis/event_array.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <new>
#include <utility>

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

}  // namespace

MappedBytes& MappedBytes::operator=(MappedBytes&& other) noexcept {
  MappedBytes gone(std::move(other));
  Swap(gone);
  return *this;
}

MappedBytes::~MappedBytes() { Release(); }

void MappedBytes::Release() {
  if (data_ != nullptr) ::munmap(data_, capacity_);
  data_ = nullptr;
  capacity_ = 0;
}

void MappedBytes::Swap(MappedBytes& other) noexcept {
  std::swap(data_, other.data_);
  std::swap(capacity_, other.capacity_);
}

void MappedBytes::Grow(size_t bytes) {
  if (bytes <= capacity_) return;
  size_t wanted = std::max(bytes, capacity_ == 0 ? kFirstBytes : capacity_);
  if (capacity_ != 0 && capacity_ <= SIZE_MAX / 2) wanted = std::max(bytes, capacity_ * 2);
  wanted = PageRounded(wanted);
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
