#include "autoheal/os/subprocess.h"

#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <system_error>
#include <utility>

#include "autoheal/core/files.h"

namespace autoheal::os {
namespace {

using Clock = std::chrono::steady_clock;

// What the child reports through its error pipe before it execs (or runs the function).
enum class ChildStage : int { kSetup = 1, kUser = 2, kExec = 3 };
struct ChildFailure {
    int stage;
    int error;
};

std::string ErrnoText(int error) { return std::generic_category().message(error); }

void CloseFd(int* fd) {
    if (*fd >= 0) ::close(*fd);
    *fd = -1;
}

void SetNonBlocking(int fd) { ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK); }

std::string Seconds(Clock::duration d) {
    char text[32];
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(d).count();
    std::snprintf(text, sizeof text, "%g", static_cast<double>(ms) / 1000.0);
    return text;
}

// The file descriptors and arrays the child needs, all made before fork: between fork and exec
// the child calls only async-signal-safe functions.
struct ChildPlan {
    std::vector<char*> argv;
    std::vector<char*> envp;
    char** env = environ;
    int stdin_fd = -1;       // child's end: /dev/null or the input socket
    int out_fd = -1;         // child's end of the capture pipe, or -1
    int parent_out_fd = -1;  // the parent's end: closed in a forked child (fork mode)
    int error_fd = -1;       // write end of the error pipe (close-on-exec)
    const SubprocessSpec* spec = nullptr;
};

[[noreturn]] void ChildFail(int error_fd, ChildStage stage) {
    const ChildFailure failure{static_cast<int>(stage), errno};
    // Nothing to do if this write fails: the parent then sees an exit status 127.
    [[maybe_unused]] const ssize_t n = ::write(error_fd, &failure, sizeof failure);
    ::_exit(127);
}

[[noreturn]] void RunChild(const ChildPlan& plan) {
    const SubprocessSpec& spec = *plan.spec;
    if (::setpgid(0, 0) != 0) ChildFail(plan.error_fd, ChildStage::kSetup);
    // No blocked signals and default dispositions, whatever this process had.
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    struct sigaction dfl {};
    dfl.sa_handler = SIG_DFL;
    for (int sig = 1; sig < NSIG; ++sig) {
        if (sig != SIGKILL && sig != SIGSTOP) ::sigaction(sig, &dfl, nullptr);
    }
    const bool exec_mode = !spec.argv.empty();
    if (exec_mode) {
        if (::dup2(plan.stdin_fd, STDIN_FILENO) < 0) ChildFail(plan.error_fd, ChildStage::kSetup);
        if (plan.out_fd >= 0 &&
            (::dup2(plan.out_fd, STDOUT_FILENO) < 0 || ::dup2(plan.out_fd, STDERR_FILENO) < 0)) {
            ChildFail(plan.error_fd, ChildStage::kSetup);
        }
    }
    if (spec.user) {
        const UserIds& u = *spec.user;
        if (::setgroups(u.groups.size(), u.groups.data()) != 0 || ::setgid(u.gid) != 0 ||
            ::setuid(u.uid) != 0) {
            ChildFail(plan.error_fd, ChildStage::kUser);
        }
    }
    if (exec_mode) {
        ::execve(plan.argv[0], plan.argv.data(), plan.env);
        ChildFail(plan.error_fd, ChildStage::kExec);
    }
    ::close(plan.error_fd);  // the start succeeded: the parent stops waiting for a report
    // Without exec nothing closes the parent's end here: kept open, the child would be a reader
    // of its own output and never see its parent go (no EPIPE, no SIGPIPE).
    if (plan.parent_out_fd >= 0) ::close(plan.parent_out_fd);
    int status = 70;
    try {
        status = spec.in_child(plan.out_fd);
    } catch (...) {
        status = 70;
    }
    ::_exit(status);
}

// Blocks until the child has exec'd, run into an error, or started its function (the error
// pipe closes in all three cases, and quickly). Returns the failure it reported, if any.
std::optional<ChildFailure> ReadChildFailure(int fd) {
    ChildFailure failure{};
    for (;;) {
        const ssize_t n = ::read(fd, &failure, sizeof failure);
        if (n < 0 && errno == EINTR) continue;
        if (n == static_cast<ssize_t>(sizeof failure)) return failure;
        return std::nullopt;
    }
}

Error StartError(const std::string& program, const ChildFailure& failure) {
    const std::string why = ErrnoText(failure.error);
    switch (static_cast<ChildStage>(failure.stage)) {
        case ChildStage::kUser:
            return MakeError(ErrorCode::kIo, program + ": cannot switch user: " + why);
        case ChildStage::kExec:
            return MakeError(failure.error == ENOENT || failure.error == ENOTDIR
                                 ? ErrorCode::kNotFound
                                 : ErrorCode::kIo,
                             program + ": cannot run: " + why);
        case ChildStage::kSetup:
            break;
    }
    return MakeError(ErrorCode::kIo, program + ": child setup failed: " + why);
}

std::optional<Error> CheckSpec(const SubprocessSpec& spec) {
    if (spec.argv.empty() && !spec.in_child) {
        return MakeError(ErrorCode::kInvalid, "subprocess: no program and no function");
    }
    if (!spec.argv.empty() && (spec.argv[0].empty() || spec.argv[0].front() != '/')) {
        return MakeError(
            ErrorCode::kInvalid,
            "'" + spec.argv[0] + "': not an absolute path (programs are not looked up in PATH)");
    }
    return std::nullopt;
}

}  // namespace

