#include "autoheal/remediation/run_command.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <spawn.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstring>
#include <thread>

extern char** environ;

namespace autoheal::remediation {

std::string RunCommand(const std::vector<std::string>& argv, double timeout_seconds) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, args[0], nullptr, &attr, args.data(), environ);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) return argv[0] + ": " + std::strerror(rc);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int>(timeout_seconds * 1000));
    int status = 0;
    for (;;) {
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return argv[0] + ": timed out";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "ok";
    if (WIFEXITED(status)) return argv[0] + ": exit " + std::to_string(WEXITSTATUS(status));
    return argv[0] + ": killed by signal " + std::to_string(WTERMSIG(status));
}

Result<bool> AppendAsUser(const std::string& path, const std::string& text, uid_t uid) {
    if (uid == 0 && ::getuid() != 0) return MakeError("no job uid");
    const struct passwd* pw = ::getpwuid(uid);
    const gid_t gid = pw != nullptr ? pw->pw_gid : static_cast<gid_t>(uid);
    const pid_t pid = ::fork();
    if (pid < 0) return MakeError(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        if (::getuid() == 0 && uid != 0) {
            if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) {
                ::_exit(2);
            }
        }
        const int fd = ::open(path.c_str(),
                              O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) ::_exit(3);
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) ::_exit(4);
        const ssize_t n = ::write(fd, text.data(), text.size());
        ::_exit(n == static_cast<ssize_t>(text.size()) ? 0 : 5);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return MakeError(path + ": explanation not appended (as uid " + std::to_string(uid) +
                         ", status " + std::to_string(status) + ")");
    }
    return true;
}

}  // namespace autoheal::remediation
