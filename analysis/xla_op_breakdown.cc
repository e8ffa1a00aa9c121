#include "analysis/xla_op_breakdown.h"

#include <algorithm>

namespace fleetprof::analysis {
namespace {

void PutVarint(std::string* out, uint64_t v) {
  while (v >= 0x80) {
    out->push_back(static_cast<char>(v | 0x80));
    v >>= 7;
  }
  out->push_back(static_cast<char>(v));
}

std::optional<double> PerSecond(__int128 amount, __int128 total_ps) {
  if (total_ps <= 0) return std::nullopt;
  return static_cast<double>(amount) / (static_cast<double>(total_ps) / 1e12);
}

}  // namespace

void XlaOpCollector::Row::Merge(const Row& other) {
  if (category.empty()) category = other.category;
  count += other.count;
  total_ps += other.total_ps;
  has_flops |= other.has_flops;
  flops += other.flops;
  has_bytes |= other.has_bytes;
  bytes += other.bytes;
}

XlaOpCollector::Tag XlaOpCollector::TagOf(Line line, Tag otherwise) {
  if (line == Line::kStream) return Tag::kStream;
  if (line == Line::kXlaOps) return Tag::kXlaOps;
  return otherwise;
}

size_t XlaOpCollector::AddEvent(Line line, int64_t metadata_id, int64_t dur_ps,
                                const StatScratch& stats, PlaneStats* plane) {
  size_t kept = 0;
  // The key: line (a pending line gets its own), metadata id, then the text stats in id
  // order, strings by their interned id so that equal texts make equal keys.
  texts_.clear();
  for (const RawStat& s : stats.stats) {
    if (!s.IsText()) continue;
    RawStat t = s;
    if (t.kind == StatKind::kString) {
      t.value = plane->strings.Intern(stats.texts[static_cast<size_t>(s.value)]);
    }
    texts_.push_back(t);
  }
  std::sort(texts_.begin(), texts_.end(), [](const RawStat& a, const RawStat& b) {
    return a.id != b.id ? a.id < b.id : a.value < b.value;
  });
  key_.clear();
  PutVarint(&key_, line == Line::kUnknown ? 2 + line_seq_ : static_cast<uint64_t>(line));
  PutVarint(&key_, static_cast<uint64_t>(metadata_id));
  for (const RawStat& t : texts_) {
    PutVarint(&key_, static_cast<uint64_t>(t.id));
    key_.push_back(static_cast<char>(t.kind));
    PutVarint(&key_, static_cast<uint64_t>(t.value));
  }
  auto [it, inserted] = index_.try_emplace(key_, static_cast<uint32_t>(groups_.size()));
  if (inserted) {
    Group& g = groups_.emplace_back();
    g.metadata_id = metadata_id;
    g.tag = TagOf(line, Tag::kPending);
    g.texts = texts_;
    kept += texts_.size();
    if (line == Line::kUnknown) pending_.push_back(it->second);
  }
  const uint32_t group = it->second;
  Group& g = groups_[group];
  ++g.count;
  g.total_ps += dur_ps;
  for (const RawStat& s : stats.stats) {
    if (s.IsText()) continue;
    auto [at, added] = sum_index_.try_emplace({group, s.id}, static_cast<uint32_t>(g.sums.size()));
    if (added) {
      g.sums.emplace_back().stat_id = s.id;
      ++kept;
    }
    Sum& sum = g.sums[at->second];
    ++sum.events;
    sum.sum.Add(s);
  }
  return kept;
}

void XlaOpCollector::EndLine(Line line) {
  for (uint32_t i : pending_) groups_[i].tag = TagOf(line, Tag::kDropped);
  pending_.clear();
}

bool XlaOpCollector::Resolve(const Group& g, const PlaneStats& plane,
                             const std::function<std::string_view(int64_t)>& event_name,
                             RowKey* key, Row* row) const {
  static const std::vector<RawStat> kNone;
  auto meta_it = plane.metadata_stats.find(g.metadata_id);
  const std::vector<RawStat>& meta =
      meta_it == plane.metadata_stats.end() ? kNone : meta_it->second;
  // The event's own stat wins over its metadata's, as in XProf's stat lookup.
  auto text = [&](std::string_view stat) -> std::string {
    if (const RawStat* s = plane.Find(g.texts, stat)) return plane.Text(*s);
    if (const RawStat* s = plane.Find(meta, stat)) return plane.Text(*s);
    return "";
  };
  // Events without the stat take their metadata's value.
  auto numeric = [&](std::string_view stat, __int128* total) {
    bool present = false;
    int64_t with_own = 0;
    for (const Sum& s : g.sums) {
      if (plane.StatName(s.stat_id) != stat) continue;
      present = true;
      with_own += s.events;
      *total += s.sum.Exact();
    }
    const RawStat* m = plane.Find(meta, stat);
    if (m != nullptr && !m->IsText() && g.count > with_own) {
      StatSum one;
      one.Add(*m);
      *total += one.Exact() * (g.count - with_own);
      present = true;
    }
    return present;
  };
  if (g.tag == Tag::kStream) {
    key->first = text("hlo_op");
    if (key->first.empty()) return false;
  } else {
    key->first = std::string(event_name(g.metadata_id));
  }
  key->second = text("hlo_module");
  row->category = text("hlo_category");
  row->count = g.count;
  row->total_ps = g.total_ps;
  row->has_flops = numeric("flops", &row->flops);
  row->has_bytes = numeric("bytes_accessed", &row->bytes);
  return true;
}

void XlaOpCollector::FinishPlane(const std::string& plane_name, bool device_plane,
                                 bool has_stream_line, const PlaneStats& plane,
                                 const std::function<std::string_view(int64_t)>& event_name) {
  if (device_plane) {
    if (has_stream_line) planes_with_streams_.insert(plane_name);
    for (const Group& g : groups_) {
      if (g.tag != Tag::kStream && g.tag != Tag::kXlaOps) continue;
      RowKey key;
      Row row;
      if (!Resolve(g, plane, event_name, &key, &row)) continue;
      Rows& rows = g.tag == Tag::kStream ? stream_rows_ : xla_rows_[plane_name];
      rows[key].Merge(row);
      Leaves& leaves = g.tag == Tag::kStream ? stream_leaves_ : xla_leaves_[plane_name];
      auto& leaf = leaves[LeafKey{key.second, row.category, key.first, std::string(event_name(g.metadata_id))}];
      leaf.first += row.count;
      leaf.second += row.total_ps;
    }
  }
  groups_.clear();
  index_.clear();
  sum_index_.clear();
  pending_.clear();
}

std::vector<XlaOpSummary> XlaOpCollector::Finish() {
  Rows all = std::move(stream_rows_);
  for (auto& [plane, rows] : xla_rows_) {
    if (planes_with_streams_.count(plane) != 0) continue;  // derived from the kernels
    for (auto& [key, row] : rows) all[key].Merge(row);
  }
  std::vector<XlaOpSummary> result;
  result.reserve(all.size());
  for (auto& [key, row] : all) {
    XlaOpSummary op;
    op.name = key.first;
    op.module = key.second;
    op.category = row.category;
    op.count = row.count;
    op.total_ns = ClampToInt64(row.total_ps / 1000);  // durations are >= 0: truncation floors
    if (row.has_flops) {
      op.flops = ClampToInt64(row.flops);
      op.flops_per_second = PerSecond(row.flops, row.total_ps);
    }
    if (row.has_bytes) {
      op.bytes_accessed = ClampToInt64(row.bytes);
      op.bytes_accessed_per_second = PerSecond(row.bytes, row.total_ps);
    }
    result.push_back(std::move(op));
  }
  std::sort(result.begin(), result.end(), [](const XlaOpSummary& a, const XlaOpSummary& b) {
    if (a.total_ns != b.total_ns) return a.total_ns > b.total_ns;
    if (a.name != b.name) return a.name < b.name;
    return a.module < b.module;
  });
  stream_rows_.clear();
  xla_rows_.clear();
  Leaves leaves = std::move(stream_leaves_);
  for (auto& [plane, plane_leaves] : xla_leaves_) {
    if (planes_with_streams_.count(plane) != 0) continue;
    for (auto& [key, value] : plane_leaves) {
      leaves[key].first += value.first;
      leaves[key].second += value.second;
    }
  }
  kernel_leaves_.clear();
  for (const auto& [key, value] : leaves) {
    XlaKernelLeaf leaf;
    std::tie(leaf.module, leaf.category, leaf.op, leaf.kernel) = key;
    leaf.count = value.first;
    leaf.total = ClampToInt64(value.second);
    kernel_leaves_.push_back(std::move(leaf));
  }
  stream_leaves_.clear();
  xla_leaves_.clear();
  return result;
}

}  // namespace fleetprof::analysis
