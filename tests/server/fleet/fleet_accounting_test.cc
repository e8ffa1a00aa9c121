// Fleet accounting's estimator (server/fleet/fleet_accounting.h) against a brute-force sum over
// the profiles, and its 95% interval against the truth of a known fleet under Poisson sampling.
#include "server/fleet/fleet_accounting.h"

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "gtest/gtest.h"

namespace fleetprof {
namespace {

constexpr int64_t kHour = kFleetHourNs;
constexpr int64_t kNow = 1000 * kHour + kHour / 2;

SampledProfile Profile(const std::string& job, const std::string& node, int64_t committed_ns, int64_t weight,
                       double pi, int64_t span, int64_t busy,
                       std::vector<std::pair<std::string, int64_t>> kernels,
                       std::vector<std::pair<std::string, int64_t>> ops = {}) {
  SampledProfile p;
  p.job = job;
  p.node = node;
  p.device_type = "H100";
  p.labels = {{"team", job == "train" ? "llm" : "vision"}};
  p.committed_ns = committed_ns;
  p.weight_device_ns = weight;
  p.inclusion_probability = pi;
  p.span_device_ns = span;
  p.busy_device_ns = busy;
  p.kernels = std::move(kernels);
  p.ops = std::move(ops);
  return p;
}

std::map<std::string, v1::FleetTopRow> ByName(const v1::FleetTopResponse& r) {
  std::map<std::string, v1::FleetTopRow> out;
  for (const auto& row : r.rows()) out[row.name()] = row;
  return out;
}

v1::FleetTopRequest Request(const std::string& by, int64_t since_ms = 0) {
  v1::FleetTopRequest r;
  r.set_by(by);
  r.set_since_ms(since_ms);
  return r;
}

// Random profiles over the last 30 hours; the brute force sums each profile's
// weight x row / span and (1 - pi) x that squared, directly.
TEST(FleetAccounting, RowsEqualTheSumOverProfiles) {
  std::mt19937_64 rng(7);
  std::vector<SampledProfile> profiles;
  const std::vector<std::string> jobs = {"train", "eval", "serve"}, names = {"gemm", "attn", "nccl", "memcpy", "ln"};
  for (int i = 0; i < 300; ++i) {
    const int64_t span = 1'000'000 + static_cast<int64_t>(rng() % 9'000'000);
    std::vector<std::pair<std::string, int64_t>> kernels;
    int64_t busy = 0;
    for (const auto& n : names) {
      if (rng() % 3 == 0) continue;
      const int64_t ns = static_cast<int64_t>(rng() % static_cast<uint64_t>(span / 8));
      kernels.emplace_back(n, ns);
      busy += ns;
    }
    const double pi = 0.05 + 0.9 * static_cast<double>(rng() % 1000) / 1000;
    profiles.push_back(Profile(jobs[rng() % 3], "node" + std::to_string(rng() % 4),
                               kNow - static_cast<int64_t>(rng() % static_cast<uint64_t>(30 * kHour)),
                               static_cast<int64_t>(static_cast<double>(span) * 100 / pi), pi, span, busy, kernels,
                               {{"forward", busy / 2}}));
  }
  FleetAccumulator acc;
  for (const auto& p : profiles) ASSERT_TRUE(acc.Add(p));

  for (const std::string by : {"kernel", "op", "job", "node"}) {
    SCOPED_TRACE(by);
    const v1::FleetTopResponse got = acc.Top(Request(by), kNow);
    const int64_t since = FleetHourOf(kNow - 24 * kHour) * kHour;
    EXPECT_EQ(got.since_ns(), since);
    std::map<std::string, std::pair<double, double>> want;  // name -> estimate, variance
    std::map<std::string, int64_t> samples;
    double total = 0, busy = 0;
    int64_t in_window = 0;
    for (const auto& p : profiles) {
      if (p.committed_ns < since) continue;
      ++in_window;
      const double per_ns = static_cast<double>(p.weight_device_ns) / static_cast<double>(p.span_device_ns);
      total += static_cast<double>(p.weight_device_ns);
      busy += per_ns * static_cast<double>(p.busy_device_ns);
      std::vector<std::pair<std::string, double>> rows;
      if (by == "kernel") for (const auto& [n, ns] : p.kernels) rows.emplace_back(n, per_ns * static_cast<double>(ns));
      if (by == "op") for (const auto& [n, ns] : p.ops) rows.emplace_back(n, per_ns * static_cast<double>(ns));
      if (by == "job") rows.emplace_back(p.job, static_cast<double>(p.weight_device_ns));
      if (by == "node") rows.emplace_back(p.node, static_cast<double>(p.weight_device_ns));
      for (const auto& [n, est] : rows) {
        if (est <= 0) continue;
        want[n].first += est;
        want[n].second += (1 - p.inclusion_probability) * est * est;
        ++samples[n];
      }
    }
    EXPECT_EQ(got.samples(), in_window);
    EXPECT_NEAR(static_cast<double>(got.total_device_ns()), total, 2);
    EXPECT_NEAR(static_cast<double>(got.busy_device_ns()), busy, 2);
    EXPECT_NEAR(static_cast<double>(got.idle_device_ns()), total - busy, 2);
    const auto rows = ByName(got);
    ASSERT_EQ(rows.size(), want.size());
    for (const auto& [name, ev] : want) {
      const v1::FleetTopRow& row = rows.at(name);
      const double half = 1.96 * std::sqrt(ev.second);
      EXPECT_NEAR(static_cast<double>(row.device_ns()), ev.first, 1) << name;
      EXPECT_NEAR(static_cast<double>(row.ci95_low_ns()), std::max(0.0, ev.first - half), 1) << name;
      EXPECT_NEAR(static_cast<double>(row.ci95_high_ns()), ev.first + half, 1) << name;
      EXPECT_NEAR(row.share(), ev.first / total, 1e-9) << name;
      EXPECT_EQ(row.samples(), samples[name]) << name;
    }
    for (int i = 1; i < got.rows_size(); ++i) EXPECT_GE(got.rows(i - 1).device_ns(), got.rows(i).device_ns());
  }
}

TEST(FleetAccounting, WindowLabelsAndLimitSelectCells) {
  FleetAccumulator acc;
  ASSERT_TRUE(acc.Add(Profile("train", "n1", kNow - 2 * kHour, 1000, 1, 100, 50, {{"gemm", 50}})));
  ASSERT_TRUE(acc.Add(Profile("eval", "n2", kNow - 2 * kHour, 4000, 1, 100, 100, {{"attn", 60}, {"gemm", 40}})));
  ASSERT_TRUE(acc.Add(Profile("train", "n1", kNow - 30 * kHour, 9000, 1, 100, 100, {{"old", 100}})));

  v1::FleetTopRequest by_job = Request("job");
  const auto all = acc.Top(by_job, kNow);
  ASSERT_EQ(all.rows_size(), 2);
  EXPECT_EQ(all.rows(0).name(), "eval");
  EXPECT_EQ(all.rows(0).device_ns(), 4000);
  EXPECT_EQ(all.total_device_ns(), 5000);
  EXPECT_EQ(all.busy_device_ns(), 500 + 4000);
  EXPECT_EQ(all.idle_device_ns(), 500);
  // pi = 1: every device-hour was seen, the interval is the estimate.
  EXPECT_EQ(all.rows(0).ci95_low_ns(), 4000);
  EXPECT_EQ(all.rows(0).ci95_high_ns(), 4000);

  EXPECT_EQ(acc.Top(Request("kernel", 48 * 3600 * 1000), kNow).rows_size(), 3);  // the old profile too

  v1::FleetTopRequest llm = Request("kernel");
  (*llm.mutable_labels())["team"] = "llm";
  const auto only_llm = acc.Top(llm, kNow);
  ASSERT_EQ(only_llm.rows_size(), 1);
  EXPECT_EQ(only_llm.rows(0).name(), "gemm");
  EXPECT_EQ(only_llm.rows(0).device_ns(), 500);
  EXPECT_DOUBLE_EQ(only_llm.rows(0).share(), 0.5);

  v1::FleetTopRequest top1 = Request("kernel");
  top1.set_limit(1);
  const auto limited = acc.Top(top1, kNow);
  ASSERT_EQ(limited.rows_size(), 1);
  EXPECT_EQ(limited.rows(0).name(), "attn");  // 2400 against gemm's 500 + 1600
  EXPECT_EQ(limited.rows(0).device_ns(), 2400);
}

TEST(FleetAccounting, RejectsProfilesItCannotCount) {
  FleetAccumulator acc;
  EXPECT_FALSE(acc.Add(Profile("", "n", kNow, 100, 0.5, 10, 5, {})));
  EXPECT_FALSE(acc.Add(Profile("j", "n", kNow, 0, 0.5, 10, 5, {})));
  EXPECT_FALSE(acc.Add(Profile("j", "n", kNow, 100, 0, 10, 5, {})));
  EXPECT_FALSE(acc.Add(Profile("j", "n", kNow, 100, 1.5, 10, 5, {})));
  EXPECT_FALSE(acc.Add(Profile("j", "n", kNow, 100, 0.5, 0, 0, {})));
  EXPECT_FALSE(acc.Add(Profile("j", "n", kNow, 100, 0.5, 10, 11, {})));
  EXPECT_EQ(acc.Top(Request("job"), kNow).samples(), 0);
  EXPECT_FALSE(ParseFleetDimension("kernels").ok());
  EXPECT_NE(std::string(ParseFleetDimension("gpu").status().message()).find("kernel, op, job, node or device_type"),
            std::string::npos);
  EXPECT_EQ(ParseFleetDimension("").value(), FleetDimension::kKernel);
}

TEST(FleetAccounting, CappedCellKeepsItsSumsInOther) {
  FleetCell cell;
  cell.job = "j";
  for (int i = 0; i < 10; ++i) {
    AddToCell(Profile("j", "n", kNow, 1000, 0.5, 1000, 1000, {{"k" + std::to_string(i), 10 * (i + 1)}}), &cell);
  }
  CapCellRows(4, &cell);
  const auto& kernels = cell.rows[static_cast<int>(FleetDimension::kKernel)];
  ASSERT_EQ(kernels.size(), 4u);
  EXPECT_TRUE(kernels.count("k9") && kernels.count("k8") && kernels.count("k7"));
  const FleetRowSum& other = kernels.at(std::string(kFleetOtherRow));
  EXPECT_DOUBLE_EQ(other.estimate.device_ns, 10 + 20 + 30 + 40 + 50 + 60 + 70);
  EXPECT_DOUBLE_EQ(other.estimate.variance, 0.5 * (100 + 400 + 900 + 1600 + 2500 + 3600 + 4900));
  EXPECT_EQ(other.samples, 1);
}

// A known fleet, sampled Poisson-style 2,000 times: the 95% interval of each kernel contains
// the truth in at least 90% of the draws, and the mean estimate is within 2% of it.
TEST(FleetAccounting, IntervalCoversTheTruthUnderPoissonSampling) {
  struct Target {
    int64_t device_ns;       // what the target used in the period
    double pi;               // its inclusion probability
    std::vector<double> shares;  // of its device-time, per kernel
  };
  std::mt19937_64 rng(42);
  std::uniform_real_distribution<double> unit(0, 1);
  const int kKernels = 6;
  std::vector<Target> fleet;
  std::vector<double> truth(kKernels, 0);
  for (int i = 0; i < 400; ++i) {
    Target t{static_cast<int64_t>(3600e9 * (1 + static_cast<double>(i % 8))), 0.05 + 0.25 * unit(rng), {}};
    double left = 0.9;
    for (int k = 0; k < kKernels; ++k) {
      const double s = left * unit(rng) * 0.5;
      t.shares.push_back(s);
      left -= s;
      truth[k] += s * static_cast<double>(t.device_ns);
    }
    fleet.push_back(t);
  }
  const int kDraws = 2000;
  std::vector<int> covered(kKernels, 0);
  std::vector<double> mean(kKernels, 0);
  for (int d = 0; d < kDraws; ++d) {
    FleetAccumulator acc;
    for (const Target& t : fleet) {
      if (unit(rng) >= t.pi) continue;
      const int64_t span = 8'000'000'000;  // an 8 s profile of one device
      std::vector<std::pair<std::string, int64_t>> kernels;
      int64_t busy = 0;
      for (int k = 0; k < kKernels; ++k) {
        const auto ns = static_cast<int64_t>(t.shares[k] * static_cast<double>(span));
        kernels.emplace_back("k" + std::to_string(k), ns);
        busy += ns;
      }
      acc.Add(Profile("j", "n", kNow, static_cast<int64_t>(static_cast<double>(t.device_ns) / t.pi), t.pi, span, busy,
                      kernels));
    }
    const auto rows = ByName(acc.Top(Request("kernel"), kNow));
    for (int k = 0; k < kKernels; ++k) {
      auto it = rows.find("k" + std::to_string(k));
      if (it == rows.end()) continue;
      mean[k] += static_cast<double>(it->second.device_ns()) / kDraws;
      if (static_cast<double>(it->second.ci95_low_ns()) <= truth[k] &&
          truth[k] <= static_cast<double>(it->second.ci95_high_ns())) {
        ++covered[k];
      }
    }
  }
  for (int k = 0; k < kKernels; ++k) {
    std::printf("k%d: interval covers the truth in %d of %d draws, mean estimate / truth %.4f\n", k, covered[k], kDraws,
                mean[k] / truth[k]);
    EXPECT_GE(covered[k], kDraws * 9 / 10) << "k" << k;
    EXPECT_NEAR(mean[k] / truth[k], 1.0, 0.02) << "k" << k;
  }
}

}  // namespace
}  // namespace fleetprof
