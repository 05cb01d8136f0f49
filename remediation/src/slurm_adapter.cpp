#include "autoheal/remediation/slurm_adapter.h"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <optional>

#include "autoheal/remediation/slurm_topology.h"
#include "autoheal/remediation/slurmd_steps.h"
#include "autoheal/slurm_compat.h"

extern "C" {
#include <slurm/slurm_errno.h>
// Exported by libslurm but not declared in slurm.h (returns a static string).
const char* slurm_node_state_string(uint32_t state);
const char* slurm_job_state_string(uint32_t state);
}

namespace autoheal::remediation {
namespace {

// The last Slurm call's failure as an Error: `what` and Slurm's words, with the errno's code.
Error SlurmError(const std::string& what, int rc) {
    return MakeError(SlurmErrorCode(rc), "slurm: " + what + ": " + slurm_strerror(rc));
}
// Slurm's calls leave their error in errno.
Error SlurmError(const std::string& what) { return SlurmError(what, errno); }

}  // namespace

ErrorCode SlurmErrorCode(int slurm_errno) {
    if (autoheal_slurm_is_socket_receive_error(slurm_errno) != 0) return ErrorCode::kUnavailable;
    switch (slurm_errno) {
        case SLURM_COMMUNICATIONS_CONNECTION_ERROR:
        case SLURM_COMMUNICATIONS_SEND_ERROR:
        case SLURM_COMMUNICATIONS_RECEIVE_ERROR:
        case SLURM_COMMUNICATIONS_SHUTDOWN_ERROR:
        case SLURMCTLD_COMMUNICATIONS_CONNECTION_ERROR:
        case SLURMCTLD_COMMUNICATIONS_SEND_ERROR:
        case SLURMCTLD_COMMUNICATIONS_RECEIVE_ERROR:
        case SLURMCTLD_COMMUNICATIONS_SHUTDOWN_ERROR:
        case SLURM_PROTOCOL_SOCKET_IMPL_TIMEOUT:
        case SLURM_PROTOCOL_SOCKET_ZERO_BYTES_SENT:
        case ESLURM_IN_STANDBY_MODE:
        case ESLURM_IN_STANDBY_USE_BACKUP:
        case ECONNREFUSED:
        case ECONNRESET:
        case ETIMEDOUT:
        case EHOSTUNREACH:
        case EAGAIN:
            return ErrorCode::kUnavailable;
        case ESLURM_INVALID_JOB_ID:
        case ESLURM_INVALID_NODE_NAME:
            return ErrorCode::kNotFound;
        case ESLURM_ACCESS_DENIED:
        case ESLURM_DISABLED:
        case ESLURM_NOT_SUPPORTED:
        case ESLURM_BATCH_ONLY:
        case ESLURM_JOB_PENDING:
        case ESLURM_ALREADY_DONE:
        case ESLURM_TRANSITION_STATE_NO_UPDATE:
            return ErrorCode::kInvalid;
        default:
            return ErrorCode::kInternal;
    }
}

SlurmAdapter::SlurmAdapter(const std::string& slurm_conf) : slurm_conf_(slurm_conf) {
    slurm_init(slurm_conf.empty() ? nullptr : slurm_conf.c_str());
}

SlurmAdapter::~SlurmAdapter() { slurm_fini(); }

namespace {

std::string Str(const char* s) { return s != nullptr ? s : ""; }

NodeInfo ToNodeInfo(const node_info_t& n) {
    NodeInfo info;
    info.name = Str(n.name);
    info.state = Str(slurm_node_state_string(n.node_state));
    info.reason = Str(n.reason);
    info.reason_time = static_cast<std::int64_t>(n.reason_time);
    info.drained = (n.node_state & NODE_STATE_DRAIN) != 0;
    const uint32_t base = n.node_state & NODE_STATE_BASE;
    info.down = base == NODE_STATE_DOWN || (n.node_state & NODE_STATE_FAIL) != 0;
    info.reboot_pending =
        (n.node_state & (NODE_STATE_REBOOT_REQUESTED | NODE_STATE_REBOOT_ISSUED)) != 0;
    return info;
}

}  // namespace

Result<NodeInfo> SlurmAdapter::GetNode(const std::string& name) {
    node_info_msg_t* msg = nullptr;
    if (slurm_load_node_single(&msg, const_cast<char*>(name.c_str()), SHOW_ALL) != 0 ||
        msg == nullptr) {
        return SlurmError("load node " + name);
    }
    std::optional<NodeInfo> info;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
        const node_info_t& n = msg->node_array[i];
        if (n.name == nullptr || name != n.name) continue;
        info = ToNodeInfo(n);
    }
    slurm_free_node_info_msg(msg);
    if (!info) return MakeError(ErrorCode::kNotFound, "slurm: no node named " + name);
    return *info;
}

