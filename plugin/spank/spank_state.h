// State of the SPANK plugin inside one Slurm process. Slurm loads the plugin once per process
// (sbatch, salloc, srun, slurmstepd, the spank prolog/epilog process) and calls it from one
// thread, so plain process-wide state is enough.
#pragma once

extern "C" {
#include <slurm/spank.h>
}

#include <string>

#include "autoheal/core/job_options.h"
#include "autoheal/core/plugin_args.h"

namespace autoheal::spank {

struct State {
    PluginArgs args;
    JobOptions options;  // what the user asked for, validated
    // The options whose callback ran in this process (bit id - 1): Slurm made a job-control
    // copy of each of these, and only of these (kSlurmOptionCopies).
    unsigned given = 0;
};

State& GetState();

// Log sink for CallGuarded: slurm_error with the plugin's prefix.
void LogGuardFailure(const char* where, const char* what);

// Registers the options in slurm_spank_init. Returns 0 or -1.
int RegisterOptions(spank_t sp);

// Allocator and local contexts (sbatch/salloc, srun creating an allocation): replace Slurm's
// job-control copies of the options with one record of the validated values (job_options.h,
// kEnvOptions) that job_submit, the prolog and the epilogs read; each entry costs sbatch a
// zeroed 256 KiB buffer.
int RecordJobControlEnv(spank_t sp);

// autoheal.yaml's state_dir (its default when unset), found as the programs find the file.
std::string StateDir();
// autoheal.yaml's policy.flight_recorder (its default when unset or the file cannot be read).
FlightRecorderPolicy SiteFlightRecorder();

// Remote context, as the job user (slurm_spank_user_init): exports the resume variables
// (spank_task.cpp).
int ExportResumeEnv(spank_t sp);
// Remote context, in each task (slurm_spank_task_init): AUTOHEAL_RESTART_COUNT.
int ExportRestartCount(spank_t sp);
// Remote context, in each task as root (slurm_spank_task_init_privileged): PyTorch's flight
// recorder for the jobs that get it (FlightRecorderWanted; spank_flight_recorder.cpp).
int SetFlightRecorderEnv(spank_t sp);

}  // namespace autoheal::spank
