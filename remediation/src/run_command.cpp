#include "autoheal/remediation/run_command.h"

#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>

#include "autoheal/os/subprocess.h"

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

Result<bool> AppendAsUser(const std::string& path, const std::string& text, uid_t uid) {
    if (uid == 0 && ::getuid() != 0) return MakeError(ErrorCode::kInvalid, "no job uid");
    os::SubprocessSpec spec;
    if (::getuid() == 0 && uid != 0) {
        const struct passwd* pw = ::getpwuid(uid);
        spec.user = os::UserIds{uid, pw != nullptr ? pw->pw_gid : static_cast<gid_t>(uid), {}};
    }
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