Result<std::vector<NodeInfo>> SlurmAdapter::ListNodes() {
    node_info_msg_t* msg = nullptr;
    if (slurm_load_node(0, &msg, SHOW_ALL) != 0 || msg == nullptr) {
        return SlurmError("load nodes");
    }
    std::vector<NodeInfo> nodes;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
        if (msg->node_array[i].name == nullptr) continue;
        nodes.push_back(ToNodeInfo(msg->node_array[i]));
    }
    slurm_free_node_info_msg(msg);
    return nodes;
}

Result<bool> SlurmAdapter::SetDrain(const std::string& node, const std::string& reason) {
    update_node_msg_t msg;
    slurm_init_update_node_msg(&msg);
    msg.node_names = const_cast<char*>(node.c_str());
    msg.node_state = NODE_STATE_DRAIN;
    msg.reason = const_cast<char*>(reason.c_str());
    autoheal_update_node_set_reason_uid(&msg, getuid());
    if (slurm_update_node(&msg) != SLURM_SUCCESS) return SlurmError("drain " + node);
    return true;
}

Result<bool> SlurmAdapter::RequestReboot(const std::string& node, const std::string& reason) {
    const int rc = SendRebootRequest(node, reason, /*asap=*/true, /*resume_after=*/true);
    if (rc != 0) return SlurmError("reboot " + node, rc);
    return true;
}

Result<bool> SlurmAdapter::SetResume(const std::string& node) {
    update_node_msg_t msg;
    slurm_init_update_node_msg(&msg);
    msg.node_names = const_cast<char*>(node.c_str());
    msg.node_state = NODE_RESUME;
    if (slurm_update_node(&msg) != SLURM_SUCCESS) return SlurmError("resume " + node);
    return true;
}

namespace {

JobInfo ToJobInfo(const slurm_job_info_t& j) {
    JobInfo info;
    info.id = j.job_id;
    info.state = Str(slurm_job_state_string(j.job_state & JOB_STATE_BASE));
    info.completing = (j.job_state & JOB_COMPLETING) != 0;
    info.pending = (j.job_state & JOB_STATE_BASE) == JOB_PENDING;
    info.being_requeued =
        info.pending || (j.job_state & (JOB_REQUEUE | JOB_REQUEUE_HOLD | JOB_REQUEUE_FED)) != 0;
    info.exit_code = j.exit_code;
    info.derived_ec = j.derived_ec;
    info.restart_count = j.restart_cnt;
    info.requeue = j.requeue != 0;
    info.name = Str(j.name);
    info.user_id = j.user_id;
    info.user_name = Str(j.user_name);
    info.nodes = Str(j.nodes);
    info.exc_nodes = Str(j.exc_nodes);
    info.req_nodes = Str(j.req_nodes);
    info.batch_host = Str(j.batch_host);
    info.std_out = Str(j.std_out);
    info.std_err = Str(j.std_err);
    info.work_dir = Str(j.work_dir);
    info.admin_comment = Str(j.admin_comment);
    info.array_job_id = j.array_job_id;
    info.array_task_id = j.array_task_id;
    info.start_time = static_cast<std::int64_t>(j.start_time);
    info.end_time = static_cast<std::int64_t>(j.end_time);
    return info;
}

}  // namespace

