// autoheal simulate: the discrete-event simulation of sim/simulator.h on a scenario file (by
// default the Llama 3 one installed beside the program: share/autoheal/simulate/), printed as
// text, JSON (--json) or a page (--html FILE). Exit 0 done, 1 rules, scenario or file error,
// 2 usage.
#include <unistd.h>

#include <cstdio>
#include <filesystem>

#include "autoheal/core/files.h"
#include "autoheal/core/program.h"
#include "autoheal/diag/scanner.h"
#include "autoheal/sim/simulator.h"
#include "cli_common.h"
#include "simulate_output.h"

namespace autoheal::cli {
namespace {

constexpr const char* kUsage =
    "usage: autoheal simulate [--scenario FILE] [--json] [--html FILE] [--seed N] [--nodes N]\n"
    "                         [--days N] [--human-minutes N] [--rules PATH] [--all-nodes]\n"
    "  Simulates one job on a cluster through a span (default: Llama 3's 54 days, 2,048 nodes x\n"
    "  8 GPUs, Table 5's 419 interruptions) with autoheal's real decision code, and the same\n"
    "  faults with Slurm's own requeue and a person diagnosing. --all-nodes: the real steps\n"
    "  decide on every node of the job (slower) instead of the fault's leaf switch and the\n"
    "  batch host. See docs/report.md.\n";

std::string DefaultScenario() {
    namespace fs = std::filesystem;
    return (fs::path(SelfExePath()).parent_path() / "../share/autoheal/simulate/llama3-54d.yaml")
        .lexically_normal()
        .string();
}

// A whole number option within [lo, hi]; false after a message naming it.
bool IntOption(const Args& a, const std::string& name, long lo, long hi, long* out) {
    if (a.values.count(name) == 0) return true;
    const std::string v = a.Value(name);
    try {
        std::size_t used = 0;
        const long n = std::stol(v, &used);
        if (used == v.size() && n >= lo && n <= hi) {
            *out = n;
            return true;
        }
    } catch (const std::exception&) {
    }
    std::fprintf(stderr, "autoheal: simulate: %s: '%s' is not a whole number from %ld to %ld\n",
                 name.c_str(), v.c_str(), lo, hi);
    return false;
}

// The overrides on the command line, into `s`; false after a message.
bool ApplyOptions(const Args& a, sim::Scenario* s) {
    long seed = -1, nodes = -1, days = -1, minutes = -1;
    if (!IntOption(a, "--seed", 0, 1L << 48, &seed) || !IntOption(a, "--nodes", 1, 65536, &nodes) ||
        !IntOption(a, "--days", 1, 3650, &days) ||
        !IntOption(a, "--human-minutes", 0, 100000, &minutes)) {
        return false;
    }
    if (seed >= 0) s->seed = static_cast<std::uint64_t>(seed);
    if (nodes > 0) s->nodes = static_cast<int>(nodes);
    if (days > 0) s->span_seconds = static_cast<double>(days) * 86400.0;
    if (minutes >= 0) {
        s->stages["human_diagnosis"] = {static_cast<double>(minutes) * 60.0, "--human-minutes"};
    }
    return true;
}

}  // namespace

int Simulate(const std::vector<std::string>& args) {
    auto a = ParseArgs(
        "simulate", args,
        {"--scenario", "--html", "--seed", "--nodes", "--days", "--human-minutes", "--rules"},
        {"--json"}, kUsage);
    if (!a) return 2;
    if (!a->positional.empty()) {
        std::fprintf(stderr, "autoheal: simulate: unexpected argument '%s'\n%s",
                     a->positional.front().c_str(), kUsage);
        return 2;
    }
    const std::string path = a->Value("--scenario", DefaultScenario());
    auto scenario = sim::LoadScenario(path);
    if (!scenario) {
        std::fprintf(stderr, "autoheal: simulate: %s\n", scenario.error().c_str());
        return 1;
    }
    if (!ApplyOptions(*a, &*scenario)) return 2;
    if (a->Has("--all-nodes")) scenario->decide_on = "all";
    std::vector<std::string> rule_paths;
    if (a->values.count("--rules") != 0) rule_paths.push_back(a->Value("--rules"));
    auto rules = LoadRulesOrComplain(rule_paths);
    if (!rules) return 1;
    auto scanner = diag::Scanner::Build(rules->signatures, {}, ScannerCacheDir());
    if (!scanner) {
        std::fprintf(stderr, "autoheal: simulate: rules: %s\n", scanner.error().c_str());
        return 1;
    }
    // The steps write the job's resume record and the quarantine file: into a folder of ours.
    std::string dir = (std::filesystem::temp_directory_path() / "autoheal-simulate.XXXXXX");
    if (::mkdtemp(dir.data()) == nullptr) {
        std::perror("autoheal: simulate: mkdtemp");
        return 1;
    }
    auto result = sim::Simulate(*scenario, *rules, *scanner, dir);
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
    if (!result) {
        std::fprintf(stderr, "autoheal: simulate: %s\n", result.error().c_str());
        return 1;
    }
    if (a->values.count("--html") != 0) {
        auto written = WriteFileAtomically(a->Value("--html"), SimulationHtml(*result), 0644, 0755);
        if (!written) {
            std::fprintf(stderr, "autoheal: simulate: %s\n", written.error().c_str());
            return 1;
        }
    }
    const std::string out = a->Has("--json") ? SimulationJson(*result) : SimulationText(*result);
    std::fputs(out.c_str(), stdout);
    return 0;
}

}  // namespace autoheal::cli