std::string Exit::Describe() const {
    if (signal != 0) return "killed by signal " + std::to_string(signal);
    return "exit " + std::to_string(code);
}

Result<Subprocess> Subprocess::Start(SubprocessSpec spec) {
    if (auto refused = CheckSpec(spec)) return *refused;
    Subprocess child;
    child.program_ = spec.argv.empty() ? "child" : spec.argv[0];
    auto io_error = [&](const char* what) {
        return MakeError(ErrorCode::kIo, child.program_ + ": " + what + ": " + ErrnoText(errno));
    };
    ChildPlan plan;
    plan.spec = &spec;
    for (const std::string& a : spec.argv) plan.argv.push_back(const_cast<char*>(a.c_str()));
    plan.argv.push_back(nullptr);
    if (spec.env) {
        for (const std::string& e : *spec.env) plan.envp.push_back(const_cast<char*>(e.c_str()));
        plan.envp.push_back(nullptr);
        plan.env = plan.envp.data();
    }
    // The parent's ends are closed by `child` on every path; the child's ends by `theirs`.
    struct Fds {
        int fd[3] = {-1, -1, -1};
        ~Fds() {
            for (int& f : fd) CloseFd(&f);
        }
    } theirs;
    int error_pipe[2];
    if (::pipe2(error_pipe, O_CLOEXEC) != 0) return io_error("pipe");
    UniqueFd error_read(error_pipe[0]);
    theirs.fd[0] = error_pipe[1];
    plan.error_fd = error_pipe[1];
    if (!spec.argv.empty()) {
        if (!spec.input.empty()) {
            // A socket, not a pipe: send with MSG_NOSIGNAL raises no SIGPIPE here.
            int in[2];
            if (::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, in) != 0) {
                return io_error("socketpair");
            }
            child.in_fd_ = in[0];
            theirs.fd[1] = in[1];
        } else {
            theirs.fd[1] = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
            if (theirs.fd[1] < 0) return io_error("/dev/null");
        }
        plan.stdin_fd = theirs.fd[1];
    }
    if (spec.capture_limit > 0) {
        int out[2];
        if (::pipe2(out, O_CLOEXEC) != 0) return io_error("pipe");
        child.out_fd_ = out[0];
        theirs.fd[2] = out[1];
        plan.out_fd = out[1];
        plan.parent_out_fd = out[0];
    }
    const pid_t pid = ::fork();
    if (pid < 0) return io_error("fork");
    if (pid == 0) RunChild(plan);
    // Also set here, so a kill of the group right after Start cannot miss it.
    ::setpgid(pid, pid);
    child.pid_ = pid;
    for (int& f : theirs.fd) CloseFd(&f);
    if (auto failure = ReadChildFailure(error_read.get())) {
        int status = 0;
        // It exits right after reporting; bounded anyway.
        for (int i = 0; i < 200 && ::waitpid(pid, &status, WNOHANG) == 0; ++i) ::usleep(5000);
        child.pid_ = -1;
        return StartError(child.program_, *failure);
    }
    child.input_ = std::move(spec.input);
    child.capture_limit_ = spec.capture_limit;
    child.keep_tail_ = spec.keep_tail;
    child.timeout_ = spec.timeout;
    child.deadline_ = Clock::now() + spec.timeout;
    child.reap_grace_ = spec.reap_grace;
    if (child.out_fd_ >= 0) SetNonBlocking(child.out_fd_);
    if (child.in_fd_ >= 0) SetNonBlocking(child.in_fd_);
    if (child.input_.empty()) CloseFd(&child.in_fd_);
    return child;
}

