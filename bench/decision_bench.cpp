// The controller-side decision for a large job whose nodes all report evidence at once
// (remediation/decision.h), on the shipped rules with the real loader and scanner.
//
// The job: 2,048 nodes (8 GPUs each) under 64 leaf switches, failed with --auto-resume. Every
// node reports at once: 8 NCCL watchdog timeouts in its job output (one per rank; every node is
// marked as having read the job's output, more than a real cluster sends, where only the batch
// host reads it), Xid 45 (preemptive cleanup) for its 8 GPUs in its kernel log, and every node
// has 3 earlier incidents in its history. On top of that: Xid 79 on 3 nodes, a double-bit ECC
// error (Xid 48 + 63) on 2, IB links down on 3 nodes under one leaf switch, NVML counter deltas
// on every 16th node and a failed post-job health check on 2. The cluster has twice the job's
// nodes, a few already drained by autoheal. The reports carry typed evidence, as the node
// epilogs write it (their lines scanned when the scenario is made): the controller scans nothing.
//
// Two figures, each the median of AUTOHEAL_BENCH_RUNS runs (default 15) after warm-up:
//   ctld_decision_<N>_ms     what EpilogSlurmctld does: read the N node reports from the state
//                            folder (written beforehand in the node epilogs' format), parse
//                            them, sort them, decide
//   ctld_decide_only_<N>_ms  Decide() alone on reports already in memory
// for N = 2048 and for a 16-node baseline of the same shape, with their ratio.
//
//   bench_decision [RULES_DIR]    (default: the source tree's etc/rules.d)
//
// Exit 1 when the rules do not load, the decision is not the expected one, or the 2,048-node
// controller path takes 1 s or more (the goal).
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "autoheal/core/files.h"
#include "autoheal/diag/rule_files.h"
#include "autoheal/diag/scanner.h"
#include "autoheal/remediation/decision.h"
#include "autoheal/remediation/job_records.h"

#ifndef AUTOHEAL_SOURCE_DIR
#define AUTOHEAL_SOURCE_DIR "."
#endif

namespace ah = autoheal;
namespace rem = autoheal::remediation;
namespace diag = autoheal::diag;

namespace {

constexpr std::int64_t kNow = 1'800'000'000;
constexpr int kNodesPerLeaf = 32;
constexpr int kGpusPerNode = 8;
const char* const kJob = "4242";

std::string NodeName(int i) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "gpu%04d", i);
    return buf;
}

std::string Pci(int gpu) {
    static const char* const kBus[kGpusPerNode] = {"1b", "3b", "5d", "7f", "9a", "bc", "cd", "de"};
    return std::string("0000:") + kBus[gpu % kGpusPerNode] + ":00";
}

std::string KernelPrefix(const std::string& node) {
    return "Nov 29 11:38:41 " + node + " kernel: ";
}

std::string JoinLines(const std::vector<std::string>& lines) {
    std::string text;
    for (const std::string& l : lines) text += l + "\n";
    return text;
}

diag::Evidence NvmlDelta(const std::string& gpu, const char* counter, const char* before,
                         const char* after) {
    diag::Evidence e;
    e.signature = diag::kNvmlDeltaSignature;
    e.text = "gpu " + gpu + " " + counter + " increased from " + before + " to " + after;
    e.SetField("gpu", gpu);
    e.SetField("counter", counter);
    e.SetField("before", before);
    e.SetField("after", after);
    return e;
}

// Everything for one job of `n` nodes, with the state the controller keeps alongside.
struct Scenario {
    rem::DecisionInput in;
    rem::RemediationConfig config;
};

