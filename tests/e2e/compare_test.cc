// Diffs, job views and diagnoses through the real binaries: diff values are each profile's own
// breakdown rows, job-ops equals the sum of the corpus references, the rank series finds the
// straggler, every bad parameter gives one clear error, and HTTP answers what the CLI prints.

#include <algorithm>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "httplib.h"
#include "simdjson.h"
#include "tests/e2e/json_array.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

std::string Trim(std::string s) {
  while (!s.empty() && s.back() == '\n') s.pop_back();
  return s;
}


std::string Minified(simdjson::dom::element e) { return simdjson::minify(e); }

class CompareTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(cluster_.StartServer()) << cluster_.ServerLog();
    http_ = std::make_unique<httplib::Client>("http://" + cluster_.http_addr());
    http_->set_read_timeout(60, 0);
  }

  std::string Upload(const std::string& corpus_file, const std::vector<std::string>& extra) {
    std::vector<std::string> args = {"upload", CorpusPath(corpus_file), "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    CommandResult r = cluster_.Cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err << cluster_.ServerLog();
    return JsonStringField(r.out, "profile_id");
  }

  std::string CliJson(std::vector<std::string> args) {
    args.push_back("--json");
    CommandResult r = cluster_.Cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return Trim(r.out);
  }

  // {name -> the row's JSON} of one breakdown section of a profile.
  std::map<std::string, std::string> Rows(const std::string& command, const std::string& id,
                                          const std::string& section) {
    std::map<std::string, std::string> rows;
    simdjson::dom::parser parser;
    const std::string json = CliJson({command, id});
    for (simdjson::dom::element row : Array(parser.parse(json)[section])) {
      rows[std::string(row["name"].get_string().value())] = Minified(row);
    }
    return rows;
  }

  TestCluster cluster_;
  std::unique_ptr<httplib::Client> http_;
};

TEST_F(CompareTest, DiffValuesAreEachProfilesOwnRows) {
  const std::vector<std::string> files = {"kineto/v100_resnet_rank0.pt.trace.json.gz",
                                          "kineto/a100_nccl_rank0.json.gz", "kineto/mi250_rocm62.json.gz"};
  for (const auto& f : files) FLEETPROF_REQUIRE_PATH(CorpusPath(f));
  std::vector<std::string> ids;
  for (const auto& f : files) ids.push_back(Upload(f, {"--job", "diff"}));
  ids.push_back(ids[0]);  // the baseline again last: every status is "same"

  for (auto [by, command, section] : {std::tuple{"op", "ops", "ops"}, {"kernel", "kernels", "kernels"}}) {
    SCOPED_TRACE(by);
    std::vector<std::map<std::string, std::string>> own;
    for (const auto& id : ids) own.push_back(Rows(command, id, section));
    for (bool same_last : {false, true}) {
      std::vector<std::string> used(ids.begin(), ids.end() - (same_last ? 0 : 1));
      std::vector<std::string> args = {"diff"};
      args.insert(args.end(), used.begin(), used.end());
      args.insert(args.end(), {"--by", by});
      const std::string json = CliJson(args);
      simdjson::dom::parser parser;
      simdjson::dom::element diff = parser.parse(json);
      EXPECT_EQ(std::string(diff["by"].get_string().value()), by);
      std::set<std::string> expected_names;
      for (size_t i = 0; i < used.size(); ++i) {
        EXPECT_EQ(std::string(diff["profiles"].at(i).get_string().value()), used[i]);
        for (const auto& [name, row] : own[i]) expected_names.insert(name);
      }
      std::set<std::string> seen;
      uint64_t previous_change = UINT64_MAX;
      std::string previous_name;
      for (simdjson::dom::element row : Array(diff["rows"])) {
        const std::string name(row["name"].get_string().value());
        EXPECT_TRUE(seen.insert(name).second) << "twice: " << name;
        simdjson::dom::array values = row["values"].get_array().value();
        ASSERT_EQ(values.size(), used.size());
        std::vector<const std::string*> present;
        for (size_t i = 0; i < used.size(); ++i) {
          simdjson::dom::element v = values.at(i).value();
          auto it = own[i].find(name);
          if (it == own[i].end()) {
            EXPECT_TRUE(v.is_null()) << name << " in profile " << i;
            present.push_back(nullptr);
          } else {
            EXPECT_EQ(Minified(v), it->second) << name << " in profile " << i;  // exactly its own row
            present.push_back(&it->second);
          }
        }
        // The contract's status: the last profile against the baseline.
        auto field = [&](size_t i, const char* key) -> int64_t {
          if (present[i] == nullptr) return 0;
          return values.at(i)[key].get_int64().value();
        };
        const size_t last = used.size() - 1;
        std::string want = "changed";
        if (present[0] == nullptr && present[last] != nullptr) want = "added";
        if (present[0] != nullptr && present[last] == nullptr) want = "removed";
        if (field(0, "count") == field(last, "count") && field(0, "total_ns") == field(last, "total_ns") &&
            (present[0] == nullptr) == (present[last] == nullptr)) {
          want = "same";
        }
        EXPECT_EQ(std::string(row["status"].get_string().value()), want) << name;
        if (same_last) EXPECT_EQ(want, "same") << name;
        // Sorted by the largest |change of total_ns| against the baseline, then name.
        uint64_t change = 0;
        for (size_t i = 1; i < used.size(); ++i) {
          const int64_t d = field(i, "total_ns") - field(0, "total_ns");
          change = std::max<uint64_t>(change, d < 0 ? -d : d);
        }
        EXPECT_TRUE(change < previous_change || (change == previous_change && name > previous_name))
            << name << " after " << previous_name;
        previous_change = change;
        previous_name = name;
      }
      EXPECT_EQ(seen, expected_names);
      // HTTP answers exactly what the CLI printed.
      std::string query = "/api/v1/diff?base=" + used[0];
      for (size_t i = 1; i < used.size(); ++i) query += "&profile=" + used[i];
      auto res = http_->Get(query + "&by=" + by);
      ASSERT_TRUE(res);
      EXPECT_EQ(res->status, 200) << res->body;
      EXPECT_EQ(res->body, json);
    }
  }
}

