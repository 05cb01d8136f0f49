#include "autoheal/remediation/controller.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <spawn.h>
#include <spdlog/spdlog.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <thread>

#include "autoheal/core/submit_policy.h"
#include "autoheal/diag/rule_files.h"
#include "autoheal/diag/scanner.h"
#include "autoheal/health/gpu_snapshot.h"
#include "autoheal/health/health_config.h"
#include "autoheal/health/runner.h"
#include "autoheal/remediation/decision.h"
#include "autoheal/remediation/evidence_sources.h"
#include "autoheal/remediation/incident_store.h"
#include "autoheal/remediation/job_records.h"
#include "autoheal/remediation/metrics.h"
#include "autoheal/remediation/slurm_adapter.h"
#include "autoheal/remediation/tickets.h"

extern char** environ;

namespace autoheal::remediation {
namespace {

std::int64_t Now() { return static_cast<std::int64_t>(std::time(nullptr)); }

struct Engine {
    diag::RuleSet rules;
    std::shared_ptr<const diag::Scanner> scanner;
};

// The rules in use: the rules folder, or its last good copy when it is broken (then logged).
Result<Engine> LoadEngine(const std::string& self_exe, const std::string& state_dir) {
    const std::string dir = diag::DefaultRulesDir(std::getenv("AUTOHEAL_RULES_DIR"), self_exe);
    diag::RulesInUse in_use =
        diag::LoadRulesKeepingLastGood(dir, LastGoodDir(state_dir) + "/rules.d");
    if (!in_use.problem.empty()) spdlog::error("autoheal: {}", in_use.problem);
    if (!in_use.rules) return MakeError(in_use.problem);
    auto scanner = diag::Scanner::Build(in_use.rules->signatures);
    if (!scanner) return MakeError("rules: " + scanner.error());
    return Engine{std::move(*in_use.rules), *scanner};
}

// Runs argv (no shell) with a time limit; returns "ok" or the failure.
std::string RunCommand(const std::vector<std::string>& argv, double timeout_seconds) {
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    posix_spawnattr_t attr;
    posix_spawnattr_init(&attr);
    posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP);
    posix_spawnattr_setpgroup(&attr, 0);
    pid_t pid = -1;
    const int rc = posix_spawn(&pid, args[0], nullptr, &attr, args.data(), environ);
    posix_spawnattr_destroy(&attr);
    if (rc != 0) return argv[0] + ": " + std::strerror(rc);
    const auto deadline = std::chrono::steady_clock::now() +
                          std::chrono::milliseconds(static_cast<int>(timeout_seconds * 1000));
    int status = 0;
    for (;;) {
        const pid_t r = ::waitpid(pid, &status, WNOHANG);
        if (r == pid) break;
        if (std::chrono::steady_clock::now() > deadline) {
            ::kill(-pid, SIGKILL);
            ::waitpid(pid, &status, 0);
            return argv[0] + ": timed out";
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    if (WIFEXITED(status) && WEXITSTATUS(status) == 0) return "ok";
    if (WIFEXITED(status)) return argv[0] + ": exit " + std::to_string(WEXITSTATUS(status));
    return argv[0] + ": killed by signal " + std::to_string(WTERMSIG(status));
}

// ---------------------------------------------------------------------------- node epilog

void ResetGpus(const RemediationConfig& rc, const diag::Diagnosis& local,
               const health::NodeSnapshot& after, NodeReport* report) {
    if (std::find(local.actions.begin(), local.actions.end(), "reset_gpu") == local.actions.end()) {
        return;
    }
    const std::string& gpu = local.culprit.gpu;
    if (gpu.empty()) {
        report->actions_done.push_back("reset_gpu: no GPU named: not reset");
        return;
    }
    if (rc.dry_run) {
        report->actions_done.push_back("reset_gpu " + gpu + ": dry-run");
        return;
    }
    for (const auto& g : after.gpus) {
        if (g.pci_bus_id == gpu && g.compute_processes.value_or(0) > 0) {
            report->actions_done.push_back("reset_gpu " + gpu + ": busy (" +
                                           std::to_string(*g.compute_processes) +
                                           " processes): not reset");
            return;
        }
    }
    std::vector<std::string> argv;
    for (std::string a : rc.gpu_reset_command) {
        const std::size_t at = a.find("{gpu}");
        if (at != std::string::npos) a.replace(at, 5, gpu);
        argv.push_back(a);
    }
    report->actions_done.push_back("reset_gpu " + gpu + ": " + RunCommand(argv, 60));
}

// Appends `text` to the user's file as that user (a child process with the user's ids), so root
// never writes through a link or into a file the user could not write.
Result<bool> AppendAsUser(const std::string& path, const std::string& text, uid_t uid) {
    if (uid == 0 && ::getuid() != 0) return MakeError("no job uid");
    const struct passwd* pw = ::getpwuid(uid);
    const gid_t gid = pw != nullptr ? pw->pw_gid : static_cast<gid_t>(uid);
    const pid_t pid = ::fork();
    if (pid < 0) return MakeError(std::string("fork: ") + std::strerror(errno));
    if (pid == 0) {
        if (::getuid() == 0 && uid != 0) {
            if (::setgroups(0, nullptr) != 0 || ::setgid(gid) != 0 || ::setuid(uid) != 0) {
                ::_exit(2);
            }
        }
        const int fd = ::open(path.c_str(),
                              O_WRONLY | O_APPEND | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
        if (fd < 0) ::_exit(3);
        struct stat st {};
        if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) ::_exit(4);
        const ssize_t n = ::write(fd, text.data(), text.size());
        ::_exit(n == static_cast<ssize_t>(text.size()) ? 0 : 5);
    }
    int status = 0;
    ::waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        return MakeError(path + ": explanation not appended (as uid " + std::to_string(uid) +
                         ", status " + std::to_string(status) + ")");
    }
    return true;
}

}  // namespace

EpilogOutcome RunNodeEpilog(const Config& config, const ScriptContext& ctx,
                            const std::string& self_exe) {
    EpilogOutcome outcome;
    if (!SafePathPart(ctx.job_id) || !SafePathPart(ctx.node)) {
        return {false, "job id or node name missing or unusable: nothing recorded"};
    }
    auto rc = ParseRemediationConfig(config.remediation, config.source);
    if (!rc) return {false, rc.error()};
    auto engine = LoadEngine(self_exe, config.state_dir);
    if (!engine) return {false, engine.error()};

    NodeReport report;
    report.job = ctx.job_id;
    report.node = ctx.node;
    report.restart = std::atoi(ctx.restart_count.c_str());
    report.time = Now();
    report.exit_code = ctx.exit_code;

    // The prolog's baseline: kernel log cursor and NVML snapshot.
    PrologBaseline baseline;
    auto baseline_text =
        ReadSmallFile(PrologFile(config.state_dir, ctx.job_id, ctx.node), kMaxRecordBytes);
    auto read_baseline = baseline_text ? PrologBaselineFromJson(*baseline_text)
                                       : Result<PrologBaseline>(baseline_text.status());
    if (read_baseline) {
        baseline = std::move(*read_baseline);
    } else {
        report.problems.push_back("no prolog baseline: " + read_baseline.error());
    }
    const std::optional<health::NodeSnapshot>& before = baseline.snapshot;

    diag::EvidenceSet& set = report.evidence;
    // Kernel log since the prolog: the lines the signatures match.
    const std::string klog = KernelLogFor(*rc, ctx.node);
    auto kernel = ReadKernelLogSince(klog, baseline.kernel_cursor, rc->kernel_log_max_bytes);
    if (!kernel) report.problems.push_back("kernel log: " + kernel.error());
    engine->scanner->ScanText(kernel ? *kernel : std::string(), "kernel", &set);

    // NVML deltas and the post-job quick check on the job's GPUs, as typed evidence.
    health::NodeSnapshot after;
    if (!ctx.job_gpus.empty()) {
        auto hc = health::ParseHealthConfig(config.health, config.source);
        auto minors = health::ParseGpuList(ctx.job_gpus);
        if (hc && minors) {
            health::RunRequest request;
            request.tier = HealthTier::kQuick;
            request.gpu_minors = *minors;
            request.config = *hc;
            request.cuda_module = health::ResolveCudaModule(*hc, self_exe);
            health::HealthReport post = health::RunHealthChecks(request);
            after = post.snapshot;
            if (before) {
                for (diag::Evidence& e : NvmlDeltaEvidence(*before, after)) {
                    diag::AddEvidence(&set, "nvml", std::move(e));
                }
            }
            for (diag::Evidence& e : HealthCheckEvidence(post)) {
                diag::AddEvidence(&set, "health", std::move(e));
            }
            for (const auto& g : (before ? before->gpus : after.gpus)) {
                report.gpus.push_back({g.pci_bus_id, g.uuid, g.serial, g.name});
            }
        } else {
            report.problems.push_back("post-job check not run: " +
                                      (hc ? "cannot read SLURM_JOB_GPUS" : hc.error()));
        }
    }
    std::string output_path;  // the job's stdout, when this node read it
    // 3: the job's output, read by the node that ran the batch script. The first node of the
    // allocation asks Slurm which node that was (one RPC per job, not one per node).
    const auto nodes = SlurmAdapter::ExpandHostlist(ctx.nodelist);
    if (!nodes.empty() && nodes.front() == ctx.node) {
        SlurmAdapter slurm(rc->slurm_conf);
        auto job =
            slurm.GetJob(static_cast<std::uint32_t>(std::strtoul(ctx.job_id.c_str(), nullptr, 10)));
        if (!job) {
            report.problems.push_back("job output: " + job.error());
        } else if (job->batch_host == ctx.node) {
            OutputPatternValues v;
            v.job_id = ctx.job_id;
            v.array_job_id = job->array_job_id ? std::to_string(job->array_job_id) : "";
            v.array_task_id = job->array_job_id ? std::to_string(job->array_task_id) : "";
            v.user = job->user_name.empty() ? ctx.user : job->user_name;
            v.job_name = job->name;
            v.first_node = ctx.node;
            std::vector<std::string> paths;
            auto resolve = [&](const std::string& pattern) {
                if (pattern.empty() || pattern == "/dev/null") return std::string();
                std::string p = ExpandOutputPattern(pattern, v);
                if (!p.empty() && p.front() != '/') p = job->work_dir + "/" + p;
                return p;
            };
            std::string out = resolve(job->std_out);
            if (job->std_out.empty()) {
                out = job->work_dir + "/slurm-" +
                      (job->array_job_id ? v.array_job_id + "_" + v.array_task_id : v.job_id) +
                      ".out";
            }
            paths.push_back(out);
            const std::string err = resolve(job->std_err);
            if (!err.empty() && err != out) paths.push_back(err);
            output_path = paths.front();
            std::string text;
            for (const std::string& p : paths) {
                auto tail = ReadFileTailSafely(p, rc->job_output_max_bytes);
                if (!tail) {
                    report.problems.push_back("job output: " + tail.error());
                    continue;
                }
                text += *tail;
                if (!text.empty() && text.back() != '\n') text += '\n';
            }
            report.job_output_read = true;
            engine->scanner->ScanText(text, "job-output", &report.job_output);
        }
    }

    diag::EvidenceSet analyzed = set;  // the report carries the evidence as found
    diag::Analyze(&analyzed);
    diag::DiagnoseOptions options;
    options.node = ctx.node;
    options.job = ctx.job_id;
    options.now = Now();
    diag::Diagnosis local = diag::Diagnose(engine->rules, analyzed, options);
    report.local_cause = local.rule.empty() ? "" : local.cause + " (" + local.rule + ")";
    ResetGpus(*rc, local, after, &report);

    auto written =
        WriteFileAtomically(EpilogFile(config.state_dir, ctx.job_id, report.restart, ctx.node),
                            NodeReportToJson(report), 0640, 0755);
    if (!written) return {false, "cannot write the node report: " + written.error()};
    // Slurm refuses updates to a finished job, so a job that is not requeued cannot carry the
    // explanation in its AdminComment: the batch host's epilog waits for the controller's
    // decision and appends it to the job's output, where the user looks first.
    if (!output_path.empty()) {
        const std::string decision_path =
            DecisionFile(config.state_dir, ctx.job_id, report.restart);
        const auto until =
            std::chrono::steady_clock::now() +
            std::chrono::milliseconds(static_cast<int>((rc->results_wait_seconds + 10) * 1000));
        // A decision file that does not read (corrupted, hand-edited, a newer version) has no
        // line.
        std::string line;
        while (std::chrono::steady_clock::now() < until) {
            if (auto text = ReadSmallFile(decision_path, kMaxRecordBytes)) {
                auto decision = DecisionRecordFromJson(*text);
                if (decision) {
                    line = decision->explanation;
                } else {
                    spdlog::warn("autoheal: epilog: {}: {}", decision_path, decision.error());
                }
                break;
            }
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
        }
        if (!line.empty()) {
            auto appended =
                AppendAsUser(output_path, line + "\n",
                             static_cast<uid_t>(std::strtoul(ctx.uid.c_str(), nullptr, 10)));
            if (!appended) spdlog::warn("autoheal: epilog: {}", appended.error());
        }
    }
    outcome.summary =
        "job=" + ctx.job_id + " node=" + ctx.node + " run=" + std::to_string(report.restart) +
        " evidence=" +
        std::to_string(report.evidence.items.size() + report.job_output.items.size()) + " items" +
        (local.rule.empty() ? "" : " local=" + report.local_cause);
    for (const std::string& a : report.actions_done) outcome.summary += "; " + a;
    for (const std::string& p : report.problems) spdlog::warn("autoheal: epilog: {}", p);
    return outcome;
}

// ------------------------------------------------------------------------ controller epilog
namespace {

class FileLock {
  public:
    explicit FileLock(const std::string& path) {
        fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd_ >= 0) ::flock(fd_, LOCK_EX);
    }
    ~FileLock() {
        if (fd_ >= 0) ::close(fd_);
    }
    FileLock(const FileLock&) = delete;
    FileLock& operator=(const FileLock&) = delete;

