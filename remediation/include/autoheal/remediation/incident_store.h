// The incident store: what autoheal diagnosed, what it did about it and which tickets it owes the
// outside world, in one SQLite file (state_dir/incidents.sqlite). The epilogs write it; the
// `autoheal` CLI and the escalation rules (diag::DiagnoseOptions::history) read it.
//
// Contracts:
// - The file is opened in WAL mode with a 5 s busy timeout and foreign keys on, so several
//   processes on the node (epilogs of concurrent jobs, the CLI) can share it. WAL needs a local
//   file system: never put the file on NFS or another network file system.
// - The schema is versioned with PRAGMA user_version and migrated forward on Open(), one step per
//   transaction. A file written by a newer autoheal (higher version) is refused, never downgraded.
// - Every write is idempotent on a natural key, so an epilog that runs twice (Slurm retries it,
//   or it is run by hand) records one incident, one of each action and one ticket.
// - All SQL uses bound parameters; strings are stored verbatim.
// - Thread-compatible: one connection per object; use one object per thread.
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "autoheal/core/result.h"
#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/gpu_telemetry.h"

struct sqlite3;

namespace autoheal::remediation {

// The schema version this build writes (PRAGMA user_version once migrated).
inline constexpr int kIncidentSchemaVersion = 5;

// The most records History(), Incidents(), Actions() and Tickets() return.
inline constexpr int kHistoryLimit = 1000;

// The most runs Runs() returns.
inline constexpr int kRunsLimit = 100000;

// A next_attempt that never comes: MarkTicketFailed(id, error, kNeverRetry) gives up on a ticket.
inline constexpr std::int64_t kNeverRetry = std::numeric_limits<std::int64_t>::max();

struct IncidentRecord {
    std::int64_t time = 0;  // seconds since the epoch
    std::string job;
    std::string node;
    std::string gpu;  // PCI bus id (unique within a node only); empty when no GPU was named
    std::string cause;
    std::string rule;
    double confidence = 0.0;
    std::string evidence_json = "[]";
    // Identifies the incident across reruns (e.g. "<job>/<node>/<rule>/<gpu>"). Empty: no
    // deduplication, every call records a new incident.
    std::string dedup_key;
    std::string gpu_serial;  // the board's serial number, when the node's epilog read it
};

// One GPU of one job run: the node epilog's power and temperature summary (a gpu-telemetry
// item, diag/gpu_telemetry.h) with the controller's comparison against the job's other GPUs.
struct GpuTelemetryRow {
    std::string job;
    int run = 0;
    std::string node;
    std::int64_t time = 0;  // when the run was decided
    diag::GpuTelemetrySummary summary;
    unsigned clock_vs_peers = 100;
    bool straggler = false;
};

// An incident as read back.
struct IncidentRow {
    std::int64_t id = 0;
    std::int64_t time = 0;
    std::string job;
    std::string node;  // empty: the job's own incident (the decision for the whole job)
    std::string gpu;
    std::string gpu_serial;
    std::string cause;
    std::string rule;
    double confidence = 0.0;
    std::string evidence_json;
};

// Filters for Incidents(); empty strings match everything.
struct IncidentQuery {
    std::int64_t since = 0;
    std::int64_t until = std::numeric_limits<std::int64_t>::max();
    std::string node;
    std::string cause;
    std::string job;
    std::string gpu_serial;
    bool nodes_only = false;  // leave out the job-level incidents (node = '')
    int limit = kHistoryLimit;
};

struct ActionRow {
    std::int64_t id = 0;
    std::int64_t incident_id = 0;
    std::int64_t time = 0;
    std::string action;  // drain, reboot, reset_gpu, rma_ticket, requeue, resume, ...
    std::string target;
    std::string outcome;
    std::string detail;
};

// One decided run of a job (the controller epilog writes one per job run it judged).
struct RunRecord {
    std::string job;
    int run = 0;    // Slurm's restart count for that run
    int nodes = 0;  // how many nodes it used
    std::string node_list;
    std::int64_t start_time = 0;  // seconds since the epoch, from Slurm
    std::int64_t end_time = 0;
    std::int64_t decided_at = 0;  // when the controller epilog decided (and requeued)
    std::string outcome;          // as JobDecision::outcome: ok, own, blamed, unexplained, other
    std::string cause;
    std::string culprits;  // hostlist
    bool requeued = false;
};

struct TicketRow {
    std::int64_t id = 0;
    std::int64_t incident_id = 0;
    std::string kind;  // "rma" | "network"
    std::string dedup_key;
    std::string state;  // "pending" | "delivered" | "failed" (last attempt failed; retried)
    int attempts = 0;   // failed delivery attempts so far
    std::int64_t next_attempt = 0;  // seconds since the epoch; due when <= now
    std::string payload_json;
    std::string sink;
    std::string last_error;
    std::string node;         // the incident's node (Tickets() only)
    std::int64_t opened = 0;  // the incident's time (Tickets() only)
};

// The store belongs to whoever owns state_dir (SlurmUser on the controller, whose epilog writes
// it). A root process that opens it (the CLI, autoheal-agent) would otherwise leave
// incidents.sqlite, or its -wal and -shm files, owned by root, and no later controller epilog
// could write it: each of them root owns is handed to state_dir's owner. Does nothing unless
// run as root and state_dir belongs to another user. Returns what could not be handed over
// ("" when nothing failed).
std::string GiveStoreToStateDirOwner(const std::string& state_dir, const std::string& path);

class IncidentStore {
  public:
    // Opens (creating if needed) the store at `path` and migrates it to kIncidentSchemaVersion.
    // The parent folder must exist (it is not created). Fails on a file that is not an SQLite
    // database, on one with a newer schema version, or when WAL mode cannot be enabled.
    static Result<std::unique_ptr<IncidentStore>> Open(const std::string& path);

