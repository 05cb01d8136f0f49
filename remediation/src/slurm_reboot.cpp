// REQUEST_REBOOT_NODES as `scontrol reboot ASAP nextstate=resume reason=...` sends it. Slurm 22.05
// has no public reboot call, but libslurm exports the message helpers; the message layout comes
// from the matching Slurm source tree (SLURM_SRC_DIR), like the job_submit plugin's headers.
#include <cstring>
#include <string>

extern "C" {
#include "slurm/slurm.h"
#include "slurm/slurm_errno.h"
#include "src/common/slurm_protocol_api.h"
#include "src/common/slurm_protocol_defs.h"
}

#include "autoheal/remediation/slurm_adapter.h"

namespace autoheal::remediation {

int SendRebootRequest(const std::string& node, const std::string& reason, bool asap,
                      bool resume_after) {
    std::string nodes = node;
    std::string why = reason;
    slurm_msg_t msg;
    slurm_msg_t_init(&msg);
    reboot_msg_t req;
    slurm_init_reboot_msg(&req, true);
    req.next_state =
        resume_after ? static_cast<uint32_t>(NODE_RESUME) : static_cast<uint32_t>(NODE_STATE_DOWN);
    req.node_list = nodes.data();
    req.reason = why.data();
    if (asap) req.flags |= REBOOT_FLAGS_ASAP;
    msg.msg_type = REQUEST_REBOOT_NODES;
    msg.data = &req;
    int rc = 0;
    if (slurm_send_recv_controller_rc_msg(&msg, &rc, nullptr) < 0) {
        return errno != 0 ? errno : SLURM_ERROR;
    }
    return rc;
}

}  // namespace autoheal::remediation
