// What the job_submit plugin does to a job at submit time, decided from the job's autoheal
// options alone (no I/O: this runs under slurmctld's locks).
#pragma once

#include <cstdint>
#include <string>

#include "autoheal/core/job_options.h"

namespace autoheal {

struct SubmitDecision {
    bool force_requeue = false;  // set job_desc->requeue = 1
    std::string note;            // one log line explaining the change; empty when none
};

SubmitDecision DecideOnSubmit(const JobOptions& options);

}  // namespace autoheal
