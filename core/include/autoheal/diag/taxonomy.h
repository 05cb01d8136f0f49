// The catalog of causes, actions and outcomes: one table each, the single source of the stable
// words that rules, JSON output, node reasons, the store and the report use, and of the behaviour
// that goes with each word. Each table is an X-macro list (one line per entry); the enum, the
// string table and the behaviour columns are expanded from the same lines, so a new cause is one
// line here (plus its rules). `autoheal rules catalog --json` prints the tables; the JSON Schema's
// enums and the cause table of docs/rules.md are generated from that output
// (scripts/gen_catalog.py, checked by the unit test catalog_sync).
//
// The words are the wire format: structs that cross a process boundary (JSON records, store rows,
// node reasons) keep them as strings; code that acts on one looks it up here.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace autoheal::diag {

// clang-format off
// X(id, word, title)
#define AUTOHEAL_CATEGORIES(X)           \
    X(kGpu, "gpu", "GPU")                \
    X(kNetwork, "network", "Network")    \
    X(kHost, "host", "Host")             \
    X(kStorage, "storage", "Storage")    \
    X(kSoftware, "software", "Software") \
    X(kUnknown, "unknown", "Unknown")    \
    X(kAdmin, "admin", "Admin")

// Whom a cause blames: the node it was seen on (a culprit: drained by its rules, excluded when the
// job is requeued), the job itself (its own bug: never requeued, no node at fault), or nobody.
// X(id, word)
#define AUTOHEAL_BLAMES(X) \
    X(kNode, "node")       \
    X(kJob, "job")         \
    X(kNobody, "none")

// The ticket a cause's part takes, or an action opens. X(id, word)
#define AUTOHEAL_TICKETS(X) \
    X(kNone, "none")        \
    X(kRma, "rma")          \
    X(kNetwork, "network")

// Where an action runs. X(id, word)
#define AUTOHEAL_PLACES(X)       \
    X(kController, "controller") \
    X(kNode, "node")             \
    X(kAdmin, "admin")

