// Job rollups (server/query/job_rollups.h): the kept sum is reused only while every summed
// profile is still listed, new profiles are added once, and the answer always equals a sum
// made from scratch over the listed ids.

#include "server/query/job_rollups.h"

#include <map>

#include "gtest/gtest.h"

namespace fleetprof {
namespace {

// Profile "pN": one op "op" of N ns self time and one kernel "k" of N ns.
v1::ProfileSummary SummaryOf(const std::string& id) {
  const int64_t n = std::stoll(id.substr(1));
  v1::ProfileSummary s;
  v1::OpStat* op = s.add_ops();
  op->set_name("op");
  op->set_count(1);
  op->set_self_ns(n);
  op->set_total_ns(n);
  v1::KernelStat* k = s.add_kernels();
  k->set_name(n % 2 ? "odd" : "even");
  k->set_count(1);
  k->set_total_ns(n);
  k->set_min_ns(n);
  k->set_max_ns(n);
  return s;
}

struct Reader {
  std::map<std::string, int> reads;
  JobRollups::AddProfile add() {
    return [this](const std::string& id, compare::JobOpsSum* sum) {
      ++reads[id];
      sum->Add(SummaryOf(id));
      return absl::OkStatus();
    };
  }
};

std::string Scratch(const std::vector<std::string>& ids) {
  compare::JobOpsSum sum;
  for (const auto& id : ids) sum.Add(SummaryOf(id));
  return sum.Finish().SerializeAsString();
}

TEST(JobRollups, NewProfilesAreAddedOnceAndADeletedOneMakesItSumAnew) {
  JobRollups rollups(1000);
  Reader reader;
  std::vector<std::string> ids = {"p1", "p2", "p3"};
  EXPECT_EQ(rollups.Sum("job", ids, reader.add())->SerializeAsString(), Scratch(ids));
  EXPECT_EQ(rollups.Sum("job", ids, reader.add())->SerializeAsString(), Scratch(ids));
  EXPECT_EQ(reader.reads["p1"], 1) << "the same listing reads nothing again";
  ids.push_back("p4");
  EXPECT_EQ(rollups.Sum("job", ids, reader.add())->SerializeAsString(), Scratch(ids));
  EXPECT_EQ(reader.reads["p1"], 1);
  EXPECT_EQ(reader.reads["p4"], 1);
  ids.erase(ids.begin());  // p1 deleted
  EXPECT_EQ(rollups.Sum("job", ids, reader.add())->SerializeAsString(), Scratch(ids));
  EXPECT_EQ(reader.reads["p2"], 2) << "summed anew without p1";
  // Another request (another key) has its own rollup.
  EXPECT_EQ(rollups.Sum("other", {"p9"}, reader.add())->SerializeAsString(), Scratch({"p9"}));
}

TEST(JobRollups, AFailedReadIsTheAnswerAndKeepsNothingHalfSummed) {
  JobRollups rollups(1000);
  Reader reader;
  auto failing = [&](const std::string& id, compare::JobOpsSum* sum) -> absl::Status {
    if (id == "p2") return absl::UnavailableError("object store");
    sum->Add(SummaryOf(id));
    return absl::OkStatus();
  };
  EXPECT_TRUE(absl::IsUnavailable(rollups.Sum("job", {"p1", "p2"}, failing).status()));
  EXPECT_EQ(rollups.Sum("job", {"p1", "p2"}, reader.add())->SerializeAsString(), Scratch({"p1", "p2"}));
}

TEST(JobRollups, TheKeyIgnoresLabelOrderAndTheBoundDropsTheOldest) {
  v1::JobRequest a, b;
  a.set_job("j");
  (*a.mutable_labels())["x"] = "1";
  (*a.mutable_labels())["y"] = "2";
  b.set_job("j");
  (*b.mutable_labels())["y"] = "2";
  (*b.mutable_labels())["x"] = "1";
  EXPECT_EQ(JobRollups::Key(a), JobRollups::Key(b));
  b.set_since_ns(5);
  EXPECT_NE(JobRollups::Key(a), JobRollups::Key(b));

  JobRollups rollups(3);
  Reader reader;
  rollups.Sum("first", {"p1", "p2"}, reader.add()).IgnoreError();
  rollups.Sum("second", {"p3", "p4"}, reader.add()).IgnoreError();  // 4 ids > 3: "first" goes
  rollups.Sum("first", {"p1", "p2"}, reader.add()).IgnoreError();
  EXPECT_EQ(reader.reads["p1"], 2);
}

}  // namespace
}  // namespace fleetprof
