// job_submit/autoheal: cluster policy applied inside slurmctld when a job is submitted.
// It reads only the job descriptor (no I/O under slurmctld's locks) and fails open: any
// internal error leaves the job as the user submitted it.
#include <string>

extern "C" {
#include "slurm/slurm_errno.h"
#include "src/common/slurm_xlator.h"
#include "src/slurmctld/slurmctld.h"
}

#include "autoheal/core/job_options.h"
#include "autoheal/core/submit_policy.h"
#include "c_guard.h"

#define AUTOHEAL_EXPORT __attribute__((visibility("default")))

extern "C" {
AUTOHEAL_EXPORT extern const char plugin_name[] = "autoheal job submit plugin";
AUTOHEAL_EXPORT extern const char plugin_type[] = "job_submit/autoheal";
AUTOHEAL_EXPORT extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;
}

namespace autoheal::job_submit {
namespace {

void LogGuardFailure(const char* where, const char* what) {
    error("autoheal: job_submit: %s: internal error, job left unchanged: %s", where, what);
}

int Submit(job_desc_msg_t* job_desc, uint32_t submit_uid) {
    if (job_desc == nullptr) return SLURM_SUCCESS;
    // The SPANK plugin's values arrive here without the SPANK_ prefix.
    const char* const* env = job_desc->spank_job_env;
    const std::size_t count = job_desc->spank_job_env_size;
    std::vector<std::string> problems;
    JobOptions options = JobOptionsFromEnv(
        [&](std::string_view name) { return LookupEnvArray(env, count, name); }, "", &problems);
    for (const std::string& p : problems) {
        info("autoheal: job_submit: ignoring option from uid=%u: %s", submit_uid, p.c_str());
    }
    SubmitDecision decision = DecideOnSubmit(options);
    if (decision.force_requeue) job_desc->requeue = 1;
    if (!decision.note.empty()) {
        info("autoheal: job_submit: uid=%u name=%s: %s", submit_uid,
             job_desc->name != nullptr ? job_desc->name : "", decision.note.c_str());
    }
    return SLURM_SUCCESS;
}

}  // namespace
}  // namespace autoheal::job_submit

extern "C" {

AUTOHEAL_EXPORT int init(void) {
    info("autoheal: job_submit: loaded");
    return SLURM_SUCCESS;
}

AUTOHEAL_EXPORT int fini(void) { return SLURM_SUCCESS; }

AUTOHEAL_EXPORT int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
    using namespace autoheal;
    return plugin::CallGuarded("job_submit", SLURM_SUCCESS, job_submit::LogGuardFailure,
                               [&] { return job_submit::Submit(job_desc, submit_uid); });
}

AUTOHEAL_EXPORT int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr,
                               uint32_t submit_uid) {
    return SLURM_SUCCESS;
}

}  // extern "C"
