#include "autoheal/remediation/clock.h"

#include <ctime>
#include <thread>

namespace autoheal::remediation {

std::int64_t SystemClock::Now() { return static_cast<std::int64_t>(std::time(nullptr)); }

std::chrono::steady_clock::time_point SystemClock::Steady() {
    return std::chrono::steady_clock::now();
}

void SystemClock::Sleep(std::chrono::milliseconds duration) {
    std::this_thread::sleep_for(duration);
}

}  // namespace autoheal::remediation
