#include "autoheal/sim/memory_slurm.h"

#include <algorithm>
#include <stdexcept>

#include "autoheal/remediation/slurm_adapter.h"

namespace autoheal::sim {

remediation::NodeInfo& MemorySlurmClient::AddNode(const std::string& name) {
    remediation::NodeInfo n;
    n.name = name;
    n.state = "IDLE";
    return nodes_[name] = n;
}

remediation::JobInfo& MemorySlurmClient::AddJob(const remediation::JobInfo& job) {
    return jobs_[job.id] = job;
}

void MemorySlurmClient::Boot(const std::string& name) {
    remediation::NodeInfo& n = nodes_.at(name);
    if (!n.reboot_pending) return;
    n.reboot_pending = false;
    n.drained = false;
    n.down = false;
    n.reason.clear();
    n.state = "IDLE";
}

void MemorySlurmClient::FailNext(const std::string& call, int times, ErrorCode code) {
    failures_[call] = {times, code};
}

int MemorySlurmClient::Count(const std::string& call) const {
    return static_cast<int>(std::count_if(calls_.begin(), calls_.end(), [&](const std::string& c) {
        return c.rfind(call + " ", 0) == 0 || c == call;
    }));
}

std::optional<Error> MemorySlurmClient::Call(const std::string& call, const std::string& target) {
    calls_.push_back(target.empty() ? call : call + " " + target);
    if (throw_next_ == call) {
        throw_next_.clear();
        throw std::runtime_error("fake slurm: " + call + " threw");
    }
    auto f = failures_.find(call);
    if (f == failures_.end() || f->second.first <= 0) return std::nullopt;
    --f->second.first;
    return MakeError(f->second.second, "slurm: " + call + " " + target + ": " +
                                           (f->second.second == ErrorCode::kUnavailable
                                                ? "Unable to contact slurm controller"
                                                : "refused"));
}

Result<remediation::NodeInfo> MemorySlurmClient::GetNode(const std::string& name) {
    if (auto e = Call("get_node", name)) return *e;
    auto n = nodes_.find(name);
    if (n == nodes_.end()) return MakeError(ErrorCode::kNotFound, "slurm: no node named " + name);
    return n->second;
}

Result<std::vector<remediation::NodeInfo>> MemorySlurmClient::ListNodes() {
    if (auto e = Call("list_nodes", "")) return *e;
    std::vector<remediation::NodeInfo> out;
    for (const auto& [name, n] : nodes_) out.push_back(n);
    return out;
}

Result<remediation::JobInfo> MemorySlurmClient::GetJob(std::uint32_t job_id) {
    if (auto e = Call("get_job", std::to_string(job_id))) return *e;
    auto j = jobs_.find(job_id);
    if (j == jobs_.end()) {
        return MakeError(ErrorCode::kNotFound, "slurm: no job " + std::to_string(job_id));
    }
    return j->second;
}

Result<bool> MemorySlurmClient::Requeue(std::uint32_t job_id) {
    if (auto e = Call("requeue", std::to_string(job_id))) return *e;
    auto j = jobs_.find(job_id);
    if (j == jobs_.end()) {
        return MakeError(ErrorCode::kNotFound, "slurm: requeue job " + std::to_string(job_id) +
                                                   ": Invalid job id specified");
    }
    if (j->second.pending) {
        return MakeError(ErrorCode::kInvalid, "slurm: requeue job " + std::to_string(job_id) +
                                                  ": Job is pending execution");
    }
    j->second.state = "PENDING";
    j->second.pending = true;
    j->second.being_requeued = true;
    ++j->second.restart_count;
    if (lose_requeue_answer_) {
        lose_requeue_answer_ = false;
        return MakeError(ErrorCode::kUnavailable,
                         "slurm: requeue job " + std::to_string(job_id) +
                             ": Unable to contact slurm controller (connect failure)");
    }
    return true;
}

Result<bool> MemorySlurmClient::UpdateJob(std::uint32_t job_id,
                                          const remediation::JobUpdate& update) {
    if (auto e = Call("update_job", std::to_string(job_id))) return *e;
    auto j = jobs_.find(job_id);
    if (j == jobs_.end()) {
        return MakeError(ErrorCode::kNotFound, "slurm: update job " + std::to_string(job_id) +
                                                   ": Invalid job id specified");
    }
    // Slurm refuses updates to a finished job.
    if (!j->second.pending && j->second.state != "RUNNING") {
        return MakeError(ErrorCode::kInvalid, "slurm: update job " + std::to_string(job_id) +
                                                  ": Job/step already completing or completed");
    }
    if (update.exc_nodes) j->second.exc_nodes = *update.exc_nodes;
    if (update.admin_comment) j->second.admin_comment = *update.admin_comment;
    updates.push_back(update);
    return true;
}

Result<std::vector<remediation::JobInfo>> MemorySlurmClient::RunningJobsOn(
    const std::string& node) {
    if (auto e = Call("running_jobs", node)) return *e;
    std::vector<remediation::JobInfo> out;
    for (const auto& [id, j] : jobs_) {
        if (j.state != "RUNNING" || j.completing) continue;
        const auto names = remediation::SlurmAdapter::ExpandHostlist(j.nodes);
        if (std::find(names.begin(), names.end(), node) != names.end()) out.push_back(j);
    }
    return out;
}

Result<bool> MemorySlurmClient::EndJob(std::uint32_t job_id) {
    if (auto e = Call("end_job", std::to_string(job_id))) return *e;
    auto j = jobs_.find(job_id);
    if (j == jobs_.end() || j->second.state != "RUNNING") {
        return MakeError(ErrorCode::kInvalid,
                         "slurm: end job " + std::to_string(job_id) + ": Job is not running");
    }
    j->second.state = "CANCELLED";
    j->second.end_time = now_;
    return true;
}

Result<std::vector<remediation::SwitchInfo>> MemorySlurmClient::Topology() {
    if (auto e = Call("topology", "")) return *e;
    return switches_;
}

Result<bool> MemorySlurmClient::SetDrain(const std::string& node, const std::string& reason) {
    if (auto e = Call("drain", node)) return *e;
    remediation::NodeInfo& n = nodes_.at(node);
    n.drained = true;
    n.reason = reason;
    n.reason_time = now_;
    n.state += "+DRAIN";
    return true;
}

Result<bool> MemorySlurmClient::RequestReboot(const std::string& node, const std::string& reason) {
    if (auto e = Call("reboot", node)) return *e;
    remediation::NodeInfo& n = nodes_.at(node);
    n.reboot_pending = true;
    n.reason = reason;
    n.reason_time = now_;
    // As slurmctld does for ASAP (proc_req.c, _slurm_rpc_reboot_nodes): drained until it reboots.
    if (!n.drained) n.state += "+DRAIN";
    n.drained = true;
    return true;
}

Result<bool> MemorySlurmClient::SetResume(const std::string& node) {
    if (auto e = Call("resume", node)) return *e;
    remediation::NodeInfo& n = nodes_.at(node);
    n.drained = false;
    n.down = false;
    n.reason.clear();
    n.state = "IDLE";
    return true;
}

}  // namespace autoheal::sim