  private:
    int fd_ = -1;
};

// The texts of a source's evidence items, in order (a ticket's "health" and "nvml" lines).
std::vector<std::string> SourceTexts(const diag::EvidenceSet& set, const std::string& source) {
    std::vector<std::string> texts;
    for (const diag::Evidence& e : set.items) {
        if (e.source < set.sources.size() && set.sources[e.source] == source) {
            texts.push_back(e.text);
        }
    }
    return texts;
}

nlohmann::json TicketPayload(const std::string& kind, const JobDecision& d, const NodePlan* plan,
                             const NodeVerdict* verdict, const NodeReport* report,
                             const std::vector<diag::HistoryRecord>& history,
                             const std::string& cluster_job) {
    nlohmann::json j;
    j["kind"] = kind;
    j["created"] = Now();
    j["job"] = cluster_job;
    if (plan != nullptr) {
        j["node"] = plan->node;
        j["cause"] = plan->cause;
        j["rule"] = plan->rule;
        j["gpu"] = {{"pci", plan->gpu}};
        if (report != nullptr) {
            for (const GpuIdentity& g : report->gpus) {
                if (g.pci == plan->gpu) {
                    j["gpu"] = {
                        {"pci", g.pci}, {"uuid", g.uuid}, {"serial", g.serial}, {"model", g.name}};
                }
            }
            j["health"] = SourceTexts(report->evidence, "health");
            j["nvml"] = SourceTexts(report->evidence, "nvml");
        }
    }
    if (d.network && plan == nullptr) {
        j["switch"] = d.network->name;
        j["nodes"] = d.network->nodes;
        j["cause"] = "network_switch_cable";
    }
    j["evidence"] = nlohmann::json::array();
    if (verdict != nullptr) {
        for (const diag::Evidence& e : verdict->diagnosis.evidence) {
            j["evidence"].push_back(
                {{"source", verdict->evidence.sources[e.source]}, {"line", e.text}});
        }
    }
    j["history"] = nlohmann::json::array();
    for (const diag::HistoryRecord& h : history) {
        j["history"].push_back({{"time", h.time},
                                {"node", h.node},
                                {"gpu", h.gpu},
                                {"cause", h.cause},
                                {"rule", h.rule},
                                {"job", h.job}});
        if (j["history"].size() >= 50) break;
    }
    return j;
}

std::string EvidenceJson(const NodeVerdict& v) {
    nlohmann::json a = nlohmann::json::array();
    for (const diag::Evidence& e : v.diagnosis.evidence) {
        a.push_back({{"source", v.evidence.sources[e.source]},
                     {"line", e.line},
                     {"signature", e.signature},
                     {"text", e.text}});
    }
    return a.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

// Slurm calls whose failure would lose the decision are retried while slurmctld is away (a
// restart, a failover): every second until `limit` has passed.
bool SlurmUnreachable(const std::string& error) {
    for (const char* words : {"contact slurm controller", "Communication", "Message send failure",
                              "Message receive failure", "Socket timed out", "Connection refused",
                              "Zero Bytes were transmitted"}) {
        if (error.find(words) != std::string::npos) return true;
    }
    return false;
}

template <typename Call>
auto UntilSlurmAnswers(const Call& call, std::chrono::seconds limit) -> decltype(call()) {
    const auto deadline = std::chrono::steady_clock::now() + limit;
    for (int attempt = 1;; ++attempt) {
        auto result = call();
        if (result || !SlurmUnreachable(result.error()) ||
            std::chrono::steady_clock::now() >= deadline) {
            return result;
        }
        if (attempt == 1) {
            spdlog::warn("autoheal: epilog-ctld: {}: retrying until slurmctld answers",
                         result.error());
        }
        std::this_thread::sleep_for(std::chrono::seconds(1));
    }
}

constexpr std::chrono::seconds kSlurmWait{90};

}  // namespace

EpilogOutcome DeliverPendingTickets(const Config& config, double budget_seconds) {
    auto rc = ParseRemediationConfig(config.remediation, config.source);
    if (!rc) return {false, rc.error()};
    auto tickets = ParseTicketConfig(rc->tickets, config.source, config.state_dir);
    if (!tickets) return {false, tickets.error()};
    auto store = IncidentStore::Open(config.state_dir + "/incidents.sqlite");
    if (!store) return {false, store.error()};
    auto summary = DeliverDueTickets(**store, *tickets, Now(), 100, budget_seconds);
    if (!summary) return {false, summary.error()};
    EpilogOutcome out;
    out.summary = "tickets delivered=" + std::to_string(summary->delivered) +
                  " failed=" + std::to_string(summary->failed) +
                  " skipped=" + std::to_string(summary->skipped);
    for (const std::string& e : summary->errors) out.summary += "; " + e;
    out.ok = summary->failed == 0;
    return out;
}

EpilogOutcome RunControllerEpilog(const Config& config, const ScriptContext& ctx,
                                  const std::string& self_exe) {
    if (!SafePathPart(ctx.job_id)) return {false, "job id missing or unusable"};
    const auto job_id = static_cast<std::uint32_t>(std::strtoul(ctx.job_id.c_str(), nullptr, 10));
    auto rc = ParseRemediationConfig(config.remediation, config.source);
    if (!rc) return {false, rc.error()};
    auto tickets = ParseTicketConfig(rc->tickets, config.source, config.state_dir);
    if (!tickets) return {false, tickets.error()};
    auto engine = LoadEngine(self_exe, config.state_dir);
    if (!engine) return {false, engine.error()};

    DecisionInput in;
    in.rules = &engine->rules;
    in.config = &*rc;
    in.job.job = ctx.job_id;
    in.job.restart_count = std::atoi(ctx.restart_count.c_str());
    in.job.auto_resume = ctx.options.auto_resume;
    in.job.nodes = SlurmAdapter::ExpandHostlist(ctx.nodelist);

    // Wait, bounded, for the node epilogs (they start after this program: SLURM-LAB.md).
    const auto deadline =
        std::chrono::steady_clock::now() +
        std::chrono::milliseconds(static_cast<int>(rc->results_wait_seconds * 1000));
    std::vector<std::string> waiting = in.job.nodes;
    for (;;) {
        std::vector<std::string> still;
        for (const std::string& node : waiting) {
            if (!SafePathPart(node)) continue;
            const std::string path =
                EpilogFile(config.state_dir, ctx.job_id, in.job.restart_count, node);
            auto text = ReadSmallFile(path, kMaxRecordBytes);
            if (!text) {
                still.push_back(node);
                continue;
            }
            auto report = NodeReportFromJson(*text);
            if (!report) {
                spdlog::warn("autoheal: epilog-ctld: {}: {}", path, report.error());
                continue;
            }
            in.reports.push_back(std::move(*report));
        }
        waiting = std::move(still);
        if (waiting.empty() || std::chrono::steady_clock::now() >= deadline) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
    in.job.missing_reports = waiting;
    std::sort(in.reports.begin(), in.reports.end(),
              [](const NodeReport& a, const NodeReport& b) { return a.node < b.node; });

    SlurmAdapter slurm(rc->slurm_conf);
    auto job = UntilSlurmAnswers([&] { return slurm.GetJob(job_id); }, kSlurmWait);
    if (!job) return {false, job.error()};
    // Requeued already (by Slurm after a prolog failure or a node failure, by an admin, or by an
    // earlier run of this program): record what the nodes saw, leave the job alone.
    const bool requeued_elsewhere = job->being_requeued;
    in.job.failed = job->exit_code != 0 || job->state == "FAILED" || job->state == "NODE_FAIL" ||
                    job->state == "BOOT_FAIL";
    // A cancelled job did not fail; a job requeued already is not this program's to judge (and
    // does not count towards lemons).
    if (job->state == "CANCELLED" || requeued_elsewhere) in.job.failed = false;
    in.job.requeueable = job->requeue;
    in.job.excluded = SlurmAdapter::ExpandHostlist(job->exc_nodes);

    auto store = IncidentStore::Open(config.state_dir + "/incidents.sqlite");
    if (!store) return {false, store.error()};
    const std::int64_t now = Now();
    for (const std::string& node : in.job.nodes) {
        auto h = (*store)->History(now - 90 * 86400, node, "");
        if (h) in.history.emplace_back(node, std::move(*h));
    }
    for (const std::string& node : in.job.nodes) {
        auto n = (*store)->CountJobRuns(node, "unexplained", now - rc->lemon.window_seconds);
        if (n) in.unexplained_failures.emplace_back(node, *n);
    }
    auto recent = (*store)->History(now - rc->correlation.window_seconds, "", "");
    if (recent) in.cluster.recent = std::move(*recent);
    if (auto topo = slurm.Topology()) in.cluster.switches = std::move(*topo);

    // One decision at a time on this controller: the breaker counts what others just did.
    FileLock lock(config.state_dir + "/controller.lock");
    auto nodes = UntilSlurmAnswers([&] { return slurm.ListNodes(); }, kSlurmWait);
    if (!nodes) return {false, nodes.error()};
    in.cluster.nodes = std::move(*nodes);
    in.cluster.now = Now();
    JobDecision d = Decide(in);
    if (requeued_elsewhere) {
        d.requeue = false;
        d.explanation.clear();
    } else {
        auto runs = (*store)->RecordJobRun(ctx.job_id, in.job.restart_count, in.job.nodes,
                                           in.cluster.now, d.outcome);
        if (!runs) spdlog::error("autoheal: epilog-ctld: {}", runs.error());
    }

    const bool dry = rc->dry_run;
    const std::string run = ctx.job_id + "/run" + std::to_string(in.job.restart_count);
    // Incidents: one per node whose evidence fired a rule, and one for the job.
    std::map<std::string, std::int64_t> incident_of;
    for (const NodeVerdict& v : d.verdicts) {
        if (v.diagnosis.rule.empty()) continue;
        IncidentRecord rec;
        rec.time = in.cluster.now;
        rec.job = ctx.job_id;
        rec.node = v.node;
        rec.gpu = v.diagnosis.culprit.gpu;
        rec.cause = v.diagnosis.cause;
        rec.rule = v.diagnosis.rule;
        rec.confidence = v.diagnosis.confidence;
        rec.evidence_json = EvidenceJson(v);
        rec.dedup_key = run + "/" + v.node + "/" + v.diagnosis.rule + "/" + rec.gpu;
        for (const NodeReport& r : in.reports) {
            if (r.node != v.node || rec.gpu.empty()) continue;
            for (const GpuIdentity& g : r.gpus) {
                if (g.pci == rec.gpu) rec.gpu_serial = g.serial;
            }
        }
        auto id = (*store)->RecordIncident(rec);
        if (id)
            incident_of[v.node] = *id;
        else
            spdlog::error("autoheal: epilog-ctld: {}", id.error());
    }
    // Nodes that went down with the job (slurmd or the host died: no epilog report came): an
    // incident each, so the failure is on record even when Slurm requeued the job itself.
    for (const std::string& node : in.job.missing_reports) {
        const NodeInfo* info = nullptr;
        for (const NodeInfo& n : in.cluster.nodes) {
            if (n.name == node) info = &n;
        }
        if (info == nullptr || !info->down || !SafePathPart(node)) continue;
        IncidentRecord rec;
        rec.time = in.cluster.now;
        rec.job = ctx.job_id;
        rec.node = node;
        rec.cause = "unknown";
        rec.rule = "node-failed";
        rec.confidence = 0.5;
        rec.evidence_json =
            nlohmann::json::array(
                {{{"source", "slurm"},
                  {"text", "the node went down with the job (state " + info->state +
                               (info->reason.empty() ? "" : ", reason: " + info->reason) +
                               ") and its epilog did not report"}}})
                .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
        rec.dedup_key = run + "/" + node + "/node-failed";
        auto id = (*store)->RecordIncident(rec);
        if (!id) spdlog::error("autoheal: epilog-ctld: {}", id.error());
    }

    IncidentRecord job_rec;
    job_rec.time = in.cluster.now;
    job_rec.job = ctx.job_id;
    job_rec.cause = d.cause;
    job_rec.rule = d.rule;
    job_rec.confidence = d.confidence;
    job_rec.evidence_json = d.job_output ? EvidenceJson(*d.job_output) : "[]";
    job_rec.dedup_key = run + "/job";
    auto job_incident = (*store)->RecordIncident(job_rec);
    if (!job_incident) return {false, job_incident.error()};

    auto record = [&](std::int64_t incident, const std::string& action, const std::string& target,
                      const std::string& outcome, const std::string& detail) {
        auto r = (*store)->RecordAction(incident, action, target, outcome, detail);
        if (!r) spdlog::error("autoheal: epilog-ctld: {}", r.error());
        return r && *r;
    };
    std::vector<std::string> done;

    // The switch incident first, so its nodes' plans know the ticket exists.
    if (d.network) {
        IncidentRecord rec;
        rec.time = in.cluster.now;
        rec.job = ctx.job_id;
        rec.node = d.network->name;
        rec.cause = "network_switch_cable";
        rec.rule = "leaf-switch-correlation";
        rec.confidence = 0.8;
        nlohmann::json nodes_json = d.network->nodes;
        rec.evidence_json =
            nlohmann::json{{{"switch", d.network->name}, {"nodes", nodes_json}}}.dump();
        const std::int64_t bucket =
            in.cluster.now / std::max<std::int64_t>(rc->correlation.window_seconds, 1);
        rec.dedup_key = "switch/" + d.network->name + "/" + std::to_string(bucket);
        auto id = (*store)->RecordIncident(rec);
        if (id) {
            if (dry || d.breaker_open) {
                record(*id, "network_ticket", d.network->name, dry ? "dry-run" : "held", d.summary);
            } else {
                auto t = OpenTickets(
                    **store, *id, "network", rec.dedup_key,
                    TicketPayload("network", d, nullptr, nullptr, nullptr, {}, ctx.job_id).dump(),
                    *tickets);
                record(*id, "network_ticket", d.network->name, t ? "opened" : "failed",
                       t ? d.summary : t.error());
            }
            done.push_back("network incident: switch " + d.network->name);
        }
    }

    for (const NodePlan& plan : d.plans) {
        const std::int64_t incident =
            incident_of.count(plan.node) != 0 ? incident_of[plan.node] : *job_incident;
        const NodeVerdict* verdict = nullptr;
        for (const NodeVerdict& v : d.verdicts) {
            if (v.node == plan.node) verdict = &v;
        }
        const NodeReport* report = nullptr;
        for (const NodeReport& r : in.reports) {
            if (r.node == plan.node) report = &r;
        }
        for (const std::string& h : plan.held) {
            record(incident, "held", plan.node, "held", h);
        }
        for (const std::string& action : plan.actions) {
            std::string outcome;
            std::string detail = plan.reason;
            if (dry) {
                outcome = "dry-run";
            } else if (action == "drain") {
                auto r = slurm.Drain(plan.node, plan.reason);
                outcome = !r                                               ? "failed"
                          : *r == SlurmAdapter::DrainOutcome::kAdminOwned  ? "admin-owned"
                          : *r == SlurmAdapter::DrainOutcome::kAlreadyOurs ? "already"
                                                                           : "done";
                if (!r) detail = r.error();
            } else if (action == "reboot") {
                auto r = slurm.Reboot(plan.node, plan.reason);
                outcome = !r                                                   ? "failed"
                          : *r == SlurmAdapter::RebootOutcome::kAdminOwned     ? "admin-owned"
                          : *r == SlurmAdapter::RebootOutcome::kAlreadyPending ? "already"
                                                                               : "done";
                if (!r) detail = r.error();
            } else if (action == "reset_gpu") {
                outcome = "on-node";
                if (report != nullptr) {
                    for (const std::string& a : report->actions_done) detail = a;
                }
            } else if (action == "rma_ticket" || action == "network_ticket") {
                const std::string kind = action == "rma_ticket" ? "rma" : "network";
                std::string part = plan.gpu;
                if (report != nullptr) {
                    for (const GpuIdentity& g : report->gpus) {
                        if (g.pci == plan.gpu && !g.serial.empty()) part = g.serial;
                    }
                }
                const std::int64_t period = in.cluster.now / (30 * 86400);
                const std::string key = kind + "/" + plan.node + "/" +
                                        (part.empty() ? "node" : part) + "/" + plan.cause + "/" +
                                        std::to_string(period);
                static const std::vector<diag::HistoryRecord> kNoHistory;
                const std::vector<diag::HistoryRecord>* hist = &kNoHistory;
                for (const auto& [n, h] : in.history) {
                    if (n == plan.node) hist = &h;
                }
                auto t =
                    OpenTickets(**store, incident, kind, key,
                                TicketPayload(kind, d, &plan, verdict, report, *hist, ctx.job_id)
                                    .dump(-1, ' ', false, nlohmann::json::error_handler_t::replace),
                                *tickets);
                outcome = t ? "opened" : "failed";
                detail = t ? key : t.error();
            } else {  // notify, none
                outcome = "logged";
                spdlog::warn("autoheal: notify: node={} {}", plan.node, plan.reason);
            }
            record(incident, action, plan.node, outcome, detail);
            done.push_back(action + " " + plan.node + ": " + outcome);
        }
    }
    if (d.breaker_open) {
        spdlog::error("autoheal: ALERT: {}; held: {}", d.breaker_note, [&] {
            std::string s;
            for (const std::string& n : d.quarantine) s += (s.empty() ? "" : ",") + n;
            return s;
        }());
        record(*job_incident, "alert", "breaker", "raised", d.breaker_note);
    }
    if (!d.quarantine.empty() && !dry && rc->quarantine_hours > 0) {
        for (const std::string& n : d.quarantine) {
            auto q = AddToQuarantine(
                config.policy.quarantine_file, n,
                in.cluster.now + static_cast<std::int64_t>(rc->quarantine_hours * 3600),
                "autoheal: " + d.cause + " (breaker held the drain)", in.cluster.now);
            record(*job_incident, "quarantine", n, q ? "done" : "failed",
                   q ? d.breaker_note : q.error());
        }
    }

    // The job: requeue (once per run), excluded nodes, early begin, explanation.
    std::string requeue_note;
    if (d.requeue && !dry) {
        // Requeued once per run: by an earlier attempt of this call, or by a run of this
        // program that a slurmctld restart interrupted.
        auto requeued_already = [&] {
            auto current = UntilSlurmAnswers([&] { return slurm.GetJob(job_id); }, kSlurmWait);
            return current &&
                   (current->being_requeued || current->restart_count > in.job.restart_count);
        };
        if (!requeued_already()) {
            auto r = UntilSlurmAnswers(
                [&]() -> Result<bool> {
                    auto done = slurm.Requeue(job_id);
                    if (!done && requeued_already()) return true;
                    return done;
                },
                kSlurmWait);
            if (!r) {
                requeue_note = r.error();
                d.explanation = "autoheal: requeue failed (" + r.error() + ") after " + d.summary;
            }
        }
        if (requeue_note.empty()) {
            ResumeRecord resume;
            resume.restart = in.job.restart_count;
            resume.cause = d.cause;
            resume.explanation = d.explanation;
            resume.excluded = SlurmAdapter::CompressHostlist(d.exclude);
            auto w = WriteFileAtomically(ResumeRecordPath(config.state_dir, ctx.job_id),
                                         ResumeRecordToJson(resume), 0644, 0755);
            if (!w) spdlog::warn("autoheal: epilog-ctld: {}", w.error());
            JobUpdate u;
            u.exc_nodes = resume.excluded;
            u.admin_comment = d.explanation;
            // Slurm holds a requeued job until now + cred_expire + 1 (121 s by default) unless its
            // begin time is later than the moment the requeue completes: ask for a few seconds.
            u.begin_time = Now() + rc->requeue_delay_seconds;
            auto up = slurm.UpdateJob(job_id, u);
            if (!up) spdlog::error("autoheal: epilog-ctld: {}", up.error());
        }
        record(*job_incident, "requeue", ctx.job_id + "/run" + std::to_string(in.job.restart_count),
               requeue_note.empty() ? "done" : "failed",
               requeue_note.empty() ? d.explanation : requeue_note);
    } else if (!d.explanation.empty()) {
        if (dry && d.requeue)
            d.explanation = "autoheal (dry-run): would have " + d.explanation.substr(10);
        // Slurm 22.05 refuses updates to a finished job: the batch host's epilog appends the
        // explanation to the job's output instead (RunNodeEpilog).
        record(*job_incident, "explain", ctx.job_id, dry ? "dry-run" : "done", d.explanation);
    }

    if (!requeued_elsewhere) {
        RunRecord r;
        r.job = ctx.job_id;
        r.run = in.job.restart_count;
        r.nodes = static_cast<int>(in.job.nodes.size());
        r.node_list = ctx.nodelist;
        r.start_time = job->start_time;
        r.end_time = job->end_time > 0 ? job->end_time : in.cluster.now;
        r.decided_at = Now();
        r.outcome = d.outcome;
        r.cause = d.cause;
        r.culprits = SlurmAdapter::CompressHostlist(d.culprits);
        r.requeued = d.requeue && !dry && requeue_note.empty();
        auto recorded = (*store)->RecordRun(r);
        if (!recorded) spdlog::error("autoheal: epilog-ctld: {}", recorded.error());
    }

    // For the batch host's epilog, which appends the explanation to the job's output, and for
    // `autoheal replay`, which decides the run again under other rules.
    DecisionRecord record_out;
    record_out.explanation = d.explanation;
    record_out.requeue = d.requeue;
    record_out.cause = d.cause;
    record_out.rule = d.rule;
    record_out.outcome = d.outcome;
    record_out.culprits = d.culprits;
    record_out.facts = in.job;
    auto decided =
        WriteFileAtomically(DecisionFile(config.state_dir, ctx.job_id, in.job.restart_count),
                            DecisionRecordToJson(record_out), 0644, 0755);
    if (!decided) spdlog::warn("autoheal: epilog-ctld: {}", decided.error());

    // Tickets that are due (this job's and earlier ones that could not be delivered).
    auto delivered = DeliverDueTickets(**store, *tickets, Now(), 50, 10.0);
    if (delivered) {
        for (const std::string& e : delivered->errors) {
            spdlog::warn("autoheal: tickets: {}", e);
        }
    }

    // Metrics last: deliveries matter more.
    if (!rc->metrics_dir.empty()) {
        auto after = slurm.ListNodes();
        auto text = RenderControllerMetrics(**store, after ? &*after : nullptr, *rc, Now());
        auto w = text ? WriteMetricsFile(rc->metrics_dir, kControllerMetricsFile, *text)
                      : Result<bool>(MakeError(text.error()));
        if (!w) spdlog::warn("autoheal: epilog-ctld: metrics: {}", w.error());
    }

    EpilogOutcome out;
    out.summary =
        "job=" + ctx.job_id + " run=" + std::to_string(in.job.restart_count) + " cause=" + d.cause +
        (d.rule.empty() ? "" : " rule=" + d.rule) + " requeue=" + (d.requeue ? "yes" : "no") +
        " reports=" + std::to_string(in.reports.size()) + "/" + std::to_string(in.job.nodes.size());
    if (!in.job.missing_reports.empty()) {
        out.summary += " missing=" + SlurmAdapter::CompressHostlist(in.job.missing_reports);
    }
    for (const std::string& s : done) out.summary += "; " + s;
    if (!d.explanation.empty()) out.summary += "; " + d.explanation;
    return out;
}

}  // namespace autoheal::remediation
