#include "autoheal/os/subprocess.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <string>
#include <thread>

namespace autoheal::os {
namespace {

using std::chrono::milliseconds;
using Clock = std::chrono::steady_clock;

SubprocessSpec Shell(const std::string& script, std::size_t capture = 4096) {
    SubprocessSpec spec;
    spec.argv = {"/bin/sh", "-c", script};
    spec.capture_limit = capture;
    spec.timeout = std::chrono::seconds(10);
    return spec;
}

// Dead or a zombie: nothing of it runs any more.
bool Gone(pid_t pid) {
    std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
    if (!stat) return true;
    std::string line;
    std::getline(stat, line);
    const std::size_t paren = line.rfind(')');
    return paren != std::string::npos && paren + 2 < line.size() && line[paren + 2] == 'Z';
}

bool GoneWithin(pid_t pid, milliseconds limit) {
    const auto until = Clock::now() + limit;
    while (!Gone(pid)) {
        if (Clock::now() > until) return false;
        std::this_thread::sleep_for(milliseconds(10));
    }
    return true;
}

TEST(Subprocess, ReportsExitStatusAndSignal) {
    auto exit3 = RunSubprocess(Shell("exit 3"));
    ASSERT_TRUE(exit3) << exit3.error();
    EXPECT_EQ(exit3->exit.code, 3);
    EXPECT_FALSE(exit3->exit.ok());
    EXPECT_EQ(exit3->exit.Describe(), "exit 3");

    auto killed = RunSubprocess(Shell("kill -9 $$"));
    ASSERT_TRUE(killed) << killed.error();
    EXPECT_EQ(killed->exit.signal, SIGKILL);
    EXPECT_EQ(killed->exit.Describe(), "killed by signal 9");

    auto fine = RunSubprocess(Shell("echo hello; echo oops >&2"));
    ASSERT_TRUE(fine) << fine.error();
    EXPECT_TRUE(fine->exit.ok());
    EXPECT_EQ(fine->output, "hello\noops\n");
}

TEST(Subprocess, RefusesRelativeProgramAndReportsMissingOne) {
    SubprocessSpec relative;
    relative.argv = {"nvidia-smi", "--gpu-reset"};
    auto r = Subprocess::Start(relative);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), ErrorCode::kInvalid);
    EXPECT_NE(r.error().find("not an absolute path"), std::string::npos) << r.error();
    EXPECT_NE(r.error().find("PATH"), std::string::npos) << r.error();

    SubprocessSpec missing;
    missing.argv = {"/nonexistent/autoheal-no-such-program"};
    auto m = Subprocess::Start(missing);
    ASSERT_FALSE(m);
    EXPECT_EQ(m.code(), ErrorCode::kNotFound);
    EXPECT_NE(m.error().find("/nonexistent/autoheal-no-such-program"), std::string::npos);

    SubprocessSpec nothing;
    EXPECT_EQ(Subprocess::Start(nothing).code(), ErrorCode::kInvalid);
}

TEST(Subprocess, PassesTheGivenEnvironmentOnly) {
    SubprocessSpec spec = Shell("printf '%s|%s' \"$AUTOHEAL_X\" \"${HOME-unset}\"");
    spec.env = std::vector<std::string>{"AUTOHEAL_X=forty two"};
    auto r = RunSubprocess(spec);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->output, "forty two|unset");

    ::setenv("AUTOHEAL_SUBPROCESS_TEST", "inherited", 1);
    auto inherited = RunSubprocess(Shell("printf %s \"$AUTOHEAL_SUBPROCESS_TEST\""));
    ASSERT_TRUE(inherited) << inherited.error();
    EXPECT_EQ(inherited->output, "inherited");
}

