// The jobs that have a step on this host's slurmd, read from its spool folder: no call to
// slurmctld. Each slurmstepd listens on a Unix socket named `<node>_<job>.<step>` (and
// `.<component>` for a heterogeneous job's component) in SlurmdSpoolDir; Slurm's own
// `scontrol listpids` finds the steps the same way (stepd_available(), src/common/stepd_api.c,
// unchanged in form from 22.05 to 26.05). The batch step (step id 4294967291) lives on the batch
// host, the extern step on every node with PrologFlags=Contain, srun steps where their tasks run.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::remediation {

// The ids of the jobs with at least one step socket of `node` in `spool_dir`, ascending, each
// once. A socket left by a slurmstepd that died stays until slurmd cleans it: the caller asks
// Slurm about each job. kUnavailable when the folder cannot be read.
Result<std::vector<std::uint32_t>> JobsWithStepsIn(const std::string& spool_dir,
                                                   const std::string& node);

// SlurmdSpoolDir as slurmd expands it for one node: `%n` the node's name, `%h` the host's name.
// nullopt for any other `%` code (not one slurmd expands: the caller cannot know the folder).
std::optional<std::string> ExpandSlurmdPath(const std::string& pattern, const std::string& node,
                                            const std::string& host);

}  // namespace autoheal::remediation
