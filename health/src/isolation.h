// Child processes with deadlines: the only way to bound a call into a GPU driver that may
// never return. The caller must be single-threaded when it forks (the prolog and the CLI are).
#pragma once

#include <sys/types.h>

#include <chrono>
#include <functional>
#include <string>
#include <vector>

namespace autoheal::health {

struct Child {
    pid_t pid = -1;
    int fd = -1;            // read end of the child's output pipe
    std::string output;     // everything the child wrote
    bool finished = false;  // wrote everything and exited before the deadline
    bool timed_out = false;
    int exit_status = -1;
};

// Starts `work(fd)` in a child process; it writes its results to fd. The child exits with
// status 0 after work returns; exceptions in the child exit with status 70.
Child SpawnChild(const std::function<void(int fd)>& work);

// Reads all children's output until each closes its pipe or `deadline` passes; children still
// running then are killed (SIGKILL) and marked timed_out. Never blocks past the deadline (a
// child stuck in the kernel is left to be reaped by init).
void WaitForChildren(std::vector<Child>* children, std::chrono::steady_clock::time_point deadline);

// Writes all of `data` to fd (retrying short writes).
void WriteAll(int fd, const std::string& data);

}  // namespace autoheal::health