// Causes, after Llama 3's Table 5 (root causes of 419 interruptions) plus what a multi-tenant
// cluster needs (user_error, dependency); see shared FAILURES.md. The last three are written by
// autoheal itself, never named by a rule (rules = false).
// X(id, word, category, infrastructure: a job killed by it is worth a requeue, blame,
//   unexplained: counts towards a lemon node, ticket, rules: a rule may name it, title: the
//   report's wording (Table 5's where it has a row), summary)
#define AUTOHEAL_CAUSES(X)                                                                       \
    X(kFaultyGpu, "faulty_gpu", kGpu, true, kNode, false, kRma, true, "Faulty GPU",              \
      "the GPU failed or left the bus (Xid 79, 8, 143, lost device)")                            \
    X(kGpuHbmMemory, "gpu_hbm_memory", kGpu, true, kNode, false, kRma, true, "GPU HBM memory",   \
      "uncorrectable GPU DRAM/HBM error (Xid 48/94/95, ECC, row-remap failure)")                 \
    X(kGpuSramMemory, "gpu_sram_memory", kGpu, true, kNode, false, kRma, true,                   \
      "GPU SRAM memory", "uncorrectable GPU on-chip SRAM error")                                 \
    X(kGpuSystemProcessor, "gpu_system_processor", kGpu, true, kNode, false, kRma, true,         \
      "GPU system processor", "GSP/PMU firmware error or timeout (Xid 62/119/120)")              \
    X(kNvlink, "nvlink", kGpu, true, kNode, false, kRma, true, "NVLink / NVSwitch",              \
      "NVLink or NVSwitch error (Xid 74/136/144-150, SXid)")                                     \
    X(kSilentDataCorruption, "silent_data_corruption", kGpu, true, kNode, false, kRma, true,     \
      "Silent data corruption", "wrong results from a GPU without an error")                     \
    X(kGpuThermal, "gpu_thermal", kGpu, true, kNode, false, kRma, true,                          \
      "GPU thermal interface + sensor", "GPU thermal slowdown, interface or sensor fault")       \
    X(kGpuSlowdown, "gpu_slowdown", kGpu, false, kNode, false, kNone, true,                     \
      "GPU slowdown (power, thermal)",                                                           \
      "the GPU spent much of the job in hardware slowdown or thermal capping (agent sampling)")  \
    X(kGpuStraggler, "gpu_straggler", kGpu, false, kNobody, false, kNone, true,                  \
      "GPU slower or hotter than its peers",                                                     \
      "the GPU ran well below its job's median clock, or hotter than the job's other GPUs")      \
    X(kNetworkSwitchCable, "network_switch_cable", kNetwork, true, kNode, false, kNetwork, true, \
      "Network switch/cable", "fabric link, switch port or cable (IB retry-exceeded, link down)") \
    X(kNic, "nic", kNetwork, true, kNode, false, kRma, true, "NIC",                              \
      "the node's network adapter (HCA missing, firmware, PCIe)")                                \
    X(kNcclTimeout, "nccl_timeout", kUnknown, true, kNobody, true, kNone, true,                  \
      "NCCL watchdog timeouts",                                                                  \
      "NCCL collective timed out and no root cause was found in the evidence")                   \
    X(kJobHang, "job_hang", kUnknown, true, kNobody, false, kNone, true, "Job hangs",            \
      "the job's output and checkpoints stopped and its GPUs went idle (--hang-timeout)")        \
    X(kHostCpu, "host_cpu", kHost, true, kNode, false, kRma, true, "CPU", "CPU machine check")   \
    X(kHostMemory, "host_memory", kHost, true, kNode, false, kRma, true, "System memory",        \
      "host DRAM error (EDAC/MCE memory)")                                                       \
    X(kStorage, "storage", kStorage, true, kNode, false, kRma, true, "SSD / local disk",         \
      "local disk or SSD I/O errors")                                                            \
    X(kIoNetwork, "io_network", kStorage, true, kNode, false, kNone, true, "Shared file system", \
      "shared filesystem (NFS, Lustre, LNet) timeouts")                                          \
    X(kPowerSupply, "power_supply", kHost, true, kNode, false, kRma, true, "Power supply",       \
      "power supply failure or lost redundancy")                                                 \
    X(kServerChassis, "server_chassis", kHost, true, kNode, false, kRma, true, "Server chassis", \
      "board, riser, fan or chassis fault")                                                      \
    X(kHostMaintenance, "host_maintenance", kHost, true, kNode, false, kNone, true,              \
      "Host maintenance", "unplanned host maintenance (missed reboot, config)")                  \
    X(kDependency, "dependency", kSoftware, true, kNode, false, kNone, true,                     \
      "Software dependency",                                                                     \
      "driver, fabric manager, NCCL or library outside the job (version mismatch, service "      \
      "down, config)")                                                                           \
    X(kUserError, "user_error", kSoftware, false, kJob, false, kNone, true,                      \
      "The job's own error",                                                                     \
      "the job's own bug: illegal address, out of memory, bad configuration, time limit")        \
    X(kUnknown, "unknown", kUnknown, false, kNobody, true, kNone, true, "Unknown",               \
      "no evidence names a cause")                                                               \
    X(kHealth, "health", kUnknown, false, kNode, false, kNone, false, "Failed health check",     \
      "a health check before the job failed (the prolog drained the node)")                      \
    X(kLemon, "lemon", kUnknown, false, kNode, false, kNone, false, "Lemon node",                \
      "the node keeps failing jobs nothing explains (lemon.failures within lemon.window)")       \
    X(kAdminResume, "admin_resume", kAdmin, false, kNobody, false, kNone, false, "Admin resume", \
      "an admin resumed the node (`autoheal resume`)")