Result<JobInfo> SlurmAdapter::GetJob(std::uint32_t job_id) {
    job_info_msg_t* msg = nullptr;
    if (slurm_load_job(&msg, autoheal_job_id_arg(job_id), SHOW_ALL | SHOW_DETAIL) != 0 ||
        msg == nullptr) {
        return SlurmError("load job " + std::to_string(job_id));
    }
    std::optional<JobInfo> found;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
        if (msg->job_array[i].job_id != job_id) continue;
        found = ToJobInfo(msg->job_array[i]);
        break;
    }
    slurm_free_job_info_msg(msg);
    if (!found) return MakeError(ErrorCode::kNotFound, "slurm: no job " + std::to_string(job_id));
    return *found;
}

Result<std::vector<JobInfo>> SlurmAdapter::RunningJobsOn(const std::string& node) {
    job_info_msg_t* msg = nullptr;
    if (slurm_load_jobs(0, &msg, SHOW_ALL | SHOW_DETAIL) != 0 || msg == nullptr) {
        return SlurmError("load jobs");
    }
    std::vector<JobInfo> jobs;
    for (uint32_t i = 0; i < msg->record_count; ++i) {
        const slurm_job_info_t& j = msg->job_array[i];
        if ((j.job_state & JOB_STATE_BASE) != JOB_RUNNING || (j.job_state & JOB_COMPLETING) != 0 ||
            j.nodes == nullptr) {
            continue;
        }
        const std::vector<std::string> names = ExpandHostlist(j.nodes);
        if (std::find(names.begin(), names.end(), node) != names.end()) {
            jobs.push_back(ToJobInfo(j));
        }
    }
    slurm_free_job_info_msg(msg);
    return jobs;
}

Result<std::string> SlurmAdapter::SlurmdSpoolDir(const std::string& node, const std::string& host) {
    slurm_conf_t* conf = nullptr;
    if (slurm_load_ctl_conf(0, &conf) != 0 || conf == nullptr) return SlurmError("load config");
    const std::string pattern = Str(conf->slurmd_spooldir);
    autoheal_free_ctl_conf(conf);
    std::optional<std::string> dir = ExpandSlurmdPath(pattern, node, host);
    if (!dir || dir->empty()) {
        return MakeError(ErrorCode::kInvalid, "SlurmdSpoolDir '" + pattern + "': not expanded");
    }
    return *dir;
}

Result<bool> SlurmAdapter::EndJob(std::uint32_t job_id) {
    if (slurm_kill_job(autoheal_job_id_arg(job_id), SIGKILL, 0) != SLURM_SUCCESS) {
        return SlurmError("end job " + std::to_string(job_id));
    }
    return true;
}

Result<bool> SlurmAdapter::Requeue(std::uint32_t job_id) {
    if (slurm_requeue(autoheal_job_id_arg(job_id), 0) != SLURM_SUCCESS) {
        return SlurmError("requeue job " + std::to_string(job_id));
    }
    return true;
}

Result<bool> SlurmAdapter::UpdateJob(std::uint32_t job_id, const JobUpdate& update) {
    job_desc_msg_t msg;
    slurm_init_job_desc_msg(&msg);
    autoheal_job_desc_set_id(&msg, job_id);
    std::string exc = update.exc_nodes.value_or("");
    std::string comment = update.admin_comment.value_or("");
    if (update.exc_nodes) msg.exc_nodes = exc.data();
    if (update.admin_comment) msg.admin_comment = comment.data();
    if (update.begin_time) msg.begin_time = static_cast<time_t>(*update.begin_time);
    if (slurm_update_job(&msg) != SLURM_SUCCESS) {
        return SlurmError("update job " + std::to_string(job_id));
    }
    return true;
}

