// The catalog over TLS to a real etcd whose members ask for client certificates
// (--client-cert-auth): with the members' CA and a client certificate signed by it, records are
// written and read; without the certificate, or trusting another CA, every call fails with
// UNAVAILABLE naming etcd once its retry budget is spent, and nothing is written.

#include <chrono>

#include "gtest/gtest.h"
#include "storage/cluster/etcd_catalog.h"
#include "storage/cluster/etcd_client.h"
#include "tests/cluster/cluster_engines.h"
#include "tests/e2e/test_pki.h"
#include "tests/test_support.h"

namespace fleetprof::cluster {
namespace {

class EtcdTlsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    FLEETPROF_REQUIRE_PATH(testing::EtcdPath());
    pki_ = testing::MakeTempDir();
    testing::CommandResult made = testing::MakeTestPki(pki_);
    ASSERT_EQ(made.exit_code, 0) << "openssl: " << made.err;
    etcd_.UseTls(Pki("ca.pem"), Pki("server.pem"), Pki("server.key"));
    ASSERT_TRUE(etcd_.Start(1)) << etcd_.Log(0);
  }
  std::string Pki(const std::string& name) const { return pki_ + "/" + name; }

  // A client of the TLS cluster trusting `ca` and showing the test client certificate or none.
  std::unique_ptr<EtcdClient> Client(const std::string& ca, bool with_certificate) {
    EtcdSettings settings;
    settings.endpoints = *ParseEtcdEndpoints(etcd_.Endpoints(), &settings.tls);
    settings.ca_pem = testing::ReadSmallFile(Pki(ca));
    if (with_certificate) {
      settings.cert_pem = testing::ReadSmallFile(Pki("client.pem"));
      settings.key_pem = testing::ReadSmallFile(Pki("client.key"));
    }
    settings.retry_budget = absl::Seconds(2);
    settings.slow_budget = absl::Seconds(2);
    return *EtcdClient::Connect(settings);
  }

  std::string pki_;
  testing::EtcdCluster etcd_;
};

TEST_F(EtcdTlsTest, WithTheCaAndAClientCertificateTheCatalogWorks) {
  bool tls = false;
  ASSERT_TRUE(ParseEtcdEndpoints(etcd_.Endpoints(), &tls).ok());
  ASSERT_TRUE(tls) << etcd_.Endpoints();
  std::unique_ptr<EtcdClient> client = Client("ca.pem", true);
  EXPECT_EQ(client->Describe(), etcd_.Endpoints());
  std::unique_ptr<Catalog> catalog = NewEtcdCatalog(client.get(), "/tls/");
  CatalogWrite write;
  write.Put(CatalogTable::kSchedules, "s1", "over TLS");
  ASSERT_TRUE(catalog->Commit(write).ok());
  auto read = catalog->Get(CatalogTable::kSchedules, "s1");
  ASSERT_TRUE(read.ok()) << read.status();
  ASSERT_TRUE(read->has_value());
  EXPECT_EQ(**read, "over TLS");
}

TEST_F(EtcdTlsTest, WithoutAClientCertificateOrTrustingAnotherCaEveryCallFailsNamingEtcd) {
  for (auto [ca, certificate] : {std::pair{"ca.pem", false}, std::pair{"other.pem", true}}) {
    SCOPED_TRACE(std::string("trusting ") + ca + (certificate ? " with" : " without") + " a client certificate");
    std::unique_ptr<EtcdClient> client = Client(ca, certificate);
    std::unique_ptr<Catalog> catalog = NewEtcdCatalog(client.get(), "/tls/");
    CatalogWrite write;
    write.Put(CatalogTable::kSchedules, "refused", "x");
    const auto started = std::chrono::steady_clock::now();
    absl::Status s = catalog->Commit(write);
    EXPECT_TRUE(absl::IsUnavailable(s)) << s;
    EXPECT_NE(s.message().find("etcd"), std::string_view::npos) << s;
    EXPECT_LT(std::chrono::steady_clock::now() - started, std::chrono::seconds(30));
    EXPECT_FALSE(catalog->Get(CatalogTable::kSchedules, "refused").ok());
  }
  // Nothing was written by either.
  std::unique_ptr<EtcdClient> client = Client("ca.pem", true);
  auto read = NewEtcdCatalog(client.get(), "/tls/")->Get(CatalogTable::kSchedules, "refused");
  ASSERT_TRUE(read.ok()) << read.status();
  EXPECT_FALSE(read->has_value());
}

}  // namespace
}  // namespace fleetprof::cluster
