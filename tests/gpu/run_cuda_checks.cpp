// A tiny driver for the real CUDA check module on a machine with NVIDIA GPUs (tests/gpu/run.sh
// builds it with g++ alone: no CUDA headers, no JSON library). It loads the module with dlopen,
// as autoheal does, and prints one line per check:
//
//   RESULT <tab> device <tab> label <tab> rc <tab> wall seconds <tab> json
//
// usage:
//   run_cuda_checks MODULE count                      the module's device count
//   run_cuda_checks MODULE run DEVICE                 the standard plan on one device
//   run_cuda_checks MODULE run DEVICE LABEL CHECK PARAMS [LABEL CHECK PARAMS]...
//   run_cuda_checks summary LOG                       a per-GPU table from RESULT lines
#include <dlfcn.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace {

using RunFn = int (*)(const char*, int, const char*, char*, size_t);
using CountFn = int (*)();

struct Step {
    std::string label;
    std::string check;
    std::string params;
    bool expect_error = false;
};

// What run.sh runs on every GPU: the quick and full tiers' checks and a few cross-checks (the
// three GEMM types at n=4096 must give one checksum: their inputs and C are exact integers).
std::vector<Step> StandardPlan(int device, int count) {
    std::vector<Step> plan = {
        {"gemm-bf16", "gemm", R"({"n": 8192, "dtype": "bf16", "iterations": 50})"},
        {"gemm-bf16-4096", "gemm", R"({"n": 4096, "dtype": "bf16", "iterations": 20})"},
        {"gemm-fp32-4096", "gemm", R"({"n": 4096, "dtype": "fp32", "iterations": 5})"},
        {"gemm-tf32-4096", "gemm", R"({"n": 4096, "dtype": "tf32", "iterations": 10})"},
        {"gemm-bf16-odd", "gemm", R"({"n": 1000, "dtype": "bf16", "iterations": 3})"},
        {"hbm", "hbm", R"({"fraction": 0.5})"},
        {"hbm-quick", "hbm", R"({"fraction": 0.02, "seed": 7})"},
        {"d2d", "d2d_bw", R"({"bytes": 1073741824})"},
        {"h2d", "h2d_bw", R"({"bytes": 268435456})"},
        {"d2h", "d2h_bw", R"({"bytes": 268435456})"},
    };
    if (count > 1) {
        plan.push_back(
            {"p2p", "p2p_bw",
             "{\"peer\": " + std::to_string((device + 1) % count) + ", \"bytes\": 268435456}"});
    }
    plan.push_back({"err-params", "gemm", R"({"iters": 5})", true});
    plan.push_back({"err-check", "no_such_check", "{}", true});
    return plan;
}

std::string OneLine(std::string s) {
    for (char& c : s) {
        if (c == '\n' || c == '\t') c = ' ';
    }
    return s;
}

int Run(const char* module, int device, const std::vector<Step>& plan) {
    void* lib = dlopen(module, RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
        std::fprintf(stderr, "run_cuda_checks: dlopen: %s\n", dlerror());
        return 2;
    }
    auto run = reinterpret_cast<RunFn>(dlsym(lib, "autoheal_cuda_run"));
    if (run == nullptr) {
        std::fprintf(stderr, "run_cuda_checks: autoheal_cuda_run missing\n");
        return 2;
    }
    int unexpected = 0;
    std::vector<char> out(1 << 16);
    for (const Step& s : plan) {
        out[0] = '\0';
        const auto start = std::chrono::steady_clock::now();
        const int rc = run(s.check.c_str(), device, s.params.c_str(), out.data(), out.size());
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        std::printf("RESULT\t%d\t%s\t%d\t%.3f\t%s\n", device, s.label.c_str(), rc, wall,
                    OneLine(out.data()).c_str());
        std::fflush(stdout);
        if ((rc != 0) != s.expect_error) ++unexpected;
    }
    return unexpected == 0 ? 0 : 1;
}

