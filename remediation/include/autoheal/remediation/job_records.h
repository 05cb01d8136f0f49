// The files autoheal keeps per job under state_dir/jobs/<job>/ — the channel between the
// prolog, the node epilogs and EpilogSlurmctld (which starts before the node epilogs end and
// cannot wait on the job's state: see SLURM-LAB.md):
//   <node>.prolog.json           the prolog's health report, NVML snapshot and kernel log cursor
//   run<N>/<node>.epilog.json    what the node epilog found after run N (N = restart count)
//   resume.json                  why autoheal requeued the job last (read by the SPANK plugin)
// Every file is written to a temporary name and renamed, so a reader sees all of it or nothing.
// On a real cluster state_dir must be shared by the nodes and the controller (e.g. NFS), or at
// least its jobs/ folder; the incident store beside it is written by the controller only.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/files.h"
#include "autoheal/core/result.h"
#include "autoheal/core/resume_record.h"

namespace autoheal::remediation {

// Job ids, node names and restart counts as they may appear in a path: [A-Za-z0-9._-], not
// starting with '.', under 128 bytes.
bool SafePathPart(const std::string& s);

std::string JobDir(const std::string& state_dir, const std::string& job);
std::string PrologFile(const std::string& state_dir, const std::string& job,
                       const std::string& node);
std::string EpilogFile(const std::string& state_dir, const std::string& job, int restart,
                       const std::string& node);
// The controller's decision for one run (DecisionRecord, remediation/decision.h).
std::string DecisionFile(const std::string& state_dir, const std::string& job, int restart);

// The most a record file may hold (a node report carries at most a few thousand evidence lines).
inline constexpr std::size_t kMaxRecordBytes = 64u << 20;

struct GpuIdentity {
    std::string pci, uuid, serial, name;
};

// What one node epilog found.
struct NodeReport {
    std::string job;
    std::string node;
    int restart = 0;
    std::int64_t time = 0;
    std::string exit_code;
    // Evidence lines only (what matched a signature), per source, in order.
    std::vector<std::string> kernel;
    std::vector<std::string> nvml;
    std::vector<std::string> health;
    std::vector<std::string> job_output;
    bool job_output_read = false;  // this node read the job's stdout/stderr
    std::vector<GpuIdentity> gpus;
    std::string local_cause;                // the node's own diagnosis, for logs
    std::vector<std::string> problems;      // evidence that could not be read, and why
};

std::string NodeReportToJson(const NodeReport& report);
Result<NodeReport> NodeReportFromJson(const std::string& json);

}  // namespace autoheal::remediation