// The op and kernel rows of a reference, added up over several files as job-ops must.
struct Summed {
  std::map<std::string, std::map<std::string, int64_t>> ops, kernels;
};

void AddReference(const std::string& path, Summed* sum) {
  simdjson::dom::parser parser;
  const std::string text = ReadSmallFile(path);
  simdjson::dom::element ref = parser.parse(text);
  for (simdjson::dom::element op : Array(ref["ops"])) {
    auto& into = sum->ops[std::string(op["name"].get_string().value())];
    for (const char* k : {"count", "total_ns", "self_ns", "device_self_ns", "device_total_ns"}) {
      into[k] += op[k].get_int64().value();
    }
  }
  for (simdjson::dom::element k : Array(ref["kernels"])) {
    auto [it, added] = sum->kernels.try_emplace(std::string(k["name"].get_string().value()));
    auto& into = it->second;
    into["count"] += k["count"].get_int64().value();
    into["total_ns"] += k["total_ns"].get_int64().value();
    const int64_t mn = k["min_ns"].get_int64().value(), mx = k["max_ns"].get_int64().value();
    into["min_ns"] = added ? mn : std::min(into["min_ns"], mn);
    into["max_ns"] = added ? mx : std::max(into["max_ns"], mx);
  }
}

void ExpectJobOpsEqual(const std::string& json, const Summed& want, int64_t profiles) {
  simdjson::dom::parser parser;
  simdjson::dom::element got = parser.parse(json);
  EXPECT_EQ(got["profiles"].get_int64().value(), profiles);
  size_t ops = 0, kernels = 0;
  for (simdjson::dom::element op : Array(got["ops"])) {
    ++ops;
    const std::string name(op["name"].get_string().value());
    auto it = want.ops.find(name);
    ASSERT_NE(it, want.ops.end()) << "extra op " << name;
    for (const auto& [k, v] : it->second) EXPECT_EQ(op[k].get_int64().value(), v) << name << " " << k;
  }
  for (simdjson::dom::element k : Array(got["kernels"])) {
    ++kernels;
    const std::string name(k["name"].get_string().value());
    auto it = want.kernels.find(name);
    ASSERT_NE(it, want.kernels.end()) << "extra kernel " << name;
    for (const auto& [f, v] : it->second) EXPECT_EQ(k[f].get_int64().value(), v) << name << " " << f;
  }
  EXPECT_EQ(ops, want.ops.size());
  EXPECT_EQ(kernels, want.kernels.size());
}