    // A store in memory (the same schema): where the controller epilog records a run when the
    // store on disk fails (full disk, locked, corrupt), so that it still drains and requeues.
    static Result<std::unique_ptr<IncidentStore>> OpenInMemory();

    // Writes the whole store to a new file `path` (which must not exist), to be imported later.
    Result<bool> SaveTo(const std::string& path);

    // Imports what a store saved by SaveTo holds, in one transaction: its incidents (an
    // incident whose dedup_key is here already is not added again: its actions and tickets go
    // to the one here), actions, tickets, job runs and runs, none twice. Returns the incidents
    // it held. The file itself is left alone.
    Result<int> ImportFrom(const std::string& path);

    ~IncidentStore();
    IncidentStore(const IncidentStore&) = delete;
    IncidentStore& operator=(const IncidentStore&) = delete;

    // Records an incident and returns its id. If an incident with the same non-empty dedup_key
    // exists, nothing is written and the existing id is returned (the first record wins).
    Result<std::int64_t> RecordIncident(const IncidentRecord& incident);

    // Records that `action` was taken on `target` (a node, a GPU, a job) for an incident, at the
    // current wall-clock time. Returns true when recorded, false when that (incident, action,
    // target) was already recorded (the earlier outcome is kept) — except an "asked" one (an
    // action asked of a node), which its result replaces. Unknown incident: error.
    Result<bool> RecordAction(std::int64_t incident_id, const std::string& action,
                              const std::string& target, const std::string& outcome,
                              const std::string& detail);

    // Opens a "pending" ticket of `kind` ("rma" or "network"), due at once, and returns its id.
    // `dedup_key` must not be empty: if a ticket with that key exists (from this incident or an
    // earlier one), nothing is written and its id is returned. Unknown incident: error.
    Result<std::int64_t> OpenTicket(std::int64_t incident_id, const std::string& kind,
                                    const std::string& dedup_key, const std::string& payload_json,
                                    const std::string& sink);

    // Up to `limit` tickets to deliver now: "pending" or "failed", next_attempt <= now, oldest
    // next_attempt first.
    Result<std::vector<TicketRow>> DueTickets(std::int64_t now, int limit);