// Actions, in plan order: a plan is always carried out in this order, whatever order its rule
// lists them in. The ones with plan = false are recorded in the store by autoheal itself and are
// never named by a rule.
// X(id, word, plan: a rule may name it, runs: where it is carried out, takes_out: takes the node
//   out of service, breaker: counts against the circuit breaker, ticket: the ticket it opens,
//   summary)
#define AUTOHEAL_ACTIONS(X)                                                                      \
    X(kNone, "none", true, kController, false, false, kNone, "no action")                        \
    X(kDrain, "drain", true, kController, true, true, kNone,                                     \
      "drain the node so no new job lands on it")                                                \
    X(kResetGpu, "reset_gpu", true, kNode, true, true, kNone,                                    \
      "reset the GPU (nvidia-smi -r) once the node is idle")                                     \
    X(kReboot, "reboot", true, kController, true, true, kNone,                                   \
      "reboot the node (scontrol reboot ASAP nextstate=resume)")                                 \
    X(kRmaTicket, "rma_ticket", true, kController, false, false, kRma,                           \
      "open a hardware (RMA) ticket for the part")                                               \
    X(kNetworkTicket, "network_ticket", true, kController, false, false, kNetwork,               \
      "open a network ticket for the link, cable or switch port")                                \
    X(kNotify, "notify", true, kController, false, false, kNone,                                 \
      "tell the admins; change nothing")                                                         \
    X(kHeld, "held", false, kController, false, false, kNone,                                    \
      "a planned action the breaker or the switch correlation held back (detail: which)")        \
    X(kAlert, "alert", false, kController, false, false, kNone,                                  \
      "the breaker opened: admins alerted")                                                      \
    X(kQuarantine, "quarantine", false, kController, false, false, kNone,                        \
      "a culprit left in service is soft-avoided by new jobs for remediation.quarantine_hours")  \
    X(kRequeue, "requeue", false, kController, false, false, kNone,                              \
      "the job was requeued with the culprits excluded")                                         \
    X(kExplain, "explain", false, kController, false, false, kNone,                              \
      "the job was told why it was not requeued")                                                \
    X(kStep, "step", false, kController, false, false, kNone,                                    \
      "a step of the controller epilog failed (target: the step, detail: the error)")            \
    X(kResume, "resume", false, kAdmin, false, false, kNone,                                     \
      "an admin resumed the node (`autoheal resume`); the row's time says when")

// Outcomes of an action, as the store's actions.outcome column says them. X(id, word, summary)
#define AUTOHEAL_OUTCOMES(X)                                                                     \
    X(kDone, "done", "carried out")                                                              \
    X(kAlready, "already", "already so (drained by autoheal before, a reboot already pending)") \
    X(kAdminOwned, "admin-owned", "not done: an admin took the node out; autoheal leaves it")   \
    X(kFailed, "failed", "tried and failed (detail: the error)")                                 \
    X(kHeld, "held", "not done: held back by the breaker or the switch correlation")            \
    X(kDryRun, "dry-run", "not done: remediation.dry_run is set")                                \
    X(kOpened, "opened", "ticket opened (delivered by the ticket sinks)")                        \
    X(kLogged, "logged", "logged for the admins (notify)")                                       \
    X(kOnNode, "on-node", "carried out by the node's own epilog (detail: its result)")           \
    X(kAsked, "asked", "asked of the node; its result not back yet (counts against the breaker)") \
    X(kRefused, "refused", "not done: the node refused (a process still used the GPU)")         \
    X(kRaised, "raised", "alert raised")                                                         \
    X(kNotOut, "not-out", "nothing to resume: the node was not out of service")

// How a decided job run ended (the store's runs.outcome and job_runs.outcome).
// X(id, word, interruption: counts as an interruption in the report, summary)
#define AUTOHEAL_RUN_OUTCOMES(X)                                                                 \
    X(kOk, "ok", false, "the job did not fail")                                                  \
    X(kOwn, "own", false, "the job failed of its own bug (user_error)")                          \
    X(kBlamed, "blamed", true, "the job failed and a node was named")                           \
    X(kUnexplained, "unexplained", true,                                                         \
      "the job failed, nothing named a node and the cause counts as unexplained")                \
    X(kOther, "other", true, "the job failed of a cause that blames no node")
// clang-format on

