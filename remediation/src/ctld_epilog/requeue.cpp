// Requeue: the job back in the queue once per run, with the culprits excluded, an early begin
// time and the explanation in its AdminComment.
#include <spdlog/spdlog.h>

#include "autoheal/core/resume_record.h"
#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/slurm_adapter.h"
#include "autoheal/remediation/slurm_retry.h"

namespace autoheal::remediation {
namespace {

// Requeued once per run: by an earlier attempt of this call, or by a run of this program that a
// slurmctld restart interrupted.
bool RequeuedAlready(const CtldEnv& env, const DecisionInput& in) {
    auto current = UntilSlurmAnswers(env.clock, [&] { return env.slurm.GetJob(JobIdOf(env)); });
    return current && (current->being_requeued || current->restart_count > in.job.restart_count);
}

// After the requeue: the resume record for the SPANK plugin, the excluded nodes, the early
// begin time and the AdminComment.
void UpdateRequeuedJob(const CtldEnv& env, const DecisionInput& in, const JobDecision& d) {
    ResumeRecord resume;
    resume.restart = in.job.restart_count;
    resume.cause = d.cause;
    resume.explanation = d.explanation;
    resume.excluded = SlurmAdapter::CompressHostlist(d.exclude);
    resume.stalled_requeues = d.stalled_requeues;
    if (in.job.checkpoint) {
        resume.checkpoint_step = in.job.checkpoint->step;
        resume.checkpoint_mtime = in.job.checkpoint->mtime;
    } else if (in.job.checkpoint_at_requeue) {  // not known this time: the last known mark
        resume.checkpoint_step = in.job.checkpoint_at_requeue->step;
        resume.checkpoint_mtime = in.job.checkpoint_at_requeue->mtime;
    }
    auto w =
        WriteJobRecord(env.config.state_dir, ResumeRecordPath(env.config.state_dir, env.ctx.job_id),
                       ResumeRecordToJson(resume), 0644);
    if (!w) spdlog::warn("autoheal: epilog-ctld: {}", w.error());
    JobUpdate u;
    u.exc_nodes = resume.excluded;
    u.admin_comment = d.explanation;
    // Slurm holds a requeued job until now + cred_expire + 1 (121 s by default) unless its begin
    // time is later than the moment the requeue completes: ask for a few seconds.
    u.begin_time = env.clock.Now() + env.rc.requeue_delay_seconds;
    auto up = env.slurm.UpdateJob(JobIdOf(env), u);
    if (!up) spdlog::error("autoheal: epilog-ctld: {}", up.error());
}

}  // namespace

void RenewBeginTime(const CtldEnv& env) {
    if (env.rc.dry_run) return;
    JobUpdate u;
    u.begin_time = env.clock.Now() + env.rc.requeue_delay_seconds;
    auto up = env.slurm.UpdateJob(JobIdOf(env), u);
    if (!up) spdlog::warn("autoheal: epilog-ctld: {}", up.error());
}

std::string Requeue(const CtldEnv& env, const DecisionInput& in, JobDecision* d,
                    const Incidents& incidents) {
    const bool dry = env.rc.dry_run;
    if (!d->requeue || dry) {
        if (d->explanation.empty()) return "";
        if (dry && d->requeue) {
            d->explanation = "autoheal (dry-run): would have " + d->explanation.substr(10);
        }
        // Slurm 22.05 refuses updates to a finished job: the batch host's epilog appends the
        // explanation to the job's output instead (RunNodeEpilog).
        RecordOutcome(env, incidents.job, diag::Action::kExplain, env.ctx.job_id,
                      dry ? diag::Outcome::kDryRun : diag::Outcome::kDone, d->explanation);
        return "";
    }
    std::string failure;
    if (!RequeuedAlready(env, in)) {
        auto r = UntilSlurmAnswers(env.clock, [&]() -> Result<bool> {
            auto done = env.slurm.Requeue(JobIdOf(env));
            if (!done && RequeuedAlready(env, in)) return true;
            return done;
        });
        if (!r) {
            failure = r.error();
            d->explanation = "autoheal: requeue failed (" + r.error() + ") after " + d->summary;
        }
    }
    if (failure.empty()) UpdateRequeuedJob(env, in, *d);
    RecordOutcome(env, incidents.job, diag::Action::kRequeue,
                  env.ctx.job_id + "/run" + std::to_string(in.job.restart_count),
                  failure.empty() ? diag::Outcome::kDone : diag::Outcome::kFailed,
                  failure.empty() ? d->explanation : failure);
    return failure;
}

}  // namespace autoheal::remediation