std::unique_ptr<Scenario> MakeScenario(int n, const diag::RuleSet& rules,
                                       const diag::Scanner& scanner) {
    auto s = std::make_unique<Scenario>();
    rem::DecisionInput& in = s->in;
    in.rules = &rules;
    in.config = &s->config;
    in.job.job = kJob;
    in.job.failed = true;
    in.job.auto_resume = 3;
    in.job.restart_count = 0;
    in.cluster.now = kNow;
    for (int i = 0; i < n; ++i) in.job.nodes.push_back(NodeName(i));

    // The cluster: twice the job's nodes; every 97th node outside the job drained by autoheal.
    const int cluster = 2 * n;
    for (int i = 0; i < cluster; ++i) {
        rem::NodeInfo info;
        info.name = NodeName(i);
        info.state = "ALLOCATED";
        if (i >= n && i % 97 == 0) {
            info.state = "IDLE+DRAIN";
            info.drained = true;
            info.reason = "autoheal: faulty_gpu gpu=0000:3b:00.0 (xid 79) job 1000";
            info.reason_time = kNow - 7200;
        }
        in.cluster.nodes.push_back(std::move(info));
    }
    for (int leaf = 0; leaf * kNodesPerLeaf < cluster; ++leaf) {
        rem::SwitchInfo sw;
        sw.name = "leaf" + std::to_string(leaf);
        for (int i = leaf * kNodesPerLeaf; i < std::min(cluster, (leaf + 1) * kNodesPerLeaf); ++i)
            sw.nodes.push_back(NodeName(i));
        in.cluster.switches.push_back(std::move(sw));
    }
    in.cluster.switches.push_back({"spine0", 1, {}});

    // The special nodes, spread over the job (the same positions relative to its size).
    auto at = [n](int num, int den) { return std::min(n - 1, n * num / den); };
    const std::vector<int> xid79 = {at(1, 7), at(3, 7), at(5, 7)};
    const std::vector<int> dbe = {at(2, 9), at(7, 9)};
    const std::vector<int> health = {at(1, 3), at(2, 3)};
    const int ib_leaf = (n / 2) / kNodesPerLeaf;
    const int ib_first = ib_leaf * kNodesPerLeaf;
    const std::vector<int> ib = {ib_first, std::min(n - 1, ib_first + 1),
                                 std::min(n - 1, ib_first + 2)};
    auto is = [](const std::vector<int>& v, int i) {
        return std::find(v.begin(), v.end(), i) != v.end();
    };

    for (int i = 0; i < n; ++i) {
        const std::string node = NodeName(i);
        rem::NodeReport r;
        r.job = kJob;
        r.node = node;
        r.time = kNow - 5;
        r.exit_code = "0:0";
        const std::string k = KernelPrefix(node);
        std::vector<std::string> kernel, job_output;
        for (int g = 0; g < kGpusPerNode; ++g) {
            kernel.push_back(k + "NVRM: Xid (PCI:" + Pci(g) +
                             "): 45, pid=" + std::to_string(100000 + g) +
                             ", name=python3, Ch 00000008, errorString CTX SWITCH TIMEOUT, "
                             "Info 0x3c046");
            r.gpus.push_back({Pci(g) + ".0", "GPU-" + node + "-" + std::to_string(g),
                              "1650" + std::to_string(i * kGpusPerNode + g), "NVIDIA H100"});
        }
        if (is(xid79, i)) {
            kernel.push_back(k + "NVRM: Xid (PCI:" + Pci(2) +
                             "): 79, pid=100002, name=python3, GPU has fallen off the bus.");
            kernel.push_back(k + "NVRM: GPU " + Pci(2) + ".0: GPU has fallen off the bus.");
        }
        if (is(dbe, i)) {
            kernel.push_back(k + "NVRM: Xid (PCI:" + Pci(5) +
                             "): 48, pid=100005, name=python3, An uncorrectable double bit "
                             "error (DBE) has been detected on GPU in the framebuffer at "
                             "partition 3, subpartition 1.");
            kernel.push_back(k + "NVRM: Xid (PCI:" + Pci(5) +
                             "): 63, pid=100005, name=python3, Row Remapper: New row marked "
                             "for remapping, reset gpu to activate.");
        }
        if (is(ib, i)) {
            kernel.push_back(k + "mlx5_core 0000:ab:00.0 mlx5_5: Port: 1 Link DOWN");
        }
        if (i % 16 == 3) {
            const std::string gpu = Pci(i % kGpusPerNode) + ".0";
            diag::AddEvidence(&r.evidence, "nvml",
                              NvmlDelta(gpu, "ecc_corrected_volatile", "3", "15"));
            diag::AddEvidence(&r.evidence, "nvml", NvmlDelta(gpu, "retired_pages_sbe", "0", "1"));
        }
        if (is(health, i)) {
            diag::Evidence e;
            e.signature = diag::kHealthCheckSignature;
            e.text = "check row-remap failed on gpu " + Pci(1) +
                     ".0: row remapping failed: the GPU has no spare rows left";
            e.SetField("check", "row-remap");
            e.SetField("gpu", Pci(1) + ".0");
            e.SetField("verdict", "fail");
            diag::AddEvidence(&r.evidence, "health", std::move(e));
        }
        // Every rank of the node timed out in the same collective.
        r.job_output_read = true;
        for (int g = 0; g < kGpusPerNode; ++g) {
            const std::string rank = std::to_string(i * kGpusPerNode + g);
            job_output.push_back(
                "[rank" + rank + "]:[E1129 11:38:40.882201 " + std::to_string(100000 + g) +
                " ProcessGroupNCCL.cpp:616] [Rank " + rank +
                "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=15804, "
                "OpType=ALLREDUCE, NumelIn=1048576, NumelOut=1048576, Timeout(ms)=600000) ran "
                "for 600047 milliseconds before timing out.");
        }
        // What the node epilog puts in its report: the lines its signatures matched.
        scanner.ScanText(JoinLines(kernel), "kernel", &r.evidence, diag::InputKind::kKernelLog);
        scanner.ScanText(JoinLines(job_output), "job-output", &r.job_output);
        r.local_cause = "unknown";
        in.reports.push_back(std::move(r));

        // History: three earlier incidents per node within 90 days, none of them repeats of
        // today's faults on the same GPU (escalation must look, not fire).
        std::vector<diag::HistoryRecord> h;
        h.push_back({kNow - 40 * std::int64_t{86400}, node, Pci(i % 8) + ".0", "xid-app-fault",
                     "user_error", std::to_string(1000 + i)});
        h.push_back({kNow - 20 * std::int64_t{86400}, node, "", "nccl-watchdog-timeout",
                     "nccl_timeout", std::to_string(2000 + i)});
        h.push_back({kNow - 3 * std::int64_t{86400}, node, Pci((i + 3) % 8) + ".0",
                     "nvml-ecc-corrected", "gpu_ecc_corrected", std::to_string(3000 + i)});
        in.history.emplace_back(node, std::move(h));
        in.unexplained_failures.push_back({node, i % 5 == 0 ? 1 : 0, {"1000"}});
    }
    // Recent incidents cluster-wide (the correlation window): a link flap elsewhere.
    in.cluster.recent.push_back({kNow - 120, NodeName(std::min(n - 1, ib_first + 5)), "",
                                 "ib-link-down", "network_switch_cable", "4000"});
    return s;
}

