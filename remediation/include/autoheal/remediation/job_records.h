// The files autoheal keeps per job under state_dir/jobs/<job>/ — the channel between the
// prolog, the node epilogs and EpilogSlurmctld (which starts before the node epilogs end and
// cannot wait on the job's state: see SLURM-LAB.md):
//   <node>.prolog.json           the prolog's baseline: kernel log cursor, NVML snapshot and
//                                health report (PrologBaseline)
//   run<N>/<node>.epilog.json    what the node epilog found after run N (N = restart count;
//                                NodeReport)
//   run<N>/decision.json         the controller's decision for run N (DecisionRecord)
//   resume.json                  why autoheal requeued the job last (read by the SPANK plugin)
//   run<N>/<node>.agent.json     what autoheal-agent saw and did while run N ran (AgentRecord)
// Every file is written to a temporary name and renamed, so a reader sees all of it or nothing.
// Every record has a `version`; a reader refuses a version newer than it knows, with an error
// naming both. A record without one is version 1, which the prolog baseline and the decision
// record still are; a node report without one is refused (version 1 carried log lines, which
// the controller no longer scans).
// On a real cluster state_dir must be shared by the nodes and the controller (e.g. NFS), or at
// least its jobs/ folder; the incident store beside it is written by the controller epilog and,
// for faults that interrupt a running job, by autoheal-agent (so the store must be shared too).
// jobs/ belongs to SlurmUser (docs/admin-guide.md): what root writes there (the prolog, the node
// epilogs) is given to the owner of jobs/, so that EpilogSlurmctld, as SlurmUser, reads the
// reports and writes its decisions beside them, and users read nothing but resume.json.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/files.h"
#include "autoheal/core/job_options.h"
#include "autoheal/core/result.h"
#include "autoheal/core/resume_record.h"
#include "autoheal/diag/evidence.h"
#include "autoheal/health/check.h"
#include "autoheal/health/gpu_snapshot.h"

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

// autoheal-agent's folder in the shared jobs/ folder (never a job's: job ids are numbers): the
// agents' heartbeats (<node>.json, agent_heartbeat.h) and, under AgentSpoolDir, the incident
// store of each fault an agent handled, saved whole (IncidentStore::SaveTo) for the controller
// epilog to import (ImportSpooledRuns): no store is opened on a compute node.
inline constexpr const char* kAgentsFolder = "agents";
std::string AgentsDir(const std::string& state_dir);
std::string AgentSpoolDir(const std::string& state_dir);

// Removes the folders state_dir/jobs/<job> last changed before `older_than` (seconds since the
// epoch), except `keep_job`'s and the agents' (AgentsDir), bounded per call: at most `max_removed`
// removed and `max_examined` entries looked at. Links and files there are left alone. Returns how
// many were removed.
Result<int> CleanOldJobRecords(const std::string& state_dir, std::int64_t older_than,
                               const std::string& keep_job, int max_removed = 50,
                               int max_examined = 5000);

// Writes a file under state_dir/jobs (WriteFileAtomically, folders 0755). Run as root, the file
// and the folders it creates are given to the owner of state_dir/jobs (when that is not root).
Result<bool> WriteJobRecord(const std::string& state_dir, const std::string& path,
                            std::string_view content, unsigned file_mode);

// The most a record file may hold (a node report carries at most a few thousand evidence lines).
inline constexpr std::size_t kMaxRecordBytes = 64u << 20;

struct GpuIdentity {
    std::string pci, uuid, serial, name;
};

inline constexpr int kNodeReportVersion = 2;
inline constexpr int kPrologBaselineVersion = 1;
inline constexpr int kDecisionRecordVersion = 1;
inline constexpr int kAgentRecordVersion = 1;

// Where a job's checkpoints stood: the newest complete one's step and save time (numbers only:
// the path is the user's business).
struct CheckpointMark {
    std::int64_t step = -1;
    std::int64_t mtime = 0;
    bool operator==(const CheckpointMark&) const = default;
};

// What one node epilog found.
struct NodeReport {
    int version = kNodeReportVersion;
    std::string job;
    std::string node;
    int restart = 0;
    std::int64_t time = 0;
    std::string exit_code;
    // The node's own evidence, as found (before the analyzers run): kernel log lines the
    // signatures matched (source "kernel"), nvml-delta items ("nvml"), health-check items
    // ("health"), with their signature, fields, text and line, and the uncapped counts.
    diag::EvidenceSet evidence;
    // The job's stdout/stderr lines the signatures matched (source "job-output"), when this
    // node read them.
    diag::EvidenceSet job_output;
    bool job_output_read = false;
    std::vector<GpuIdentity> gpus;
    // The PCI bus ids of the GPUs the job had on this node (SLURM_JOB_GPUS, minor numbers, mapped
    // through NVML); empty when unknown (no GPUs allocated, or the map not read): then every
    // GPU's evidence may explain the job's failure.
    std::vector<std::string> job_gpus;
    // The newest complete checkpoint in --ckpt-dir (batch host only; found as the job's user).
    std::optional<CheckpointMark> checkpoint;
    std::string local_cause;            // the node's own diagnosis, for logs
    std::vector<std::string> problems;  // evidence that could not be read, and why
};