TEST(Subprocess, CapsCapturedOutput) {
    // 200000 bytes, far more than a pipe holds: the child must not block on a full pipe.
    auto head =
        RunSubprocess(Shell("i=0; while [ $i -lt 2000 ]; do "
                            "printf '%099d\\n' $i; i=$((i+1)); done",
                            1000));
    ASSERT_TRUE(head) << head.error();
    EXPECT_TRUE(head->exit.ok());
    EXPECT_EQ(head->output.size(), 1000u);
    EXPECT_TRUE(head->output_truncated);
    EXPECT_EQ(head->output.substr(0, 3), "000");

    SubprocessSpec tail = Shell("i=0; while [ $i -lt 2000 ]; do echo line$i; i=$((i+1)); done", 20);
    tail.keep_tail = true;
    auto t = RunSubprocess(tail);
    ASSERT_TRUE(t) << t.error();
    EXPECT_EQ(t->output.size(), 20u);
    EXPECT_TRUE(t->output_truncated);
    EXPECT_EQ(t->output.substr(t->output.size() - 9), "line1999\n");
}

TEST(Subprocess, FeedsStdinAndSurvivesAChildThatDoesNotRead) {
    SubprocessSpec cat;
    cat.argv = {"/bin/cat"};
    cat.input = "payload\n";
    cat.capture_limit = 100;
    auto r = RunSubprocess(cat);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->output, "payload\n");

    // Exits without reading a megabyte of input: no SIGPIPE kills this test.
    SubprocessSpec deaf = Shell("exit 0");
    deaf.input = std::string(1 << 20, 'x');
    auto d = RunSubprocess(deaf);
    ASSERT_TRUE(d) << d.error();
    EXPECT_TRUE(d->exit.ok());

    auto no_input = RunSubprocess(Shell("cat; echo done"));  // stdin is /dev/null
    ASSERT_TRUE(no_input) << no_input.error();
    EXPECT_EQ(no_input->output, "done\n");
}

TEST(Subprocess, DeadlineKillsTheWholeProcessGroup) {
    // The grandchild ignores SIGTERM and would outlive its parent: the group's SIGKILL ends it.
    SubprocessSpec spec = Shell("trap '' TERM; sleep 30 & echo $!; wait");
    spec.timeout = milliseconds(300);
    auto child = Subprocess::Start(spec);
    ASSERT_TRUE(child) << child.error();
    Subprocess& running = child.value();
    const auto start = Clock::now();
    auto r = running.Wait();
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(3));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), ErrorCode::kUnavailable);
    EXPECT_NE(r.error().find("timed out after 0.3 s (process group killed)"), std::string::npos)
        << r.error();
    const pid_t grandchild = std::atoi(running.output().c_str());
    ASSERT_GT(grandchild, 0) << running.output();
    EXPECT_TRUE(GoneWithin(grandchild, std::chrono::seconds(2)));
    EXPECT_TRUE(Gone(running.pid()));
}

TEST(Subprocess, AChildThatWillNotDieIsReportedWithoutHanging) {
    // The child moves into this test's process group, so the SIGKILL of its own group misses
    // it: from here it is a child that does not die (as one stuck in the kernel would be). It
    // moves only after Start has returned (the parent also sets the child's group, and on a busy
    // machine that can come after the child ran: it would move the child back), and says so
    // before the test waits; the deadline has passed by then or passes soon after.
    int go[2];
    int moved[2];
    ASSERT_EQ(::pipe(go), 0);
    ASSERT_EQ(::pipe(moved), 0);
    SubprocessSpec spec;
    const pid_t test_group = ::getpgrp();
    spec.in_child = [test_group, go, moved](int) {
        char byte = 0;
        if (::read(go[0], &byte, 1) != 1) return 8;
        if (::setpgid(0, test_group) != 0) return 9;
        if (::write(moved[1], &byte, 1) != 1) return 10;
        ::sleep(30);
        return 0;
    };
    spec.timeout = milliseconds(100);
    spec.reap_grace = milliseconds(200);
    auto child = Subprocess::Start(spec);
    ::close(go[0]);
    ::close(moved[1]);  // a child that exits before it moved ends the read below
    ASSERT_TRUE(child) << child.error();
    ASSERT_EQ(::write(go[1], "g", 1), 1);
    char byte = 0;
    ASSERT_EQ(::read(moved[0], &byte, 1), 1);
    ::close(go[1]);
    ::close(moved[0]);
    const auto start = Clock::now();
    auto r = child.value().Wait();
    EXPECT_LT(Clock::now() - start, std::chrono::seconds(2));
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), ErrorCode::kUnavailable);
    EXPECT_NE(r.error().find("not reaped after 0.2 s"), std::string::npos) << r.error();
    const pid_t pid = child.value().pid();
    ::kill(pid, SIGKILL);
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
}

