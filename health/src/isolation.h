// Checks in child processes with a deadline: the only way to bound a call into a GPU driver that
// may never return. Each check is a function run in a forked child (os::Subprocess, fork mode)
// that writes its results to a pipe. The caller must be single-threaded when it forks (the
// prolog and the CLI are).
#pragma once

#include <chrono>
#include <cstddef>
#include <functional>
#include <string>
#include <vector>

namespace autoheal::health {

// What one child left behind.
struct Child {
    std::string output;      // everything it wrote (up to kMaxChildOutput bytes)
    bool finished = false;   // exited with status 0 before the deadline
    bool timed_out = false;  // still running at the deadline: its process group was killed
    int exit_status = -1;    // its exit status, 128 + signal when killed; -1 when it never ran
};

// 64 MiB: far more than any check writes (an NVML snapshot of a large node is some 100 KiB).
inline constexpr std::size_t kMaxChildOutput = 64u << 20;

// Runs every `work(fd)` in its own child at once (the child exits 0 after work returns, 70 on
// an exception) and waits for all of them until `deadline`. Never blocks much past the deadline:
// a child that does not die after SIGKILL (stuck in the kernel) is reported as timed out.
std::vector<Child> RunInChildren(const std::vector<std::function<void(int fd)>>& works,
                                 std::chrono::steady_clock::time_point deadline);

// Writes all of `data` to fd (retrying short writes).
void WriteAll(int fd, const std::string& data);

}  // namespace autoheal::health
