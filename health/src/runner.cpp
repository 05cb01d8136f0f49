#include "autoheal/health/runner.h"

#include <dlfcn.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autoheal/health/nvml_backend.h"
#include "autoheal_cuda_checks.h"
#include "isolation.h"

namespace autoheal::health {
namespace {

using Clock = std::chrono::steady_clock;

double SecondsSince(Clock::time_point start) {
    return std::chrono::duration<double>(Clock::now() - start).count();
}

std::string Fmt(double v, int decimals = 1) {
    std::ostringstream s;
    s.setf(std::ios::fixed);
    s.precision(decimals);
    s << v;
    return s.str();
}

// The CUDA checks each tier runs on every GPU, with their parameters.
struct CudaStep {
    std::string check;
    nlohmann::json params;
};

std::vector<CudaStep> CudaSteps(HealthTier tier, const HealthConfig& config, int device,
                                int devices) {
    std::vector<CudaStep> steps;
    if (tier == HealthTier::kFull) {
        steps.push_back({"gemm", {{"n", 8192}, {"dtype", "bf16"}, {"iterations", 20}}});
        steps.push_back({"gemm", {{"n", 4096}, {"dtype", "fp32"}, {"iterations", 5}}});
        steps.push_back({"hbm", {{"fraction", 0.5}}});
        steps.push_back({"d2d_bw", {{"bytes", 1 << 30}}});
        steps.push_back({"h2d_bw", {{"bytes", 256 << 20}}});
        steps.push_back({"d2h_bw", {{"bytes", 256 << 20}}});
        if (devices > 1) {
            steps.push_back({"p2p_bw", {{"peer", (device + 1) % devices}, {"bytes", 256 << 20}}});
        }
    } else {
        steps.push_back({"gemm", {{"n", 4096}, {"dtype", "bf16"}, {"iterations", 5}}});
        steps.push_back({"hbm", {{"fraction", config.hbm_test_fraction}}});
        steps.push_back({"h2d_bw", {{"bytes", 64 << 20}}});
    }
    return steps;
}

std::string StepName(const CudaStep& s) {
    if (s.check == "gemm") return "gemm-" + s.params.value("dtype", std::string("bf16"));
    return s.check;
}

// Child side: run the steps on one device, one line per step: "<name>\t<rc>\t<json>\n".
void RunCudaSteps(const std::string& module, int device, const std::vector<CudaStep>& steps,
                  int fd) {
    void* lib = dlopen(module.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        WriteAll(fd,
                 std::string("module\t-1\t") + nlohmann::json{{"error", dlerror()}}.dump() + "\n");
        return;
    }
    using RunFn = int (*)(const char*, int, const char*, char*, size_t);
    auto run = reinterpret_cast<RunFn>(dlsym(lib, "autoheal_cuda_run"));
    if (run == nullptr) {
        WriteAll(fd, "module\t-1\t{\"error\":\"autoheal_cuda_run missing\"}\n");
        return;
    }
    std::vector<char> out(1 << 16);
    for (const CudaStep& s : steps) {
        out[0] = '\0';
        int rc = run(s.check.c_str(), device, s.params.dump().c_str(), out.data(), out.size());
        out.back() = '\0';
        std::string json(out.data());
        for (char& c : json) {
            if (c == '\n' || c == '\t') c = ' ';
        }
        WriteAll(fd, StepName(s) + "\t" + std::to_string(rc) + "\t" + json + "\n");
    }
}

struct CudaOutcome {
    std::string gpu;  // pci bus id
    std::string model;
    std::map<std::string, std::pair<int, nlohmann::json>> steps;  // name -> (rc, result)
    bool timed_out = false;
    std::string module_error;
};

double Median(std::vector<double> v) {
    if (v.empty()) return 0;
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
}

// Performance verdict against the model's expectation, or the peers' median when there is
// none (a straggler among healthy peers).
void JudgePerformance(CheckResult* r, double value, double expected, double peers_median,
                      const HealthConfig& config, const std::string& unit) {
    const double reference = expected > 0 ? expected : peers_median;
    r->Set("measured", Fmt(value));
    if (expected > 0) r->Set("expected", Fmt(expected));
    if (peers_median > 0) r->Set("peers_median", Fmt(peers_median));
    if (reference <= 0) {
        r->status = Status::kPass;
        r->summary = Fmt(value) + " " + unit;
        return;
    }
    const double ratio = value / reference;
    r->Set("ratio", Fmt(ratio, 2));
    r->status = ratio < config.perf_fail_fraction   ? Status::kFail
                : ratio < config.perf_warn_fraction ? Status::kWarn
                                                    : Status::kPass;
    if (r->status != Status::kPass) r->reason = "slow";
    r->summary = Fmt(value) + " " + unit + " (" + Fmt(ratio * 100, 0) + "% of " +
                 (expected > 0 ? "expected" : "peers") + ")";
}

void CudaVerdicts(const std::vector<CudaOutcome>& outcomes, const std::vector<CudaStep>& steps,
                  const HealthConfig& config, std::vector<CheckResult>* results) {
    // Peers: healthy GEMM checksums and throughputs across the node's GPUs.
    std::map<std::string, int> checksum_votes;
    std::map<std::string, std::vector<double>> peer_values;
    for (const CudaOutcome& o : outcomes) {
        for (const auto& [name, step] : o.steps) {
            if (step.first != 0) continue;
            if (name.starts_with("gemm") && step.second.contains("checksum")) {
                ++checksum_votes[name + "|" + step.second["checksum"].get<std::string>()];
            }
            for (const char* key : {"tflops", "gbps", "busbw_gbps"}) {
                if (step.second.contains(key) && step.second[key].is_number()) {
                    peer_values[name].push_back(step.second[key].get<double>());
                }
            }
        }
    }
    for (const CudaOutcome& o : outcomes) {
        if (!o.module_error.empty()) {
            CheckResult r{"cuda-module", o.gpu, Status::kUnknown, o.module_error, {}, 0};
            results->push_back(r);
            continue;
        }
        for (const CudaStep& s : steps) {
            const std::string name = StepName(s);
            CheckResult r;
            r.check = name;
            r.gpu = o.gpu;
            auto it = o.steps.find(name);
            if (it == o.steps.end()) {
                r.status = Status::kUnknown;
                r.summary = o.timed_out ? "did not finish within the time budget"
                                        : "did not run (an earlier check crashed the process)";
                if (o.timed_out) r.Set("timeout", "yes");
                if (o.timed_out) r.reason = "timeout";
                results->push_back(r);
                continue;
            }
            const auto& [rc, j] = it->second;
            if (j.contains("seconds") && j["seconds"].is_number()) {
                r.seconds = j["seconds"].get<double>();
            }
            if (rc != 0) {
                r.status = Status::kFail;
                r.summary = "CUDA error: " + j.value("error", std::string("unknown"));
                r.reason = "cuda-error";
                results->push_back(r);
                continue;
            }
            if (j.contains("supported") && j["supported"] == false) {
                r.status = Status::kUnknown;
                r.summary = "not supported on this node";
                results->push_back(r);
                continue;
            }
            const GpuModel* model = FindModel(config, o.model);
            if (s.check == "gemm") {
                const std::string checksum = j.value("checksum", std::string());
                std::string vote_key = name;
                vote_key += '|';
                vote_key += checksum;
                int votes = checksum_votes[vote_key];
                int best = 0;
                for (const auto& [k, v] : checksum_votes) {
                    if (k.starts_with(name + "|")) best = std::max(best, v);
                }
                r.Set("checksum", checksum);
                if (!j.value("correct", false)) {
                    r.status = Status::kFail;
                    r.summary = "GEMM result wrong: silent data corruption";
                    r.reason = "wrong-result";
                    results->push_back(r);
                    continue;
                }
                if (votes < best) {
                    r.status = Status::kFail;
                    r.summary = "GEMM result differs from the other GPUs' (silent data corruption)";
                    r.reason = "peer-mismatch";
                    results->push_back(r);
                    continue;
                }
                const double expected = name == "gemm-bf16" && model ? model->gemm_tflops_bf16 : 0;
                JudgePerformance(&r, j.value("tflops", 0.0), expected, Median(peer_values[name]),
                                 config, "TFLOP/s");
            } else if (s.check == "hbm") {
                const auto errors = j.value("errors", std::uint64_t{0});
                r.Set("errors", std::to_string(errors));
                r.Set("bytes_tested", std::to_string(j.value("bytes_tested", std::uint64_t{0})));
                if (errors > 0) {
                    r.status = Status::kFail;
                    r.summary = std::to_string(errors) + " HBM pattern mismatches";
                    r.reason = "pattern-mismatch";
                } else {
                    JudgePerformance(&r, j.value("gbps", 0.0), model ? model->hbm_gbps : 0,
                                     Median(peer_values[name]), config, "GB/s");
                }
            } else {
                const double expected = !model                ? 0
                                        : s.check == "d2d_bw" ? model->d2d_gbps
                                        : s.check == "h2d_bw" ? model->h2d_gbps
                                                              : 0;
                JudgePerformance(&r, j.value("gbps", j.value("busbw_gbps", 0.0)), expected,
                                 Median(peer_values[name]), config, "GB/s");
            }
            results->push_back(r);
        }
    }
}

// One line a CUDA child writes: "<name>\t<rc>\t<json>". `json` is discarded when malformed.
struct StepLine {
    std::string name;
    int rc = 0;
    nlohmann::json json;
};

std::optional<StepLine> ParseStepLine(const std::string& line) {
    const auto t1 = line.find('\t');
    const auto t2 = t1 == std::string::npos ? t1 : line.find('\t', t1 + 1);
    if (t2 == std::string::npos) return std::nullopt;
    return StepLine{line.substr(0, t1), std::atoi(line.substr(t1 + 1, t2 - t1 - 1).c_str()),
                    nlohmann::json::parse(line.substr(t2 + 1), nullptr, false)};
}

// The all-reduce is a node-level result. NCCL missing on the node is not evidence.
CheckResult NcclVerdict(const Child& child) {
    CheckResult r;
    r.check = "nccl-allreduce";
    const std::optional<StepLine> step = ParseStepLine(child.output);
    if (child.timed_out || !step) {
        r.status = Status::kUnknown;
        r.summary = child.timed_out ? "did not finish within the time budget" : "did not run";
        if (child.timed_out) r.Set("timeout", "yes");
        if (child.timed_out) r.reason = "timeout";
        return r;
    }
    const int rc = step->rc;
    nlohmann::json j = step->json;
    if (j.is_discarded() || !j.is_object()) j = nlohmann::json::object();
    if (rc != 0) {
        r.status = Status::kUnknown;
        r.summary = "could not run: " + j.value("error", std::string("unknown error"));
        return r;
    }
    const double busbw = j.value("busbw_gbps", 0.0);
    r.Set("busbw_gbps", Fmt(busbw));
    if (!j.value("correct", false)) {
        r.status = Status::kFail;
        r.summary = "all-reduce result wrong";
        r.reason = "wrong-result";
        return r;
    }
    r.status = Status::kPass;
    r.summary = "bus bandwidth " + Fmt(busbw) + " GB/s";
    return r;
}

}  // namespace

std::optional<std::vector<unsigned>> ParseGpuList(std::string_view list) {
    std::vector<unsigned> out;
    std::size_t pos = 0;
    while (pos < list.size()) {
        std::size_t comma = list.find(',', pos);
        std::string_view item = list.substr(
            pos, comma == std::string_view::npos ? std::string_view::npos : comma - pos);
        pos = comma == std::string_view::npos ? list.size() : comma + 1;
        if (item.empty()) return std::nullopt;
        std::size_t dash = item.find('-');
        auto num = [](std::string_view s) -> std::optional<unsigned> {
            if (s.empty() || s.size() > 4) return std::nullopt;
            unsigned v = 0;
            for (char c : s) {
                if (c < '0' || c > '9') return std::nullopt;
                v = v * 10 + static_cast<unsigned>(c - '0');
            }
            return v;
        };
        if (dash == std::string_view::npos) {
            auto v = num(item);
            if (!v) return std::nullopt;
            out.push_back(*v);
        } else {
            auto a = num(item.substr(0, dash));
            auto b = num(item.substr(dash + 1));
            if (!a || !b || *a > *b || *b - *a > 1024) return std::nullopt;
            for (unsigned v = *a; v <= *b; ++v) out.push_back(v);
        }
    }
    return out;
}

HealthReport RunHealthChecks(const RunRequest& request) {
    const auto start = Clock::now();
    const HealthConfig& config = request.config;
    HealthReport report;
    report.tier = request.tier;
    const double budget = request.tier == HealthTier::kFull ? config.full_budget_seconds
                                                            : config.quick_budget_seconds;
    const auto deadline = start + std::chrono::milliseconds(static_cast<long long>(budget * 1000));

    // 1. NVML, in a child with its own (shorter) deadline.
    const auto nvml_deadline =
        std::min(deadline, start + std::chrono::milliseconds(
                                       static_cast<long long>(config.nvml_timeout_seconds * 1000)));
    const IsolatedSnapshot nvml = CollectSnapshotIsolated(config.nvml_library, nvml_deadline);
    const std::optional<NodeSnapshot>& snapshot = nvml.snapshot;
    if (!snapshot) {
        CheckResult r{"nvml", "", Status::kUnknown, "", {}, SecondsSince(start)};
        if (nvml.timed_out) {
            r.summary = "NVML did not answer within " + Fmt(config.nvml_timeout_seconds) +
                        " s (a GPU may have fallen off the bus)";
            r.Set("timeout", "yes");
            r.reason = "timeout";
        } else {
            r.summary = "NVML query process failed (exit " + std::to_string(nvml.exit_status) + ")";
            r.Set("unreliable", "yes");
        }
        report.results.push_back(r);
    } else {
        report.snapshot = *snapshot;
        const NodeSnapshot& node = report.snapshot;
        report.results.push_back(CheckDriver(node));
        if (node.driver_present) {
            report.results.push_back(CheckGpuCount(node, request.gpu_minors));
            for (const GpuSnapshot& gpu : node.gpus) {
                const unsigned minor = gpu.minor.value_or(gpu.index);
                if (!request.gpu_minors.empty() &&
                    std::find(request.gpu_minors.begin(), request.gpu_minors.end(), minor) ==
                        request.gpu_minors.end()) {
                    continue;
                }
                const GpuModel* model = FindModel(config, gpu.name);
                for (CheckResult r :
                     {CheckEcc(gpu), CheckRemappedRows(gpu), CheckRetiredPages(gpu),
                      CheckRecoveryAction(gpu), CheckPcieLink(gpu, model), CheckNvLink(gpu, model),
                      CheckThermal(gpu, config, request.after_job), CheckClockEvents(gpu),
                      CheckPersistence(gpu), CheckLeftovers(gpu)}) {
                    report.results.push_back(std::move(r));
                }
            }
        }
    }

    // 2. CUDA checks, one child per GPU, in parallel. Skipped when NVML already failed a GPU
    //    (no point loading a broken GPU) or could not see the driver.
    const bool nvml_failed =
        std::any_of(report.results.begin(), report.results.end(),
                    [](const CheckResult& r) { return r.status == Status::kFail; });
    if (!request.cuda_module.empty() && snapshot && snapshot->driver_present && !nvml_failed) {
        std::vector<const GpuSnapshot*> gpus;
        for (const GpuSnapshot& g : snapshot->gpus) {
            const unsigned minor = g.minor.value_or(g.index);
            if (request.gpu_minors.empty() ||
                std::find(request.gpu_minors.begin(), request.gpu_minors.end(), minor) !=
                    request.gpu_minors.end()) {
                gpus.push_back(&g);
            }
        }
        // CUDA device d is the d-th allocated GPU (Slurm sets CUDA_VISIBLE_DEVICES to them).
        const int devices = static_cast<int>(gpus.size());
        std::vector<std::vector<CudaStep>> plans;
        plans.reserve(gpus.size());
        for (int d = 0; d < devices; ++d) {
            plans.push_back(CudaSteps(request.tier, config, d, devices));
        }
        std::vector<std::function<void(int fd)>> works;
        works.reserve(gpus.size());
        for (int d = 0; d < devices; ++d) {
            const auto& plan = plans[static_cast<std::size_t>(d)];
            works.emplace_back([&, d](int fd) { RunCudaSteps(request.cuda_module, d, plan, fd); });
        }
        const std::vector<Child> children = RunInChildren(works, deadline);
        std::vector<CudaOutcome> outcomes;
        for (int d = 0; d < devices; ++d) {
            CudaOutcome o;
            o.gpu = gpus[static_cast<std::size_t>(d)]->pci_bus_id;
            o.model = gpus[static_cast<std::size_t>(d)]->name;
            o.timed_out = children[static_cast<std::size_t>(d)].timed_out;
            std::istringstream lines(children[static_cast<std::size_t>(d)].output);
            std::string line;
            while (std::getline(lines, line)) {
                std::optional<StepLine> step = ParseStepLine(line);
                if (!step) continue;
                const std::string& name = step->name;
                const int rc = step->rc;
                nlohmann::json j = std::move(step->json);
                if (j.is_discarded() || !j.is_object()) j = nlohmann::json{{"error", "bad output"}};
                if (name == "module") {
                    o.module_error =
                        "CUDA check module unusable: " + j.value("error", std::string());
                } else {
                    o.steps[name] = {rc, j};
                }
            }
            outcomes.push_back(std::move(o));
        }
        CudaVerdicts(outcomes, plans.empty() ? std::vector<CudaStep>{} : plans.front(), config,
                     &report.results);
        // Full tier: one NCCL all-reduce across the node's GPUs, in its own child.
        if (request.tier == HealthTier::kFull && devices > 1 && Clock::now() < deadline) {
            nlohmann::json all = nlohmann::json::array();
            for (int d = 0; d < devices; ++d) all.push_back(d);
            const std::vector<CudaStep> step{
                {"nccl_allreduce", {{"devices", all}, {"bytes", 256 << 20}}}};
            const std::vector<Child> nccl = RunInChildren(
                {[&](int fd) { RunCudaSteps(request.cuda_module, 0, step, fd); }}, deadline);
            report.results.push_back(NcclVerdict(nccl[0]));
        }
    }

    // 3. The verdict: fail on evidence; unknown when NVML could not be judged (its process
    //    crashed, or it answered what no GPU can); a timeout counts as a failure when
    //    configured; a check a GPU does not support changes nothing.
    report.status = Status::kPass;
    bool unreliable = false;
    for (const CheckResult& r : report.results) {
        Status s = r.status;
        auto flag = [&r](const char* key) {
            return std::any_of(r.values.begin(), r.values.end(), [key](const auto& kv) {
                return kv.first == key && kv.second == "yes";
            });
        };
        if (s == Status::kUnknown) {
            unreliable = unreliable || flag("unreliable");
            s = flag("timeout") && config.timeout_is_failure ? Status::kFail : Status::kPass;
        }
        if (s == Status::kFail) report.status = Status::kFail;
        if (s == Status::kWarn && report.status == Status::kPass) report.status = Status::kWarn;
    }
    if (unreliable && report.status != Status::kFail) report.status = Status::kUnknown;
    report.seconds = SecondsSince(start);
    return report;
}

std::string FormatReport(const HealthReport& report) {
    std::string out;
    for (const CheckResult& r : report.results) {
        out += std::string(StatusName(r.status)) + "\t" + r.check +
               (r.gpu.empty() ? "" : " " + r.gpu) + ": " + r.summary + "\n";
    }
    out += "verdict: " + std::string(StatusName(report.status)) + " (" +
           std::string(HealthTierName(report.tier)) + " tier, " + Fmt(report.seconds, 2) + " s)\n";
    return out;
}

std::string ReportToJson(const HealthReport& report) {
    nlohmann::json j;
    j["tier"] = std::string(HealthTierName(report.tier));
    j["status"] = std::string(StatusName(report.status));
    j["seconds"] = report.seconds;
    j["results"] = nlohmann::json::array();
    for (const CheckResult& r : report.results) {
        nlohmann::json values = nlohmann::json::object();
        for (const auto& [k, v] : r.values) values[k] = v;
        j["results"].push_back({{"check", r.check},
                                {"gpu", r.gpu},
                                {"status", std::string(StatusName(r.status))},
                                {"summary", r.summary},
                                {"values", values}});
        if (!r.reason.empty()) j["results"].back()["reason"] = r.reason;
    }
    j["snapshot"] = nlohmann::json::parse(SnapshotToJson(report.snapshot), nullptr, false);
    return j.dump();
}

}  // namespace autoheal::health