// The value of "key" in a flat JSON object, as text ("" when absent).
std::string Field(const std::string& json, const std::string& key) {
    const std::string needle = "\"" + key + "\":";
    auto at = json.find(needle);
    if (at == std::string::npos) return "";
    at += needle.size();
    while (at < json.size() && json[at] == ' ') ++at;
    if (at < json.size() && json[at] == '"') {
        auto end = json.find('"', at + 1);
        return json.substr(at + 1, end == std::string::npos ? std::string::npos : end - at - 1);
    }
    auto end = json.find_first_of(",}", at);
    return json.substr(at, end == std::string::npos ? std::string::npos : end - at);
}

std::string Num(const std::string& text, int decimals = 0) {
    if (text.empty()) return "-";
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.*f", decimals, std::strtod(text.c_str(), nullptr));
    return buffer;
}

int Summary(const char* log_path) {
    std::ifstream log(log_path);
    if (!log) {
        std::fprintf(stderr, "run_cuda_checks: cannot read %s\n", log_path);
        return 2;
    }
    struct Entry {
        int rc = 0;
        double wall = 0;
        std::string json;
    };
    std::map<int, std::map<std::string, Entry>> by_device;
    std::string line;
    while (std::getline(log, line)) {
        if (line.rfind("RESULT\t", 0) != 0) continue;
        std::stringstream fields(line);
        std::string tag, device, label, rc, wall, json;
        std::getline(fields, tag, '\t');
        std::getline(fields, device, '\t');
        std::getline(fields, label, '\t');
        std::getline(fields, rc, '\t');
        std::getline(fields, wall, '\t');
        std::getline(fields, json);
        by_device[std::atoi(device.c_str())][label] = {std::atoi(rc.c_str()),
                                                       std::strtod(wall.c_str(), nullptr), json};
    }

    int problems = 0;
    auto value = [&](const std::map<std::string, Entry>& checks, const char* label, const char* key,
                     int decimals) -> std::string {
        auto it = checks.find(label);
        if (it == checks.end()) return "-";
        if (it->second.rc != 0) return "ERR";
        if (Field(it->second.json, "supported") == "false") return "n/a";
        return Num(Field(it->second.json, key), decimals);
    };
    std::printf("%-4s %-12s %-26s %9s %6s %6s %9s %7s %8s %7s %7s %7s %7s\n", "gpu", "pci", "name",
                "bf16 TF/s", "fp32", "tf32", "hbm GB/s", "hbm err", "d2d GB/s", "h2d", "d2h", "p2p",
                "wall s");
    std::set<std::string> checksums_8192;
    for (const auto& [device, checks] : by_device) {
        double wall = 0;
        std::string pci, name;
        for (const auto& [label, e] : checks) {
            wall += e.wall;
            if (pci.empty() && e.rc == 0) {
                pci = Field(e.json, "pci_bus_id");
                name = Field(e.json, "name");
            }
            const bool expect_error = label.rfind("err-", 0) == 0;
            if ((e.rc != 0) != expect_error) {
                ++problems;
                std::printf("  gpu %d %s: unexpected rc=%d %s\n", device, label.c_str(), e.rc,
                            e.json.c_str());
            }
            if (label.rfind("gemm", 0) == 0 && e.rc == 0 && Field(e.json, "correct") != "true") {
                ++problems;
                std::printf("  gpu %d %s: WRONG RESULT %s\n", device, label.c_str(),
                            e.json.c_str());
            }
            if (label.rfind("hbm", 0) == 0 && e.rc == 0 && Field(e.json, "errors") != "0") {
                ++problems;
                std::printf("  gpu %d %s: HBM ERRORS %s\n", device, label.c_str(), e.json.c_str());
            }
        }
        // Exact inputs and results: bf16, fp32 and tf32 must agree at n=4096.
        std::set<std::string> types;
        for (const char* label : {"gemm-bf16-4096", "gemm-fp32-4096", "gemm-tf32-4096"}) {
            auto it = checks.find(label);
            if (it != checks.end() && it->second.rc == 0) {
                types.insert(Field(it->second.json, "checksum"));
            }
        }
        if (types.size() > 1) {
            ++problems;
            std::printf("  gpu %d: n=4096 checksums differ between bf16/fp32/tf32\n", device);
        }
        if (auto it = checks.find("gemm-bf16"); it != checks.end() && it->second.rc == 0) {
            checksums_8192.insert(Field(it->second.json, "checksum"));
        }
        std::printf(
            "%-4d %-12s %-26.26s %9s %6s %6s %9s %7s %8s %7s %7s %7s %7.1f\n", device, pci.c_str(),
            name.c_str(), value(checks, "gemm-bf16", "tflops", 1).c_str(),
            value(checks, "gemm-fp32-4096", "tflops", 1).c_str(),
            value(checks, "gemm-tf32-4096", "tflops", 1).c_str(),
            value(checks, "hbm", "gbps", 0).c_str(), value(checks, "hbm", "errors", 0).c_str(),
            value(checks, "d2d", "gbps", 0).c_str(), value(checks, "h2d", "gbps", 1).c_str(),
            value(checks, "d2h", "gbps", 1).c_str(), value(checks, "p2p", "gbps", 1).c_str(), wall);
        if (auto it = checks.find("nccl"); it != checks.end()) {
            std::printf(
                "     nccl_allreduce: rc=%d busbw %s GB/s algbw %s GB/s correct=%s ranks=%s\n",
                it->second.rc, Num(Field(it->second.json, "busbw_gbps"), 1).c_str(),
                Num(Field(it->second.json, "algbw_gbps"), 1).c_str(),
                Field(it->second.json, "correct").c_str(), Field(it->second.json, "ranks").c_str());
            if (it->second.rc != 0) {
                std::printf("     %s\n", it->second.json.c_str());
                if (it->second.json.find("built without NCCL") == std::string::npos) ++problems;
            }
        }
    }
    if (checksums_8192.size() > 1) {
        ++problems;
        std::printf("gemm bf16 n=8192 checksums DIFFER across GPUs:");
        for (const auto& c : checksums_8192) std::printf(" %s", c.c_str());
        std::printf("\n");
    } else if (!checksums_8192.empty()) {
        std::printf("gemm bf16 n=8192 checksum, equal on all GPUs: %s\n",
                    checksums_8192.begin()->c_str());
    }
    std::printf("%s: %d problem(s)\n", problems == 0 ? "PASS" : "FAIL", problems);
    return problems == 0 ? 0 : 1;
}

