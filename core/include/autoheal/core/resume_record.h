// Why autoheal requeued a job last: written by the controller epilog to
// state_dir/jobs/<job>/resume.json (0644: the job's user reads it), read by the SPANK plugin in
// the job's next run to export AUTOHEAL_LAST_FAILURE and AUTOHEAL_EXCLUDED_NODES.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "autoheal/core/result.h"

namespace autoheal {

struct ResumeRecord {
    int restart = 0;  // the run whose end this explains (the next run has restart + 1)
    std::string cause;
    std::string explanation;  // the one line also shown as the job's AdminComment
    std::string excluded;     // the job's excluded nodes (hostlist expression)
    // The no-progress breaker: the newest checkpoint's step and save time when it was requeued
    // (absent: unknown), and how many requeues in a row it had not advanced.
    std::optional<std::int64_t> checkpoint_step;
    std::int64_t checkpoint_mtime = 0;
    int stalled_requeues = 0;
};

std::string ResumeRecordToJson(const ResumeRecord& record);
Result<ResumeRecord> ResumeRecordFromJson(const std::string& json);

// state_dir/jobs/<job>/resume.json
std::string ResumeRecordPath(const std::string& state_dir, const std::string& job);

}  // namespace autoheal
