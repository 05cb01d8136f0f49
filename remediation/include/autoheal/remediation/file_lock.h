// An exclusive flock(2) on a file, held for the object's lifetime: one decision at a time on a
// controller (the controller epilog and autoheal-agent take state_dir/controller.lock). A file
// that cannot be opened is not locked (the caller goes on: a missed lock costs a duplicate
// check, never a lost decision).
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <string>

namespace autoheal::remediation {

// kWait waits for the lock; kTry takes it only when no other process holds it (held() says
// whether it was taken).
class FileLock {
  public:
    enum Mode { kWait, kTry };
    explicit FileLock(const std::string& path, Mode mode = kWait) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd_ < 0) return;
        int rc = 0;
        do {
            rc = ::flock(fd_, LOCK_EX | (mode == kTry ? LOCK_NB : 0));
        } while (rc != 0 && errno == EINTR);
        if (rc != 0) {
            ::close(fd_);
            fd_ = -1;
        }
    }
    ~FileLock() {
        if (fd_ >= 0) ::close(fd_);
    }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;
    bool held() const { return fd_ >= 0; }

  private:
    int fd_ = -1;
};

}  // namespace autoheal::remediation
