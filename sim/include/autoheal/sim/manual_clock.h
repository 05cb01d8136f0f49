// A Clock whose time moves only when asked: Sleep advances it at once, so bounded waits in the
// epilogs' steps finish instantly, in unit tests and in `autoheal simulate`'s simulated time.
#pragma once

#include <functional>

#include "autoheal/remediation/clock.h"

namespace autoheal::sim {

class ManualClock final : public remediation::Clock {
  public:
    explicit ManualClock(std::int64_t now = 1'800'000'000) : now_(now) {}
    std::int64_t Now() override { return now_ + ElapsedSeconds(); }
    std::chrono::steady_clock::time_point Steady() override {
        return std::chrono::steady_clock::time_point(elapsed_);
    }
    void Sleep(std::chrono::milliseconds duration) override {
        elapsed_ += duration;
        ++sleeps_;
        if (on_sleep) on_sleep();
    }
    // Runs at every Sleep: what happens elsewhere while the code under test waits (a node
    // epilog writing its result, slurmctld coming back).
    std::function<void()> on_sleep;
    void Advance(std::chrono::seconds duration) { elapsed_ += duration; }
    int sleeps() const { return sleeps_; }

  private:
    std::int64_t ElapsedSeconds() const {
        return std::chrono::duration_cast<std::chrono::seconds>(elapsed_).count();
    }
    std::int64_t now_;
    std::chrono::steady_clock::duration elapsed_{};
    int sleeps_ = 0;
};

}  // namespace autoheal::sim
