#include "jobtrace/clock_alignment.h"

#include <algorithm>
#include <cstdlib>
#include <limits>

#include "analysis/trace_events.h"

namespace fleetprof::jobtrace {
namespace {

constexpr size_t kShiftSamplePairs = 256;  // pairs compared per candidate shift
constexpr size_t kMinPairs = 5;            // fewer (when both sides have more) is no match
constexpr int64_t kBetterFactor = 4;       // how much better a shift must agree than shift 0

// The lower median; reorders `v`. REQUIRES: !v.empty().
int64_t Median(std::vector<int64_t>& v) {
  auto mid = v.begin() + static_cast<std::ptrdiff_t>((v.size() - 1) / 2);
  std::nth_element(v.begin(), mid, v.end());
  return *mid;
}

int64_t MedianAbsoluteDeviation(const std::vector<int64_t>& v, int64_t median) {
  std::vector<int64_t> dev;
  dev.reserve(v.size());
  for (int64_t x : v) dev.push_back(std::llabs(x - median));  // |x| < 2^62 each: no overflow
  return Median(dev);
}

// a.end - b.end, or false when it would not fit comfortably in int64.
bool EndDifference(const Collective& a, const Collective& b, int64_t* d) {
  const __int128 diff = static_cast<__int128>(a.end_ns) - b.end_ns;
  if (!analysis::WithinTickBound(diff)) return false;
  *d = static_cast<int64_t>(diff);
  return true;
}

// End differences of a[i] and b[i + shift] for up to `max_pairs` pairs.
std::vector<int64_t> Differences(const Collective* a, size_t na, const Collective* b, size_t nb, int shift,
                                 size_t max_pairs) {
  std::vector<int64_t> out;
  const size_t first = shift < 0 ? static_cast<size_t>(-shift) : 0;
  for (size_t i = first; i < na && out.size() < max_pairs; ++i) {
    const int64_t j = static_cast<int64_t>(i) + shift;
    if (j >= static_cast<int64_t>(nb)) break;
    int64_t d;
    if (EndDifference(a[i], b[j], &d)) out.push_back(d);
  }
  return out;
}

}  // namespace

absl::flat_hash_map<uint32_t, std::pair<size_t, size_t>> SpansByKey(const std::vector<Collective>& events) {
  absl::flat_hash_map<uint32_t, std::pair<size_t, size_t>> spans;
  for (size_t i = 0; i < events.size();) {
    const uint32_t key = CollectiveKey(events[i]);
    size_t j = i;
    while (j < events.size() && CollectiveKey(events[j]) == key) ++j;
    spans[key] = {i, j};
    i = j;
  }
  return spans;
}

std::vector<RankAlignment> AlignByCollectives(const std::vector<const ProfileCollectives*>& ranks) {
  std::vector<RankAlignment> out(ranks.size());
  if (ranks.empty()) return out;
  const ProfileCollectives& ref = *ranks[0];
  const auto ref_spans = SpansByKey(ref.events);
  out[0].aligned = true;
  out[0].uncertainty_ns = 0;
  for (size_t r = 1; r < ranks.size(); ++r) {
    const ProfileCollectives& rank = *ranks[r];
    std::vector<int64_t> all;
    for (const auto& [key, span] : SpansByKey(rank.events)) {
      auto ref_span = ref_spans.find(key);
      if (ref_span == ref_spans.end()) continue;
      const Collective* a = ref.events.data() + ref_span->second.first;
      const size_t na = ref_span->second.second - ref_span->second.first;
      const Collective* b = rank.events.data() + span.first;
      const size_t nb = span.second - span.first;
      const size_t need = std::min({kMinPairs, na, nb});
      int best_shift = 0;
      int64_t best_mad = std::numeric_limits<int64_t>::max();
      int64_t zero_mad = std::numeric_limits<int64_t>::max();
      for (int shift = -kMaxSequenceShift; shift <= kMaxSequenceShift; ++shift) {
        std::vector<int64_t> d = Differences(a, na, b, nb, shift, kShiftSamplePairs);
        if (d.empty() || d.size() < need) continue;
        std::vector<int64_t> copy = d;
        const int64_t mad = MedianAbsoluteDeviation(d, Median(copy));
        if (shift == 0) zero_mad = mad;
        if (mad < best_mad) best_mad = mad, best_shift = shift;
      }
      if (best_mad == std::numeric_limits<int64_t>::max()) continue;  // too few instances
      // Evenly spaced collectives agree at several shifts: keep 0 unless another is far better.
      const int shift = zero_mad != std::numeric_limits<int64_t>::max() &&
                                !(best_mad < zero_mad / kBetterFactor)
                            ? 0
                            : best_shift;
      out[r].shifts[key] = shift;
      std::vector<int64_t> d = Differences(a, na, b, nb, shift, std::numeric_limits<size_t>::max());
      all.insert(all.end(), d.begin(), d.end());
    }
    if (all.empty()) continue;
    std::vector<int64_t> copy = all;
    out[r].offset_ns = Median(copy);
    out[r].uncertainty_ns = std::max({MedianAbsoluteDeviation(all, out[r].offset_ns), ref.resolution_ns,
                                      rank.resolution_ns});
    out[r].matched = static_cast<int64_t>(all.size());
    out[r].aligned = true;
  }
  return out;
}

}  // namespace fleetprof::jobtrace
