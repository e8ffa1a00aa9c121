#include "analysis/op_breakdown.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "absl/container/flat_hash_map.h"
#include "analysis/host_nesting.h"
#include "common/checked_math.h"

namespace fleetprof::analysis {
namespace {

struct OpAccumulator {
  int64_t count = 0;
  Ticks total = 0;
  Ticks self = 0;
  Ticks device_self = 0;
  Ticks device_total = 0;
};

constexpr NameId kNoScope = ~NameId{0};

// An open event on the walk's stack.
struct Frame {
  uint32_t event;
  NameId scope = kNoScope;  // the innermost scope enclosing the event (the event itself if one)
  bool is_scope = false;
  Ticks children_dur = 0;
  Ticks children_device_total = 0;
};

// Which host events are scopes (OpViews::scopes), decided once per name.
class ScopeTest {
 public:
  explicit ScopeTest(const TraceEvents& events) : events_(events), legacy_(events.names.size(), -1) {
    for (NameId id = 0; id < events.names.size(); ++id) {
      const std::string_view name = events.names.Get(id);
      if (name == "user_annotation") annotation_ = id;
      if (name.empty()) no_category_ = id;
    }
  }
  bool operator()(const HostEvent& e) {
    const std::string_view name = events_.names.Get(e.name);
    if (e.category == annotation_) return !name.starts_with("ProfilerStep#");
    if (e.category != no_category_) return false;
    // PyTorch's legacy profiler (torch without Kineto) writes no categories: there a scope is
    // an event that is not a dispatcher op ("ns::op"), a step, or an autograd node
    // ("MulBackward0").
    int8_t& known = legacy_[e.name];
    if (known < 0) known = IsLegacyScopeName(name) ? 1 : 0;
    return known == 1;
  }

 private:
  static bool IsLegacyScopeName(std::string_view name) {
    if (name.empty() || name.find("::") != name.npos || name.starts_with("ProfilerStep#")) return false;
    size_t digits = name.size();
    while (digits > 0 && name[digits - 1] >= '0' && name[digits - 1] <= '9') --digits;
    return !name.substr(0, digits).ends_with("Backward");
  }

  const TraceEvents& events_;
  NameId annotation_ = kNoScope;
  NameId no_category_ = kNoScope;
  std::vector<int8_t> legacy_;  // by name id: -1 unknown
};

// Sums of durations saturate: a hostile trace can make them exceed int64 (times cannot).
void AddTo(Ticks* sum, Ticks value) { *sum = SaturatingAdd(*sum, value); }

class OpWalk {
 public:
  explicit OpWalk(const TraceEvents& events)
      : events_(events), ops_(events.names.size()), scopes_(events.names.size()), is_scope_(events) {
    // One global join: device time launched per correlation id. Sized once: growing it by
    // rehashing was a sixth of this view's time on a large trace.
    launched_.reserve(events.activity.size());
    for (const DeviceActivity& a : events.activity) {
      if (a.has_correlation) AddTo(&launched_[a.correlation], a.dur);
    }
  }

  // Walks one thread's events, `order` holding their indices sorted by start, then
  // duration descending (file order kept for ties).
  void WalkThread(const std::vector<uint32_t>& order, size_t begin, size_t end) {
    stack_.clear();
    for (size_t i = begin; i < end; ++i) {
      const HostEvent& e = events_.host[order[i]];
      // An event is open only while its end is after the newcomer's start, so an event
      // starting where another ends is its sibling and a zero-duration one has no children.
      while (!stack_.empty() && End(stack_.back().event) <= e.start) Close();
      NameId scope = kNoScope;
      if (!stack_.empty()) {
        Frame& parent = stack_.back();
        AddTo(&parent.children_dur, e.dur);
        if (e.is_runtime) AddTo(&ops_[events_.host[parent.event].name].device_self, Launched(e));
        scope = parent.scope;
      }
      const bool opens_scope = is_scope_(e);
      if (opens_scope) scope = e.name;
      if (e.is_runtime && scope != kNoScope) AddTo(&scopes_[scope].device_self, Launched(e));
      stack_.push_back(Frame{order[i], scope, opens_scope});
    }
    while (!stack_.empty()) Close();
  }

  std::vector<OpSummary> Ops() const { return Rows(ops_); }
  std::vector<OpSummary> Scopes() const { return Rows(scopes_); }

 private:
  std::vector<OpSummary> Rows(const std::vector<OpAccumulator>& accumulators) const {
    std::vector<OpSummary> rows;
    for (size_t id = 0; id < accumulators.size(); ++id) {
      const OpAccumulator& op = accumulators[id];
      if (op.count == 0) continue;
      OpSummary row;
      row.name = std::string(events_.names.Get(static_cast<NameId>(id)));
      row.count = op.count;
      row.total_ns = events_.DurationNs(op.total);
      row.self_ns = events_.DurationNs(op.self);
      row.device_self_ns = events_.DurationNs(op.device_self);
      row.device_total_ns = events_.DurationNs(op.device_total);
      rows.push_back(std::move(row));
    }
    std::sort(rows.begin(), rows.end(), [](const OpSummary& a, const OpSummary& b) {
      return a.self_ns != b.self_ns ? a.self_ns > b.self_ns : a.name < b.name;
    });
    return rows;
  }

  Ticks End(uint32_t index) const { return events_.host[index].start + events_.host[index].dur; }

  Ticks Launched(const HostEvent& e) const {
    if (!e.has_correlation) return 0;
    auto it = launched_.find(e.correlation);
    return it == launched_.end() ? 0 : it->second;
  }

  // Pops the top event and books it: self time may be negative when a child outlives it.
  void Close() {
    Frame frame = stack_.back();
    stack_.pop_back();
    const HostEvent& e = events_.host[frame.event];
    OpAccumulator& op = ops_[e.name];
    ++op.count;
    const Ticks self = SaturatingSub(e.dur, frame.children_dur);
    AddTo(&op.total, e.dur);
    AddTo(&op.self, self);
    const Ticks device_total =
        SaturatingAdd(e.is_runtime ? Launched(e) : 0, frame.children_device_total);
    AddTo(&op.device_total, device_total);
    if (!stack_.empty()) AddTo(&stack_.back().children_device_total, device_total);
    if (frame.scope == kNoScope) return;
    OpAccumulator& scope = scopes_[frame.scope];
    AddTo(&scope.self, self);
    if (frame.scope == e.name && frame.is_scope) {
      ++scope.count;
      AddTo(&scope.total, e.dur);
      AddTo(&scope.device_total, device_total);
    }
  }

  const TraceEvents& events_;
  std::vector<OpAccumulator> ops_;     // indexed by NameId
  std::vector<OpAccumulator> scopes_;  // indexed by the scope's NameId
  ScopeTest is_scope_;
  absl::flat_hash_map<int64_t, Ticks> launched_;
  std::vector<Frame> stack_;
};

}  // namespace

std::vector<OpSummary> OpBreakdown(const TraceEvents& events) { return OpAndScopeBreakdown(events).ops; }

OpViews OpAndScopeBreakdown(const TraceEvents& events) {
  if (events.host.empty()) return {};
  OpWalk walk(events);
  ForEachThreadInNestingOrder(events, [&walk](const std::vector<uint32_t>& order, size_t begin, size_t end) {
    walk.WalkThread(order, begin, end);
  });
  return OpViews{walk.Ops(), walk.Scopes()};
}

}  // namespace fleetprof::analysis
