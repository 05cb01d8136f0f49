// Clock: wall time for records and steady time for the bounded waits (node reports, Slurm
// retries, the decision file), behind one seam so unit tests run those waits instantly with a
// manual clock (sim/manual_clock.h) whose Sleep advances its time.
#pragma once

#include <chrono>
#include <cstdint>

namespace autoheal::remediation {

class Clock {
  public:
    virtual ~Clock() = default;
    // Seconds since the epoch (records, history windows, Slurm begin times).
    virtual std::int64_t Now() = 0;
    // Monotonic time for deadlines.
    virtual std::chrono::steady_clock::time_point Steady() = 0;
    virtual void Sleep(std::chrono::milliseconds duration) = 0;
};

class SystemClock final : public Clock {
  public:
    std::int64_t Now() override;
    std::chrono::steady_clock::time_point Steady() override;
    void Sleep(std::chrono::milliseconds duration) override;
};

}  // namespace autoheal::remediation