TEST_F(CompareTest, JobOpsEqualTheSumOfTheReferences) {
  const std::vector<std::pair<std::string, std::string>> ranks = {
      {"kineto/v100_resnet_rank0.pt.trace.json.gz", "reference/v100_resnet_rank0.pt.trace.ref.json"},
      {"kineto/a100_nccl_rank0.json.gz", "reference/a100_nccl_rank0.ref.json"},
      {"kineto/mi250_rocm62.json.gz", "reference/mi250_rocm62.ref.json"}};
  for (const auto& [trace, ref] : ranks) FLEETPROF_REQUIRE_PATH(CorpusPath(trace));
  Summed all;
  for (size_t r = 0; r < ranks.size(); ++r) {
    Upload(ranks[r].first, {"--job", "train", "--node", "n" + std::to_string(r), "--label",
                            "rank=" + std::to_string(r)});
    AddReference(CorpusPath(ranks[r].second), &all);
  }
  Upload("kineto/a100_alexnet.json.gz", {"--job", "other"});  // another job: not counted

  const std::string json = CliJson({"job-ops", "train"});
  ExpectJobOpsEqual(json, all, 3);
  auto res = http_->Get("/api/v1/jobs/train/ops");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, json);

  Summed one;  // a label narrows it to one rank
  AddReference(CorpusPath(ranks[1].second), &one);
  ExpectJobOpsEqual(CliJson({"job-ops", "train", "--label", "rank=1"}), one, 1);
  res = http_->Get("/api/v1/jobs/train/ops?label=rank=1");
  ASSERT_TRUE(res);
  ExpectJobOpsEqual(res->body, one, 1);

  // The series: one point per profile, oldest first, with its rank and step time; rank 1
  // (A100, 222 ms steps against 95 and 9 ms) is far above the median rank.
  simdjson::dom::parser parser;
  const std::string series_json = CliJson({"job-series", "train"});
  simdjson::dom::array points = parser.parse(series_json)["points"].get_array().value();
  ASSERT_EQ(points.size(), 3u);
  for (size_t r = 0; r < 3; ++r) EXPECT_EQ(std::string(points.at(r)["rank"].get_string().value()), std::to_string(r));
  res = http_->Get("/api/v1/jobs/train/series");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, series_json);
  const std::string diagnosis = CliJson({"diagnose", "--job", "train"});
  simdjson::dom::parser diagnosis_parser;  // `points` stays valid only while `parser` is untouched
  simdjson::dom::element d = diagnosis_parser.parse(diagnosis);
  simdjson::dom::array findings = d["findings"].get_array().value();
  ASSERT_EQ(findings.size(), 1u) << diagnosis;
  EXPECT_EQ(std::string(findings.at(0)["rule"].get_string().value()), "straggler_rank");
  EXPECT_EQ(std::string(findings.at(0)["evidence"].at(0)["profile_id"].get_string().value()),
            std::string(points.at(1)["profile_id"].get_string().value()));
}

TEST_F(CompareTest, DiagnosisOfCorpusTracesAndItsEvidence) {
  const std::string trace = "kineto/a100_alexnet.json.gz";
  FLEETPROF_REQUIRE_PATH(CorpusPath(trace));
  const std::string id = Upload(trace, {"--job", "alexnet"});
  const std::string json = CliJson({"diagnose", id});
  simdjson::dom::parser parser;
  simdjson::dom::element d = parser.parse(json);
  bool idle = false;
  std::set<std::string> tracks;
  {
    simdjson::dom::parser window_parser;
    const std::string window = CliJson({"trace", id});
    for (simdjson::dom::element t : Array(window_parser.parse(window)["tracks"])) {
      tracks.insert(std::string(t["id"].get_string().value()));
    }
  }
  for (simdjson::dom::element f : Array(d["findings"])) {
    const std::string rule(f["rule"].get_string().value());
    if (rule == "device_idle") {
      idle = true;
      EXPECT_GT(f["metric"].get_double().value(), 0.99);  // the AlexNet benchmark is ~99.5% idle
    }
    for (simdjson::dom::element e : Array(f["evidence"])) {
      const std::string track(e["track"].get_string().value());
      EXPECT_TRUE(tracks.count(track)) << rule << ": evidence on unknown track " << track;
      EXPECT_LE(e["start_ns"].get_int64().value(), e["end_ns"].get_int64().value());
    }
  }
  EXPECT_TRUE(idle) << json;
  EXPECT_EQ(d["rules"].get_array().value().size(), 12u);  // every profile rule ran and says how
  auto res = http_->Get("/api/v1/profiles/" + id + "/diagnosis");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->body, json);
  res = http_->Get("/api/v1/profiles/" + id + "/diagnosis?threshold=device_idle=0.999");
  ASSERT_TRUE(res);
  EXPECT_EQ(res->status, 200);
  simdjson::dom::parser raised_parser;
  simdjson::dom::element raised = raised_parser.parse(res->body);
  for (simdjson::dom::element f : Array(raised["findings"])) {
    EXPECT_NE(std::string(f["rule"].get_string().value()), "device_idle") << "0.995 idle is under 0.999";
  }
  bool used = false;  // and rules[] says which threshold ran
  for (simdjson::dom::element r : Array(raised["rules"])) {
    if (std::string(r["rule"].get_string().value()) != "device_idle") continue;
    used = true;
    EXPECT_EQ(r["threshold"].get_double().value(), 0.999);
  }
  EXPECT_TRUE(used);
}

