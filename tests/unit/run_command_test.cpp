// The epilogs' uses of a child process (remediation/run_command.h) on the real Subprocess.
#include "autoheal/remediation/run_command.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>

namespace autoheal::remediation {
namespace {

TEST(RunCommand, SaysHowTheCommandEnded) {
    EXPECT_EQ(RunCommand({"/bin/true"}, 5), "ok");
    EXPECT_EQ(RunCommand({"/bin/sh", "-c", "exit 4"}, 5), "/bin/sh: exit 4");
    EXPECT_EQ(RunCommand({"/bin/sh", "-c", "kill -TERM $$"}, 5), "/bin/sh: killed by signal 15");
    const std::string slow = RunCommand({"/bin/sleep", "10"}, 0.1);
    EXPECT_NE(slow.find("/bin/sleep: timed out after 0.1 s"), std::string::npos) << slow;
    // No PATH lookup: a bare name never runs whatever file of that name is in the folder.
    const std::string bare = RunCommand({"nvidia-smi", "-r"}, 0.1);
    EXPECT_NE(bare.find("not an absolute path"), std::string::npos) << bare;
    EXPECT_EQ(RunCommand({}, 1), "no command");
}

std::string ReadAll(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

// A fresh folder under /tmp, 0755 (the job's user can reach what it holds); empty on failure.
std::string MakeTempDir() {
    char dir_template[] = "/tmp/autoheal-run-command-XXXXXX";
    if (::mkdtemp(dir_template) == nullptr) return "";
    ::chmod(dir_template, 0755);
    return dir_template;
}

TEST(AppendAsUser, AppendsToARegularFileOnlyAndNeverThroughALink) {
    const std::string dir = MakeTempDir();
    ASSERT_FALSE(dir.empty());
    const std::string file = dir + "/job.out";
    std::ofstream(file) << "job output\n";
    const uid_t me = ::getuid();

    auto done = AppendAsUser(file, "autoheal: requeued\n", me);
    ASSERT_TRUE(done) << done.error();
    EXPECT_EQ(ReadAll(file), "job output\nautoheal: requeued\n");

    const std::string link = dir + "/link.out";
    ASSERT_EQ(::symlink(file.c_str(), link.c_str()), 0);
    EXPECT_FALSE(AppendAsUser(link, "x", me));
    EXPECT_FALSE(AppendAsUser(dir, "x", me));
    EXPECT_EQ(ReadAll(file), "job output\nautoheal: requeued\n");

    if (me == 0) {
        // Root's 0600 file: the job's user (nobody) cannot append to it, and does not.
        ::chmod(file.c_str(), 0600);
        auto as_nobody = AppendAsUser(file, "as nobody\n", 65534);
        EXPECT_FALSE(as_nobody);
        EXPECT_NE(as_nobody.error().find("as uid 65534"), std::string::npos) << as_nobody.error();
        ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
        auto owned = AppendAsUser(file, "as nobody\n", 65534);
        ASSERT_TRUE(owned) << owned.error();
        EXPECT_EQ(ReadAll(file), "job output\nautoheal: requeued\nas nobody\n");
    }
    std::remove(link.c_str());
    std::remove(file.c_str());
    ::rmdir(dir.c_str());
}

// The job's output is read as the job's user: a file only root may read (a path the user named
// as their output) is not read for them; their own file is, its tail only.
TEST(ReadFileTailAsUser, ReadsOnlyWhatTheJobsUserMayRead) {
    if (::getuid() != 0) GTEST_SKIP() << "needs root to switch users";
    const std::string dir = MakeTempDir();
    ASSERT_FALSE(dir.empty());
    const std::string file = dir + "/job.out";
    std::ofstream(file) << "root's secret\n";
    ::chmod(file.c_str(), 0600);
    auto as_nobody = ReadFileTailAsUser(file, 1000, 65534);
    ASSERT_FALSE(as_nobody);
    EXPECT_NE(as_nobody.error().find("as uid 65534"), std::string::npos) << as_nobody.error();
    EXPECT_EQ(as_nobody.error().find("secret"), std::string::npos) << as_nobody.error();

    std::ofstream(file) << "first line\nRuntimeError: CUDA error\n";
    ASSERT_EQ(::chown(file.c_str(), 65534, 65534), 0);
    auto owned = ReadFileTailAsUser(file, 30, 65534);
    ASSERT_TRUE(owned) << owned.error();
    EXPECT_EQ(*owned, "RuntimeError: CUDA error\n");
    const std::string link = dir + "/link.out";
    ASSERT_EQ(::symlink(file.c_str(), link.c_str()), 0);
    auto through_link = ReadFileTailAsUser(link, 1000, 65534);
    ASSERT_FALSE(through_link);
    EXPECT_NE(through_link.error().find("symlink"), std::string::npos) << through_link.error();
    std::remove(link.c_str());
    std::remove(file.c_str());
    ::rmdir(dir.c_str());
}

}  // namespace
}  // namespace autoheal::remediation
