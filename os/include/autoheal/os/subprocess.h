// Subprocess: the one way autoheal runs a child process (health checks' isolated children,
// ticket commands, GPU reset commands, appends done as the job user).
//
// It lives in its own library, autoheal_os (os/), below health and remediation: core stays free
// of fork and exec (ARCHITECTURE.md), and everything above core that starts a process links this
// one copy instead of keeping its own runner.
//
// The contract, for every child:
// - argv, never a shell; argv[0] must be an absolute path (no PATH lookup: a relative name is
//   refused with kInvalid before anything runs);
// - or, with no argv, a function run in the forked child (fork without exec);
// - the child leads its own process group; at the deadline the whole group gets SIGKILL;
// - the reap is bounded: after SIGKILL the child is polled (waitpid WNOHANG) for `reap_grace`,
//   then reported as unreaped; nothing ever waits on a child without a limit;
// - optional: an environment (else this process's), bytes for stdin (else /dev/null), capture
//   of stdout+stderr up to a size, and a user switch (setgroups, setgid, setuid) before exec or
//   before the in-child function.
// The caller should not be running other threads that hold locks the in-child function needs:
// an exec'd child runs only async-signal-safe code between fork and exec.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <cstddef>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::os {

// Who the child runs as. `groups` empty: no supplementary groups (setgroups(0)).
struct UserIds {
    uid_t uid = 0;
    gid_t gid = 0;
    std::vector<gid_t> groups;
};

struct SubprocessSpec {
    // Exec mode: the program and its arguments; argv[0] an absolute path.
    std::vector<std::string> argv;
    // Fork mode (argv empty): runs in the child after the process group and user switch; its
    // return value is the child's exit status (an exception: 70). `out_fd` is the capture pipe,
    // -1 without capture; stdin, stdout and stderr are left as they are in this mode.
    std::function<int(int out_fd)> in_child;
    // "NAME=value" entries; nullopt: this process's environment. Exec mode only.
    std::optional<std::vector<std::string>> env;
    // From Start to SIGKILL of the process group.
    std::chrono::milliseconds timeout{std::chrono::seconds(60)};
    // After SIGKILL, how long the reap is tried before the child is reported unreaped.
    std::chrono::milliseconds reap_grace{std::chrono::seconds(2)};
    // Written to the child's stdin, then end of file (exec mode; empty: stdin is /dev/null). A
    // child that exits without reading raises no SIGPIPE here.
    std::string input;
    // > 0: stdout and stderr (exec mode) or out_fd (fork mode) are captured, at most this many
    // bytes kept: the first ones, or the last ones with keep_tail.
    std::size_t capture_limit = 0;
    bool keep_tail = false;
    // Set: switch to this user in the child (needs root; failing to switch fails the start).
    std::optional<UserIds> user;
};

// How a child that was reaped before its deadline ended.
struct Exit {
    int code = -1;   // its exit status, when it exited
    int signal = 0;  // the signal that ended it; 0 when it exited
    bool ok() const { return signal == 0 && code == 0; }
    // "exit 0", "exit 3", "killed by signal 9".
    std::string Describe() const;
};

class Subprocess {
  public:
    // Starts the child. Errors: kInvalid (no argv and no function, relative argv[0]),
    // kNotFound (the program does not exist), kIo (pipes, fork, exec refused, user switch).
    static Result<Subprocess> Start(SubprocessSpec spec);

    Subprocess(Subprocess&& other) noexcept;
    Subprocess& operator=(Subprocess&&) = delete;
    Subprocess(const Subprocess&) = delete;
    Subprocess& operator=(const Subprocess&) = delete;
    // A child still running is killed (process group) and reaped, bounded.
    ~Subprocess();

    // Until the child exits or the deadline passes. Errors: kUnavailable when it timed out (the
    // group was killed; the message says whether it was reaped), kInternal when the child was
    // reaped elsewhere. The captured output stays readable either way.
    Result<Exit> Wait();

    // Without blocking, for a child that runs alongside its parent's loop: reads what it wrote
    // since the last call (into output()) and reaps it if it has ended; at its deadline it is
    // killed and reaped as Wait does (bounded by reap_grace). True while it runs; once false,
    // Wait returns its result at once.
    bool Poll();

    // What was captured so far (complete once Wait has returned).
    const std::string& output() const { return output_; }
    bool output_truncated() const { return truncated_; }
    pid_t pid() const { return pid_; }

  private:
    friend std::vector<Result<Exit>> WaitAll(std::span<Subprocess* const> children);
    Subprocess() = default;
    void Append(const char* data, std::size_t n);
    bool ServiceOutput();  // reads what is there; false at end of file
    void ServiceInput();
    void Finish(int status);
    void CloseFds();

    std::string program_;  // for messages: argv[0], or "child" in fork mode
    pid_t pid_ = -1;
    int out_fd_ = -1;
    int in_fd_ = -1;
    std::string input_;
    std::size_t written_ = 0;
    std::size_t capture_limit_ = 0;
    bool keep_tail_ = false;
    std::chrono::steady_clock::time_point deadline_;
    std::chrono::steady_clock::duration timeout_{};
    std::chrono::milliseconds reap_grace_{};
    std::string output_;
    bool truncated_ = false;
    std::optional<Result<Exit>> result_;  // set once the child is done with
    std::optional<std::chrono::steady_clock::time_point> killed_at_;
};

// Waits for several children together (each until its own deadline) and returns their results
// in order; output keeps flowing from all of them meanwhile.
std::vector<Result<Exit>> WaitAll(std::span<Subprocess* const> children);

// Start + Wait, for callers that need only the end: ok() is true for a reaped child whatever
// its exit status; the error is the start's or the wait's.
struct Completion {
    Exit exit;
    std::string output;
    bool output_truncated = false;
};
Result<Completion> RunSubprocess(SubprocessSpec spec);

}  // namespace autoheal::os
