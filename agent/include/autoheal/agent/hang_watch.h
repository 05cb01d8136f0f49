// autoheal-agent's hang watch: a job that stopped without any hardware evidence (issue: "hang
// without hardware evidence"). Every agent.hang_check_interval, for each job running on the node
// that has a hang timeout (its --hang-timeout; else agent.hang_timeout for an --auto-resume
// job; `off` or 0: none):
// - on the job's batch host only: its output files and its checkpoint folder's newest entry
//   are looked at (job_files_probe.h: stat only, as the user, in a bounded child); when nothing
//   has advanced for the timeout (the newest mtime, a change of the output's size seen by this
//   agent, and the job's start, whichever is latest) and the job's GPUs on this node do no work
//   by NVML (in a bounded child), each either idle or spinning (utilization or memory
//   utilization below kIdleUtilizationPercent; NVML that cannot tell means working), the job is
//   hung: a `job-hang` evidence item of the job's own files;
// - when the run has flight recorder folders (the SPANK plugin's, FlightRecorderDir), the dumps
//   are asked for first: the run's agent record is written with dump_requested, every agent of
//   the job's nodes writes to its own node's rank pipes (FIFOs are local to a host), and the
//   batch host's agent waits, without blocking its loop, until every rank that made a pipe has
//   dumped or agent.hang_dump_wait has passed; the dumps are then read and compared as the user
//   (the epilog's AddFlightRecorderFindings, in a bounded child);
// - the job is then handled as a fault of its own files (fault_handler.h HandleHungJob): an
//   --auto-resume job is requeued within its cap, the culprit rank's node left out, a desync
//   not requeued (the job's own bug); no node is ever acted on.
// A job is acted on once per run.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "autoheal/agent/fault_handler.h"
#include "autoheal/diag/evidence.h"
#include "autoheal/remediation/job_records.h"

namespace autoheal::agent {

// A GPU whose utilization is below this (percent) runs no kernel to speak of; one whose memory
// utilization is below it moves no data, whatever its kernels: a rank stuck in a collective
// spins an NCCL kernel on a flag, so NVML shows it near 100% busy with its memory at rest.
inline constexpr unsigned kIdleUtilizationPercent = 5;

class HangWatch {
  public:
    explicit HangWatch(const AgentEnv& env) : env_(env) {}

    // Looks at the node's jobs when agent.hang_check_interval has passed since the last look;
    // returns one line per thing done, for the log.
    std::vector<std::string> Poll();

    // The node's running jobs at the last look (the telemetry sampler's list too: one job list
    // from slurmctld per agent.hang_check_interval).
    const std::vector<remediation::JobInfo>& running() const { return running_; }

  private:
    struct Watched {
        int restart = -1;
        std::uint64_t output_bytes = 0;
        std::int64_t changed = 0;         // when this agent last saw the output's size change
        std::int64_t dump_requested = 0;  // the batch host asked for dumps (hang found)
        diag::EvidenceSet hang;           // the job-hang item, kept while the dumps are awaited
        bool acted = false;               // handled: nothing more this run
        bool answered = false;            // this node's pipes were written for the request
    };

    void Look(const remediation::JobInfo& job, std::vector<std::string>* done);
    void AnswerDumpRequest(const remediation::JobInfo& job, Watched* w,
                           std::vector<std::string>* done);
    bool SeemsStopped(const remediation::JobInfo& job, const remediation::PrologBaseline& baseline,
                      std::int64_t timeout, Watched* w, diag::EvidenceSet* hang,
                      std::vector<std::string>* done);
    bool DumpsDone(const remediation::JobInfo& job, const Watched& w);
    void Act(const remediation::JobInfo& job, Watched* w, std::vector<std::string>* done);

    const AgentEnv& env_;
    std::map<std::uint32_t, Watched> jobs_;
    std::vector<remediation::JobInfo> running_;
    std::int64_t next_look_ms_ = 0;
};

}  // namespace autoheal::agent
