// QueryApi's job timeline (docs/using.md, Job timeline): the profiles of a capture (or
// named ones) in rank order, their clock offsets per query, one window across them, and their
// collectives matched. jobtrace/ does the work; this file selects and loads.
#include <algorithm>
#include <cstdlib>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "jobtrace/agent_clock.h"
#include "jobtrace/collective_analysis.h"
#include "jobtrace/job_window.h"
#include "server/query/query_api.h"
#include "server/query/query_timer.h"

namespace fleetprof {
namespace {

// Numeric ranks in order, then the rest by name, then by place in the selection.
bool RankBefore(const QueryApi::JobMember& a, const QueryApi::JobMember& b) {
  int64_t ra = 0, rb = 0;
  const bool na = absl::SimpleAtoi(a.rank, &ra), nb = absl::SimpleAtoi(b.rank, &rb);
  if (na != nb) return na;
  if (na && ra != rb) return ra < rb;
  if (!na && a.rank != b.rank) return a.rank < b.rank;
  return a.place < b.place;
}

}  // namespace

absl::StatusOr<std::vector<QueryApi::JobMember>> QueryApi::SelectJobMembers(
    const std::string& job, const std::string& capture_id, const google::protobuf::RepeatedPtrField<std::string>& ids) {
  if (job.empty()) return absl::InvalidArgumentError("job is required");
  if (capture_id.empty() == ids.empty()) {
    return absl::InvalidArgumentError("give capture_id or profile (one or more), not both or neither");
  }
  std::vector<JobMember> members;
  if (!capture_id.empty()) {
    v1::ListProfilesRequest list;
    list.set_job(job);
    (*list.mutable_labels())["capture_id"] = capture_id;
    absl::Status s = ForEachListed(
        list, kMaxJobTraceProfiles,
        absl::StrCat("capture ", capture_id, " has more than ", kMaxJobTraceProfiles, " profiles; name some with profile="),
        [&](const v1::ProfileInfo& info) {
          members.push_back({info, "", 0});
          return absl::OkStatus();
        });
    if (!s.ok()) return s;
    if (members.empty()) {
      return absl::NotFoundError(absl::StrCat("job ", job, " has no profile of capture ", capture_id));
    }
  } else {
    if (ids.size() > kMaxJobTraceProfiles) {
      return absl::InvalidArgumentError(absl::StrCat("at most ", kMaxJobTraceProfiles, " profiles at once"));
    }
    for (const std::string& id : ids) {
      auto info = store_->profiles().Get(id);
      if (!info.ok()) return info.status();
      if (info->job() != job) {
        return absl::InvalidArgumentError(absl::StrCat("profile ", id, " belongs to job ", info->job(), ", not ", job));
      }
      if (std::any_of(members.begin(), members.end(), [&](const JobMember& m) { return m.info.profile_id() == id; })) {
        return absl::InvalidArgumentError(absl::StrCat("profile ", id, " is named twice"));
      }
      members.push_back({*std::move(info), "", 0});
    }
  }
  // Oldest ingest first, so that places (the rank of last resort) follow the capture's order.
  std::stable_sort(members.begin(), members.end(), [](const JobMember& a, const JobMember& b) {
    return a.info.ingested_at_ns() < b.info.ingested_at_ns();
  });
  for (size_t i = 0; i < members.size(); ++i) {
    JobMember& m = members[i];
    m.place = static_cast<int>(i);
    if (auto label = m.info.labels().find("rank"); label != m.info.labels().end()) {
      m.rank = label->second;
      continue;
    }
    auto summary = summaries_.Get(m.info.profile_id());
    if (!summary.ok()) return summary.status();
    auto it = (*summary)->metadata().find("rank");
    m.rank = it != (*summary)->metadata().end() ? it->second : std::to_string(i);
  }
  std::stable_sort(members.begin(), members.end(), RankBefore);
  return members;
}

absl::StatusOr<std::shared_ptr<const jobtrace::ProfileCollectives>> QueryApi::CollectivesOf(
    const std::string& profile_id, const timeline::Timeline& timeline) {
  if (auto cached = collectives_.Find(profile_id)) return cached;
  std::unique_ptr<timeline::TimelineReader> reader = store_->events().NewReader(profile_id);
  auto read = jobtrace::ReadCollectives(timeline, *reader);
  if (!read.ok()) return read.status();
  auto value = std::make_shared<const jobtrace::ProfileCollectives>(*std::move(read));
  return collectives_.Insert(profile_id, value, value->memory_bytes());
}

absl::StatusOr<QueryApi::JobClocks> QueryApi::AlignJob(const std::vector<JobMember>& members) {
  JobClocks clocks;
  for (const JobMember& m : members) {
    auto t = timelines_.Get(m.info.profile_id());
    if (!t.ok()) return t.status();
    auto c = CollectivesOf(m.info.profile_id(), **t);
    if (!c.ok()) return c.status();
    clocks.timelines.push_back(*std::move(t));
    clocks.collectives.push_back(*std::move(c));
  }
  std::vector<const jobtrace::ProfileCollectives*> ranks;
  for (const auto& c : clocks.collectives) ranks.push_back(c.get());
  clocks.alignment = jobtrace::AlignByCollectives(ranks);
  // agent_sync: each profile's clock against the server's, where its agent measured it.
  std::vector<std::optional<jobtrace::TraceToServer>> agent(members.size());
  for (size_t i = 0; i < members.size(); ++i) {
    agent[i] = jobtrace::AgentClockOf(members[i].info.labels(), members[i].info.start_ns());
  }
  for (size_t i = 0; i < members.size(); ++i) {
    v1::JobTraceProfile p;
    p.set_profile_id(members[i].info.profile_id());
    p.set_rank(members[i].rank);
    p.set_node(members[i].info.node());
    p.set_reference(i == 0);
    p.set_offset_source("none");  // the reference's offset is 0 by definition; others unknown
    const jobtrace::RankAlignment& a = clocks.alignment[i];
    if (i > 0 && a.aligned) {
      p.set_clock_offset_ns(a.offset_ns);
      p.set_offset_uncertainty_ns(a.uncertainty_ns);
      p.set_offset_source("collectives");
      p.set_matched_collectives(a.matched);
    }
    // Both sources: the one with the smaller uncertainty wins.
    if (i > 0 && agent[i] && agent[0]) {
      // Each within ±2^62; an offset past that would overflow the times it shifts: unusable.
      const __int128 wide = static_cast<__int128>(agent[i]->to_server_ns) - agent[0]->to_server_ns;
      const __int128 doubt = static_cast<__int128>(agent[i]->uncertainty_ns) + agent[0]->uncertainty_ns;
      constexpr __int128 kLimit = __int128{1} << 62;
      const bool usable = wide > -kLimit && wide < kLimit && doubt < kLimit;
      const int64_t offset = usable ? static_cast<int64_t>(wide) : 0;
      const int64_t uncertainty = usable ? static_cast<int64_t>(doubt) : 0;
      if (usable && (p.offset_source() == "none" || uncertainty < p.offset_uncertainty_ns())) {
        p.set_clock_offset_ns(offset);
        p.set_offset_uncertainty_ns(uncertainty);
        p.set_offset_source("agent_sync");
      }
    }
    clocks.profiles.push_back(std::move(p));
  }
  return clocks;
}

absl::StatusOr<v1::JobTraceWindow> QueryApi::JobTrace(const v1::JobTraceRequest& request) {
  QueryTimer timer(metrics_, "JobTrace");
  auto members = SelectJobMembers(request.job(), request.capture_id(), request.profile_ids());
  if (!members.ok()) return members.status();
  auto clocks = AlignJob(*members);
  if (!clocks.ok()) return clocks.status();
  std::vector<std::unique_ptr<timeline::TimelineReader>> readers;
  std::vector<jobtrace::WindowMember> window_members;
  for (size_t i = 0; i < members->size(); ++i) {
    const std::string& id = (*members)[i].info.profile_id();
    readers.push_back(store_->events().NewReader(id));
    window_members.push_back({id, (*members)[i].rank, clocks->timelines[i].get(), readers.back().get(),
                              clocks->profiles[i].clock_offset_ns()});
  }
  auto window = jobtrace::QueryJobWindow(window_members, request);
  if (!window.ok()) return window.status();
  for (auto& p : clocks->profiles) *window->add_profiles() = std::move(p);
  return window;
}

absl::StatusOr<v1::JobCollectivesResponse> QueryApi::JobCollectives(const v1::JobCollectivesRequest& request) {
  QueryTimer timer(metrics_, "JobCollectives");
  if (request.limit() < 0 || request.limit() > jobtrace::kMaxListedCollectives) {
    return absl::InvalidArgumentError(absl::StrCat("limit must be 0..", jobtrace::kMaxListedCollectives));
  }
  auto members = SelectJobMembers(request.job(), request.capture_id(), request.profile_ids());
  if (!members.ok()) return members.status();
  auto clocks = AlignJob(*members);
  if (!clocks.ok()) return clocks.status();
  v1::JobCollectivesResponse out;
  out.set_job(request.job());
  std::vector<jobtrace::RankClock> ranks;
  for (size_t i = 0; i < members->size(); ++i) {
    ranks.push_back({(*members)[i].info.profile_id(), (*members)[i].rank, clocks->collectives[i].get(),
                     clocks->profiles[i].clock_offset_ns(), clocks->profiles[i].offset_uncertainty_ns()});
  }
  jobtrace::AnalyzeCollectives(ranks, clocks->alignment,
                               request.limit() == 0 ? jobtrace::kDefaultListedCollectives : request.limit(), &out);
  for (auto& p : clocks->profiles) *out.add_profiles() = std::move(p);
  return out;
}

}  // namespace fleetprof
