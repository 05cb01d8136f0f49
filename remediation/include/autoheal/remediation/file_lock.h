// An exclusive flock(2) on a file, held for the object's lifetime: one decision at a time on a
// controller (the controller epilog and autoheal-agent take state_dir/controller.lock). A file
// that cannot be opened is not locked (the caller goes on: a missed lock costs a duplicate
// check, never a lost decision).
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <string>

namespace autoheal::remediation {

class FileLock {
  public:
    explicit FileLock(const std::string& path) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd_ >= 0) ::flock(fd_, LOCK_EX);
    }
    ~FileLock() {
        if (fd_ >= 0) ::close(fd_);
    }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

  private:
    int fd_ = -1;
};

}  // namespace autoheal::remediation
