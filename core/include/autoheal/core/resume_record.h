// Why autoheal requeued a job last: written by the controller epilog to
// state_dir/jobs/<job>/resume.json (0644: the job's user reads it), read by the SPANK plugin in
// the job's next run to export AUTOHEAL_LAST_FAILURE and AUTOHEAL_EXCLUDED_NODES.
#pragma once

#include <string>

#include "autoheal/core/result.h"

namespace autoheal {

struct ResumeRecord {
    int restart = 0;  // the run whose end this explains (the next run has restart + 1)
    std::string cause;
    std::string explanation;  // the one line also shown as the job's AdminComment
    std::string excluded;     // the job's excluded nodes (hostlist expression)
};

std::string ResumeRecordToJson(const ResumeRecord& record);
Result<ResumeRecord> ResumeRecordFromJson(const std::string& json);

// state_dir/jobs/<job>/resume.json
std::string ResumeRecordPath(const std::string& state_dir, const std::string& job);

}  // namespace autoheal
