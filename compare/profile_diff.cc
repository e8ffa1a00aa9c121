#include "compare/profile_diff.h"

#include <algorithm>
#include <cstdlib>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "analysis/trace_formats.h"
#include "analysis/trace_summary.h"

namespace fleetprof::compare {
namespace {

// One name's rows across the profiles (nullptr where absent).
struct NameRows {
  std::string name;
  std::vector<const google::protobuf::Message*> rows;
};

int64_t Count(const google::protobuf::Message* m) {
  if (m == nullptr) return 0;
  if (const auto* op = dynamic_cast<const v1::OpStat*>(m)) return op->count();
  return static_cast<const v1::KernelStat*>(m)->count();
}

int64_t TotalNs(const google::protobuf::Message* m) {
  if (m == nullptr) return 0;
  if (const auto* op = dynamic_cast<const v1::OpStat*>(m)) return op->total_ns();
  return static_cast<const v1::KernelStat*>(m)->total_ns();
}

const char* Status(const google::protobuf::Message* base, const google::protobuf::Message* last) {
  if (base == nullptr && last != nullptr) return "added";
  if (base != nullptr && last == nullptr) return "removed";
  if (Count(base) == Count(last) && TotalNs(base) == TotalNs(last)) return "same";
  return "changed";
}

// |Δ total_ns| against the baseline, the largest over the other profiles; saturating, since
// totals come from untrusted traces.
uint64_t LargestChange(const NameRows& r) {
  uint64_t largest = 0;
  const int64_t base = TotalNs(r.rows[0]);
  for (size_t i = 1; i < r.rows.size(); ++i) {
    const int64_t other = TotalNs(r.rows[i]);
    const uint64_t change = other >= base ? static_cast<uint64_t>(other) - static_cast<uint64_t>(base)
                                          : static_cast<uint64_t>(base) - static_cast<uint64_t>(other);
    largest = std::max(largest, change);
  }
  return largest;
}

const google::protobuf::RepeatedPtrField<v1::OpStat>& OpRows(const v1::ProfileSummary& s, DiffBy by) {
  return by == DiffBy::kScope ? s.scopes() : s.ops();
}

}  // namespace

absl::StatusOr<DiffBy> ParseDiffBy(const std::string& by) {
  if (by.empty() || by == "op") return DiffBy::kOp;
  if (by == "kernel") return DiffBy::kKernel;
  if (by == "scope") return DiffBy::kScope;
  return absl::InvalidArgumentError(
      absl::StrCat("by must be op, kernel or scope (enclosing user annotation), not '", by, "'"));
}

const char* DiffByName(DiffBy by) {
  switch (by) {
    case DiffBy::kKernel:
      return "kernel";
    case DiffBy::kScope:
      return "scope";
    case DiffBy::kOp:
      break;
  }
  return "op";
}

absl::StatusOr<v1::DiffResponse> DiffProfiles(const std::vector<DiffInput>& profiles, DiffBy by, int limit) {
  const int n = static_cast<int>(profiles.size());
  if (n < kMinDiffProfiles || n > kMaxDiffProfiles) {
    return absl::InvalidArgumentError(absl::StrCat("a diff takes ", kMinDiffProfiles, " to ", kMaxDiffProfiles,
                                                   " profiles (the first is the baseline), not ", n));
  }
  if (limit < 0) return absl::InvalidArgumentError("limit must not be negative");
  if (by != DiffBy::kKernel) {
    for (const DiffInput& p : profiles) {
      const analysis::TraceFormatSpec* format =
          analysis::FindTraceFormat(analysis::TraceFormatFromName(p.summary->format()));
      if (format != nullptr && !format->host_ops) {
        return absl::InvalidArgumentError(absl::StrCat(
            "profile ", p.profile_id, " is ", std::string(format->title), " profile: it has no ",
            by == DiffBy::kScope ? "user annotations (record_function scopes)" : "host op breakdown",
            ", which come from Kineto traces; compare it by kernel"));
      }
    }
  }

  std::vector<NameRows> names;
  absl::flat_hash_map<std::string, size_t> index;
  auto row_of = [&](const std::string& name) -> NameRows& {
    auto [it, added] = index.try_emplace(name, names.size());
    if (added) names.push_back(NameRows{name, std::vector<const google::protobuf::Message*>(n, nullptr)});
    return names[it->second];
  };
  for (int i = 0; i < n; ++i) {
    const v1::ProfileSummary& s = *profiles[i].summary;
    if (by == DiffBy::kKernel) {
      for (const v1::KernelStat& k : s.kernels()) row_of(k.name()).rows[i] = &k;
    } else {
      for (const v1::OpStat& op : OpRows(s, by)) row_of(op.name()).rows[i] = &op;
    }
  }

  std::vector<std::pair<uint64_t, size_t>> order;
  order.reserve(names.size());
  for (size_t i = 0; i < names.size(); ++i) order.emplace_back(LargestChange(names[i]), i);
  std::sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : names[a.second].name < names[b.second].name;
  });

  v1::DiffResponse response;
  response.set_by(DiffByName(by));
  for (const DiffInput& p : profiles) {
    response.add_profiles(p.profile_id);
    response.add_steps(p.summary->steps_size());
  }
  const size_t keep = limit == 0 ? order.size() : std::min(order.size(), static_cast<size_t>(limit));
  response.set_omitted_rows(static_cast<int64_t>(order.size() - keep));
  for (size_t k = 0; k < keep; ++k) {
    const NameRows& r = names[order[k].second];
    v1::DiffRow* row = response.add_rows();
    row->set_name(r.name);
    row->set_status(Status(r.rows.front(), r.rows.back()));
    for (int i = 0; i < n; ++i) {
      v1::DiffValue* value = row->add_values();
      v1::NullableInt64* per_step = row->add_total_ns_per_step();
      const google::protobuf::Message* m = r.rows[i];
      if (m == nullptr) continue;
      if (by == DiffBy::kKernel) {
        *value->mutable_kernel() = *static_cast<const v1::KernelStat*>(m);
      } else {
        *value->mutable_op() = *static_cast<const v1::OpStat*>(m);
      }
      const int64_t steps = profiles[i].summary->steps_size();
      if (steps > 0) per_step->set_value(TotalNs(m) / steps);
    }
  }
  return response;
}

}  // namespace fleetprof::compare
