// The jobs running on the agent's node, for the hang watch and the telemetry sampler, which look
// every agent.hang_check_interval on every node. Listing the cluster's whole job table from
// slurmctld that often on every node is a load that grows with nodes times jobs (16,384 agents
// every 30 s: 546 full listings a second); instead the node's slurmd spool folder says which
// jobs have a step here (slurmd_steps.h) and slurmctld is asked about those jobs only, one at a
// time: nothing on an idle node, one small answer per job elsewhere. A fault (fault_handler.h)
// still reads the whole table: it is rare, and a job that holds the node with no step on it yet
// must be found too.
#pragma once

#include <vector>

#include "autoheal/agent/fault_handler.h"
#include "autoheal/core/result.h"
#include "autoheal/remediation/slurm_client.h"

namespace autoheal::agent {

// The jobs RUNNING (not completing) that have a step on env.node, by env.slurmd_spool_dir; a job
// Slurm no longer knows is left out. Without a spool folder, or when it cannot be read, the jobs
// running on the node from slurmctld's whole job table (SlurmClient::RunningJobsOn).
Result<std::vector<remediation::JobInfo>> JobsRunningHere(const AgentEnv& env);

}  // namespace autoheal::agent
