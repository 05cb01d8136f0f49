// LoadFacts: the job's state from Slurm, the nodes' history and the cluster's topology.
#include <spdlog/spdlog.h>
#include <sys/wait.h>

#include <algorithm>

#include "autoheal/core/resume_record.h"
#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/slurm_adapter.h"
#include "autoheal/remediation/slurm_retry.h"

namespace autoheal::remediation {
namespace {

// The no-progress breaker's facts from resume.json: where the checkpoint stood at the last
// requeue and how many requeues in a row it had not advanced (the newest checkpoint comes with
// the batch host's report, CollectReports).
void LoadProgress(const CtldEnv& env, DecisionInput* in) {
    auto text = ReadSmallFile(ResumeRecordPath(env.config.state_dir, env.ctx.job_id), 1 << 20);
    auto resume = text ? ResumeRecordFromJson(*text) : Result<ResumeRecord>(text.status());
    if (!resume || resume->restart + 1 != in->job.restart_count) return;  // not this run's
    if (resume->checkpoint_step) {
        in->job.checkpoint_at_requeue =
            CheckpointMark{*resume->checkpoint_step, resume->checkpoint_mtime};
    }
    in->job.stalled_requeues = resume->stalled_requeues;
}

}  // namespace

Result<JobTimes> LoadFacts(const CtldEnv& env, DecisionInput* in) {
    auto job = UntilSlurmAnswers(env.clock, [&] { return env.slurm.GetJob(JobIdOf(env)); });
    if (!job) return job.status();
    JobTimes times;
    times.start_time = job->start_time;
    times.end_time = job->end_time;
    // A run being requeued (autoheal-agent requeues it while it runs, with an early begin time)
    // may have its start time moved by Slurm to the next run's begin already: this run's start
    // is unknown then, and its reports are held to the job, node and run only (else every report
    // waits out results_wait_seconds, and the rerun with it).
    if (job->being_requeued) times.start_time = 0;
    // Requeued already (by Slurm after a prolog failure or a node failure, by an admin, or by an
    // earlier run of this program): record what the nodes saw, leave the job alone.
    times.requeued_elsewhere = job->being_requeued;
    in->job.failed = job->exit_code != 0 || job->state == "FAILED" || job->state == "NODE_FAIL" ||
                     job->state == "BOOT_FAIL";
    // A cancelled job did not fail; a job requeued already is not this program's to judge (and
    // does not count towards lemons).
    if (job->state == "CANCELLED" || times.requeued_elsewhere) in->job.failed = false;
    in->job.requeueable = job->requeue;
    in->job.user = std::to_string(job->user_id);
    if (WIFEXITED(job->exit_code)) in->job.exit_status = WEXITSTATUS(job->exit_code);
    LoadProgress(env, in);
    in->job.excluded = SlurmAdapter::ExpandHostlist(job->exc_nodes);

    const std::int64_t now = env.clock.Now();
    for (const std::string& node : in->job.nodes) {
        auto h = env.store.History(now - 90 * std::int64_t{86400}, node, "");
        if (h) in->history.emplace_back(node, std::move(*h));
    }
    const std::int64_t lemon_since = now - env.rc.lemon.window_seconds;
    for (const std::string& node : in->job.nodes) {
        auto n = env.store.CountJobRuns(node, "unexplained", lemon_since);
        auto users = env.store.JobRunUsers(node, "unexplained", lemon_since);
        if (n && users) in->unexplained_failures.push_back({node, *n, std::move(*users)});
    }
    auto recent = env.store.History(now - env.rc.correlation.window_seconds, "", "");
    if (recent) in->cluster.recent = std::move(*recent);
    if (auto topo = env.slurm.Topology()) {
        in->cluster.switches = std::move(*topo);
    } else {
        spdlog::warn("autoheal: epilog-ctld: {}; switches and blocks not known for this job",
                     topo.error());
    }
    return times;
}

void DropThisRunFromHistory(DecisionInput* in) {
    const std::string run = in->job.job + "/run" + std::to_string(in->job.restart_count) + "/";
    for (auto& [node, records] : in->history) {
        records.erase(std::remove_if(records.begin(), records.end(),
                                     [&](const diag::HistoryRecord& h) {
                                         return h.key.compare(0, run.size(), run) == 0;
                                     }),
                      records.end());
    }
}

}  // namespace autoheal::remediation