Subprocess::Subprocess(Subprocess&& other) noexcept
    : program_(std::move(other.program_)),
      pid_(std::exchange(other.pid_, -1)),
      out_fd_(std::exchange(other.out_fd_, -1)),
      in_fd_(std::exchange(other.in_fd_, -1)),
      input_(std::move(other.input_)),
      written_(other.written_),
      capture_limit_(other.capture_limit_),
      keep_tail_(other.keep_tail_),
      deadline_(other.deadline_),
      timeout_(other.timeout_),
      reap_grace_(other.reap_grace_),
      output_(std::move(other.output_)),
      truncated_(other.truncated_),
      result_(std::move(other.result_)),
      killed_at_(other.killed_at_) {}

Subprocess::~Subprocess() {
    if (pid_ > 0 && !result_) {
        deadline_ = Clock::now();  // kill now, reap bounded
        Subprocess* self = this;
        // The result is of no use to anyone here: the child is only cleaned up.
        [[maybe_unused]] const auto results = WaitAll(std::span<Subprocess* const>(&self, 1));
    }
    CloseFds();
}

void Subprocess::CloseFds() {
    CloseFd(&out_fd_);
    CloseFd(&in_fd_);
}

void Subprocess::Append(const char* data, std::size_t n) {
    if (!keep_tail_) {
        const std::size_t room = capture_limit_ - std::min(capture_limit_, output_.size());
        if (n > room) truncated_ = true;
        output_.append(data, std::min(n, room));
        return;
    }
    output_.append(data, n);
    if (output_.size() > capture_limit_) {
        output_.erase(0, output_.size() - capture_limit_);
        truncated_ = true;
    }
}

bool Subprocess::ServiceOutput() {
    char buffer[8192];
    while (out_fd_ >= 0) {
        const ssize_t n = ::read(out_fd_, buffer, sizeof buffer);
        if (n > 0) {
            Append(buffer, static_cast<std::size_t>(n));
        } else if (n == 0 || (errno != EINTR && errno != EAGAIN && errno != EWOULDBLOCK)) {
            CloseFd(&out_fd_);
        } else if (errno != EINTR) {
            return true;  // nothing more for now
        }
    }
    return false;
}

void Subprocess::ServiceInput() {
    while (in_fd_ >= 0 && written_ < input_.size()) {
        const ssize_t w = ::send(in_fd_, input_.data() + written_, input_.size() - written_,
                                 MSG_NOSIGNAL | MSG_DONTWAIT);
        if (w > 0) {
            written_ += static_cast<std::size_t>(w);
        } else if (w < 0 && errno == EINTR) {
            continue;
        } else {
            if (w < 0 && errno != EAGAIN && errno != EWOULDBLOCK) CloseFd(&in_fd_);
            return;
        }
    }
    if (in_fd_ >= 0 && written_ == input_.size()) CloseFd(&in_fd_);  // end of file on stdin
}

