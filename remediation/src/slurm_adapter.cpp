#include "autoheal/remediation/slurm_adapter.h"

#include <unistd.h>

#include <cstdlib>
#include <cstring>

extern "C" {
#include <slurm/slurm.h>
#include <slurm/slurm_errno.h>
// Exported by libslurm but not declared in slurm.h (returns a static string).
const char* slurm_node_state_string(uint32_t state);
}

namespace autoheal::remediation {
namespace {

std::string SlurmError() { return slurm_strerror(slurm_get_errno()); }

}  // namespace

bool NodeInfo::ReasonIsOurs() const { return reason.rfind(kReasonPrefix, 0) == 0; }

SlurmAdapter::SlurmAdapter(const std::string& slurm_conf) {
    slurm_init(slurm_conf.empty() ? nullptr : slurm_conf.c_str());
}

SlurmAdapter::~SlurmAdapter() { slurm_fini(); }

Result<NodeInfo> SlurmAdapter::GetNode(const std::string& name) {
    node_info_msg_t* msg = nullptr;
    if (slurm_load_node_single(&msg, const_cast<char*>(name.c_str()), SHOW_ALL) != 0 ||
        msg == nullptr) {
        return MakeError("slurm: load node " + name + ": " + SlurmError());
    }
    NodeInfo info;
    bool found = false;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
        const node_info_t& n = msg->node_array[i];
        if (n.name == nullptr || name != n.name) continue;
        found = true;
        info.name = n.name;
        const char* state = slurm_node_state_string(n.node_state);
        info.state = state != nullptr ? state : "";
        info.reason = n.reason != nullptr ? n.reason : "";
        info.drained = (n.node_state & NODE_STATE_DRAIN) != 0;
        info.down = (n.node_state & NODE_STATE_BASE) == NODE_STATE_DOWN;
    }
    slurm_free_node_info_msg(msg);
    if (!found) return MakeError("slurm: no node named " + name);
    return info;
}

Result<SlurmAdapter::DrainOutcome> SlurmAdapter::Drain(const std::string& node,
                                                       const std::string& reason) {
    if (reason.rfind(kReasonPrefix, 0) != 0) {
        return MakeError("internal: drain reason must start with 'autoheal:'");
    }
    auto current = GetNode(node);
    if (!current) return MakeError(current.error());
    if (current->drained || current->down) {
        if (!current->ReasonIsOurs()) return DrainOutcome::kAdminOwned;
        return DrainOutcome::kAlreadyOurs;
    }
    update_node_msg_t msg;
    slurm_init_update_node_msg(&msg);
    msg.node_names = const_cast<char*>(node.c_str());
    msg.node_state = NODE_STATE_DRAIN;
    msg.reason = const_cast<char*>(reason.c_str());
    msg.reason_uid = getuid();
    if (slurm_update_node(&msg) != SLURM_SUCCESS) {
        return MakeError("slurm: drain " + node + ": " + SlurmError());
    }
    return DrainOutcome::kDrained;
}

}  // namespace autoheal::remediation
