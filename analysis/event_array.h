#pragma once
// A growable array of a trace's events (trivially copyable records) in a memory mapping of
// its own. It grows in place: mremap moves page tables, not bytes, so the millions of events
// of a large trace never exist twice while the array grows (a std::vector copies them into
// a buffer twice the size), and the memory it gives back goes to the kernel instead of
// staying in a malloc arena (unless a server keeps some for its next traces: see
// KeepFreedEventMemory). Pages never written cost nothing, so capacity is cheap.
// The part of std::vector's interface the analysis uses.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <new>
#include <type_traits>

namespace fleetprof::analysis {

// A long-running process (the server) may keep the mappings of freed event arrays, up to
// `bytes` in all, for the next arrays to take. Every page of a new mapping is a page fault when
// first written, and in a VM that costs some 10 µs: the 9 MB of events of a 54 MB trace were a
// tenth of its analysis, paid again by every upload. A kept mapping is written over instead.
// 0 (the default, and what a one-shot `fleetprof analyze` keeps) gives every mapping back to
// the kernel at once. Mappings under 1 MiB are never kept: faulting them in is cheap. An array
// takes a kept mapping of at most 4 times the room it needs, copying its events over when it
// grows into one: a small array does not take the mapping a large one would have filled.
void KeepFreedEventMemory(size_t bytes);
// Gives every kept mapping back to the kernel (before large one-off work).
void ReleaseKeptEventMemory();
// What is kept now, for tests and metrics.
size_t KeptEventMemoryBytes();

// The untyped mapping under EventArray: `capacity` bytes at `data`, none before the first Grow.
class MappedBytes {
 public:
  MappedBytes() = default;
  MappedBytes(const MappedBytes&) = delete;
  MappedBytes& operator=(const MappedBytes&) = delete;
  MappedBytes(MappedBytes&& other) noexcept { Swap(other); }
  MappedBytes& operator=(MappedBytes&& other) noexcept;
  ~MappedBytes();

  // At least `bytes` of capacity, the first `used` bytes kept. Throws std::bad_alloc when the
  // kernel refuses, as an allocator would.
  void Grow(size_t bytes, size_t used);
  void Release();
  // Gives the pages wholly below byte `bytes` back to the kernel; they read as zeros after.
  void Discard(size_t bytes);
  void Swap(MappedBytes& other) noexcept;

  char* data() const { return data_; }
  size_t capacity() const { return capacity_; }

 private:
  char* data_ = nullptr;
  size_t capacity_ = 0;
};

template <typename T>
class EventArray {
  static_assert(std::is_trivially_copyable_v<T> && std::is_trivially_destructible_v<T>);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  EventArray() = default;
  EventArray(std::initializer_list<T> items) { append_range(items); }
  EventArray(const EventArray& other) { append_range(other); }
  EventArray& operator=(const EventArray& other) {
    if (this != &other) {
      clear();
      append_range(other);
    }
    return *this;
  }
  EventArray(EventArray&& other) noexcept { swap(other); }
  EventArray& operator=(EventArray&& other) noexcept {
    EventArray gone(static_cast<EventArray&&>(other));
    swap(gone);
    return *this;
  }

  void push_back(const T& item) {
    if (size_ == capacity()) reserve(size_ + 1);
    data()[size_++] = item;
  }
  // Appends every item of `items`, which must not be this array.
  template <typename Range>
  void append_range(const Range& items) {
    for (const T& item : items) push_back(item);
  }
  void reserve(size_t n) {
    if (n > capacity()) {
      if (n > SIZE_MAX / sizeof(T)) throw std::bad_alloc();
      bytes_.Grow(n * sizeof(T), size_ * sizeof(T));
    }
  }
  void clear() { size_ = 0; }
  // Gives the memory of the whole pages below item `n` back to the kernel, for an array read
  // front to back once and then dropped (two readers' events joined): those items read as
  // zeros after.
  void DiscardBefore(size_t n) { bytes_.Discard(std::min(n, size_) * sizeof(T)); }
  void swap(EventArray& other) noexcept {
    bytes_.Swap(other.bytes_);
    const size_t n = size_;
    size_ = other.size_;
    other.size_ = n;
  }

  T* data() { return reinterpret_cast<T*>(bytes_.data()); }
  const T* data() const { return reinterpret_cast<const T*>(bytes_.data()); }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  size_t capacity() const { return bytes_.capacity() / sizeof(T); }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }

 private:
  MappedBytes bytes_;
  size_t size_ = 0;
};

}  // namespace fleetprof::analysis
