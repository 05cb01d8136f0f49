// What Slurm tells a Prolog, Epilog or EpilogSlurmctld program through its environment, read
// into one struct. Slurm sets different variables in each (see docs/slurm-facts in
// shared/docs/SLURM-LAB.md); missing ones stay empty.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/job_options.h"

namespace autoheal {

struct ScriptContext {
    std::string job_id;
    std::string node;  // SLURMD_NODENAME (empty in EpilogSlurmctld)
    std::string user;
    std::string uid;
    std::string partition;
    std::string nodelist;               // SLURM_JOB_NODELIST, else SLURM_NODELIST
    std::string job_gpus;               // SLURM_JOB_GPUS
    std::string restart_count;          // SLURM_JOB_RESTART_COUNT
    std::string exit_code;              // SLURM_JOB_EXIT_CODE (epilogs only)
    std::string script_context;         // SLURM_SCRIPT_CONTEXT, e.g. prolog_slurmd
    JobOptions options;                 // from SPANK_ + job_options.h kEnv*
    std::vector<std::string> problems;  // option values that failed validation
};

ScriptContext ReadScriptContext(const EnvLookup& lookup);

// One line of key=value pairs for logs: "job=12 node=node1 ... auto_resume=3".
std::string DescribeScriptContext(const ScriptContext& ctx);

}  // namespace autoheal