double Ms(std::chrono::steady_clock::duration d) {
    return std::chrono::duration<double, std::milli>(d).count();
}

double Median(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    const std::size_t m = v.size() / 2;
    return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// Runs `f` `warmup` times untimed, then `runs` times; returns the median in ms.
double Time(int warmup, int runs, const std::function<void()>& f) {
    for (int i = 0; i < warmup; ++i) f();
    std::vector<double> ms;
    for (int i = 0; i < runs; ++i) {
        const auto t = std::chrono::steady_clock::now();
        f();
        ms.push_back(Ms(std::chrono::steady_clock::now() - t));
    }
    return Median(ms);
}

// What RunControllerEpilog does once every report is there: read and parse each node's
// report (nodes whose files are missing or broken would be waited for / skipped), sort, decide.
rem::JobDecision ControllerPath(const Scenario& s, const std::string& state_dir) {
    rem::DecisionInput in;
    in.rules = s.in.rules;
    in.config = s.in.config;
    in.job = s.in.job;
    in.cluster = s.in.cluster;
    in.history = s.in.history;
    in.unexplained_failures = s.in.unexplained_failures;
    for (const std::string& node : in.job.nodes) {
        if (!rem::SafePathPart(node)) continue;
        const std::string path = rem::EpilogFile(state_dir, in.job.job, in.job.restart_count, node);
        auto text = ah::ReadSmallFile(path, rem::kMaxRecordBytes);
        if (!text) {
            in.job.missing_reports.push_back(node);
            continue;
        }
        auto report = rem::NodeReportFromJson(*text);
        if (!report) continue;
        in.reports.push_back(std::move(*report));
    }
    std::sort(in.reports.begin(), in.reports.end(),
              [](const rem::NodeReport& a, const rem::NodeReport& b) { return a.node < b.node; });
    return rem::Decide(in);
}

std::string Join(const std::vector<std::string>& v) {
    std::string out;
    for (const std::string& s : v) out += (out.empty() ? "" : ",") + s;
    return out;
}

// The decision the scenario calls for; returns what is wrong with it, empty when nothing.
std::string Check(const rem::JobDecision& d, int n) {
    if (d.verdicts.size() != static_cast<std::size_t>(n)) return "not every node was diagnosed";
    if (!d.requeue) return "job not requeued: " + d.explanation;
    if (d.culprits.size() < 5) return "expected at least 5 culprits, got " + Join(d.culprits);
    if (!d.network) return "no switch incident for the IB links down";
    return "";
}

bool SameDecision(const rem::JobDecision& a, const rem::JobDecision& b) {
    return a.cause == b.cause && a.rule == b.rule && a.culprits == b.culprits &&
           a.exclude == b.exclude && a.requeue == b.requeue && a.explanation == b.explanation &&
           a.plans.size() == b.plans.size() && a.quarantine == b.quarantine &&
           a.outcome == b.outcome;
}

struct Figures {
    double controller_ms = 0;
    double decide_ms = 0;
    double read_parse_ms = 0;
};

bool Measure(int n, int runs, const diag::RuleSet& rules, const diag::Scanner& scanner,
             Figures* f) {
    auto s = MakeScenario(n, rules, scanner);
    char tmpl[] = "/tmp/autoheal-decision-bench.XXXXXX";
    if (mkdtemp(tmpl) == nullptr) {
        std::perror("bench: decision: mkdtemp");
        return false;
    }
    const std::string state_dir = tmpl;
    struct Cleanup {
        std::string dir;
        ~Cleanup() {
            std::error_code ec;
            std::filesystem::remove_all(dir, ec);
        }
    } cleanup{state_dir};
    // As the node epilogs write them: JSON, atomically, under jobs/<job>/run<N>/.
    for (const rem::NodeReport& r : s->in.reports) {
        auto w = ah::WriteFileAtomically(rem::EpilogFile(state_dir, r.job, r.restart, r.node),
                                         rem::NodeReportToJson(r), 0640, 0755);
        if (!w) {
            std::fprintf(stderr, "bench: decision: %s\n", w.error().c_str());
            return false;
        }
    }

    const rem::JobDecision direct = rem::Decide(s->in);
    const rem::JobDecision via_files = ControllerPath(*s, state_dir);
    if (std::string bad = Check(direct, n); !bad.empty()) {
        std::fprintf(stderr, "bench: decision: %d nodes: unexpected decision: %s\n", n,
                     bad.c_str());
        return false;
    }
    if (!SameDecision(direct, via_files)) {
        std::fprintf(stderr,
                     "bench: decision: %d nodes: the decision from the report files differs "
                     "from the one in memory\n",
                     n);
        return false;
    }
    std::fprintf(stderr,
                 "bench: decision: %d nodes: cause %s, %zu culprits, %zu node plans, switch %s, "
                 "breaker %s, requeue %s\n",
                 n, direct.cause.c_str(), direct.culprits.size(), direct.plans.size(),
                 direct.network ? direct.network->name.c_str() : "-",
                 direct.breaker_open ? "open" : "closed", direct.requeue ? "yes" : "no");

    const int warmup = 2;
    f->decide_ms = Time(warmup, runs, [&] { rem::JobDecision d = rem::Decide(s->in); });
    f->controller_ms =
        Time(warmup, runs, [&] { rem::JobDecision d = ControllerPath(*s, state_dir); });
    // The read+parse part alone, for the record.
    f->read_parse_ms = Time(warmup, runs, [&] {
        std::size_t parsed = 0;
        for (const std::string& node : s->in.job.nodes) {
            auto text =
                ah::ReadSmallFile(rem::EpilogFile(state_dir, kJob, 0, node), rem::kMaxRecordBytes);
            if (text && rem::NodeReportFromJson(*text)) ++parsed;
        }
        if (parsed != s->in.job.nodes.size()) std::abort();
    });
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    const std::string rules_dir =
        argc > 1 ? argv[1] : std::string(AUTOHEAL_SOURCE_DIR) + "/etc/rules.d";
    int runs = 15;
    if (const char* r = std::getenv("AUTOHEAL_BENCH_RUNS"); r && std::atoi(r) > 0)
        runs = std::atoi(r);

    diag::LoadedRules loaded = diag::LoadRuleFiles({rules_dir});
    if (!loaded.rules) {
        std::fprintf(stderr, "bench: decision: cannot load the rules in %s\n", rules_dir.c_str());
        for (const std::string& e : loaded.read_errors) std::fprintf(stderr, "  %s\n", e.c_str());
        return 1;
    }
    auto scanner = diag::Scanner::Build(loaded.rules->signatures);
    if (!scanner) {
        std::fprintf(stderr, "bench: decision: %s\n", scanner.error().c_str());
        return 1;
    }

    Figures small, big;
    if (!Measure(16, runs, *loaded.rules, **scanner, &small)) return 1;
    if (!Measure(2048, runs, *loaded.rules, **scanner, &big)) return 1;

    std::printf(
        "ctld_decision_2048_ms=%.1f ctld_decide_only_2048_ms=%.1f ctld_read_parse_2048_ms=%.1f "
        "ctld_decision_16_ms=%.2f ctld_decide_only_16_ms=%.2f ctld_decision_2048_vs_16=%.0f\n",
        big.controller_ms, big.decide_ms, big.read_parse_ms, small.controller_ms, small.decide_ms,
        big.controller_ms / std::max(small.controller_ms, 1e-6));
    if (big.controller_ms >= 1000) {
        std::fprintf(stderr, "bench: decision: goal missed: %.1f ms for 2,048 nodes (under 1000)\n",
                     big.controller_ms);
        return 1;
    }
    return 0;
}
