#include "common/flags.h"

#include "gtest/gtest.h"

namespace fleetprof {
namespace {

TEST(FlagSetTest, AcceptsBothValueFormsAndFlagsAfterPositionals) {
  std::string server = "default";
  bool json = false;
  int64_t limit = 0;
  FlagSet flags("usage");
  flags.AddString("server", &server, "");
  flags.AddBool("json", &json, "");
  flags.AddInt("limit", &limit, "");
  ASSERT_TRUE(flags.Parse({"kernels", "abc", "--json", "--server", "h:1", "--limit=5"}).ok());
  EXPECT_EQ(server, "h:1");
  EXPECT_TRUE(json);
  EXPECT_EQ(limit, 5);
  EXPECT_EQ(flags.positional(), (std::vector<std::string>{"kernels", "abc"}));
}

TEST(FlagSetTest, RepeatedFlagsAccumulate) {
  std::vector<std::string> dirs;
  FlagSet flags("usage");
  flags.AddRepeated("trace_dir", &dirs, "");
  ASSERT_TRUE(flags.Parse({"--trace_dir=/a", "--trace_dir", "/b"}).ok());
  EXPECT_EQ(dirs, (std::vector<std::string>{"/a", "/b"}));
}

TEST(FlagSetTest, RejectsUnknownFlagsAndBadValues) {
  int64_t n = 0;
  FlagSet flags("usage");
  flags.AddInt("n", &n, "");
  EXPECT_EQ(flags.Parse({"--bogus"}).message(), "unknown flag --bogus (see --help)");
  EXPECT_FALSE(flags.Parse({"--n=abc"}).ok());
  EXPECT_FALSE(flags.Parse({"--n"}).ok());
}

TEST(FlagSetTest, HelpShowsDefaults) {
  std::string addr = "127.0.0.1:7070";
  FlagSet flags("usage line");
  flags.AddString("grpc_addr", &addr, "where to listen");
  ASSERT_TRUE(flags.Parse({"--help"}).ok());
  EXPECT_TRUE(flags.help_requested());
  EXPECT_NE(flags.HelpText().find("(default: 127.0.0.1:7070)"), std::string::npos);
}

}  // namespace
}  // namespace fleetprof
