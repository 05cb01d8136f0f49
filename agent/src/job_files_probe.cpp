#include "autoheal/agent/job_files_probe.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <functional>
#include <sstream>
#include <string_view>

#include "autoheal/core/flight_recorder_env.h"
#include "autoheal/remediation/run_command.h"

namespace autoheal::agent {
namespace {

constexpr int kMaxEntries = 10000;
constexpr std::size_t kMaxAnswer = 4096;

// Calls fn(dir_fd, name) for each entry of `dir` (at most kMaxEntries), "." and ".." left out.
// False when the folder cannot be opened.
bool ForEachEntry(const std::string& dir,
                  const std::function<void(int dir_fd, std::string_view name)>& fn) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return false;
    int seen = 0;
    while (const dirent* e = ::readdir(d)) {
        const std::string_view name = e->d_name;
        if (name == "." || name == "..") continue;
        if (++seen > kMaxEntries) break;
        fn(::dirfd(d), name);
    }
    ::closedir(d);
    return true;
}

std::int64_t Mtime(const struct stat& st) { return static_cast<std::int64_t>(st.st_mtim.tv_sec); }

// In the child, as the user: "<bytes> <mtime>".
std::string ProbeInChild(const std::vector<std::string>& outputs,
                         const std::optional<std::string>& ckpt_dir) {
    FileProgress p;
    struct stat st {};
    for (const std::string& path : outputs) {
        if (::stat(path.c_str(), &st) != 0) continue;
        p.output_bytes += static_cast<std::uint64_t>(st.st_size);
        p.newest_mtime = std::max(p.newest_mtime, Mtime(st));
    }
    if (ckpt_dir && ::stat(ckpt_dir->c_str(), &st) == 0) {
        p.newest_mtime = std::max(p.newest_mtime, Mtime(st));
        ForEachEntry(*ckpt_dir, [&](int fd, std::string_view name) {
            struct stat entry {};
            if (::fstatat(fd, std::string(name).c_str(), &entry, AT_SYMLINK_NOFOLLOW) == 0) {
                p.newest_mtime = std::max(p.newest_mtime, Mtime(entry));
            }
        });
    }
    return std::to_string(p.output_bytes) + " " + std::to_string(p.newest_mtime);
}

bool IsRankFile(std::string_view name, std::string_view prefix, std::string_view suffix) {
    if (!name.starts_with(prefix) || !name.ends_with(suffix)) return false;
    const std::string_view rank =
        name.substr(prefix.size(), name.size() - prefix.size() - suffix.size());
    return !rank.empty() &&
           std::all_of(rank.begin(), rank.end(), [](char c) { return c >= '0' && c <= '9'; });
}

// One byte into each rank's FIFO; a FIFO without a reader (ENXIO) or full (EAGAIN) is skipped.
int AskInChild(const std::string& node_dir) {
    int asked = 0;
    ForEachEntry(node_dir, [&](int dir_fd, std::string_view name) {
        if (!IsRankFile(name, kFrPipePrefix, ".pipe")) return;
        const int fd = ::openat(dir_fd, std::string(name).c_str(),
                                O_WRONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
        if (fd < 0) return;
        struct stat st {};
        if (::fstat(fd, &st) == 0 && S_ISFIFO(st.st_mode) && ::write(fd, "1", 1) == 1) ++asked;
        ::close(fd);
    });
    return asked;
}

std::string CountInChild(const std::string& fr_dir, std::int64_t since) {
    DumpCount count;
    ForEachEntry(fr_dir, [&](int, std::string_view node) {
        ForEachEntry(fr_dir + "/" + std::string(node), [&](int fd, std::string_view name) {
            if (IsRankFile(name, kFrPipePrefix, ".pipe")) {
                ++count.pipes;
            } else if (IsRankFile(name, kFrDumpPrefix, "")) {
                struct stat st {};
                if (::fstatat(fd, std::string(name).c_str(), &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                    S_ISREG(st.st_mode) && Mtime(st) >= since) {
                    ++count.fresh_dumps;
                }
            }
        });
    });
    return std::to_string(count.pipes) + " " + std::to_string(count.fresh_dumps);
}

}  // namespace

Result<FileProgress> ProbeJobFiles(const std::vector<std::string>& outputs,
                                   const std::optional<std::string>& ckpt_dir, uid_t uid,
                                   std::chrono::milliseconds timeout) {
    auto answer = remediation::RunAsUser(uid, timeout, kMaxAnswer, [&]() -> Result<std::string> {
        return ProbeInChild(outputs, ckpt_dir);
    });
    if (!answer) return answer.status();
    FileProgress p;
    std::istringstream in(*answer);
    if (!(in >> p.output_bytes >> p.newest_mtime)) {
        return MakeError(ErrorCode::kInternal, "job files: unreadable answer");
    }
    return p;
}

Result<int> AskForDumps(const std::string& node_dir, uid_t uid, std::chrono::milliseconds timeout) {
    auto answer = remediation::RunAsUser(uid, timeout, kMaxAnswer, [&]() -> Result<std::string> {
        return std::to_string(AskInChild(node_dir));
    });
    if (!answer) return answer.status();
    return std::atoi(answer->c_str());
}

Result<DumpCount> CountDumps(const std::string& fr_dir, std::int64_t since, uid_t uid,
                             std::chrono::milliseconds timeout) {
    auto answer = remediation::RunAsUser(uid, timeout, kMaxAnswer, [&]() -> Result<std::string> {
        return CountInChild(fr_dir, since);
    });
    if (!answer) return answer.status();
    DumpCount count;
    std::istringstream in(*answer);
    if (!(in >> count.pipes >> count.fresh_dumps)) {
        return MakeError(ErrorCode::kInternal, "flight recorder: unreadable answer");
    }
    return count;
}

}  // namespace autoheal::agent
