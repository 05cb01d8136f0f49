// The real SlurmClient (slurm_client.h): Slurm's C API through -lslurm (and `scontrol show
// topology` where a release's topology reply cannot be read in this program, slurm_topology.h).
// The code that differs between Slurm releases lives behind this seam, in slurm_compat.h.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "autoheal/remediation/slurm_client.h"

namespace autoheal::remediation {

class SlurmAdapter final : public SlurmClient {
  public:
    // Connects with Slurm's configuration: `slurm_conf` if not empty, else $SLURM_CONF, else
    // Slurm's default.
    explicit SlurmAdapter(const std::string& slurm_conf = "");
    ~SlurmAdapter() override;
    SlurmAdapter(const SlurmAdapter&) = delete;
    SlurmAdapter& operator=(const SlurmAdapter&) = delete;

    Result<NodeInfo> GetNode(const std::string& name) override;
    Result<std::vector<NodeInfo>> ListNodes() override;
    Result<JobInfo> GetJob(std::uint32_t job_id) override;
    Result<bool> Requeue(std::uint32_t job_id) override;
    Result<bool> UpdateJob(std::uint32_t job_id, const JobUpdate& update) override;
    Result<std::vector<JobInfo>> RunningJobsOn(const std::string& node) override;
    Result<bool> EndJob(std::uint32_t job_id) override;
    Result<std::vector<SwitchInfo>> Topology() override;

    // SlurmdSpoolDir as slurmctld's configuration gives it, expanded for `node` on the host
    // `host` (slurmd_steps.h): where that node's slurmd keeps its step sockets. kInvalid when it
    // holds a code slurmd does not expand.
    Result<std::string> SlurmdSpoolDir(const std::string& node, const std::string& host);

    // Hostlist expressions ("node[1-3],gpu7") to names and back, with Slurm's own code.
    static std::vector<std::string> ExpandHostlist(const std::string& expression);
    static std::string CompressHostlist(const std::vector<std::string>& names);

  protected:
    Result<bool> SetDrain(const std::string& node, const std::string& reason) override;
    Result<bool> RequestReboot(const std::string& node, const std::string& reason) override;
    Result<bool> SetResume(const std::string& node) override;

  private:
    std::string slurm_conf_;  // for the Slurm commands run for it (scontrol show topology)
};

// The code of a Slurm errno: kUnavailable when slurmctld did not answer (connection, send,
// receive, timeout, standby), kNotFound for an invalid job or node id, kInvalid for a request
// refused, kInternal otherwise.
ErrorCode SlurmErrorCode(int slurm_errno);

// Sends REQUEST_REBOOT_NODES (slurm_reboot.cpp: the one place that needs Slurm's internal
// message headers, since 22.05's slurm.h has no reboot call). Returns Slurm's error code.
int SendRebootRequest(const std::string& node, const std::string& reason, bool asap,
                      bool resume_after);

}  // namespace autoheal::remediation
