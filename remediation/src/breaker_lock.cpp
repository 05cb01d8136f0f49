// The breaker's lock and a drain under it (breaker_lock.h).
#include "autoheal/remediation/breaker_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <thread>

#include "autoheal/remediation/decision.h"

namespace autoheal::remediation {

std::string BreakerLockPath(const std::string& state_dir) {
    return state_dir + "/jobs/breaker.lock";
}

BreakerLock::BreakerLock(const std::string& state_dir, double wait_seconds) {
    const std::string path = BreakerLockPath(state_dir);
    // Read-write: over NFS, flock is a byte-range write lock, which needs a file open to write.
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0660);
    if (fd_ < 0) {
        error_ = path + ": cannot open: " + std::strerror(errno);
        return;
    }
    struct stat dir {};
    struct stat file {};
    if (::geteuid() == 0 && ::stat((state_dir + "/jobs").c_str(), &dir) == 0 && dir.st_uid != 0 &&
        ::fstat(fd_, &file) == 0 && file.st_uid == 0) {
        if (::fchown(fd_, dir.st_uid, dir.st_gid) != 0) {
            // Kept: this process can still lock it; the controller will say it cannot.
        }
    }
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int>(wait_seconds * 1000));
    while (::flock(fd_, LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR) {
            error_ = path + ": cannot lock: " + std::strerror(errno);
            break;
        }
        if (std::chrono::steady_clock::now() >= deadline) {
            error_ = path + ": still locked by another after " +
                     std::to_string(static_cast<int>(wait_seconds)) + " s";
            break;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (!error_.empty()) {
        ::close(fd_);
        fd_ = -1;
    }
}

BreakerLock::~BreakerLock() {
    if (fd_ >= 0) ::close(fd_);
}

BreakerDrain DrainWithinBreaker(SlurmClient& slurm, const std::string& state_dir,
                                const BreakerConfig& breaker, const std::string& node,
                                const std::string& reason, double wait_seconds) {
    using Outcome = BreakerDrain::Outcome;
    BreakerLock lock(state_dir, wait_seconds);
    if (!lock.held()) {
        return {Outcome::kHeld, "breaker open: the breaker lock was not taken (" + lock.error() +
                                    "), so how many nodes autoheal holds is unknown"};
    }
    auto nodes = slurm.ListNodes();
    if (!nodes) {
        return {Outcome::kHeld, "breaker open: node states unreadable (" + nodes.error() + ")"};
    }
    const int out = NodesTakenOut(*nodes);
    const int limit = BreakerLimit(breaker, static_cast<int>(nodes->size()));
    if (out + 1 > limit) {
        return {Outcome::kHeld,
                "breaker open: " + std::to_string(out) + " of " + std::to_string(nodes->size()) +
                    " nodes already taken out by autoheal (limit " + std::to_string(limit) + ")"};
    }
    auto drained = slurm.Drain(node, reason);
    if (!drained) return {Outcome::kFailed, drained.error()};
    switch (*drained) {
        case SlurmClient::DrainOutcome::kDrained:
            return {Outcome::kDrained, ""};
        case SlurmClient::DrainOutcome::kAlreadyOurs:
            return {Outcome::kAlreadyOurs, ""};
        case SlurmClient::DrainOutcome::kAdminOwned:
            break;
    }
    return {Outcome::kAdminOwned, ""};
}

}  // namespace autoheal::remediation
