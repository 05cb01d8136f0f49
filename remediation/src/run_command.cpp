#include "autoheal/remediation/run_command.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <functional>
#include <optional>

#include "autoheal/os/subprocess.h"
#include "autoheal/remediation/evidence_sources.h"

namespace autoheal::remediation {

std::string RunCommand(const std::vector<std::string>& argv, double timeout_seconds) {
    if (argv.empty()) return "no command";
    os::SubprocessSpec spec;
    spec.argv = argv;
    spec.timeout = std::chrono::milliseconds(
        static_cast<std::int64_t>(std::llround(std::max(timeout_seconds, 0.0) * 1000)));
    auto done = os::RunSubprocess(std::move(spec));
    if (!done) return done.error();
    return done->exit.ok() ? "ok" : argv.front() + ": " + done->exit.Describe();
}

namespace {

// The job user's ids (primary group, no supplementary groups), when this process is root and the
// user is not.
std::optional<os::UserIds> JobUser(uid_t uid) {
    if (::getuid() != 0 || uid == 0) return std::nullopt;
    const struct passwd* pw = ::getpwuid(uid);
    return os::UserIds{uid, pw != nullptr ? pw->pw_gid : static_cast<gid_t>(uid), {}};
}

}  // namespace

Result<std::string> RunAsUser(uid_t uid, std::chrono::milliseconds timeout, std::size_t max_bytes,
                              const std::function<Result<std::string>()>& work) {
    os::SubprocessSpec spec;
    spec.user = JobUser(uid);
    spec.timeout = timeout;
    // The text (exit 0) or the error message (exit 3) comes back through the capture.
    spec.capture_limit = max_bytes + 4096;
    spec.in_child = [&](int out_fd) {
        auto text = work();
        const std::string& bytes = text ? *text : text.error();
        std::size_t done = 0;
        while (done < bytes.size()) {
            const ssize_t n = ::write(out_fd, bytes.data() + done, bytes.size() - done);
            if (n < 0 && errno == EINTR) continue;
            if (n <= 0) return 5;
            done += static_cast<std::size_t>(n);
        }
        return text ? 0 : 3;
    };
    auto done = os::RunSubprocess(std::move(spec));
    if (!done) return MakeError(done.code(), done.error());
    if (done->exit.ok()) return done->output;
    const std::string as = "as uid " + std::to_string(uid);
    if (done->exit.code == 3) return MakeError(ErrorCode::kIo, done->output + " (" + as + ")");
    return MakeError(ErrorCode::kIo, "the child " + as + " failed: " + done->exit.Describe());
}

Result<std::string> ReadFileTailAsUser(const std::string& path, std::uint64_t max_bytes,
                                       uid_t uid) {
    if (!JobUser(uid)) return ReadFileTailSafely(path, max_bytes);
    auto tail = RunAsUser(uid, std::chrono::seconds(10), static_cast<std::size_t>(max_bytes),
                          [&] { return ReadFileTailSafely(path, max_bytes); });
    if (!tail && tail.code() != ErrorCode::kIo) {
        return MakeError(tail.code(), path + ": not read: " + tail.error());
    }
    return tail;
}

Result<bool> AppendAsUser(const std::string& path, const std::string& text, uid_t uid) {
    if (uid == 0 && ::getuid() != 0) return MakeError(ErrorCode::kInvalid, "no job uid");
    os::SubprocessSpec spec;
    spec.user = JobUser(uid);
    spec.timeout = std::chrono::seconds(10);
    // Exit statuses: 3 cannot open (missing, a link, not the user's to write), 4 not a regular
    // file, 5 short write.
    spec.in_child = [&](int) {
        const int fd = ::open(path.c_str(),
                              O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) return 3;
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) return 4;
        const ssize_t n = ::write(fd, text.data(), text.size());
        return n == static_cast<ssize_t>(text.size()) ? 0 : 5;
    };
    auto done = os::RunSubprocess(std::move(spec));
    if (!done) return MakeError(done.code(), path + ": explanation not appended: " + done.error());
    if (!done->exit.ok()) {
        return MakeError(ErrorCode::kIo, path + ": explanation not appended (as uid " +
                                             std::to_string(uid) + ", " + done->exit.Describe() +
                                             ")");
    }
    return true;
}

}  // namespace autoheal::remediation
