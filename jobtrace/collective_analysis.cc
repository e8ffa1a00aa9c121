#include "jobtrace/collective_analysis.h"

#include <algorithm>

namespace fleetprof::jobtrace {
namespace {

using SpansOfKeys = absl::flat_hash_map<uint32_t, std::pair<size_t, size_t>>;

struct Instance {
  int64_t ref_start = 0;
  uint32_t key = 0;
  size_t ref_index = 0;  // into the reference's events
};

// One rank's part in an instance.
struct Member {
  size_t rank;
  const Collective* c;
  int64_t start, end;  // reference clock
};

// Who arrived last at an instance, and whether that is known.
struct LastArrival {
  size_t last = 0;    // index into the members
  int64_t latest = 0;  // its start
  bool known = false;  // later than the next by more than both clocks' doubt
};

// Every instance of the reference's collectives, by its start.
std::vector<Instance> ReferenceInstances(const ProfileCollectives& ref, const SpansOfKeys& ref_spans) {
  std::vector<Instance> instances;
  for (const auto& [key, span] : ref_spans) {
    for (size_t i = span.first; i < span.second; ++i) instances.push_back({ref.events[i].start_ns, key, i});
  }
  std::sort(instances.begin(), instances.end(), [](const Instance& a, const Instance& b) {
    return a.ref_start < b.ref_start || (a.ref_start == b.ref_start && a.key < b.key);
  });
  return instances;
}

// The instance on every rank that has it (the alignment's shift of its key says which), the
// reference first, on the reference's clock.
void MatchMembers(const std::vector<RankClock>& ranks, const std::vector<RankAlignment>& alignment,
                  const std::vector<SpansOfKeys>& spans, const SpansOfKeys& ref_spans, const Instance& inst,
                  std::vector<Member>* members) {
  members->clear();
  const Collective& c0 = ranks[0].collectives->events[inst.ref_index];
  members->push_back({0, &c0, c0.start_ns + ranks[0].offset_ns, c0.end_ns + ranks[0].offset_ns});
  const int64_t index_in_key = static_cast<int64_t>(inst.ref_index - ref_spans.at(inst.key).first);
  for (size_t r = 1; r < ranks.size(); ++r) {
    auto shift = alignment[r].shifts.find(inst.key);
    auto span = spans[r].find(inst.key);
    if (shift == alignment[r].shifts.end() || span == spans[r].end()) continue;
    const int64_t j = index_in_key + shift->second;
    if (j < 0 || j >= static_cast<int64_t>(span->second.second - span->second.first)) continue;
    const Collective& c = ranks[r].collectives->events[span->second.first + static_cast<size_t>(j)];
    members->push_back({r, &c, c.start_ns + ranks[r].offset_ns, c.end_ns + ranks[r].offset_ns});
  }
}

// REQUIRES: two members or more.
LastArrival FindLastArrival(const std::vector<RankClock>& ranks, const std::vector<Member>& members) {
  size_t last = 0, second = 1;
  if (members[1].start > members[0].start) std::swap(last, second);
  for (size_t m = 2; m < members.size(); ++m) {
    if (members[m].start > members[last].start) {
      second = last;
      last = m;
    } else if (members[m].start > members[second].start) {
      second = m;
    }
  }
  LastArrival arrival;
  arrival.last = last;
  arrival.latest = members[last].start;
  const int64_t margin = arrival.latest - members[second].start;
  arrival.known = margin > ranks[members[last].rank].uncertainty_ns + ranks[members[second].rank].uncertainty_ns;
  return arrival;
}

void ListInstance(const std::vector<RankClock>& ranks, const std::vector<Member>& members,
                  const LastArrival& arrival, int64_t seq, v1::CollectiveInstance* listed) {
  const ProfileCollectives& r0 = *ranks[0].collectives;
  const Collective& c0 = *members[0].c;
  listed->set_name(r0.names[c0.name]);
  listed->set_op(CollectiveOpName(c0.op));
  listed->set_seq(seq);
  if (c0.bytes >= 0) listed->set_bytes(c0.bytes);
  if (arrival.known) listed->set_last_rank(ranks[members[arrival.last].rank].rank);
  for (const Member& m : members) {
    v1::CollectiveRankTiming* timing = listed->add_ranks();
    timing->set_profile_id(ranks[m.rank].profile_id);
    timing->set_rank(ranks[m.rank].rank);
    timing->set_start_ns(m.start);
    timing->set_end_ns(m.end);
    timing->set_wait_ns(arrival.latest - m.start);
  }
}

// Matches the reference's instances across ranks: adds each to the ranks' totals, and lists
// the first `limit`.
void AnalyzeInstances(const std::vector<RankClock>& ranks, const std::vector<RankAlignment>& alignment, int limit,
                      std::vector<v1::CollectiveRankTotals>& totals, v1::JobCollectivesResponse* out) {
  const SpansOfKeys ref_spans = SpansByKey(ranks[0].collectives->events);
  std::vector<SpansOfKeys> spans(ranks.size());
  for (size_t r = 1; r < ranks.size(); ++r) spans[r] = SpansByKey(ranks[r].collectives->events);
  std::vector<Member> members;
  int64_t seq = 0;
  int64_t counted = 0;
  for (const Instance& inst : ReferenceInstances(*ranks[0].collectives, ref_spans)) {
    MatchMembers(ranks, alignment, spans, ref_spans, inst, &members);
    ++seq;
    if (members.size() < 2) continue;
    ++counted;
    const LastArrival arrival = FindLastArrival(ranks, members);
    for (const Member& m : members) {
      v1::CollectiveRankTotals& t = totals[m.rank];
      t.set_wait_ns(t.wait_ns() + (arrival.latest - m.start));
      t.set_instances(t.instances() + 1);
    }
    v1::CollectiveRankTotals& last = totals[members[arrival.last].rank];
    if (arrival.known) last.set_last_count(last.last_count() + 1);
    if (out->collectives_size() >= limit) continue;
    ListInstance(ranks, members, arrival, seq - 1, out->add_collectives());
  }
  out->set_instances(counted);
  out->set_truncated(counted > out->collectives_size());
}

}  // namespace

void AnalyzeCollectives(const std::vector<RankClock>& ranks, const std::vector<RankAlignment>& alignment, int limit,
                        v1::JobCollectivesResponse* out) {
  std::vector<v1::CollectiveRankTotals> totals(ranks.size());
  for (size_t r = 0; r < ranks.size(); ++r) {
    totals[r].set_rank(ranks[r].rank);
    totals[r].set_profile_id(ranks[r].profile_id);
    totals[r].set_unoverlapped_comm_ns(ranks[r].collectives->unoverlapped_comm_ns);
  }
  if (ranks.size() >= 2) AnalyzeInstances(ranks, alignment, limit, totals, out);
  for (auto& t : totals) *out->add_ranks() = std::move(t);
}

}  // namespace fleetprof::jobtrace