std::string NodeReportToJson(const NodeReport& report);
// Refuses non-JSON, a report without a node, an evidence item without a signature or source,
// and any version but kNodeReportVersion (the error names the version it found).
Result<NodeReport> NodeReportFromJson(const std::string& json);

// The JSON of an evidence set as a node report carries it: {"items": [[SIGNATURE, SOURCE (a
// name), LINE, TEXT, FIELD, VALUE, FIELD, VALUE, ...], ...], "counts": {SIGNATURE: N},
// "lines", "bytes"}. TEXT is null when it is the previous item's (same source and line: one line
// that several signatures matched).
std::string EvidenceSetToJson(const diag::EvidenceSet& set);
Result<diag::EvidenceSet> EvidenceSetFromJson(const std::string& json);

// What the prolog leaves for the node epilog (PrologFile): where the kernel log stood and the
// NVML snapshot when the job started. The file also holds the prolog's health report (tier,
// status, results) for people; the reader does not need it.
struct PrologBaseline {
    int version = kPrologBaselineVersion;
    std::int64_t time = 0;
    std::string kernel_cursor;  // KernelLogCursor(); empty: read the whole log, capped
    std::optional<health::NodeSnapshot> snapshot;  // absent when the prolog ran no check
    // The job's autoheal options (--auto-resume, --ckpt-dir, --hang-timeout), for
    // autoheal-agent, which acts while the job runs and has no SPANK_ environment to read them
    // from.
    JobOptions options;
    // The job's GPUs on this node as SLURM_JOB_GPUS gave them (minor numbers, "0,1"); empty:
    // none allocated or not known. The agent's hang watch judges these GPUs' utilization.
    std::string job_gpus;
};
// `report` (may be null) is written beside the baseline; its snapshot is the baseline's.
std::string PrologBaselineToJson(const PrologBaseline& baseline,
                                 const health::HealthReport* report);
// Refuses non-JSON, a version newer than kPrologBaselineVersion, a kernel_cursor that is not
// text and a snapshot that is not one. No version: version 1.
Result<PrologBaseline> PrologBaselineFromJson(const std::string& json);
// The prolog's baseline of `job` on `node` (PrologFile), read and parsed.
Result<PrologBaseline> ReadPrologBaseline(const std::string& state_dir, const std::string& job,
                                          const std::string& node);

// What autoheal-agent saw and did while a run was going (AgentFile): the interrupting evidence
// (typed items, as a node report carries them), the diagnosis, and what it did to the job. The
// controller epilog reads it: a run the agent requeued or ended is not requeued again, and a
// node that sent no report is judged on the agent's evidence.
struct AgentRecord {
    int version = kAgentRecordVersion;
    std::string job;
    std::string node;
    int restart = 0;
    std::int64_t time = 0;
    std::string rule;
    std::string cause;
    std::string gpu;
    // What the agent did to the job: "requeue", "end", "notify" (left running), "none" (nothing
    // to do: the decision kept it); empty while it has not acted yet.
    std::string job_action;
    std::string outcome;  // a catalog outcome of that action (done, failed, dry-run)
    std::string explanation;
    diag::EvidenceSet evidence;
    // Evidence from the job's own files (its hang: output and checkpoints that stopped, its
    // flight recorder dumps): joined to the job's output evidence, never the node's.
    diag::EvidenceSet job_output;
    // When the agent of the job's batch host asked the ranks for flight recorder dumps (a hang,
    // seconds since the epoch; 0: not asked): every agent of the job's nodes writes to its own
    // node's dump pipes (FIFOs are local to a host) while the record is not final.
    std::int64_t dump_requested = 0;
    // The job was taken off its nodes by the agent (requeued or ended, done).
    bool EndedRun() const;
};
std::string AgentFile(const std::string& state_dir, const std::string& job, int restart,
                      const std::string& node);
std::string AgentRecordToJson(const AgentRecord& record);
// Refuses non-JSON, a record without a node, and any version but kAgentRecordVersion.
Result<AgentRecord> AgentRecordFromJson(const std::string& json);
// Every readable agent record of run `restart` of `job`, sorted by node.
std::vector<AgentRecord> AgentRecordsOf(const std::string& state_dir, const std::string& job,
                                        int restart);

}  // namespace autoheal::remediation
