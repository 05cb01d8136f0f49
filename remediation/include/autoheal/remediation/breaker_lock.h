// The breaker's lock: state_dir/jobs/breaker.lock, on the folder every node and the controller
// share (the job records' export). Whoever takes a node out of service holds it from reading
// Slurm's node states (how many nodes autoheal holds out) until the drain is done: the
// controller epilog and autoheal-agent around their decision and its actions, each prolog
// around its drain. So the prologs of one large job that fail together, and a job end at the
// same moment, cannot together pass the bound. The wait is bounded; a lock not taken in time
// (or a file that cannot be opened) means the count cannot be trusted: no node is taken out.
#pragma once

#include <string>

#include "autoheal/remediation/remediation_config.h"
#include "autoheal/remediation/slurm_client.h"

namespace autoheal::remediation {

// How long a taker waits for the breaker lock (each holder holds it for a few Slurm calls).
inline constexpr double kBreakerLockWaitSeconds = 10;

std::string BreakerLockPath(const std::string& state_dir);

class BreakerLock {
  public:
    // Creates the file when missing (as root: handed to the owner of state_dir/jobs, so that
    // the controller, as SlurmUser, can lock it too) and waits at most `wait_seconds` for it.
    BreakerLock(const std::string& state_dir, double wait_seconds);
    ~BreakerLock();
    BreakerLock(const BreakerLock&) = delete;
    BreakerLock& operator=(const BreakerLock&) = delete;
    bool held() const { return fd_ >= 0; }
    // Why it is not held (empty when it is).
    const std::string& error() const { return error_; }

  private:
    int fd_ = -1;
    std::string error_;
};

// What a prolog's drain came to.
struct BreakerDrain {
    enum class Outcome { kDrained, kAlreadyOurs, kAdminOwned, kHeld, kFailed };
    Outcome outcome = Outcome::kFailed;
    std::string detail;  // held or failed: why
};

// Drains `node` with `reason` unless that would pass the breaker: under the breaker lock, reads
// every node's state, counts those autoheal holds out (NodesTakenOut) against BreakerLimit and
// drains only below the limit. Lock not taken or node states unreadable: held.
BreakerDrain DrainWithinBreaker(SlurmClient& slurm, const std::string& state_dir,
                                const BreakerConfig& breaker, const std::string& node,
                                const std::string& reason,
                                double wait_seconds = kBreakerLockWaitSeconds);

}  // namespace autoheal::remediation
