#include "epilog_test_env.h"

#include <unistd.h>

#include <fstream>
#include <sstream>

#include "autoheal/remediation/slurm_adapter.h"
#include "diag_test_util.h"

namespace autoheal::remediation::testing {

namespace fs = std::filesystem;

std::string XidLine(int xid, const std::string& pci, const std::string& msg) {
    return "kernel: NVRM: Xid (PCI:" + pci + "): " + std::to_string(xid) +
           ", pid=1, name=python, " + msg;
}

EpilogTestEnv::EpilogTestEnv() {
    static int counter = 0;
    dir = fs::temp_directory_path() /
          ("epilog_test." + std::to_string(::getpid()) + "." + std::to_string(counter++));
    fs::remove_all(dir);
    // state_dir/jobs exists as the install makes it (the shared export; the breaker lock is there).
    fs::create_directories(dir / "jobs");
    config.source = "test";
    config.state_dir = dir.string();
    config.policy.quarantine_file = (dir / "quarantine.json").string();
    rc.breaker = {0.5, 2};
    rc.results_wait_seconds = 5;
    // The fake clock (2027) runs ahead of the real times of the files the steps write: with the
    // default retention, Finish would remove the job folders of jobs still being decided.
    rc.jobs_retention_days = 3650;
    rc.kernel_log = (dir / "kernel-%n.log").string();
    tickets = ParseTicketConfig(YAML::Node(), "test", config.state_dir).value();
    store = std::move(IncidentStore::Open((dir / "incidents.sqlite").string()).value());
    engine = {diag::testing::ShippedRules(), diag::testing::ShippedScanner()};
    for (const char* n : {"node1", "node2", "node3", "node4"}) slurm.AddNode(n);
    slurm.SetTopology(
        {{"leaf1", 0, {"node1", "node2"}}, {"leaf2", 0, {"node3", "node4"}}, {"spine", 1, {}}});
    slurm.set_now(clock.Now());
}

EpilogTestEnv::~EpilogTestEnv() {
    std::error_code ec;
    fs::remove_all(dir, ec);
}

JobInfo& EpilogTestEnv::FailedJob(std::uint32_t id, const std::vector<std::string>& nodes, int cap,
                                  int restart) {
    JobInfo job;
    job.id = id;
    job.state = "FAILED";
    job.exit_code = 1 << 8;
    job.requeue = true;
    job.restart_count = restart;
    job.nodes = SlurmAdapter::CompressHostlist(nodes);
    job.batch_host = nodes.front();
    job.user_id = ::getuid();
    job.user_name = "alice";
    job.work_dir = dir.string();
    job.start_time = clock.Now() - 600;
    job.end_time = clock.Now();
    ctx = ScriptContext();
    ctx.job_id = std::to_string(id);
    ctx.nodelist = job.nodes;
    ctx.restart_count = std::to_string(restart);
    ctx.uid = std::to_string(::getuid());
    ctx.user = "alice";
    if (cap >= 0) ctx.options.auto_resume = cap;
    reports.clear();
    for (const std::string& n : nodes) {
        NodeReport r;
        r.job = ctx.job_id;
        r.node = n;
        r.restart = restart;
        r.time = clock.Now();
        reports.push_back(r);
    }
    return slurm.AddJob(job);
}

NodeReport& EpilogTestEnv::Report(const std::string& node) {
    for (NodeReport& r : reports) {
        if (r.node == node) return r;
    }
    throw std::runtime_error("no report for " + node);
}

void EpilogTestEnv::Kernel(const std::string& node, const std::vector<std::string>& lines) {
    Report(node).evidence = diag::testing::ScanLines(lines, "kernel");
}

void EpilogTestEnv::JobOutput(const std::string& node, const std::vector<std::string>& lines) {
    Report(node).job_output_read = true;
    Report(node).job_output = diag::testing::ScanLines(lines, "job-output");
}

void EpilogTestEnv::WriteReports() {
    for (const NodeReport& r : reports) {
        auto w = WriteFileAtomically(EpilogFile(config.state_dir, ctx.job_id, r.restart, r.node),
                                     NodeReportToJson(r), 0640, 0755);
        if (!w) throw std::runtime_error(w.error());
    }
}

CtldEnv EpilogTestEnv::Env() {
    return CtldEnv{config, ctx,   rc,    tickets, engine,
                   *store, slurm, clock, 5,       ticket_budget_seconds};
}

EpilogOutcome EpilogTestEnv::RunController() {
    WriteReports();
    return RunControllerPipeline(Env());
}

NodeEpilogEnv EpilogTestEnv::NodeEnv(const std::string& node) {
    auto c = std::make_unique<ScriptContext>(ctx);
    c->node = node;
    node_ctx.push_back(std::move(c));
    return NodeEpilogEnv{config, *node_ctx.back(), rc, health, engine, "", clock};
}

void EpilogTestEnv::SetKernelLog(const std::string& node, const std::vector<std::string>& lines) {
    std::ofstream out(KernelLogFor(rc, node), std::ios::trunc);
    for (const std::string& l : lines) out << l << "\n";
}

std::vector<std::string> EpilogTestEnv::Actions() {
    std::vector<std::string> out;
    auto rows = store->Actions(0, "").value();  // newest first
    for (auto a = rows.rbegin(); a != rows.rend(); ++a) {
        out.push_back(a->action + " " + a->target + " " + a->outcome);
    }
    return out;
}

std::vector<IncidentRow> EpilogTestEnv::Incidents() {
    return store->Incidents(IncidentQuery()).value();
}

std::optional<DecisionRecord> EpilogTestEnv::Decision(int restart) {
    auto text = ReadSmallFile(DecisionFile(config.state_dir, ctx.job_id, restart), 1 << 20);
    if (!text) return std::nullopt;
    auto d = DecisionRecordFromJson(*text);
    if (!d) return std::nullopt;
    return *d;
}

std::string EpilogTestEnv::ReadText(const std::string& path) {
    std::ifstream in(path);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}

}  // namespace autoheal::remediation::testing
