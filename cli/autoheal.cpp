// autoheal — the admin command line.
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string_view>

#include "autoheal/core/program.h"
#include "autoheal/diag/scanner.h"
#include "cli_common.h"

namespace autoheal::cli {

std::optional<diag::RuleSet> LoadRulesOrComplain(const std::vector<std::string>& paths) {
    std::vector<std::string> use = paths;
    if (use.empty())
        use.push_back(diag::DefaultRulesDir(std::getenv("AUTOHEAL_RULES_DIR"), SelfExePath()));
    diag::LoadedRules loaded = diag::LoadRuleFiles(use);
    for (const std::string& e : loaded.read_errors)
        std::fprintf(stderr, "autoheal: rules: %s\n", e.c_str());
    if (loaded.files.empty() && loaded.read_errors.empty()) {
        std::fprintf(stderr, "autoheal: rules: no rule files in %s\n", use.front().c_str());
        return std::nullopt;
    }
    if (!loaded.rules) {
        std::fputs(loaded.result.Format().c_str(), stderr);
        std::fprintf(stderr, "autoheal: rules: invalid; run `autoheal rules check` for details\n");
        return std::nullopt;
    }
    return std::move(loaded.rules);
}

std::string ScannerCacheDir() {
    return diag::DefaultScannerCacheDir(std::getenv("AUTOHEAL_CACHE_DIR"),
                                        std::getenv("XDG_CACHE_HOME"), std::getenv("HOME"));
}

}  // namespace autoheal::cli

namespace {

constexpr const char* kUsage =
    "usage: autoheal COMMAND [ARGS]\n"
    "\n"
    "commands:\n"
    "  classify [--json] [--node NAME] [--job ID] [--history FILE] [--rules PATH]... [FILE...|-]\n"
    "                       diagnose logs (kernel log, job output, Slurm log, mixed)\n"
    "  rules check [--json] PATH...     validate rule files or folders\n"
    "  rules explain NAME               what a cause, rule or signature means and does\n"
    "  rules patterns [--rules PATH]    the regex of every signature, one per line\n"
    "  rules catalog [--json]           every cause, action and outcome, with what each does\n"
    "  health [--tier quick|full] [--gpus LIST] [--json]\n"
    "                                   run the GPU health checks on this node\n"
    "  status [--json]                  nodes autoheal holds, the breaker, quarantine, tickets\n"
    "  incidents [--since 7d] [--node N] [--cause C] [--job ID] [--jobs] [--json]\n"
    "                                   what autoheal diagnosed and did, newest first\n"
    "  node NAME [--json]               a node's history and its GPUs by serial\n"
    "  resume NODE --reason TEXT [--force]\n"
    "                                   return a repaired node to service\n"
    "  tickets [--all] [--deliver] [--json]\n"
    "                                   tickets waiting for delivery\n"
    "  replay [--since 7d] --rules PATH [--json]\n"
    "                                   decide stored runs again under other rules: what changes\n"
    "  metrics [--output FILE]          Prometheus text (node_exporter's textfile collector)\n"
    "  config check [FILE]              validate autoheal.yaml (file:line:column errors)\n"
    "  config print-slurm               the slurm.conf lines autoheal needs, for this install\n"
    "  report [--since 30d] [--html FILE] [--json] [--job-nodes N] ...\n"
    "                                   interruptions by cause, MTBF, ETTR (docs/report.md)\n"
    "  simulate [--scenario FILE] [--json] [--html FILE] [--seed N] [--human-minutes N] ...\n"
    "                                   a job through Llama 3's 54 days of faults, with\n"
    "                                   autoheal's real decisions and without (docs/report.md)\n"
    "  version                          print the version\n";

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fputs(kUsage, stderr);
        return 2;
    }
    std::string_view cmd = argv[1];
    std::vector<std::string> args(argv + 2, argv + argc);
    try {
        if (cmd == "classify") return autoheal::cli::Classify(args);
        if (cmd == "rules") return autoheal::cli::Rules(args);
        if (cmd == "health") return autoheal::cli::Health(args);
        if (cmd == "status") return autoheal::cli::Status(args);
        if (cmd == "incidents") return autoheal::cli::Incidents(args);
        if (cmd == "node") return autoheal::cli::Node(args);
        if (cmd == "resume") return autoheal::cli::Resume(args);
        if (cmd == "tickets") return autoheal::cli::Tickets(args);
        if (cmd == "replay") return autoheal::cli::Replay(args);
        if (cmd == "metrics") return autoheal::cli::Metrics(args);
        if (cmd == "config") return autoheal::cli::ConfigCommand(args);
        if (cmd == "report") return autoheal::cli::Report(args);
        if (cmd == "simulate") return autoheal::cli::Simulate(args);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "autoheal: %s: internal error: %s\n", argv[1], e.what());
        return 1;
    }
    if (cmd == "version" || cmd == "--version") {
        std::printf("autoheal %s\n", AUTOHEAL_VERSION);
        return 0;
    }
    if (cmd == "help" || cmd == "--help" || cmd == "-h") {
        std::fputs(kUsage, stdout);
        return 0;
    }
    std::fprintf(stderr, "autoheal: unknown command '%s'\n%s", argv[1], kUsage);
    return 2;
}
