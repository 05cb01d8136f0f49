#include "autoheal/core/files.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <utility>

namespace autoheal {
namespace {

std::string Errno(const std::string& path, const char* what) {
    return path + ": " + what + ": " + std::strerror(errno);
}

}  // namespace

bool UniqueFd::Close() {
    const int fd = std::exchange(fd_, -1);
    return fd < 0 || ::close(fd) == 0;
}

Result<std::string> ReadSmallFile(const std::string& path, std::size_t max_bytes, bool* missing) {
    if (missing != nullptr) *missing = false;
    UniqueFd fd(::open(path.c_str(), O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK | O_NOCTTY));
    if (fd.get() < 0) {
        if (errno == ENOENT && missing != nullptr) *missing = true;
        return MakeError(Errno(path, "cannot open"));
    }
    struct stat st {};
    if (::fstat(fd.get(), &st) != 0) return MakeError(Errno(path, "cannot stat"));
    if (!S_ISREG(st.st_mode)) return MakeError(path + ": not a regular file");
    // The buffer starts at the file's size, not at the limit: a zero-filled max_bytes buffer per
    // call made EpilogSlurmctld spend seconds on a 2,048-node job's small report files. A file
    // that grows while it is read (or reports no size) is read on in growing steps, up to one
    // byte past the limit, which tells that it is too large.
    const std::size_t limit = max_bytes + 1;
    const auto size = static_cast<std::size_t>(st.st_size > 0 ? st.st_size : 0);
    std::string text(std::min(size, max_bytes) + 1, '\0');
    std::size_t got = 0;
    for (;;) {
        if (got == text.size()) {
            if (text.size() >= limit) break;
            text.resize(std::min(limit, std::max<std::size_t>(text.size() * 2, 4096)));
        }
        const ssize_t n = ::read(fd.get(), text.data() + got, text.size() - got);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return MakeError(Errno(path, "cannot read"));
        if (n == 0) break;
        got += static_cast<std::size_t>(n);
    }
    if (got > max_bytes) {
        return MakeError(path + ": larger than " + std::to_string(max_bytes) + " bytes");
    }
    text.resize(got);
    return text;
}

Result<bool> WriteFileAtomically(const std::string& path, std::string_view content,
                                 unsigned file_mode, unsigned dir_mode, const FileOwner* owner) {
    const std::filesystem::path target(path);
    const std::filesystem::path dir =
        target.has_parent_path() ? target.parent_path() : std::filesystem::path(".");
    // Create the missing folders one by one, each with exactly dir_mode.
    std::filesystem::path built;
    for (const auto& part : dir) {
        built /= part;
        struct stat st {};
        if (::stat(built.c_str(), &st) == 0) continue;
        if (::mkdir(built.c_str(), dir_mode) == 0) {
            ::chmod(built.c_str(), dir_mode);  // exactly dir_mode, whatever the umask
            if (owner != nullptr && ::lchown(built.c_str(), owner->uid, owner->gid) != 0) {
                return MakeError(Errno(built.string(), "cannot give the folder away"));
            }
        } else if (errno != EEXIST) {
            return MakeError(Errno(built.string(), "cannot create folder"));
        }
    }
    std::string tmp = (dir / ("." + target.filename().string() + ".tmp.XXXXXX")).string();
    UniqueFd fd(::mkostemp(tmp.data(), O_CLOEXEC));
    if (fd.get() < 0) return MakeError(Errno(tmp, "cannot create"));
    auto fail = [&](const std::string& message) -> Result<bool> {
        ::unlink(tmp.c_str());
        return MakeError(message);
    };
    std::size_t done = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd.get(), content.data() + done, content.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n < 0) return fail(Errno(tmp, "cannot write"));
        done += static_cast<std::size_t>(n);
    }
    if (owner != nullptr && ::fchown(fd.get(), owner->uid, owner->gid) != 0) {
        return fail(Errno(tmp, "cannot give the file away"));
    }
    // mkostemp makes the file 0600.
    if (::fchmod(fd.get(), file_mode) != 0) return fail(Errno(tmp, "cannot chmod"));
    if (::fsync(fd.get()) != 0) return fail(Errno(tmp, "cannot fsync"));
    if (!fd.Close()) return fail(Errno(tmp, "cannot close"));
    if (::rename(tmp.c_str(), path.c_str()) != 0) return fail(Errno(path, "cannot rename onto"));
    // Make the rename itself durable; failing here loses nothing readers can see.
    UniqueFd dir_fd(::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC));
    if (dir_fd.get() >= 0) ::fsync(dir_fd.get());
    return true;
}

namespace {

std::string Unsafe(const std::string& path, const struct stat& st) {
    const uid_t me = ::geteuid();
    if (st.st_uid != 0 && st.st_uid != me) {
        return "owned by uid " + std::to_string(st.st_uid) + ", not root";
    }
    if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
        return std::string("writable by ") +
               ((st.st_mode & S_IWOTH) != 0 ? "every user" : "its group") + " (mode " +
               [&] {
                   char buf[8];
                   std::snprintf(buf, sizeof buf, "%04o",
                                 static_cast<unsigned>(st.st_mode & 07777));
                   return std::string(buf);
               }() +
               ")";
    }
    (void)path;
    return "";
}

}  // namespace

Result<bool> CheckTrustedFile(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return MakeError(path + ": " + std::strerror(errno));
    if (const std::string why = Unsafe(path, st); !why.empty()) {
        return MakeError(path + ": refused: " + why + "; it steers what autoheal does as root");
    }
    const std::string dir = std::filesystem::path(path).parent_path().string();
    struct stat dst {};
    if (::stat(dir.empty() ? "." : dir.c_str(), &dst) == 0) {
        if (const std::string why = Unsafe(dir, dst); !why.empty()) {
            return MakeError(path + ": refused: its folder " + dir + " is " + why);
        }
    }
    return true;
}

}  // namespace autoheal
