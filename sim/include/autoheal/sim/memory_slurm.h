// An in-memory Slurm cluster behind the SlurmClient seam (remediation/slurm_client.h): what
// `autoheal simulate` (sim/simulator.h) runs the controller's steps on, and the epilogs' unit
// tests too. Nodes and jobs whose state changes as Slurm changes it (a drain sets DRAIN and the
// reason, a reboot is pending until Boot(), a requeue puts the job back to PENDING with its restart
// count up, an update sets the excluded nodes, begin time and AdminComment). Every call is recorded
// ("drain node2", "requeue 77", ...), and a call can be told to fail: FailNext("requeue", n, code)
// makes the next n calls of that kind fail with `code` (kUnavailable: slurmctld away).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/remediation/slurm_client.h"

namespace autoheal::sim {

class MemorySlurmClient final : public remediation::SlurmClient {
  public:
    // Adds an idle node (state "IDLE").
    remediation::NodeInfo& AddNode(const std::string& name);
    // Adds a job; its id is job.id.
    remediation::JobInfo& AddJob(const remediation::JobInfo& job);
    remediation::NodeInfo& node(const std::string& name) { return nodes_.at(name); }
    remediation::JobInfo& job(std::uint32_t id) { return jobs_.at(id); }
    // A pending reboot happens: the node is back in service (Slurm's nextstate=resume).
    void Boot(const std::string& name);
    // Makes the next `times` calls named `call` fail with `code`. Calls: "get_node",
    // "list_nodes", "drain", "reboot", "resume", "get_job", "requeue", "update_job",
    // "running_jobs", "end_job", "topology".
    void FailNext(const std::string& call, int times, ErrorCode code = ErrorCode::kUnavailable);
    // The next requeue is done but its answer is lost (slurmctld restarts meanwhile): the call
    // fails with kUnavailable.
    void LoseNextRequeueAnswer() { lose_requeue_answer_ = true; }
    // The next call named `call` throws std::runtime_error (a bug in a step).
    void ThrowNext(const std::string& call) { throw_next_ = call; }
    // Seconds since the epoch stamped on reasons set by drain and reboot.
    void set_now(std::int64_t now) { now_ = now; }
    void SetTopology(std::vector<remediation::SwitchInfo> switches) {
        switches_ = std::move(switches);
    }

    // Every call, in order: "<call> <target>" ("drain node2", "get_job 77").
    const std::vector<std::string>& calls() const { return calls_; }
    // How many calls of `call` ("requeue") were made, failed ones included.
    int Count(const std::string& call) const;

    Result<remediation::NodeInfo> GetNode(const std::string& name) override;
    Result<std::vector<remediation::NodeInfo>> ListNodes() override;
    Result<remediation::JobInfo> GetJob(std::uint32_t job_id) override;
    Result<bool> Requeue(std::uint32_t job_id) override;
    Result<bool> UpdateJob(std::uint32_t job_id, const remediation::JobUpdate& update) override;
    Result<std::vector<remediation::JobInfo>> RunningJobsOn(const std::string& node) override;
    Result<bool> EndJob(std::uint32_t job_id) override;
    Result<std::vector<remediation::SwitchInfo>> Topology() override;
    std::vector<remediation::JobUpdate> updates;  // every UpdateJob accepted, in order

  protected:
    Result<bool> SetDrain(const std::string& node, const std::string& reason) override;
    Result<bool> RequestReboot(const std::string& node, const std::string& reason) override;
    Result<bool> SetResume(const std::string& node) override;

  private:
    // Records the call; an error when it was told to fail.
    std::optional<Error> Call(const std::string& call, const std::string& target);

    std::map<std::string, remediation::NodeInfo> nodes_;
    std::map<std::uint32_t, remediation::JobInfo> jobs_;
    std::vector<remediation::SwitchInfo> switches_;
    std::map<std::string, std::pair<int, ErrorCode>> failures_;
    std::vector<std::string> calls_;
    bool lose_requeue_answer_ = false;
    std::string throw_next_;
    std::int64_t now_ = 1'800'000'000;
};

}  // namespace autoheal::sim
