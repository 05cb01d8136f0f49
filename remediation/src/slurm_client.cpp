// The rules for touching nodes (slurm_client.h), for the real adapter and the fake alike.
#include "autoheal/remediation/slurm_client.h"

namespace autoheal::remediation {

bool NodeInfo::ReasonIsOurs() const { return remediation::ReasonIsOurs(reason); }

Result<SlurmClient::DrainOutcome> SlurmClient::Drain(const std::string& node,
                                                     const std::string& reason) {
    if (!remediation::ReasonIsOurs(reason)) {
        return MakeError(ErrorCode::kInternal,
                         "internal: drain reason must start with 'autoheal:'");
    }
    auto current = GetNode(node);
    if (!current) return current.status();
    if (current->Out()) {
        if (!current->ReasonIsOurs()) return DrainOutcome::kAdminOwned;
        return DrainOutcome::kAlreadyOurs;
    }
    auto set = SetDrain(node, reason);
    if (!set) return set.status();
    return DrainOutcome::kDrained;
}

Result<SlurmClient::RebootOutcome> SlurmClient::Reboot(const std::string& node,
                                                       const std::string& reason) {
    if (!remediation::ReasonIsOurs(reason)) {
        return MakeError(ErrorCode::kInternal,
                         "internal: reboot reason must start with 'autoheal:'");
    }
    auto current = GetNode(node);
    if (!current) return current.status();
    if (current->Out() && !current->ReasonIsOurs()) return RebootOutcome::kAdminOwned;
    if (current->reboot_pending) return RebootOutcome::kAlreadyPending;
    auto asked = RequestReboot(node, reason);
    if (!asked) return asked.status();
    return RebootOutcome::kRequested;
}

Result<SlurmClient::ResumeOutcome> SlurmClient::Resume(const std::string& node, bool force) {
    auto current = GetNode(node);
    if (!current) return current.status();
    if (!current->Out()) return ResumeOutcome::kNotOut;
    if (!current->ReasonIsOurs() && !force) return ResumeOutcome::kAdminOwned;
    auto set = SetResume(node);
    if (!set) return set.status();
    return ResumeOutcome::kResumed;
}

}  // namespace autoheal::remediation
