// The on-disk format does not change by accident: a data dir written by the binaries of commit
// 52e8783 (tests/data/store_52e8783, made by tests/data/make_golden_store.sh) opens with
// today's server, from a copy, and every query answers byte for byte as 52e8783 answered.

#include <filesystem>
#include <fstream>
#include <sstream>

#include "gtest/gtest.h"
#include "tests/e2e/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::testing {
namespace {

namespace fs = std::filesystem;

const fs::path kData = fs::path(FLEETPROF_SOURCE_DIR) / "tests/data/store_52e8783";

std::string ReadFile(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

// A diagnosis lists every rule it ran in rules[]; rules added since 52e8783 are left out of the
// comparison (their findings are not: none may appear where 52e8783 found nothing).
std::string WithoutRulesAddedSince52e8783(std::string json) {
  // A rule's definition text that moved since: it now names the page in this repository.
  for (size_t at = json.find("(docs/analysis.md)"); at != std::string::npos; at = json.find("(docs/analysis.md)", at)) {
    json.replace(at, std::string("(docs/analysis.md)").size(), "(ANALYSIS.md)");
  }
  for (const char* rule : {"input_stall", "regression"}) {
    const std::string entry = std::string(",{\"rule\":\"") + rule + "\",\"scope\"";
    const size_t at = json.find(entry);
    if (at == std::string::npos) continue;
    const size_t end = json.find('}', json.find("\"comparison\":", at));
    if (end != std::string::npos) json.erase(at, end + 1 - at);
  }
  return json;
}

// Fields added to an answer since 52e8783 are left out where they hold their default (a
// record stored then has none): a non-default value would still differ.
std::string WithoutDefaultFieldsAddedSince52e8783(std::string json) {
  for (const char* field : {",\"start_note\":\"\"", ",\"start_time_unix_ns\":0,\"note\":\"\"", ",\"started_by_replica\":\"\"",
                            ",\"trigger_id\":\"\"", ",\"evidence\":\"\""}) {
    for (size_t at = json.find(field); at != std::string::npos; at = json.find(field, at)) {
      json.erase(at, std::string(field).size());
    }
  }
  return json;
}

TEST(GoldenStore, ADataDirOf52e8783AnswersEveryQueryAsItDid) {
  ASSERT_TRUE(fs::exists(kData / "store/CURRENT")) << kData;
  TestCluster cluster;
  // A copy: opening writes to the folder (a new log, a new manifest), the checked-in one stays.
  fs::copy(kData / "store", cluster.root() + "/server", fs::copy_options::recursive);
  ASSERT_TRUE(cluster.StartServer()) << cluster.ServerLog();

  const auto cli = [&](std::vector<std::string> args) {
    args.push_back("--json");
    CommandResult r = cluster.Cli(args);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return r.out;
  };
  const fs::path golden = kData / "golden";
  EXPECT_EQ(cli({"profiles"}), ReadFile(golden / "profiles.json"));
  EXPECT_EQ(WithoutDefaultFieldsAddedSince52e8783(cli({"captures"})), ReadFile(golden / "captures.json"));
  int profiles = 0;
  for (const auto& entry : fs::directory_iterator(golden)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("ops.", 0) != 0) continue;
    const std::string id = name.substr(4, name.size() - 4 - 5);  // ops.<id>.json
    ++profiles;
    SCOPED_TRACE(id);
    for (const char* query : {"ops", "kernels", "breakdown", "profile"}) {
      EXPECT_EQ(cli({query, id}), ReadFile(golden / (std::string(query) + "." + id + ".json"))) << query;
    }
    EXPECT_EQ(WithoutRulesAddedSince52e8783(cli({"diagnose", id})), ReadFile(golden / ("diagnose." + id + ".json")));
    EXPECT_EQ(cli({"trace", id, "--resolution_ns", "100000"}), ReadFile(golden / ("trace." + id + ".json")));
    const std::string exported = cluster.root() + "/export." + id;
    cli({"export", id, "-o", exported});
    CommandResult sha = RunCommand({"/usr/bin/sha256sum", exported});
    EXPECT_EQ(sha.out.substr(0, 64) + "\n", ReadFile(golden / ("export." + id + ".sha256"))) << "the original bytes";
  }
  EXPECT_EQ(profiles, 2);
  // The ids in the job answers are the golden ones: read the two from the profile list.
  const std::string list = ReadFile(golden / "profiles.json");
  std::vector<std::string> ids;
  for (size_t at = 0; (at = list.find("\"profile_id\":\"", at)) != std::string::npos;) {
    at += 14;
    ids.push_back(list.substr(at, list.find('"', at) - at));
  }
  ASSERT_EQ(ids.size(), 2u);
  // make_golden_store.sh diffed the first upload (listed last: newest first) against the second.
  EXPECT_EQ(cli({"diff", ids[1], ids[0], "--by", "kernel"}), ReadFile(golden / "diff.json"));
  EXPECT_EQ(cli({"job-ops", "golden"}), ReadFile(golden / "job-ops.json"));
  EXPECT_EQ(cli({"job-series", "golden"}), ReadFile(golden / "job-series.json"));
}

}  // namespace
}  // namespace fleetprof::testing
