// Slurm calls whose failure would lose the decision are retried while slurmctld is away (a
// restart, a failover: the call fails with ErrorCode::kUnavailable): every second until `limit`
// has passed on `clock`. Any other error, or success, is returned at once.
#pragma once

#include <spdlog/spdlog.h>

#include <chrono>

#include "autoheal/remediation/clock.h"

namespace autoheal::remediation {

inline constexpr std::chrono::seconds kSlurmWait{90};

template <typename Call>
auto UntilSlurmAnswers(Clock& clock, const Call& call, std::chrono::seconds limit = kSlurmWait)
    -> decltype(call()) {
    const auto deadline = clock.Steady() + limit;
    for (int attempt = 1;; ++attempt) {
        auto result = call();
        if (result || result.code() != ErrorCode::kUnavailable || clock.Steady() >= deadline) {
            return result;
        }
        if (attempt == 1) {
            spdlog::warn("autoheal: epilog-ctld: {}: retrying until slurmctld answers",
                         result.error());
        }
        clock.Sleep(std::chrono::seconds(1));
    }
}

}  // namespace autoheal::remediation
