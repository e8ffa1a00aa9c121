// Fleet accounting's rollups kept at commit (server/fleet/fleet_rollups.h) and FleetTop over them
// (server/query/fleet_top_query.h), on an in-memory catalog and a simulated clock: the stored
// cells answer what the in-memory accumulator answers, capped cells keep their sums, old cells
// expire, and a profile counts only when its capture was SAMPLED.
#include <atomic>
#include <chrono>
#include <future>
#include <map>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "common/clock.h"
#include "gtest/gtest.h"
#include "prometheus/registry.h"
#include "server/fleet/fleet_accounting.h"
#include "server/fleet/fleet_rollups.h"
#include "server/query/fleet_top_query.h"
#include "server/server_metrics.h"
#include "storage/fleet_rollup_store.h"
#include "storage/storage.h"
#include "tests/server/fleet/gate.h"

namespace fleetprof {
namespace {

constexpr int64_t kHour = kFleetHourNs;

class FleetRollupsTest : public ::testing::Test {
 protected:
  FleetRollupsTest()
      : storage_(Storage::InMemory()),
        store_(&storage_->engine().catalog(), storage_->unreadable()),
        writer_(&store_, &clock_, 0, [this](const std::string& id) { return CaptureOf(id); }, &registry_),
        query_(&store_, &clock_, &metrics_) {}

  absl::StatusOr<v1::Capture> CaptureOf(const std::string& id) {
    auto it = captures_.find(id);
    if (it == captures_.end()) return absl::NotFoundError(id);
    return it->second;
  }

  v1::FleetTopResponse Top(const std::string& by, int64_t since_ms = 0, int limit = 0) {
    v1::FleetTopRequest request;
    request.set_by(by);
    request.set_since_ms(since_ms);
    request.set_limit(limit);
    absl::StatusOr<v1::FleetTopResponse> r = query_.Top(request);
    EXPECT_TRUE(r.ok()) << r.status();
    return r.ok() ? *r : v1::FleetTopResponse();
  }

