// Paths built from other processes' values stay inside the agent's folders.
#include "common/safe_paths.h"

#include <sys/stat.h>
#include <unistd.h>

#include <fstream>

#include "common/text_checks.h"
#include "gtest/gtest.h"
#include "tests/e2e/process_runner.h"

namespace fleetprof {
namespace {

using ::fleetprof::testing::MakeTempDir;

class SafePathsTest : public ::testing::Test {
 protected:
  void SetUp() override { dir_ = MakeTempDir(); }
  void TearDown() override { std::system(("rm -rf '" + dir_ + "'").c_str()); }
  std::string dir_;
};

TEST(SafeFileName, KeepsOnlyPlainCharacters) {
  EXPECT_EQ(SafeFileName("c123_127.0.0.1:9000"), "c123_127.0.0.1_9000");
  EXPECT_EQ(SafeFileName("../../etc/passwd"), "_._.._etc_passwd");
  EXPECT_EQ(SafeFileName(std::string("a\0b", 3)), "a_b");
  EXPECT_EQ(SafeFileName(""), "_");
  EXPECT_EQ(SafeFileName(std::string(300, 'x')).size(), 128u);
  EXPECT_TRUE(IsSafeFileName(SafeFileName("\xff\xfe/..")));
}

TEST_F(SafePathsTest, FileDirectlyInRefusesEverythingElse) {
  EXPECT_EQ(*FileDirectlyIn(dir_, dir_ + "/t.json"), dir_ + "/t.json");
  EXPECT_EQ(*FileDirectlyIn(dir_, dir_ + "//./t.json"), dir_ + "/t.json");
  for (const std::string& bad : {std::string("/etc/passwd"), dir_ + "/../t.json", dir_ + "/a/../t.json",
                                 dir_ + "/sub/t.json", std::string("t.json"), dir_ + "/.t", dir_,
                                 dir_ + std::string("/t\0.json", 8)}) {
    EXPECT_FALSE(FileDirectlyIn(dir_, bad).ok()) << bad;
  }
}

TEST_F(SafePathsTest, SharedDropFolderIsOwnedAndSticky) {
  const std::string folder = dir_ + "/drop";
  ASSERT_TRUE(EnsureSharedDropFolder(folder).ok());
  struct stat st {};
  ASSERT_EQ(::lstat(folder.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 01733u);
  EXPECT_EQ(st.st_uid, ::geteuid());
  EXPECT_TRUE(EnsureSharedDropFolder(folder).ok());  // again: fine

  // A symlink someone planted is refused, not followed.
  const std::string link = dir_ + "/planted";
  ASSERT_EQ(::symlink("/etc", link.c_str()), 0);
  EXPECT_FALSE(EnsureSharedDropFolder(link).ok());
  if (::geteuid() == 0) {
    // A folder another user created first is refused.
    const std::string theirs = dir_ + "/theirs";
    ASSERT_EQ(::mkdir(theirs.c_str(), 0777), 0);
    ASSERT_EQ(::chown(theirs.c_str(), 65534, 65534), 0);
    absl::Status s = EnsureSharedDropFolder(theirs);
    EXPECT_FALSE(s.ok());
    EXPECT_NE(s.message().find("belongs to uid 65534"), std::string::npos) << s;
  }
}

TEST_F(SafePathsTest, OwnStateFolderIsClosedToOtherUsersAndAnOpenOneIsNamed) {
  // A new folder (and its missing parent) whatever the umask: 0700.
  const mode_t old_umask = ::umask(0);
  const std::string folder = dir_ + "/var/data";
  std::string warning;
  ASSERT_TRUE(EnsureOwnStateFolder(folder, &warning).ok());
  ::umask(old_umask);
  struct stat st {};
  ASSERT_EQ(::lstat(folder.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0700u);
  EXPECT_EQ(warning, "");
  // One the operator opened is kept as it is, and the warning names its mode.
  ASSERT_EQ(::chmod(folder.c_str(), 0755), 0);
  ASSERT_TRUE(EnsureOwnStateFolder(folder, &warning).ok());
  EXPECT_NE(warning.find("mode 0755"), std::string::npos) << warning;
  ASSERT_EQ(::lstat(folder.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 07777, 0755u);
  // A symlink is not a state folder.
  const std::string link = dir_ + "/link";
  ASSERT_EQ(::symlink(folder.c_str(), link.c_str()), 0);
  EXPECT_FALSE(EnsureOwnStateFolder(link, &warning).ok());
}

TEST_F(SafePathsTest, TraceFilesMustBePlainAndOwnedByTheTracedUser) {
  const std::string file = dir_ + "/t.json";
  std::ofstream(file) << "{}";
  const int64_t me = ::geteuid();
  EXPECT_TRUE(CheckedFile::Open(file, {me}).ok());
  EXPECT_TRUE(CheckedFile::Open(file, {}).ok());
  EXPECT_TRUE(CheckedFile::Open(file, {me + 1, me}).ok());
  EXPECT_EQ(CheckedFile::Open(file, {me + 1}).status().code(), absl::StatusCode::kPermissionDenied);
  // A link to a file the job's user may not read (here: a stand-in in this test's folder).
  const std::string secret = dir_ + "/secret.txt";
  std::ofstream(secret) << "secret";
  const std::string link = dir_ + "/link.json";
  ASSERT_EQ(::symlink(secret.c_str(), link.c_str()), 0);
  EXPECT_EQ(CheckedFile::Open(link, {}).status().code(), absl::StatusCode::kPermissionDenied);
  const std::string fifo = dir_ + "/fifo.json";
  ASSERT_EQ(::mkfifo(fifo.c_str(), 0600), 0);
  EXPECT_EQ(CheckedFile::Open(fifo, {}).status().code(), absl::StatusCode::kPermissionDenied);  // no hang
  EXPECT_EQ(CheckedFile::Open(dir_ + "/none", {}).status().code(), absl::StatusCode::kNotFound);
  {
    // Checked once, read through the open file: a name swapped for a link afterwards is not followed.
    auto checked = CheckedFile::Open(file, {me});
    ASSERT_TRUE(checked.ok());
    ASSERT_EQ(::rename(link.c_str(), file.c_str()), 0);
    std::ifstream in(checked->proc_path());
    std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(text, "{}");
  }
  ASSERT_EQ(::unlink(file.c_str()), 0);  // the link itself, never what it points to
  std::ofstream(file) << "{}";
  const std::string hard = dir_ + "/hard.json";
  ASSERT_EQ(::link(file.c_str(), hard.c_str()), 0);
  EXPECT_EQ(CheckedFile::Open(hard, {}).status().code(), absl::StatusCode::kPermissionDenied);
  EXPECT_EQ(ProcessUid("/proc", ::getpid()), static_cast<int64_t>(::getuid()));
}

TEST(TextChecks, PrintableUtf8AndHostPort) {
  EXPECT_TRUE(IsPrintableUtf8("train-ü-7", 253));
  EXPECT_FALSE(IsPrintableUtf8("bad\xff", 253));
  EXPECT_FALSE(IsPrintableUtf8("\xc0\xaf", 253));        // overlong '/'
  EXPECT_FALSE(IsPrintableUtf8("\xed\xa0\x80", 253));    // surrogate
  EXPECT_FALSE(IsPrintableUtf8("a\nb", 253));
  EXPECT_FALSE(IsPrintableUtf8("", 253));
  EXPECT_FALSE(IsPrintableUtf8(std::string(254, 'a'), 253));
  EXPECT_TRUE(IsHostPort("127.0.0.1:9999"));
  EXPECT_TRUE(IsHostPort("[::1]:9999"));
  EXPECT_TRUE(IsHostPort("node-7.cluster:1"));
  for (const char* bad : {"../../etc:1", "127.0.0.1:1/../x", "h:0", "h:65536", "h:", ":1", "h/1:2", "h:1x"}) {
    EXPECT_FALSE(IsHostPort(bad)) << bad;
  }
}

}  // namespace
}  // namespace fleetprof
