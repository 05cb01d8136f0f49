// A cluster for the epilogs' unit tests: a temporary state folder with a real SQLite incident
// store, the shipped rules (etc/rules.d), a sim::MemorySlurmClient with four nodes under two leaf
// switches (node1,node2 | node3,node4) and a sim::ManualClock. Node reports are written where the
// node epilogs write them, and the controller pipeline runs on them in-process.
#pragma once

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "autoheal/remediation/ctld_epilog_steps.h"
#include "autoheal/remediation/node_epilog_steps.h"
#include "autoheal/sim/manual_clock.h"
#include "autoheal/sim/memory_slurm.h"

namespace autoheal::remediation::testing {

std::string XidLine(int xid, const std::string& pci, const std::string& msg);

class EpilogTestEnv {
  public:
    EpilogTestEnv();
    ~EpilogTestEnv();

    // A failed batch job `id` on `nodes` (batch host: the first), asking --auto-resume=cap
    // (none when cap < 0), at restart `restart`.
    JobInfo& FailedJob(std::uint32_t id, const std::vector<std::string>& nodes, int cap = 3,
                       int restart = 0);
    // The node report of `node` for the current job.
    NodeReport& Report(const std::string& node);
    // Sets the report's evidence as the node epilog finds it in these kernel log lines.
    void Kernel(const std::string& node, const std::vector<std::string>& lines);
    // Sets the report's job output evidence as the batch host finds it in these lines.
    void JobOutput(const std::string& node, const std::vector<std::string>& lines);
    void WriteReports();

    // Runs the controller epilog on the current job (reports written first).
    EpilogOutcome RunController();
    // The controller env for the current job, to call single steps.
    CtldEnv Env();

    // Runs the whole node epilog of `node` (kernel log lines `kernel`) on the current job.
    NodeEpilogEnv NodeEnv(const std::string& node);
    void SetKernelLog(const std::string& node, const std::vector<std::string>& lines);

    // "action target outcome" for every action in the store, in order.
    std::vector<std::string> Actions();
    std::vector<IncidentRow> Incidents();
    std::optional<DecisionRecord> Decision(int restart = 0);
    std::string ReadText(const std::string& path);

    std::filesystem::path dir;
    Config config;
    RemediationConfig rc;
    health::HealthConfig health;
    TicketConfig tickets;
    double ticket_budget_seconds = 10;  // CtldEnv::ticket_budget_seconds
    Engine engine;
    std::unique_ptr<IncidentStore> store;
    sim::MemorySlurmClient slurm;
    sim::ManualClock clock;
    ScriptContext ctx;
    std::vector<NodeReport> reports;
    // Node contexts kept alive for the NodeEpilogEnvs handed out.
    std::vector<std::unique_ptr<ScriptContext>> node_ctx;
};

}  // namespace autoheal::remediation::testing