  SimulatedClock clock_{int64_t{1'700'000'000} * 1'000'000'000};
  std::unique_ptr<Storage> storage_;
  FleetRollupStore store_;
  prometheus::Registry registry_;
  ServerMetrics metrics_;
  std::map<std::string, v1::Capture> captures_;
  FleetRollupWriter writer_;
  FleetTopQuery query_;
};

SampledProfile RandomProfile(std::mt19937_64& rng, int64_t committed_ns) {
  SampledProfile p;
  p.job = "job" + std::to_string(rng() % 4);
  p.node = "node" + std::to_string(rng() % 5);
  p.device_type = rng() % 2 ? "H100" : "A100";
  p.labels = {{"team", rng() % 2 ? "a" : "b"}};
  p.committed_ns = committed_ns;
  p.inclusion_probability = 0.1 + 0.8 * static_cast<double>(rng() % 100) / 100;
  p.span_device_ns = 1'000'000'000;
  p.weight_device_ns = static_cast<int64_t>(3600e9 / p.inclusion_probability);
  for (int k = 0; k < 6; ++k) {
    if (rng() % 2) continue;
    const int64_t ns = static_cast<int64_t>(rng() % 150'000'000);
    p.kernels.emplace_back("kernel" + std::to_string(k), ns);
    p.busy_device_ns += ns;
  }
  p.ops.emplace_back("aten::mm", p.busy_device_ns / 3);
  return p;
}

void ExpectSameAnswer(const v1::FleetTopResponse& want, const v1::FleetTopResponse& got) {
  EXPECT_EQ(got.by(), want.by());
  EXPECT_EQ(got.since_ns(), want.since_ns());
  EXPECT_EQ(got.samples(), want.samples());
  EXPECT_NEAR(got.total_device_ns(), want.total_device_ns(), 2);
  EXPECT_NEAR(got.busy_device_ns(), want.busy_device_ns(), 2);
  EXPECT_NEAR(got.idle_device_ns(), want.idle_device_ns(), 2);
  ASSERT_EQ(got.rows_size(), want.rows_size());
  for (int i = 0; i < want.rows_size(); ++i) {
    EXPECT_EQ(got.rows(i).name(), want.rows(i).name());
    EXPECT_NEAR(got.rows(i).device_ns(), want.rows(i).device_ns(), 2);
    EXPECT_NEAR(got.rows(i).ci95_low_ns(), want.rows(i).ci95_low_ns(), 2);
    EXPECT_NEAR(got.rows(i).ci95_high_ns(), want.rows(i).ci95_high_ns(), 2);
    EXPECT_NEAR(got.rows(i).share(), want.rows(i).share(), 1e-9);
    EXPECT_EQ(got.rows(i).samples(), want.rows(i).samples());
  }
}

TEST_F(FleetRollupsTest, StoredCellsAnswerAsTheAccumulatorDoes) {
  std::mt19937_64 rng(3);
  FleetAccumulator acc;
  for (int i = 0; i < 400; ++i) {
    SampledProfile p = RandomProfile(rng, clock_.Now() - static_cast<int64_t>(rng() % (40 * kHour)));
    ASSERT_TRUE(acc.Add(p));
    ASSERT_TRUE(writer_.Add(p).ok());
  }
  for (const std::string by : {"kernel", "op", "job", "node", "device_type"}) {
    for (int64_t since_ms : {int64_t{0}, int64_t{3600 * 1000}, int64_t{48} * 3600 * 1000}) {
      SCOPED_TRACE(by + " since " + std::to_string(since_ms));
      v1::FleetTopRequest request;
      request.set_by(by);
      request.set_since_ms(since_ms);
      ExpectSameAnswer(acc.Top(request, clock_.Now()), Top(by, since_ms));
    }
  }
  v1::FleetTopRequest team_a;
  (*team_a.mutable_labels())["team"] = "a";
  team_a.set_limit(2);
  ExpectSameAnswer(acc.Top(team_a, clock_.Now()), *query_.Top(team_a));
  EXPECT_EQ(query_.Top(team_a)->rows_size(), 2);
  // The metric sums the same busy and idle estimates, over every profile counted.
  const auto everything = Top("job", FleetKeepHours(0) * 3600 * 1000);
  double busy = 0;
  for (const auto& family : registry_.Collect()) {
    if (family.name == "fleetprof_fleet_busy_device_seconds_total") busy = family.metric.at(0).counter.value;
  }
  EXPECT_NEAR(busy, static_cast<double>(everything.busy_device_ns()) / 1e9, 1e-3);
}

TEST_F(FleetRollupsTest, CappedCellsFoldTheRestIntoOtherAndKeepTheirSums) {
  SampledProfile p;
  p.job = "wide";
  p.committed_ns = clock_.Now();
  p.weight_device_ns = 1'000'000;
  p.inclusion_probability = 0.5;
  p.span_device_ns = 1'000'000;
  for (int k = 0; k < 3 * kFleetMaxRowsPerCell; ++k) {
    p.kernels.emplace_back("k" + std::to_string(k), 100 + k);
    p.busy_device_ns += 100 + k;
  }
  ASSERT_TRUE(writer_.Add(p).ok());
  const auto top = Top("kernel");
  ASSERT_EQ(top.rows_size(), kFleetMaxRowsPerCell);
  int64_t sum = 0;
  bool other = false;
  for (const auto& row : top.rows()) {
    sum += row.device_ns();
    other |= row.name() == kFleetOtherRow;
  }
  EXPECT_TRUE(other);
  EXPECT_NEAR(static_cast<double>(sum), static_cast<double>(top.busy_device_ns()), kFleetMaxRowsPerCell);
  EXPECT_EQ(top.rows(0).name(), "(other)");  // 401 folded rows outweigh any one kept
  EXPECT_EQ(top.rows(1).name(), "k" + std::to_string(3 * kFleetMaxRowsPerCell - 1));
}

TEST_F(FleetRollupsTest, CellsPastTheKeptDaysExpire) {
  std::mt19937_64 rng(5);
  ASSERT_TRUE(writer_.Add(RandomProfile(rng, clock_.Now())).ok());
  EXPECT_EQ(Top("job").samples(), 1);
  clock_.Advance((kFleetMaxKeepDays * 24 + 2) * kHour);
  ASSERT_TRUE(writer_.Add(RandomProfile(rng, clock_.Now())).ok());
  int records = 0;
  for (const std::string by : {"kernel", "op", "job", "node", "device_type"}) {
    ASSERT_TRUE(store_.Scan(by, INT64_MIN / kHour, [&](const v1::FleetRollupCell&) { return ++records, true; }).ok());
  }
  EXPECT_EQ(records, 5);  // the new profile's cell, one record per grouping
  EXPECT_EQ(Top("job", kFleetMaxSinceMs).samples(), 1);
}

TEST_F(FleetRollupsTest, ConcurrentCommitsOfOneCellAreAllCounted) {
  std::vector<std::thread> workers;
  for (int w = 0; w < 8; ++w) {
    workers.emplace_back([this, w] {
      std::mt19937_64 rng(100 + w);
      for (int i = 0; i < 200; ++i) {
        SampledProfile p = RandomProfile(rng, clock_.Now());
        p.job = "one-job";
        p.labels.clear();
        EXPECT_TRUE(writer_.Add(p).ok());
      }
    });
  }
  for (std::thread& t : workers) t.join();
  EXPECT_EQ(Top("job").samples(), 8 * 200);
}

// A random sampled profile, always of the same cell (one job, no labels).
SampledProfile OfOneCell(std::mt19937_64& rng, int64_t now_ns) {
  SampledProfile p = RandomProfile(rng, now_ns);
  p.job = "one-job";
  p.labels.clear();
  return p;
}

// The in-memory catalog, whose scans can be held: the hourly expiry scans, a cell's update only
// gets and commits.
class SlowScanCatalog : public Catalog {
 public:
  explicit SlowScanCatalog(Catalog* inner) : inner_(inner) {}
  absl::StatusOr<std::optional<std::string>> Get(CatalogTable table, std::string_view key) override {
    return inner_->Get(table, key);
  }
  absl::Status Scan(CatalogTable table, const CatalogScan& scan, const CatalogVisitor& visit) override {
    scan_gate.Pass();
    ++scans;
    if (fail_scans.load()) return absl::UnavailableError("the catalog is unreachable");
    return inner_->Scan(table, scan, visit);
  }
  absl::Status Commit(const CatalogWrite& write) override { return inner_->Commit(write); }
  Gate scan_gate;
  std::atomic<int> scans{0};
  std::atomic<bool> fail_scans{false};

