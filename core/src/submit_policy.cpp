#include "autoheal/core/submit_policy.h"

namespace autoheal {

SubmitDecision DecideOnSubmit(const JobOptions& options) {
    SubmitDecision decision;
    if (options.auto_resume.has_value()) {
        // An auto-resume job must be requeueable whatever the cluster's JobRequeue default or
        // the user's --no-requeue say: requeue is how autoheal resumes it.
        decision.force_requeue = true;
        decision.note = "auto_resume=" + std::to_string(*options.auto_resume) + ": requeue=1";
    }
    return decision;
}

}  // namespace autoheal
