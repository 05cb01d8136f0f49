// Files written and read by root on behalf of a cluster, the one way: never through a symlink,
// never blocking on a FIFO, small files only, and writes that a reader sees whole or not at all.
#pragma once

#include <sys/types.h>

#include <cstddef>
#include <string>
#include <string_view>
#include <utility>

#include "autoheal/core/result.h"

namespace autoheal {

// Owns a file descriptor: closed when it leaves scope.
class UniqueFd {
  public:
    explicit UniqueFd(int fd = -1) : fd_(fd) {}
    ~UniqueFd() { Close(); }
    UniqueFd(const UniqueFd&) = delete;
    UniqueFd& operator=(const UniqueFd&) = delete;
    UniqueFd(UniqueFd&& other) noexcept : fd_(std::exchange(other.fd_, -1)) {}
    // Closes what it held, then takes `other`'s descriptor.
    UniqueFd& operator=(UniqueFd&& other) noexcept {
        if (this != &other) {
            Close();
            fd_ = std::exchange(other.fd_, -1);
        }
        return *this;
    }
    int get() const { return fd_; }
    // Closes now and reports close()'s result (a late write error shows up here).
    bool Close();

  private:
    int fd_;
};

// Reads a whole regular file of at most `max_bytes`. The last path component is not followed
// when it is a symlink and a FIFO does not block the open. When `missing` is given, a file that
// does not exist sets it and gives an error; otherwise errors name the path and the reason
// ("not a regular file", "larger than N bytes", the system's message).
Result<std::string> ReadSmallFile(const std::string& path, std::size_t max_bytes,
                                  bool* missing = nullptr);

// Who a written file and the folders created for it belong to.
struct FileOwner {
    uid_t uid;
    gid_t gid;
};

// Replaces `path` with `content` atomically: a hidden temporary file in the same folder
// (".<name>.tmp.XXXXXX"), written, given `file_mode`, synced, renamed over `path`, the folder
// synced. Missing parent folders are created with exactly `dir_mode`. With `owner`, the file and
// the folders this call creates are given to that user and group (only root may give them
// away). On failure the temporary file is removed and `path` is left as it was.
Result<bool> WriteFileAtomically(const std::string& path, std::string_view content,
                                 unsigned file_mode = 0644, unsigned dir_mode = 0755,
                                 const FileOwner* owner = nullptr);

// Files that steer what autoheal does as root (autoheal.yaml, rule files) must be controlled by
// root: owned by root (or by this program's user) and not writable by group or others, and so
// must the folder holding them. An error names the file and what is wrong.
Result<bool> CheckTrustedFile(const std::string& path);

}  // namespace autoheal