#define AUTOHEAL_CATALOG_ENUMERATOR(id, ...) id,
enum class Category { AUTOHEAL_CATEGORIES(AUTOHEAL_CATALOG_ENUMERATOR) };
enum class Blame { AUTOHEAL_BLAMES(AUTOHEAL_CATALOG_ENUMERATOR) };
enum class TicketKind { AUTOHEAL_TICKETS(AUTOHEAL_CATALOG_ENUMERATOR) };
enum class Place { AUTOHEAL_PLACES(AUTOHEAL_CATALOG_ENUMERATOR) };
enum class Cause { AUTOHEAL_CAUSES(AUTOHEAL_CATALOG_ENUMERATOR) };
enum class Action { AUTOHEAL_ACTIONS(AUTOHEAL_CATALOG_ENUMERATOR) };
enum class Outcome { AUTOHEAL_OUTCOMES(AUTOHEAL_CATALOG_ENUMERATOR) };
enum class RunOutcome { AUTOHEAL_RUN_OUTCOMES(AUTOHEAL_CATALOG_ENUMERATOR) };
#undef AUTOHEAL_CATALOG_ENUMERATOR

struct CauseInfo {
    Cause id;
    std::string_view name;  // stable word, e.g. "faulty_gpu"
    Category category;
    bool infrastructure;  // a job killed by it is worth a requeue (and rules default requeue: true)
    Blame blame;
    bool unexplained;  // a failed run of this cause that names no node counts towards lemons
    TicketKind ticket;
    bool rules;  // a rule may name it
    std::string_view title;
    std::string_view summary;
};

struct ActionInfo {
    Action id;
    std::string_view name;  // stable word, e.g. "reset_gpu"
    bool plan;              // a rule may name it
    Place runs;
    bool takes_out;
    bool breaker;
    TicketKind ticket;
    std::string_view summary;
    int order;  // position in the table: a plan is carried out in this order
};

struct OutcomeInfo {
    Outcome id;
    std::string_view name;
    std::string_view summary;
};

struct RunOutcomeInfo {
    RunOutcome id;
    std::string_view name;
    bool interruption;
    std::string_view summary;
};

std::span<const CauseInfo> Causes();
std::span<const ActionInfo> Actions();
std::span<const OutcomeInfo> Outcomes();
std::span<const RunOutcomeInfo> RunOutcomes();

const CauseInfo& Info(Cause cause);
const ActionInfo& Info(Action action);
const OutcomeInfo& Info(Outcome outcome);
const RunOutcomeInfo& Info(RunOutcome outcome);

std::string_view ToString(Category category);
std::string_view Title(Category category);  // "GPU", "Network", ...
std::string_view ToString(Blame blame);
std::string_view ToString(TicketKind ticket);
std::string_view ToString(Place place);
std::string_view ToString(Cause cause);
std::string_view ToString(Action action);
std::string_view ToString(Outcome outcome);
std::string_view ToString(RunOutcome outcome);

// The entry named by a stable word; nullopt / nullptr for any other word. ParseAction also reads
// the spelling `resume@<seconds>` that `autoheal resume` wrote before the catalog had `resume`
// (the time is the row's own time).
std::optional<Cause> ParseCause(std::string_view name);
std::optional<Action> ParseAction(std::string_view name);
std::optional<Outcome> ParseOutcome(std::string_view name);
std::optional<RunOutcome> ParseRunOutcome(std::string_view name);
const CauseInfo* FindCause(std::string_view name);
const ActionInfo* FindAction(std::string_view name);

// Lookups for words read from rules, records and the store. A word outside the catalog (an older
// or newer version's) is not infrastructure, blames nobody, is not unexplained, not a network
// cause, does not count against the breaker and opens no ticket.
bool IsInfrastructure(std::string_view cause);
Blame BlameOf(std::string_view cause);
bool IsUnexplained(std::string_view cause);
bool IsNetworkCause(std::string_view cause);  // category network
bool CountsAgainstBreaker(std::string_view action);
TicketKind TicketOf(std::string_view action);

}  // namespace autoheal::diag
