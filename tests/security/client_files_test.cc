// The token and TLS files of a client: the agent's (a root daemon: its operator's files, checked
// as common/operator_file.h says) and a user's CLI (their own files, read as they are).

#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <string>

#include "gtest/gtest.h"
#include "rpc/channel.h"
#include "tests/security/scratch_dir_test.h"

namespace fleetprof {
namespace {

using ClientFilesTest = testing::ScratchDirTest;

// Left over from issue 21: the agent's --token_file and --dynolog_token_file were read with no
// check of who may write them, so a user who could write one chose root's agent's token.
TEST_F(ClientFilesTest, TheAgentsTokenFilesMustBeTheOperatorsWhileACliReadsItsUsersOwn) {
  const std::string token = WriteFile("token", "s3cret\n", 0666);
  ClientSecurityFlags flags;
  flags.token_file = token;

  auto user = LoadClientSecurity(flags, FilesFrom::kUser);
  ASSERT_TRUE(user.ok()) << user.status();
  EXPECT_EQ(user->token, "s3cret");

  auto agent = LoadClientSecurity(flags, FilesFrom::kOperator);
  ASSERT_FALSE(agent.ok());
  EXPECT_NE(agent.status().message().find("--token_file"), std::string::npos) << agent.status();
  EXPECT_NE(agent.status().message().find("writable by its group or others (mode 0666)"), std::string::npos)
      << agent.status();
  auto dynolog = ReadTokenFile("dynolog_token_file", token, FilesFrom::kOperator);
  ASSERT_FALSE(dynolog.ok());
  EXPECT_NE(dynolog.status().message().find("--dynolog_token_file"), std::string::npos) << dynolog.status();

  ASSERT_EQ(::chmod(token.c_str(), 0600), 0);
  agent = LoadClientSecurity(flags, FilesFrom::kOperator);
  ASSERT_TRUE(agent.ok()) << agent.status();
  EXPECT_EQ(agent->token, "s3cret");
  EXPECT_EQ(*ReadTokenFile("dynolog_token_file", token, FilesFrom::kOperator), "s3cret");

  if (::geteuid() == 0) {
    ASSERT_EQ(::chown(token.c_str(), 1001, 1001), 0);
    auto foreign = LoadClientSecurity(flags, FilesFrom::kOperator);
    ASSERT_FALSE(foreign.ok());
    EXPECT_NE(foreign.status().message().find("belongs to uid 1001"), std::string::npos) << foreign.status();
  }
}

TEST_F(ClientFilesTest, TheAgentsTlsFilesAreCheckedAndAFifoIsRefusedWithoutWaiting) {
  ClientSecurityFlags flags;
  flags.tls_ca = WriteFile("ca.pem", "-----BEGIN CERTIFICATE-----\n", 0664);
  auto agent = LoadClientSecurity(flags, FilesFrom::kOperator);
  ASSERT_FALSE(agent.ok());
  EXPECT_NE(agent.status().message().find("--tls_ca"), std::string::npos) << agent.status();
  ASSERT_EQ(::chmod(flags.tls_ca.c_str(), 0644), 0);  // a CA is no secret: others may read it
  EXPECT_TRUE(LoadClientSecurity(flags, FilesFrom::kOperator).ok());

  const std::string fifo = dir_ + "/key.pem";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  flags.tls_cert = WriteFile("cert.pem", "-----BEGIN CERTIFICATE-----\n", 0644);
  flags.tls_key = fifo;
  const auto start = std::chrono::steady_clock::now();
  agent = LoadClientSecurity(flags, FilesFrom::kOperator);
  ASSERT_FALSE(agent.ok());
  EXPECT_NE(agent.status().message().find("--tls_key"), std::string::npos) << agent.status();
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));  // refused, not waited on
}

}  // namespace
}  // namespace fleetprof