TEST_F(CompareTest, BadParametersGiveOneClearErrorEach) {
  FLEETPROF_REQUIRE_PATH(CorpusPath("xspace/tf_8gpu_multi_worker.xplane.pb"));
  const std::string kineto = Upload("kineto/mi250_rocm62.json.gz", {"--job", "bad"});
  const std::string xspace = Upload("xspace/tf_8gpu_multi_worker.xplane.pb", {"--job", "bad"});
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const std::vector<Case> cli = {
      {{"diff", kineto, "no_such_profile"}, "no_such_profile"},
      {{"diff", kineto, xspace, "--by", "scope"}, "XSpace profile"},
      {{"diff", kineto, xspace, "--by", "op"}, "compare it by kernel"},
      {{"diff", kineto, xspace, "--by", "stream"}, "by must be op, kernel or scope"},
      {{"diff", kineto}, "usage: fleetprof diff"},
      {{"diagnose", kineto, "--threshold", "tiny_kernels=3"}, "between 0 and 1"},
      {{"diagnose", kineto, "--threshold", "tiny_kernel=0.3"}, "no rule 'tiny_kernel'"},
      {{"diagnose", kineto, "--threshold", "tiny_kernels"}, "RULE=NUMBER"},
      {{"diagnose", "--job", "bad", "--threshold", "device_idle=0.3"}, "is a profile rule"},
      {{"diagnose", "no_such_profile"}, "not found"},
      {{"job-ops", "bad", "--since_ns", "-5"}, "must not be negative"},
  };
  for (const Case& c : cli) {
    CommandResult r = cluster_.Cli(c.args);
    EXPECT_NE(r.exit_code, 0) << c.args[0] << " " << c.message;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
  }
  const std::vector<std::tuple<std::string, int, std::string>> http = {
      {"/api/v1/diff?base=" + kineto + "&profile=" + xspace + "&by=scope", 400, "XSpace profile"},
      {"/api/v1/diff?profile=" + kineto, 400, "'base'"},
      {"/api/v1/diff?base=" + kineto + "&profile=nope", 404, "nope"},
      {"/api/v1/diff?base=" + kineto + "&profile=" + kineto + "&bye=op", 400, "unknown query parameter 'bye'"},
      {"/api/v1/profiles/" + kineto + "/diagnosis?threshold=device_idle=lots", 400, "must be a number"},
      {"/api/v1/profiles/" + kineto + "/diagnosis?threshold=device_idle=-1", 400, "between 0 and 1"},
      {"/api/v1/jobs/bad/ops?since_ns=x", 400, "must be an integer"},
      {"/api/v1/jobs/bad/diagnosis?threshold=straggler_rank=0.5", 400, "between 1 and 100"},
  };
  for (const auto& [path, status, message] : http) {
    auto res = http_->Get(path);
    ASSERT_TRUE(res) << path;
    EXPECT_EQ(res->status, status) << path << " " << res->body;
    EXPECT_NE(res->body.find(message), std::string::npos) << path << " " << res->body;
    EXPECT_EQ(res->body.rfind("{\"error\":{\"code\":", 0), 0u) << res->body;
  }
  // A job with no profiles is an empty sum, not an error.
  EXPECT_EQ(CliJson({"job-ops", "nobody"}), "{\"profiles\":0,\"ops\":[],\"kernels\":[]}");
}

}  // namespace
}  // namespace fleetprof::testing