bool Subprocess::Poll() {
    if (result_ || pid_ <= 0) return false;
    ServiceOutput();
    ServiceInput();
    int status = 0;
    const pid_t r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
        Finish(status);
        return false;
    }
    if ((r < 0 && errno != EINTR) || Clock::now() >= deadline_) {
        [[maybe_unused]] const Result<Exit> done = Wait();
        return false;
    }
    return true;
}

void Subprocess::Finish(int status) {
    // Whatever is already in the pipe; a grandchild keeping it open does not hold us here.
    ServiceOutput();
    CloseFds();
    const std::string who = program_ + ": ";
    if (killed_at_) {
        result_ = MakeError(ErrorCode::kUnavailable, who + "timed out after " + Seconds(timeout_) +
                                                         " s (process group killed)");
        return;
    }
    Exit exit;
    if (WIFEXITED(status)) {
        exit.code = WEXITSTATUS(status);
    } else if (WIFSIGNALED(status)) {
        exit.signal = WTERMSIG(status);
    }
    result_ = exit;
}

Result<Exit> Subprocess::Wait() {
    Subprocess* self = this;
    return std::move(WaitAll(std::span<Subprocess* const>(&self, 1)).front());
}

// One pass per turn: reap or kill what is due, then poll every open pipe for a short while (a
// child's exit is noticed by waitpid, not by a closed pipe, which a grandchild may hold open).
std::vector<Result<Exit>> WaitAll(std::span<Subprocess* const> children) {
    for (;;) {
        bool pending = false;
        auto next_wake = Clock::now() + std::chrono::milliseconds(20);
        std::vector<pollfd> fds;
        for (Subprocess* c : children) {
            if (c->result_ || c->pid_ <= 0) continue;
            int status = 0;
            const pid_t r = ::waitpid(c->pid_, &status, WNOHANG);
            if (r == c->pid_) {
                c->Finish(status);
                continue;
            }
            if (r < 0 && errno != EINTR) {
                c->CloseFds();
                c->result_ = MakeError(ErrorCode::kInternal,
                                       c->program_ + ": lost track of process " +
                                           std::to_string(c->pid_) + ": " + ErrnoText(errno));
                continue;
            }
            const auto now = Clock::now();
            if (!c->killed_at_ && now >= c->deadline_) {
                ::kill(-c->pid_, SIGKILL);
                c->killed_at_ = now;
            }
            if (c->killed_at_ && now >= *c->killed_at_ + c->reap_grace_) {
                c->ServiceOutput();
                c->CloseFds();
                c->result_ =
                    MakeError(ErrorCode::kUnavailable,
                              c->program_ + ": timed out after " + Seconds(c->timeout_) +
                                  " s (process group killed; pid " + std::to_string(c->pid_) +
                                  " not reaped after " + Seconds(c->reap_grace_) + " s)");
                continue;
            }
            pending = true;
            if (!c->killed_at_) next_wake = std::min(next_wake, c->deadline_);
            if (c->out_fd_ >= 0) fds.push_back(pollfd{c->out_fd_, POLLIN, 0});
            if (c->in_fd_ >= 0) fds.push_back(pollfd{c->in_fd_, POLLOUT, 0});
        }
        if (!pending) break;
        const auto wait =
            std::chrono::duration_cast<std::chrono::milliseconds>(next_wake - Clock::now());
        ::poll(fds.data(), fds.size(), static_cast<int>(std::max<long long>(wait.count(), 0)));
        for (Subprocess* c : children) {
            if (c->result_) continue;
            c->ServiceOutput();
            c->ServiceInput();
        }
    }
    std::vector<Result<Exit>> results;
    results.reserve(children.size());
    for (Subprocess* c : children) {
        if (c->result_) {
            results.push_back(*c->result_);
        } else {
            results.push_back(MakeError(ErrorCode::kInternal, c->program_ + ": not started"));
        }
    }
    return results;
}

Result<Completion> RunSubprocess(SubprocessSpec spec) {
    auto child = Subprocess::Start(std::move(spec));
    if (!child) return child.status();
    Subprocess& running = child.value();
    auto exit = running.Wait();
    if (!exit) return exit.status();
    return Completion{*exit, running.output(), running.output_truncated()};
}

}  // namespace autoheal::os
