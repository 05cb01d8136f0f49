// autoheal simulate's figures and cost (docs/report.md "Simulation", docs/reliability.md): the
// default scenario (examples/simulate/llama3-54d.yaml: Llama 3's 54 days on 2,048 nodes, the
// steps deciding on the fault's leaf switch) with autoheal's real decision code and with
// Slurm + a person, then the same mix at 256, 2,048 and 16,384 nodes with every node of the job
// in each decision (decide_on: all): the median wall time of one real decision (the
// controller's steps) and of the run per fault, with the ratios between sizes.
//
//   bench_sim [SCENARIO]    (default: the source tree's examples/simulate/llama3-54d.yaml)
//
// Each size's run covers a span with about as many faults (54 d x 256 / nodes / 4: some 13), so
// that the bench stays in minutes. Exit 1 when the scenario or the rules do not load, or the
// default run takes a minute or more.
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <string>

#include "autoheal/diag/rule_files.h"
#include "autoheal/sim/simulator.h"

namespace {

using autoheal::sim::Scenario;
using autoheal::sim::SimResult;

struct Size {
    int nodes;
    double span_divisor;
};

}  // namespace

int main(int argc, char** argv) {
    namespace fs = std::filesystem;
    const std::string path =
        argc > 1 ? argv[1]
                 : std::string(AUTOHEAL_SOURCE_DIR) + "/examples/simulate/llama3-54d.yaml";
    auto scenario = autoheal::sim::LoadScenario(path);
    if (!scenario) {
        std::fprintf(stderr, "bench: sim: %s\n", scenario.error().c_str());
        return 1;
    }
    auto loaded =
        autoheal::diag::LoadRuleFiles({std::string(AUTOHEAL_SOURCE_DIR) + "/etc/rules.d"});
    if (!loaded.rules) {
        std::fprintf(stderr, "bench: sim: the shipped rules do not load\n");
        return 1;
    }
    auto scanner = autoheal::diag::Scanner::Build(loaded.rules->signatures);
    if (!scanner) return 1;
    const fs::path dir = fs::temp_directory_path() / "autoheal-bench-sim";
    int rc = 0;
    auto run = [&](const Scenario& s) -> SimResult {
        fs::remove_all(dir);
        fs::create_directories(dir);
        auto r = autoheal::sim::Simulate(s, *loaded.rules, *scanner, dir.string());
        fs::remove_all(dir);
        return *r;
    };
    const SimResult def = run(*scenario);
    std::printf(
        "sim_ettr_autoheal=%.4f sim_ettr_slurm=%.4f sim_interruptions=%d sim_decision_leaf_ms=%.1f "
        "sim_default_run_s=%.1f\n",
        def.autoheal.ettr, def.slurm.ettr, def.autoheal.interruptions, def.DecisionMedianMs(),
        def.wall_seconds);
    if (def.wall_seconds >= 60) {
        std::fprintf(stderr, "bench: sim: the default scenario took %.1f s (goal: under 60)\n",
                     def.wall_seconds);
        rc = 1;
    }
    const Size sizes[] = {{256, 4}, {2048, 32}, {16384, 256}};
    double decision[3] = {0, 0, 0}, per_fault[3] = {0, 0, 0};
    for (int i = 0; i < 3; ++i) {
        Scenario s = *scenario;
        s.nodes = sizes[i].nodes;
        s.spare_nodes = std::max(8, sizes[i].nodes / 32);
        s.span_seconds /= sizes[i].span_divisor;
        s.decide_on = "all";
        const SimResult r = run(s);
        decision[i] = r.DecisionMedianMs();
        per_fault[i] = 1000 * r.wall_seconds /
                       static_cast<double>(std::max<std::size_t>(1, r.decision_ms.size()));
        std::printf(
            "sim_decision_%d_ms=%.2f sim_run_per_fault_%d_ms=%.2f sim_faults_%d=%zu "
            "sim_run_%d_s=%.2f\n",
            sizes[i].nodes, decision[i], sizes[i].nodes, per_fault[i], sizes[i].nodes,
            r.decision_ms.size(), sizes[i].nodes, r.wall_seconds);
    }
    std::printf(
        "sim_decision_2048_vs_256=%.2f sim_decision_16384_vs_2048=%.2f "
        "sim_run_per_fault_2048_vs_256=%.2f sim_run_per_fault_16384_vs_2048=%.2f "
        "(nodes x8 each step)\n",
        decision[1] / decision[0], decision[2] / decision[1], per_fault[1] / per_fault[0],
        per_fault[2] / per_fault[1]);
    return rc;
}
