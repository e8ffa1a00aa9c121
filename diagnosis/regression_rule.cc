// The `regression` rule: the records the server made when the profile was committed
// (server/ingest/regression_detector.h), one finding each, with the baseline's profiles as
// evidence.
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "diagnosis/rule_support.h"

namespace fleetprof::diagnosis {

void Regression(const ProfileFacts& facts, const Rule& rule, double threshold, std::vector<v1::Finding>* out) {
  for (const v1::Regression& r : facts.regressions) {
    if (r.change() < threshold) continue;
    const bool per_step = r.what() == "step_time" || facts.summary.steps_size() > 0;
    const char* unit = per_step ? " per step" : " per second";
    const std::string subject = r.what() == "step_time" ? "step time" : absl::StrCat(r.what(), " ", r.name());
    v1::Finding f = NewFinding(
        rule, r.change(), threshold,
        absl::StrCat(subject, ": ", HumanNs(r.now_ns()), unit, ", ", Percent(r.change()), " over the median ",
                     HumanNs(r.baseline_ns()), " of the job's ", r.baseline_profiles_size(), " previous profiles"),
        r.what() == "step_time"
            ? "Diff this profile against one of the baseline's (fleetprof diff BASE PROFILE) to see which ops "
              "and kernels grew."
            : absl::StrCat("Diff this profile against one of the baseline's (fleetprof diff BASE PROFILE --by ",
                           r.what() == "op" ? "op" : "kernel", ") and look at what changed in ", r.name(), "."));
    for (const std::string& id : r.baseline_profiles()) {
      v1::Evidence* e = f.add_evidence();
      e->set_track(absl::StrCat("profile:", id));
      e->set_profile_id(id);
      e->set_note("baseline");
    }
    out->push_back(std::move(f));
  }
}

}  // namespace fleetprof::diagnosis
