// The catalog on a real 3-member etcd while members die: one member down is invisible to
// clients; with quorum lost, writes fail fast with UNAVAILABLE naming etcd while reads still
// answer; when quorum returns, everything works again by itself.

#include <atomic>
#include <chrono>
#include <thread>

#include "absl/strings/str_cat.h"
#include "gtest/gtest.h"
#include "storage/cluster/etcd_catalog.h"
#include "storage/cluster/etcd_client.h"
#include "tests/cluster/cluster_engines.h"
#include "tests/platform/test_cluster.h"
#include "tests/test_support.h"

namespace fleetprof::cluster {
namespace {

using Clock = std::chrono::steady_clock;

class CatalogFaultTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH(testing::EtcdPath());
    ASSERT_TRUE(etcd_.Start(3)) << etcd_.Log(0) << etcd_.Log(1) << etcd_.Log(2);
    EtcdSettings settings;
    settings.endpoints = *ParseEtcdEndpoints(etcd_.Endpoints());
    client_ = *EtcdClient::Connect(settings);
    catalog_ = NewEtcdCatalog(client_.get(), "/faults/");
  }

  // Adds one to the counter with compare-and-set; the status of the last try.
  absl::Status Increment() {
    while (true) {
      auto seen = catalog_->Get(CatalogTable::kSchedules, "counter");
      if (!seen.ok()) return seen.status();
      const int value = seen->has_value() ? std::stoi(**seen) : 0;
      CatalogWrite write;
      if (seen->has_value()) {
        write.RequireValue(CatalogTable::kSchedules, "counter", **seen);
      } else {
        write.RequireAbsent(CatalogTable::kSchedules, "counter");
      }
      write.Put(CatalogTable::kSchedules, "counter", std::to_string(value + 1));
      absl::Status s = catalog_->Commit(write);
      if (!absl::IsAborted(s)) return s;
    }
  }

  testing::EtcdCluster etcd_;
  std::unique_ptr<EtcdClient> client_;
  std::unique_ptr<Catalog> catalog_;
};

TEST_F(CatalogFaultTest, OneMemberDownIsNotSeenByClients) {
  std::atomic<bool> stop{false};
  std::atomic<int> done{0}, failed{0};
  std::string first_error;
  std::thread writer([&] {
    while (!stop) {
      absl::Status s = Increment();
      if (s.ok()) {
        ++done;
      } else if (failed++ == 0) {
        first_error = s.ToString();
      }
    }
  });
  while (done < 50) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  etcd_.Kill(0);  // the member the client talks to first
  const int at_kill = done;
  while (done < at_kill + 100) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  ASSERT_TRUE(etcd_.Restart(0)) << etcd_.Log(0);
  etcd_.Kill(1);
  const int at_second = done;
  while (done < at_second + 100) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  stop = true;
  writer.join();
  EXPECT_EQ(failed.load(), 0) << first_error;
  EXPECT_EQ(**catalog_->Get(CatalogTable::kSchedules, "counter"), std::to_string(done.load()));
}

TEST_F(CatalogFaultTest, WithoutQuorumWritesFailFastNamingEtcdAndReadsStillAnswerUntilItReturns) {
  CatalogWrite committed;
  committed.Put(CatalogTable::kProfiles, "p1", "record");
  ASSERT_TRUE(catalog_->Commit(committed).ok());
  etcd_.Kill(1);
  etcd_.Kill(2);

  const auto started = Clock::now();
  CatalogWrite write;
  write.Put(CatalogTable::kProfiles, "p2", "record");
  absl::Status refused = catalog_->Commit(write);
  const double write_s = std::chrono::duration<double>(Clock::now() - started).count();
  EXPECT_TRUE(absl::IsUnavailable(refused)) << refused;
  EXPECT_NE(refused.message().find("etcd"), std::string::npos) << refused;
  std::printf("without quorum: a write failed after %.2f s: %s\n", write_s, refused.ToString().c_str());

  const auto read_started = Clock::now();
  auto read = catalog_->Get(CatalogTable::kProfiles, "p1");
  std::printf("without quorum: a read answered after %.2f s\n",
              std::chrono::duration<double>(Clock::now() - read_started).count());
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_EQ(**read, "record");
  int listed = 0;
  ASSERT_TRUE(catalog_->Scan(CatalogTable::kProfiles, CatalogScan(), [&](std::string_view, std::string_view) {
    ++listed;
    return true;
  }).ok());
  EXPECT_EQ(listed, 1);

  ASSERT_TRUE(etcd_.Restart(1)) << etcd_.Log(1);
  ASSERT_TRUE(testing::Eventually(20, [&] { return catalog_->Commit(write).ok(); })) << "writes work again";
  EXPECT_EQ(**catalog_->Get(CatalogTable::kProfiles, "p2"), "record");
}

}  // namespace
}  // namespace fleetprof::cluster