TEST(Subprocess, WaitsForSeveralChildrenTogether) {
    std::vector<Subprocess> children;
    for (int i = 0; i < 3; ++i) {
        SubprocessSpec spec;
        spec.capture_limit = 100;
        spec.in_child = [i](int fd) {
            ::usleep(300 * 1000);
            const std::string text = "child " + std::to_string(i);
            return ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) ? i
                                                                                              : 99;
        };
        auto c = Subprocess::Start(spec);
        ASSERT_TRUE(c) << c.error();
        children.push_back(std::move(c).value());
    }
    std::vector<Subprocess*> all;
    all.reserve(children.size());
    for (Subprocess& c : children) all.push_back(&c);
    const auto start = Clock::now();
    const auto results = WaitAll(all);
    EXPECT_LT(Clock::now() - start, milliseconds(800));
    for (int i = 0; i < 3; ++i) {
        ASSERT_TRUE(results[i]) << results[i].error();
        EXPECT_EQ(results[i]->code, i);
        EXPECT_EQ(children[i].output(), "child " + std::to_string(i));
    }
}

// A child beside its parent's loop: Poll returns at once, shows what was written so far, and
// reaps the child when it ends; a child past its deadline is killed by Poll.
TEST(Subprocess, PollReadsAndReapsWithoutBlocking) {
    SubprocessSpec spec;
    spec.capture_limit = 1024;
    spec.in_child = [](int fd) -> int {
        (void)!::write(fd, "a\n", 2);
        std::this_thread::sleep_for(milliseconds(300));
        (void)!::write(fd, "b\n", 2);
        return 3;
    };
    auto child = Subprocess::Start(spec);
    ASSERT_TRUE(child) << child.error();
    const auto start = Clock::now();
    while (child->output().empty() && Clock::now() - start < milliseconds(2000)) {
        EXPECT_TRUE(child->Poll());
        std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_EQ(child->output(), "a\n");
    while (child->Poll() && Clock::now() - start < milliseconds(5000)) {
        std::this_thread::sleep_for(milliseconds(10));
    }
    EXPECT_FALSE(child->Poll());
    EXPECT_EQ(child->output(), "a\nb\n");
    auto exit = child->Wait();
    ASSERT_TRUE(exit) << exit.error();
    EXPECT_EQ(exit->code, 3);

    SubprocessSpec slow;
    slow.timeout = milliseconds(100);
    slow.in_child = [](int) -> int {
        std::this_thread::sleep_for(std::chrono::seconds(30));
        return 0;
    };
    auto late = Subprocess::Start(slow);
    ASSERT_TRUE(late) << late.error();
    std::this_thread::sleep_for(milliseconds(150));
    EXPECT_FALSE(late->Poll());
    auto killed = late->Wait();
    ASSERT_FALSE(killed);
    EXPECT_EQ(killed.code(), ErrorCode::kUnavailable);
    EXPECT_LT(Clock::now() - start, milliseconds(8000));
}

TEST(Subprocess, AnExceptionInTheChildFunctionExits70) {
    SubprocessSpec spec;
    spec.in_child = [](int) -> int { throw std::runtime_error("boom"); };
    auto r = RunSubprocess(spec);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->exit.code, 70);
}

TEST(Subprocess, SwitchesUserBeforeExec) {
    if (::getuid() != 0) GTEST_SKIP() << "needs root";
    SubprocessSpec spec = Shell("id -u; id -g; id -G");
    spec.user = UserIds{65534, 65534, {}};
    auto r = RunSubprocess(spec);
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->output, "65534\n65534\n65534\n");
}

TEST(Subprocess, FailingToSwitchUserFailsTheStart) {
    if (::getuid() == 0) GTEST_SKIP() << "root may switch to anyone";
    SubprocessSpec spec = Shell("true");
    spec.user = UserIds{0, 0, {}};
    auto r = Subprocess::Start(spec);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.code(), ErrorCode::kIo);
    EXPECT_NE(r.error().find("cannot switch user"), std::string::npos) << r.error();
}

}  // namespace
}  // namespace autoheal::os