 private:
  Catalog* inner_;
};

TEST_F(FleetRollupsTest, ACommitDoesNotWaitForTheHourlyExpiry) {
  SlowScanCatalog catalog(&storage_->engine().catalog());
  FleetRollupStore store(&catalog, storage_->unreadable());
  FleetRollupWriter writer(&store, &clock_, 0, nullptr, nullptr);
  std::mt19937_64 rng(9);
  auto of_one_cell = [&] { return OfOneCell(rng, clock_.Now()); };
  ASSERT_TRUE(writer.Add(of_one_cell()).ok());  // this hour's expiry ran
  clock_.Advance(kHour);
  catalog.scan_gate.HoldNext();
  // The hour's first commit runs its expiry, held in the scan (a slow store).
  std::future<absl::Status> expiring = std::async(std::launch::async, [&, p = of_one_cell()] { return writer.Add(p); });
  ASSERT_TRUE(catalog.scan_gate.WaitUntilHeld()) << "the hour's first commit ran no expiry";
  // Another worker's commit of the same cell goes through meanwhile.
  std::future<absl::Status> other = std::async(std::launch::async, [&, p = of_one_cell()] { return writer.Add(p); });
  const bool answered = other.wait_for(Gate::kPatience) == std::future_status::ready;
  catalog.scan_gate.Release();
  EXPECT_TRUE(answered) << "a commit waited for another worker's hourly expiry";
  EXPECT_TRUE(other.get().ok());
  EXPECT_TRUE(expiring.get().ok());
  EXPECT_EQ(Top("job", kFleetMaxSinceMs).samples(), 3);
}

// The hourly expiry failing does not fail the commit that ran it: the profile is counted (a
// retried Add would count it twice), and the next commit of the hour tries the expiry again.
TEST_F(FleetRollupsTest, AFailedExpiryLeavesTheCommitCountedAndTheNextOneTriesAgain) {
  SlowScanCatalog catalog(&storage_->engine().catalog());
  FleetRollupStore store(&catalog, storage_->unreadable());
  FleetRollupWriter writer(&store, &clock_, 0, nullptr, nullptr);
  std::mt19937_64 rng(11);
  auto of_one_cell = [&] { return OfOneCell(rng, clock_.Now()); };
  ASSERT_TRUE(writer.Add(of_one_cell()).ok());  // this hour's expiry ran
  clock_.Advance(kHour);
  catalog.fail_scans = true;
  const int scans_before = catalog.scans.load();
  EXPECT_TRUE(writer.Add(of_one_cell()).ok()) << "the expiry's failure failed the commit";
  EXPECT_GT(catalog.scans.load(), scans_before) << "the hour's first commit ran no expiry";
  catalog.fail_scans = false;
  const int scans_failed = catalog.scans.load();
  EXPECT_TRUE(writer.Add(of_one_cell()).ok());
  EXPECT_GT(catalog.scans.load(), scans_failed) << "the next commit did not try the expiry again";
  EXPECT_EQ(Top("job", kFleetMaxSinceMs).samples(), 3);
}

TEST_F(FleetRollupsTest, RejectsBadRequestsWithTheReason) {
  v1::FleetTopRequest request;
  request.set_by("gpu");
  EXPECT_EQ(query_.Top(request).status().code(), absl::StatusCode::kInvalidArgument);
  request.set_by("job");
  request.set_since_ms(-1);
  EXPECT_NE(std::string(query_.Top(request).status().message()).find("since_ms"), std::string::npos);
  request.set_since_ms(kFleetMaxSinceMs + 1);
  EXPECT_NE(std::string(query_.Top(request).status().message()).find("35 days"), std::string::npos);
  request.set_since_ms(0);
  request.set_limit(-1);
  EXPECT_EQ(query_.Top(request).status().code(), absl::StatusCode::kInvalidArgument);
}

v1::ProfileSummary TwoDeviceSummary() {
  v1::ProfileSummary s;
  s.set_start_ns(1000);
  s.set_end_ns(1000 + 10'000);  // a 10 us span
  for (int d = 0; d < 2; ++d) {
    v1::DeviceBreakdown* dev = s.add_devices();
    dev->set_device(std::to_string(d));
    dev->set_busy_ns(6'000);
  }
  auto* k = s.add_kernels();
  k->set_name("gemm");
  k->set_total_ns(9'000);
  auto* m = s.add_kernels();
  m->set_name("Memcpy HtoD");
  m->set_total_ns(3'000);
  auto* op = s.add_ops();
  op->set_name("aten::mm");
  op->set_device_total_ns(9'000);
  s.add_device_samples()->set_model("NVIDIA H100 80GB HBM3");
  return s;
}

TEST_F(FleetRollupsTest, CountsOnlyProfilesOfSampledCaptures) {
  v1::Capture sampled;
  sampled.set_capture_id("c1");
  sampled.set_reason(v1::Capture::SAMPLED);
  v1::CaptureTarget* t = sampled.add_targets();
  t->set_node("n1");
  t->set_job("train");
  t->set_pid(42);
  t->set_weight_device_ns(8 * 3600 * kFleetHourNs / 3600);  // 8 device-hours
  t->set_inclusion_probability(0.25);
  t->set_devices(4);
  v1::Capture manual = sampled;
  manual.set_capture_id("c2");
  manual.set_reason(v1::Capture::MANUAL);
  captures_ = {{"c1", sampled}, {"c2", manual}};

  v1::ProfileInfo info;
  info.set_profile_id("p1");
  info.set_job("train");
  info.set_node("n1");
  (*info.mutable_labels())["capture_id"] = "c1";
  (*info.mutable_labels())["source"] = "capture";
  (*info.mutable_labels())["pid"] = "42";
  (*info.mutable_labels())["team"] = "llm";

  std::optional<SampledProfile> p = SampledProfileOf(info, TwoDeviceSummary(), sampled, clock_.Now());
  ASSERT_TRUE(p.has_value());
  EXPECT_EQ(p->labels, (std::map<std::string, std::string>{{"team", "llm"}}));
  EXPECT_EQ(p->span_device_ns, 4 * 10'000);  // the target's 4 devices, more than the trace's 2
  EXPECT_EQ(p->busy_device_ns, 12'000);
  EXPECT_EQ(p->device_type, "NVIDIA H100 80GB HBM3");
  EXPECT_EQ(p->weight_device_ns, 8 * kFleetHourNs);
  EXPECT_DOUBLE_EQ(p->inclusion_probability, 0.25);
  ASSERT_EQ(p->kernels.size(), 2u);
  // A summary without bounds of its own spans its devices' first start to last end.
  v1::ProfileSummary unbounded = TwoDeviceSummary();
  unbounded.clear_start_ns();
  unbounded.clear_end_ns();
  unbounded.mutable_devices(0)->set_start_ns(500);
  unbounded.mutable_devices(0)->set_end_ns(8'500);
  unbounded.mutable_devices(1)->set_start_ns(2'500);
  unbounded.mutable_devices(1)->set_end_ns(10'500);
  EXPECT_EQ(SampledProfileOf(info, unbounded, sampled, clock_.Now())->span_device_ns, 4 * 10'000);

  ASSERT_TRUE(writer_.Observe(info, TwoDeviceSummary()).ok());
  v1::ProfileInfo other_pid = info;
  (*other_pid.mutable_labels())["pid"] = "43";  // no target of that pid
  ASSERT_TRUE(writer_.Observe(other_pid, TwoDeviceSummary()).ok());
  v1::ProfileInfo manual_info = info;
  (*manual_info.mutable_labels())["capture_id"] = "c2";
  ASSERT_TRUE(writer_.Observe(manual_info, TwoDeviceSummary()).ok());
  v1::ProfileInfo gone = info;
  (*gone.mutable_labels())["capture_id"] = "c9";
  ASSERT_TRUE(writer_.Observe(gone, TwoDeviceSummary()).ok());

  // Without job labels of its own, a sampled profile takes the job's.
  v1::ProfileInfo bare = info;
  bare.mutable_labels()->erase("team");
  writer_.set_job_labels([](const std::string& job) {
    return std::map<std::string, std::string>{{"team", job == "train" ? "llm" : "other"}};
  });
  ASSERT_TRUE(writer_.Observe(bare, TwoDeviceSummary()).ok());
  v1::FleetTopRequest llm;
  (*llm.mutable_labels())["team"] = "llm";
  EXPECT_EQ(query_.Top(llm)->samples(), 2);
  writer_.set_job_labels(nullptr);
  ASSERT_TRUE(writer_.Observe(bare, TwoDeviceSummary()).ok());  // counted unlabelled
  EXPECT_EQ(query_.Top(llm)->samples(), 2);
  EXPECT_EQ(Top("job").samples(), 3);  // the other pid's, the manual capture's and the unknown one's are not
}

TEST_F(FleetRollupsTest, OneSampledProfileCountsItsExactShares) {
  v1::Capture sampled;
  sampled.set_capture_id("c1");
  sampled.set_reason(v1::Capture::SAMPLED);
  v1::CaptureTarget* t = sampled.add_targets();
  t->set_node("n1");
  t->set_job("train");
  t->set_weight_device_ns(8 * kFleetHourNs);
  t->set_inclusion_probability(0.25);
  t->set_devices(4);
  captures_ = {{"c1", sampled}};
  v1::ProfileInfo info;
  info.set_profile_id("p1");
  info.set_job("train");
  info.set_node("n1");
  (*info.mutable_labels())["capture_id"] = "c1";
  ASSERT_TRUE(writer_.Observe(info, TwoDeviceSummary()).ok());
  const auto kernels = Top("kernel");
  EXPECT_EQ(kernels.samples(), 1);
  ASSERT_EQ(kernels.rows_size(), 2);
  EXPECT_EQ(kernels.rows(0).name(), "gemm");
  EXPECT_DOUBLE_EQ(kernels.rows(0).share(), 9'000.0 / 40'000);  // the profile's exact share
  EXPECT_EQ(kernels.rows(1).name(), "Memcpy HtoD");              // copies are rows too
  EXPECT_EQ(kernels.total_device_ns(), 8 * kFleetHourNs);
  EXPECT_EQ(kernels.busy_device_ns(), 8 * kFleetHourNs * 12 / 40);
  EXPECT_EQ(Top("device_type").rows(0).name(), "NVIDIA H100 80GB HBM3");
}

}  // namespace
}  // namespace fleetprof
