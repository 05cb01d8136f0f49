// autoheal replay: decides stored job runs again under another rule set and prints what would
// change (cause, culprits, requeue, node actions): a rule edit backtested before it is deployed.
//
// Input per run: the controller's decision file (the job's facts) and the node epilogs' reports
// under state_dir/jobs/<job>/run<N>/, plus each node's incident history from before that run.
// Both rule sets decide under the same conditions: no breaker, no leaf-switch correlation and no
// lemon counts (those depend on the cluster at that moment, not on the rules). Reports hold the
// typed evidence the node found with the signatures of the day (signature, fields, text), so a
// rule change is replayed on it, but a new or changed signature finds nothing new.
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "autoheal/core/files.h"
#include "autoheal/remediation/decision.h"
#include "autoheal/remediation/job_records.h"
#include "autoheal/remediation/settings.h"
#include "cli_common.h"

namespace autoheal::cli {
namespace {

namespace fs = std::filesystem;
using remediation::DecisionInput;
using remediation::JobDecision;

constexpr const char* kReplayUsage =
    "usage: autoheal replay --rules PATH [--since 7d] [--all] [--json]\n"
    "  Decides the job runs recorded since then again, with the installed rules and with the\n"
    "  rules at PATH (a file or folder), and prints the runs whose decision would change.\n"
    "  --all prints every run. No breaker, correlation or lemon counts in either decision.\n"
    "  Exit 0 when nothing changes, 1 when something does, 2 on bad input.\n";

// What is compared: "drain,rma_ticket" per node, in node order.
std::string Actions(const JobDecision& d) {
    std::string s;
    for (const remediation::NodePlan& p : d.plans) {
        std::string a;
        for (const std::string& x : p.actions) a += (a.empty() ? "" : ",") + x;
        s += (s.empty() ? "" : " ") + p.node + ":" + a;
    }
    return s;
}

std::string Join(const std::vector<std::string>& v) {
    std::string s;
    for (const std::string& x : v) s += (s.empty() ? "" : ",") + x;
    return s;
}

std::string Change(const std::string& before, const std::string& after) {
    return before == after
               ? (before.empty() ? "-" : before)
               : (before.empty() ? "-" : before) + " -> " + (after.empty() ? "-" : after);
}

struct Run {
    std::string job;
    int run = 0;
    std::int64_t time = 0;
    remediation::DecisionRecord recorded;
    std::vector<remediation::NodeReport> reports;
};

// Runs whose decision file is newer than `since`, oldest first.
std::vector<Run> LoadRuns(const std::string& state_dir, std::int64_t since,
                          std::vector<std::string>* problems) {
    std::vector<Run> runs;
    std::error_code ec;
    const fs::path jobs = fs::path(state_dir) / "jobs";
    for (const auto& job : fs::directory_iterator(jobs, ec)) {
        if (!job.is_directory(ec) || job.is_symlink(ec)) continue;
        for (const auto& run_dir : fs::directory_iterator(job.path(), ec)) {
            const std::string name = run_dir.path().filename().string();
            if (name.rfind("run", 0) != 0 || !run_dir.is_directory(ec)) continue;
            const fs::path decision = run_dir.path() / "decision.json";
            struct stat st {};
            if (::lstat(decision.c_str(), &st) != 0 || !S_ISREG(st.st_mode) ||
                st.st_mtime < since) {
                continue;
            }
            auto text = ReadSmallFile(decision.string(), remediation::kMaxRecordBytes);
            auto record = text ? remediation::DecisionRecordFromJson(*text)
                               : Result<remediation::DecisionRecord>(MakeError(text.error()));
            if (!record) {
                problems->push_back(decision.string() + ": " + record.error());
                continue;
            }
            Run r;
            r.job = job.path().filename().string();
            r.run = std::atoi(name.c_str() + 3);
            r.time = static_cast<std::int64_t>(st.st_mtime);
            r.recorded = std::move(*record);
            for (const auto& f : fs::directory_iterator(run_dir.path(), ec)) {
                const std::string fname = f.path().filename().string();
                if (fname.size() < 12 || fname.substr(fname.size() - 12) != ".epilog.json") {
                    continue;
                }
                auto report_text = ReadSmallFile(f.path().string(), remediation::kMaxRecordBytes);
                auto report = report_text
                                  ? remediation::NodeReportFromJson(*report_text)
                                  : Result<remediation::NodeReport>(MakeError(report_text.error()));
                if (!report) {
                    problems->push_back(f.path().string() + ": " + report.error());
                    continue;
                }
                r.reports.push_back(std::move(*report));
            }
            std::sort(r.reports.begin(), r.reports.end(),
                      [](const auto& a, const auto& b) { return a.node < b.node; });
            runs.push_back(std::move(r));
        }
    }
    std::sort(runs.begin(), runs.end(), [](const Run& a, const Run& b) {
        return a.time != b.time ? a.time < b.time : a.job < b.job;
    });
    return runs;
}

}  // namespace

int Replay(const std::vector<std::string>& argv) {
    auto args =
        ParseArgs("replay", argv, {"--since", "--rules"}, {"--json", "--all"}, kReplayUsage);
    if (!args) return 2;
    if (!args->positional.empty() || args->Value("--rules").empty()) {
        std::fprintf(stderr, "autoheal: replay: --rules PATH is required\n%s", kReplayUsage);
        return 2;
    }
    const std::int64_t now = static_cast<std::int64_t>(std::time(nullptr));
    auto since = ParseSinceOrComplain("replay", "--since", args->Value("--since", "7d"), now);
    if (!since) return 2;
    auto settings = LoadSettingsOrComplain("replay");
    if (!settings) return 2;
    remediation::RemediationConfig rc = settings->remediation;
    // Neither decision is held back by the breaker.
    rc.breaker.max_fraction = 1.0;
    rc.breaker.max_nodes = 1 << 30;
    auto installed = LoadRulesOrComplain({});
    if (!installed) return 2;
    auto candidate = LoadRulesOrComplain({args->Value("--rules")});
    if (!candidate) return 2;
    auto store = OpenStoreOrComplain("replay", settings->core);
    if (!store) return 2;

    std::vector<std::string> problems;
    std::vector<Run> runs = LoadRuns(settings->core.state_dir, *since, &problems);
    for (const std::string& p : problems) std::fprintf(stderr, "autoheal: replay: %s\n", p.c_str());

    nlohmann::json out = nlohmann::json::array();
    Table table({"JOB", "RUN", "CAUSE", "REQUEUE", "CULPRITS", "ACTIONS"}, 70);
    int changed = 0;
    for (const Run& run : runs) {
        DecisionInput in;
        in.job = run.recorded.facts;
        in.job.job = run.job;
        in.job.restart_count = run.run;
        if (in.job.nodes.empty()) {
            for (const auto& r : run.reports) in.job.nodes.push_back(r.node);
        }
        in.reports = run.reports;
        in.config = &rc;
        in.cluster.now = run.time;
        for (const std::string& node : in.job.nodes) {
            remediation::NodeInfo info;
            info.name = node;
            info.state = "IDLE";
            in.cluster.nodes.push_back(info);
        }
        std::int64_t run_start = run.time;
        for (const auto& r : run.reports) run_start = std::min(run_start, r.time);
        for (const std::string& node : in.job.nodes) {
            auto h = store->History(0, node, "");
            if (!h) continue;
            std::vector<diag::HistoryRecord> before;
            for (const diag::HistoryRecord& x : *h) {
                // What was known before this run was decided (not this run's own incidents).
                if (x.time < run_start || (x.time < run.time && x.job != run.job)) {
                    before.push_back(x);
                }
            }
            in.history.emplace_back(node, std::move(before));
        }
        in.rules = &*installed;
        const JobDecision a = remediation::Decide(in);
        in.rules = &*candidate;
        const JobDecision b = remediation::Decide(in);

        const bool differs = a.cause != b.cause || a.rule != b.rule || a.requeue != b.requeue ||
                             a.culprits != b.culprits || Actions(a) != Actions(b);
        changed += differs ? 1 : 0;
        if (!differs && !args->Has("--all")) continue;
        auto side = [](const JobDecision& d) {
            return nlohmann::json{{"cause", d.cause},      {"rule", d.rule},
                                  {"requeue", d.requeue},  {"culprits", d.culprits},
                                  {"actions", Actions(d)}, {"summary", d.summary}};
        };
        out.push_back({{"job", run.job},
                       {"run", run.run},
                       {"time", run.time},
                       {"changed", differs},
                       {"recorded",
                        {{"cause", run.recorded.cause},
                         {"rule", run.recorded.rule},
                         {"requeue", run.recorded.requeue},
                         {"culprits", run.recorded.culprits}}},
                       {"installed_rules", side(a)},
                       {"new_rules", side(b)}});
        table.Add({run.job, std::to_string(run.run), Change(a.cause, b.cause),
                   Change(a.requeue ? "yes" : "no", b.requeue ? "yes" : "no"),
                   Change(Join(a.culprits), Join(b.culprits)), Change(Actions(a), Actions(b))});
    }
    if (args->Has("--json")) {
        std::printf(
            "%s\n",
            nlohmann::json{
                {"since", *since}, {"runs", runs.size()}, {"changed", changed}, {"results", out}}
                .dump(2, ' ', false, nlohmann::json::error_handler_t::replace)
                .c_str());
    } else {
        std::printf("replayed %zu run(s) since %s with %s: %d would change\n", runs.size(),
                    FormatTime(*since).c_str(), args->Value("--rules").c_str(), changed);
        if (!table.empty()) table.Print(stdout);
    }
    return changed > 0 ? 1 : 0;
}

}  // namespace autoheal::cli