namespace {

// The environment of a Slurm command run for this adapter: this process's, with SLURM_CONF set
// to the adapter's configuration when it has one, and without SLURM_TOPO_LEN (it cuts the
// printed topology's lines short).
std::vector<std::string> SlurmCommandEnv(const std::string& slurm_conf) {
    std::vector<std::string> env;
    for (char** e = environ; *e != nullptr; ++e) {
        if (std::strncmp(*e, "SLURM_TOPO_LEN=", 15) == 0) continue;
        if (!slurm_conf.empty() && std::strncmp(*e, "SLURM_CONF=", 11) == 0) continue;
        env.emplace_back(*e);
    }
    if (!slurm_conf.empty()) env.push_back("SLURM_CONF=" + slurm_conf);
    return env;
}

// `scontrol show topology`, parsed (slurm_topology.h), with this adapter's configuration.
Result<std::vector<SwitchInfo>> TopologyByScontrol(const std::string& slurm_conf) {
    return TopologyFromCommand({AUTOHEAL_SCONTROL, "show", "topology"}, SlurmCommandEnv(slurm_conf),
                               std::chrono::seconds(15));
}

}  // namespace

// Read from Slurm's own printing of the reply (slurm_topology.h): from 23.11 on the reply's
// records are opaque to clients, and the printed form is the same in every release. Where the
// reply cannot be unpacked in this program, `scontrol show topology` prints it instead. libslurm
// unpacks it with the topology plugins it loads into the caller: outside Slurm's own tools 24.11's
// topology_tree.so does not load (the reply comes back empty), and 26.05's load fails for
// topology/block and for a topology.yaml (ESLURM_PROTOCOL_INCOMPLETE_PACKET; scontrol reads both).
Result<std::vector<SwitchInfo>> SlurmAdapter::Topology() {
    topo_info_response_msg_t* msg = nullptr;
    if (autoheal_load_topo(&msg) != SLURM_SUCCESS || msg == nullptr) {
        const int rc = errno;
        // slurmctld did not answer: scontrol would not do better.
        if (SlurmErrorCode(rc) == ErrorCode::kUnavailable) return SlurmError("load topology", rc);
        return TopologyByScontrol(slurm_conf_);
    }
    if (!autoheal_topo_printable(msg)) {
        slurm_free_topo_info_msg(msg);
        return TopologyByScontrol(slurm_conf_);
    }
    char* text = nullptr;
    std::size_t size = 0;
    FILE* out = open_memstream(&text, &size);
    if (out == nullptr) {
        slurm_free_topo_info_msg(msg);
        return MakeError(ErrorCode::kInternal, "slurm: topology: open_memstream failed");
    }
    autoheal_print_topo(out, msg);
    std::fclose(out);
    slurm_free_topo_info_msg(msg);
    std::string printed(text != nullptr ? text : "", size);
    free(text);
    return ParseTopology(printed);
}

std::vector<std::string> SlurmAdapter::ExpandHostlist(const std::string& expression) {
    std::vector<std::string> names;
    if (expression.empty()) return names;
    autoheal_hostlist_t hl = slurm_hostlist_create(expression.c_str());
    if (hl == nullptr) return names;
    while (char* host = slurm_hostlist_shift(hl)) {
        names.emplace_back(host);
        free(host);
    }
    slurm_hostlist_destroy(hl);
    return names;
}

std::string SlurmAdapter::CompressHostlist(const std::vector<std::string>& names) {
    if (names.empty()) return "";
    autoheal_hostlist_t hl = slurm_hostlist_create(nullptr);
    if (hl == nullptr) return "";
    for (const std::string& n : names) slurm_hostlist_push_host(hl, n.c_str());
    slurm_hostlist_uniq(hl);
    // slurm_hostlist_ranged_string_malloc is gone from 23.11 on; the sized form is everywhere.
    std::string out(256, '\0');
    ssize_t n = 0;
    while ((n = slurm_hostlist_ranged_string(hl, out.size(), out.data())) < 0 &&
           out.size() < (std::size_t{1} << 26)) {
        out.resize(out.size() * 2);
    }
    out.resize(n > 0 ? static_cast<std::size_t>(n) : 0);
    slurm_hostlist_destroy(hl);
    return out;
}

}  // namespace autoheal::remediation