int Usage() {
    std::fprintf(stderr,
                 "usage: run_cuda_checks MODULE count\n"
                 "       run_cuda_checks MODULE run DEVICE [LABEL CHECK PARAMS]...\n"
                 "       run_cuda_checks summary LOG\n");
    return 2;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc == 3 && std::string(argv[1]) == "summary") return Summary(argv[2]);
    if (argc == 3 && std::string(argv[2]) == "count") {
        void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
        if (lib == nullptr) {
            std::fprintf(stderr, "run_cuda_checks: dlopen: %s\n", dlerror());
            return 2;
        }
        auto count = reinterpret_cast<CountFn>(dlsym(lib, "autoheal_cuda_device_count"));
        if (count == nullptr) return Usage();
        std::printf("%d\n", count());
        return 0;
    }
    if (argc >= 4 && std::string(argv[2]) == "run" && (argc - 4) % 3 == 0) {
        const int device = std::atoi(argv[3]);
        std::vector<Step> plan;
        for (int i = 4; i + 2 < argc; i += 3) plan.push_back({argv[i], argv[i + 1], argv[i + 2]});
        if (plan.empty()) {
            void* lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
            auto count =
                lib ? reinterpret_cast<CountFn>(dlsym(lib, "autoheal_cuda_device_count")) : nullptr;
            plan = StandardPlan(device, count ? count() : 1);
        }
        return Run(argv[1], device, plan);
    }
    return Usage();
}