    // Marks a ticket delivered. Returns false when it already was. Unknown ticket: error.
    Result<bool> MarkTicketDelivered(std::int64_t ticket_id);

    // Records a failed delivery: state "failed", attempts + 1, last_error = error, retried at
    // next_attempt (kNeverRetry gives up). Returns false, changing nothing, when the ticket was
    // already delivered. Unknown ticket: error.
    Result<bool> MarkTicketFailed(std::int64_t ticket_id, const std::string& error,
                                  std::int64_t next_attempt);

    // Incidents with time >= since, newest first, at most kHistoryLimit, for escalation:
    // - node given: every incident on that node, whatever its GPU (which covers per-GPU
    //   escalation too: GPU ids are PCI bus ids, unique only within a node, so `gpu` is not used
    //   to pull in other nodes' incidents);
    // - node empty, gpu given: incidents naming that GPU id on any node (for globally unique ids);
    // - both empty: every incident.
    Result<std::vector<diag::HistoryRecord>> History(std::int64_t since, const std::string& node,
                                                     const std::string& gpu);

    // Records that run `run` of `job` used `nodes` and ended with `outcome` ("ok", "own" for the
    // job's own bug, "blamed" when a node was named, "unexplained" when it failed and nothing
    // named a node). `user`: the job's user (its uid), empty when unknown. Idempotent per
    // (job, run, node); true when anything was added.
    Result<bool> RecordJobRun(const std::string& job, int run,
                              const std::vector<std::string>& nodes, std::int64_t time,
                              const std::string& outcome, const std::string& user = "");

    // How many distinct jobs ran on `node` since `since` and ended with `outcome`.
    Result<int> CountJobRuns(const std::string& node, const std::string& outcome,
                             std::int64_t since);

    // The distinct users (sorted; runs without one left out) whose jobs ran on `node` since
    // `since` and ended with `outcome`.
    Result<std::vector<std::string>> JobRunUsers(const std::string& node,
                                                 const std::string& outcome, std::int64_t since);

    // Records the gpu-telemetry items of a job run (idempotent per job, run, node and GPU).
    Result<bool> RecordGpuTelemetry(const std::string& job, int run, const std::string& node,
                                    std::int64_t time, const diag::EvidenceSet& evidence);
    // The GPU summaries of runs decided since `since`, of `node` (all nodes when empty), newest
    // first, at most kRunsLimit.
    Result<std::vector<GpuTelemetryRow>> GpuTelemetry(std::int64_t since, const std::string& node);

    // Records a decided job run; idempotent per (job, run): true when added.
    Result<bool> RecordRun(const RunRecord& run);

    // Incidents matching `query`, newest first.
    Result<std::vector<IncidentRow>> Incidents(const IncidentQuery& query);

    // The nodes with an action asked of them (outcome "asked": a GPU reset the node epilog is
    // carrying out) whose result has not come back, asked at most `max_age_seconds` ago by the
    // store's clock (the one that stamped the rows; an older row is of a controller that died
    // waiting), sorted.
    Result<std::vector<std::string>> NodesWithActionsAsked(std::int64_t max_age_seconds);

    // Actions since `since` (on `target` when not empty), newest first, at most kHistoryLimit.
    Result<std::vector<ActionRow>> Actions(std::int64_t since, const std::string& target);

    // Tickets, newest first, at most kHistoryLimit; only those not delivered yet when asked.
    Result<std::vector<TicketRow>> Tickets(bool undelivered_only);

    // Runs that ended at or after `since`, oldest first, at most kRunsLimit.
    Result<std::vector<RunRecord>> Runs(std::int64_t since);

    // Counts for metrics: node incidents per cause, and tickets per state (all time).
    Result<std::vector<std::pair<std::string, std::int64_t>>> CountIncidentsByCause();
    Result<std::vector<std::pair<std::string, std::int64_t>>> CountTicketsByState();

  private:
    Result<int> ImportAttached();
    explicit IncidentStore(sqlite3* db, std::string path);

    sqlite3* db_;
    std::string path_;  // for error messages
};

}  // namespace autoheal::remediation
