// The node epilog (RunNodeEpilog, controller.h) as named steps, each a function of its inputs:
//   CollectNodeEvidence → (CollectJobOutput on the job's first node) → DiagnoseNode →
//   WriteNodeReport → AwaitDecision → CarryOutNodeActions → WriteNodeResults →
//   AppendExplanation.
// The node never acts on its own diagnosis: it carries out only what the controller's decision
// lists for it (node_actions.h), so the history and the breaker see every action.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/config.h"
#include "autoheal/core/script_env.h"
#include "autoheal/diag/diagnosis.h"
#include "autoheal/health/gpu_snapshot.h"
#include "autoheal/remediation/clock.h"
#include "autoheal/remediation/controller.h"
#include "autoheal/remediation/decision.h"
#include "autoheal/remediation/engine.h"
#include "autoheal/remediation/job_records.h"
#include "autoheal/remediation/remediation_config.h"
#include "autoheal/remediation/slurm_client.h"

namespace autoheal::remediation {

// What every node step is given. REQUIRES: ctx.job_id and ctx.node are SafePathPart.
struct NodeEpilogEnv {
    const Config& config;
    const ScriptContext& ctx;
    const RemediationConfig& rc;
    const health::HealthConfig& health;  // the post-job check's settings
    const Engine& engine;
    std::string self_exe;  // to find the CUDA check module
    Clock& clock;
};

// What Collect found on this node.
struct NodeEvidence {
    NodeReport report;           // the typed evidence, GPU identities and problems
    std::int64_t run_began = 0;  // when this run's prolog wrote its baseline (0: no baseline)
    health::NodeSnapshot after;  // the post-job snapshot (empty without job GPUs)
    std::string output_path;     // the job's stdout, when this node read it
};

// Kernel log since the prolog's cursor, NVML deltas against the prolog snapshot and the post-job
// quick check on the job's GPUs (evidence_sources.h); problems are noted in the report.
NodeEvidence CollectNodeEvidence(const NodeEpilogEnv& env);

// On the job's first node: asks Slurm for the batch host; when it is this node, reads the tail
// of the job's stdout/stderr and keeps its evidence (report.job_output).
void CollectJobOutput(const NodeEpilogEnv& env, SlurmClient& slurm, NodeEvidence* evidence);

// The node's own diagnosis (no history): for the logs and to know whether the controller may
// ask this node to act. Sets report.local_cause.
diag::Diagnosis DiagnoseNode(const NodeEpilogEnv& env, NodeEvidence* evidence);

Result<bool> WriteNodeReport(const NodeEpilogEnv& env, const NodeReport& report);

// Whether this node must wait for the decision: it read the job's output (to append the
// explanation), or its own diagnosis proposes an action the node carries out itself.
bool NeedsDecision(const NodeEvidence& evidence, const diag::Diagnosis& local);

// Why `d` is not the decision on run `restart` of `job` made after `not_before` (seconds since
// the epoch; 0: any time); empty when it is. A record that does not say its job or time (an
// older controller's) is not refused for it.
std::string DecisionMismatch(const DecisionRecord& d, const std::string& job, int restart,
                             std::int64_t not_before);

// Waits, bounded (results_wait_seconds + 10), for the controller's decision on this run, made
// after `not_before` (the run's prolog baseline): a decision file an earlier job with the same
// id left (job ids wrap) is not this run's, and the wait goes on.
std::optional<DecisionRecord> AwaitDecision(const NodeEpilogEnv& env, int restart,
                                            std::int64_t not_before);

// Executes what the decision lists for this node (reset_gpu), refusing a GPU a process still
// uses (per the post-job snapshot). Action and outcome words are the catalog's.
std::vector<NodeActionResult> CarryOutNodeActions(const NodeEpilogEnv& env,
                                                  const DecisionRecord& decision,
                                                  const health::NodeSnapshot& after);

Result<bool> WriteNodeResults(const NodeEpilogEnv& env, int restart,
                              const std::vector<NodeActionResult>& results);

// Appends the decision's explanation to the job's output, as the job's user.
void AppendExplanation(const NodeEpilogEnv& env, const DecisionRecord& decision,
                       const std::string& output_path);

// The whole node epilog on `env` (steps above); `slurm` is asked for the job's batch host on the
// job's first node only.
EpilogOutcome RunNodePipeline(const NodeEpilogEnv& env, SlurmClient& slurm);

}  // namespace autoheal::remediation
