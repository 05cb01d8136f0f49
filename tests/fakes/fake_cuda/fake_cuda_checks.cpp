// libautoheal_cuda_fake.so: the C ABI of health/cuda/autoheal_cuda_checks.h, answered from a
// fake GPU scenario (tests/fakes/SCENARIO.md) instead of a GPU. Production code loads it like
// the real module; nothing in autoheal knows it is a fake.
//
// The scenario is read again on every call, so a test may switch scenarios between calls.
// Beyond SCENARIO.md: a non-null `init_error` (the driver is not loaded) also makes the CUDA
// calls fail, as they do on such a node; `cuda.p2p_gbps: null` makes p2p_bw answer
// {"supported": false}; `cuda.fail` and `cuda.hang` may also be a list of checks or "all".
#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <initializer_list>
#include <nlohmann/json.hpp>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "autoheal_cuda_checks.h"

#define AUTOHEAL_FAKE_EXPORT __attribute__((visibility("default")))

namespace autoheal::fake_cuda {
namespace {

using Json = nlohmann::ordered_json;

constexpr std::int64_t kMiB = 1LL << 20;
constexpr std::int64_t kGiB = 1LL << 30;
constexpr int kDefaultGpus = 8;
constexpr double kHangSeconds = 3600;

// What one GPU's CUDA checks report (the scenario's "cuda" object).
struct CudaValues {
    double gemm_tflops = 750.0;
    bool gemm_wrong = false;
    bool gemm_checksum_differs = false;  // "correct" by its own check, yet unlike its peers'
    std::int64_t hbm_errors = 0;
    double hbm_gbps = 3300.0;
    double d2d_gbps = 3000.0;
    double h2d_gbps = 55.0;
    double d2h_gbps = 55.0;
    std::optional<double> p2p_gbps = 380.0;
    double allreduce_busbw_gbps = 360.0;
    std::vector<std::string> fail;  // checks that return an error ("all": every check)
    std::vector<std::string> hang;  // checks that sleep for an hour
    double seconds = 0.01;
};

struct Gpu {
    std::string name = "NVIDIA H100 80GB HBM3";
    std::string uuid;
    std::string pci_bus_id;
    std::int64_t memory_total_bytes = 85520809984;
    std::int64_t memory_used_bytes = 0;
    CudaValues cuda;
};

struct Scenario {
    std::string init_error;  // empty: none
    std::vector<Gpu> gpus;   // every GPU of the node, before CUDA_VISIBLE_DEVICES
};

// A CUDA-style failure: cudaGetErrorString's text and cudaGetErrorName's name.
struct Failure {
    std::string message;
    std::string name;
};

Gpu HealthyGpu(int index) {
    Gpu gpu;
    char buffer[64];
    std::snprintf(buffer, sizeof buffer, "GPU-00000000-0000-0000-0000-%012d", index);
    gpu.uuid = buffer;
    std::snprintf(buffer, sizeof buffer, "0000:%02X:00.0", 0x10 + index);
    gpu.pci_bus_id = buffer;
    return gpu;
}

// obj[key] when present and not null, else `fallback`; a wrong type throws (caught at the
// scenario's edge).
template <class T>
T Get(const Json& obj, const char* key, T fallback) {
    if (!obj.is_object() || !obj.contains(key) || obj[key].is_null()) return fallback;
    return obj[key].get<T>();
}

std::vector<std::string> CheckList(const Json& obj, const char* key) {
    if (!obj.contains(key) || obj[key].is_null()) return {};
    if (obj[key].is_string()) return {obj[key].get<std::string>()};
    return obj[key].get<std::vector<std::string>>();
}

Gpu ParseGpu(const Json& j, int index) {
    Gpu gpu = HealthyGpu(index);
    if (!j.is_object())
        throw std::runtime_error("gpus[" + std::to_string(index) + "] is not an object");
    gpu.name = Get(j, "name", gpu.name);
    gpu.uuid = Get(j, "uuid", gpu.uuid);
    gpu.pci_bus_id = Get(j, "pci_bus_id", gpu.pci_bus_id);
    gpu.memory_total_bytes = Get(j, "memory_total_bytes", gpu.memory_total_bytes);
    gpu.memory_used_bytes = Get(j, "memory_used_bytes", gpu.memory_used_bytes);
    if (j.contains("cuda") && !j["cuda"].is_null()) {
        const Json& c = j["cuda"];
        if (!c.is_object())
            throw std::runtime_error("gpus[" + std::to_string(index) + "].cuda is not an object");
        CudaValues& v = gpu.cuda;
        v.gemm_tflops = Get(c, "gemm_tflops", v.gemm_tflops);
        v.gemm_wrong = Get(c, "gemm_wrong", v.gemm_wrong);
        v.gemm_checksum_differs = Get(c, "gemm_checksum_differs", v.gemm_checksum_differs);
        v.hbm_errors = Get(c, "hbm_errors", v.hbm_errors);
        v.hbm_gbps = Get(c, "hbm_gbps", v.hbm_gbps);
        v.d2d_gbps = Get(c, "d2d_gbps", v.d2d_gbps);
        v.h2d_gbps = Get(c, "h2d_gbps", v.h2d_gbps);
        v.d2h_gbps = Get(c, "d2h_gbps", v.d2h_gbps);
        if (c.contains("p2p_gbps")) {
            v.p2p_gbps =
                c["p2p_gbps"].is_null() ? std::nullopt : std::optional(c["p2p_gbps"].get<double>());
        }
        v.allreduce_busbw_gbps = Get(c, "allreduce_busbw_gbps", v.allreduce_busbw_gbps);
        v.fail = CheckList(c, "fail");
        v.hang = CheckList(c, "hang");
        v.seconds = Get(c, "seconds", v.seconds);
    }
    return gpu;
}

// The folder this library was loaded from.
std::string LibraryFolder() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<const void*>(&LibraryFolder), &info) == 0 ||
        info.dli_fname == nullptr) {
        return ".";
    }
    std::string path = info.dli_fname;
    const auto slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool FileExists(const std::string& path) {
    std::ifstream file(path);
    return file.good();
}

// The scenario file by SCENARIO.md's lookup order; empty for the built-in 8 healthy GPUs.
std::string ScenarioPath() {
    if (const char* env = std::getenv("AUTOHEAL_FAKE_GPU_SCENARIO");
        env != nullptr && env[0] != '\0') {
        return env;
    }
    const std::string folder = LibraryFolder() + "/scenarios/";
    if (const char* node = std::getenv("SLURMD_NODENAME"); node != nullptr && node[0] != '\0') {
        if (std::string path = folder + node + ".json"; FileExists(path)) return path;
    }
    if (std::string path = folder + "default.json"; FileExists(path)) return path;
    return "";
}

// Reads the scenario; *error says why it could not (a scenario that cannot be read must not
// pass for a healthy node).
bool LoadScenario(Scenario* scenario, std::string* error) {
    const std::string path = ScenarioPath();
    Json j = Json::object();
    if (!path.empty()) {
        std::ifstream file(path);
        if (!file) {
            *error = "fake scenario: cannot read " + path;
            return false;
        }
        std::stringstream text;
        text << file.rdbuf();
        j = Json::parse(text.str(), nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded() || !j.is_object()) {
            *error = "fake scenario: " + path + ": not a JSON object";
            return false;
        }
    }
    try {
        scenario->init_error = Get(j, "init_error", std::string());
        if (j.contains("gpus") && !j["gpus"].is_null()) {
            if (!j["gpus"].is_array()) throw std::runtime_error("gpus is not a list");
            for (std::size_t i = 0; i < j["gpus"].size(); ++i) {
                scenario->gpus.push_back(ParseGpu(j["gpus"][i], static_cast<int>(i)));
            }
        } else {
            for (int i = 0; i < kDefaultGpus; ++i) scenario->gpus.push_back(HealthyGpu(i));
        }
    } catch (const std::exception& e) {
        *error =
            "fake scenario: " + (path.empty() ? std::string("built-in") : path) + ": " + e.what();
        return false;
    }
    return true;
}

// The GPUs CUDA shows, in CUDA's order: CUDA_VISIBLE_DEVICES lists indices or UUIDs; like
// CUDA, the list ends at the first entry that names no GPU.
std::vector<const Gpu*> VisibleGpus(const Scenario& scenario) {
    std::vector<const Gpu*> visible;
    const char* env = std::getenv("CUDA_VISIBLE_DEVICES");
    if (env == nullptr) {
        for (const Gpu& gpu : scenario.gpus) visible.push_back(&gpu);
        return visible;
    }
    std::stringstream list(env);
    std::string entry;
    while (std::getline(list, entry, ',')) {
        entry.erase(0, entry.find_first_not_of(" \t"));
        entry.erase(entry.find_last_not_of(" \t") + 1);
        const Gpu* found = nullptr;
        if (!entry.empty() && std::all_of(entry.begin(), entry.end(), ::isdigit)) {
            const unsigned long index = std::strtoul(entry.c_str(), nullptr, 10);
            if (index < scenario.gpus.size()) found = &scenario.gpus[index];
        } else if (entry.rfind("GPU-", 0) == 0) {
            for (const Gpu& gpu : scenario.gpus) {
                if (gpu.uuid.rfind(entry, 0) == 0) found = &gpu;  // CUDA accepts a UUID prefix
            }
        }
        if (found == nullptr || std::find(visible.begin(), visible.end(), found) != visible.end())
            break;
        visible.push_back(found);
    }
    return visible;
}

bool Names(const std::vector<std::string>& checks, std::string_view check) {
    return std::any_of(checks.begin(), checks.end(),
                       [&](const std::string& c) { return c == check || c == "all" || c == "*"; });
}

void SleepSeconds(double seconds) {
    if (seconds > 0) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

std::string Hex64(std::string_view text) {
    std::uint64_t h = 0xcbf29ce484222325ULL;  // FNV-1a
    for (unsigned char c : text) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    char buffer[17];
    std::snprintf(buffer, sizeof buffer, "%016llx", static_cast<unsigned long long>(h));
    return buffer;
}

int Write(const Json& json, char* out, std::size_t out_len, int rc) {
    if (out == nullptr || out_len == 0) return -1;
    std::string text = json.dump();
    if (text.size() + 1 > out_len) {
        text = Json{{"error", "output buffer too small"}, {"needed_bytes", text.size() + 1}}.dump();
        rc = -1;
        if (text.size() + 1 > out_len) {
            out[0] = '\0';
            return -1;
        }
    }
    std::memcpy(out, text.c_str(), text.size() + 1);
    return rc;
}

// --- parameters: the same keys and ranges as the real module ---------------------------------
struct ParamError {
    std::string message;
};

std::int64_t IntParam(const Json& p, const char* key, std::int64_t min, std::int64_t max,
                      std::int64_t fallback) {
    if (!p.contains(key)) return fallback;
    const Json& v = p[key];
    if (!v.is_number_integer() || v.get<std::int64_t>() < min || v.get<std::int64_t>() > max) {
        throw ParamError{std::string("params: '") + key + "' must be an integer in [" +
                         std::to_string(min) + ", " + std::to_string(max) + "]"};
    }
    return v.get<std::int64_t>();
}

void RefuseUnknown(const Json& p, std::string_view check,
                   std::initializer_list<std::string_view> known) {
    for (const auto& item : p.items()) {
        if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
            throw ParamError{"params: unknown key '" + item.key() + "' for check '" +
                             std::string(check) + "'"};
        }
    }
}

// The fake's answer for one check on one GPU (params already validated).
Json Answer(std::string_view check, int device, const Gpu& gpu, const Json& p,
            const std::vector<const Gpu*>& visible) {
    Json r = Json::object();
    const CudaValues& v = gpu.cuda;
    if (check == "gemm") {
        RefuseUnknown(p, check, {"n", "dtype", "iterations"});
        const std::int64_t n = IntParam(p, "n", 64, 32768, 8192);
        std::string dtype =
            p.contains("dtype") && p["dtype"].is_string() ? p["dtype"].get<std::string>() : "bf16";
        if (p.contains("dtype") && dtype != "bf16" && dtype != "fp32" && dtype != "tf32") {
            throw ParamError{"params: 'dtype' must be one of bf16|fp32|tf32"};
        }
        const std::int64_t iterations = IntParam(p, "iterations", 1, 10000, 20);
        // fp32 runs on the CUDA cores (about 1/15 of bf16 on an H100), tf32 at half bf16 rate.
        const double scale = dtype == "fp32" ? 1.0 / 15 : dtype == "tf32" ? 0.5 : 1.0;
        const std::string key = "autoheal-fake-gemm:" + std::to_string(n);
        r["n"] = n;
        r["dtype"] = dtype;
        r["iterations"] = iterations;
        r["tflops"] = v.gemm_tflops * scale;
        r["checksum"] = v.gemm_wrong || v.gemm_checksum_differs ? Hex64(key + ":wrong:" + gpu.uuid)
                                                                : Hex64(key);
        r["max_rel_error"] = v.gemm_wrong ? 0.25 : 0.0;
        r["mismatches"] = v.gemm_wrong ? 4096 : 0;
        r["correct"] = !v.gemm_wrong;
    } else if (check == "hbm") {
        RefuseUnknown(p, check, {"fraction", "seed"});
        double fraction = 0.05;
        if (p.contains("fraction")) {
            if (!p["fraction"].is_number() || !(p["fraction"].get<double>() > 0) ||
                p["fraction"].get<double>() > 0.95) {
                throw ParamError{"params: 'fraction' must be a number in (0, 0.95]"};
            }
            fraction = p["fraction"].get<double>();
        }
        IntParam(p, "seed", 0, INT64_MAX, 0);
        const std::int64_t free = gpu.memory_total_bytes - gpu.memory_used_bytes;
        auto bytes = static_cast<std::int64_t>(fraction * static_cast<double>(free));
        bytes = std::clamp(bytes, 256 * kMiB,
                           std::max(256 * kMiB, std::min(64 * kGiB, free - 512 * kMiB)));
        bytes &= ~(2 * kMiB - 1);
        r["bytes_tested"] = bytes;
        r["errors"] = v.hbm_errors;
        r["bit_errors"] = v.hbm_errors;
        if (v.hbm_errors != 0) r["first_error_offset"] = 4096;
        r["gbps"] = v.hbm_gbps;
        r["patterns"] = "walking_ones,address,address_inverted,random";
    } else if (check == "d2d_bw" || check == "h2d_bw" || check == "d2h_bw" || check == "p2p_bw") {
        const bool p2p = check == "p2p_bw";
        if (p2p) {
            RefuseUnknown(p, check, {"bytes", "iterations", "peer"});
        } else {
            RefuseUnknown(p, check, {"bytes", "iterations"});
        }
        const std::int64_t max_bytes =
            (check == "h2d_bw" || check == "d2h_bw") ? 4 * kGiB : 16 * kGiB;
        const std::int64_t bytes =
            IntParam(p, "bytes", kMiB, max_bytes, check == "d2d_bw" ? kGiB : 256 * kMiB);
        const std::int64_t iterations = IntParam(p, "iterations", 1, 1000, 10);
        const auto count = static_cast<int>(visible.size());
        if (p2p) {
            const std::int64_t peer =
                IntParam(p, "peer", 0, 1023, count > 1 ? (device + 1) % count : -1);
            if (peer < 0) {
                r["supported"] = false;
                r["reason"] = "only one device is visible";
                return r;
            }
            if (peer == device) throw ParamError{"peer must differ from device"};
            if (peer >= count) throw Failure{"invalid device ordinal", "cudaErrorInvalidDevice"};
            r["peer"] = peer;
            const auto& peer_p2p = visible[static_cast<std::size_t>(peer)]->cuda.p2p_gbps;
            if (!v.p2p_gbps || !peer_p2p) {
                r["supported"] = false;
                r["reason"] = "cudaDeviceCanAccessPeer says no";
                return r;
            }
            r["supported"] = true;
        }
        r["bytes"] = bytes;
        r["iterations"] = iterations;
        r["gbps"] = check == "d2d_bw"   ? v.d2d_gbps
                    : check == "h2d_bw" ? v.h2d_gbps
                    : check == "d2h_bw" ? v.d2h_gbps
                                        : *v.p2p_gbps;
    } else if (check == "nccl_allreduce") {
        RefuseUnknown(p, check, {"devices", "bytes", "iterations"});
        const std::int64_t bytes = IntParam(p, "bytes", kMiB, 16 * kGiB, 268435456);
        const std::int64_t iterations = IntParam(p, "iterations", 1, 1000, 20);
        std::vector<std::int64_t> devices;
        if (p.contains("devices")) {
            if (!p["devices"].is_array())
                throw ParamError{"params: 'devices' must be a list of device indices"};
            for (const Json& d : p["devices"]) {
                if (!d.is_number_integer() || d.get<std::int64_t>() < 0) {
                    throw ParamError{"params: 'devices' must be a list of device indices"};
                }
                devices.push_back(d.get<std::int64_t>());
            }
        } else {
            for (std::size_t d = 0; d < visible.size(); ++d)
                devices.push_back(static_cast<std::int64_t>(d));
        }
        double busbw = 0;
        bool first = true;
        for (std::int64_t d : devices) {
            if (d >= static_cast<std::int64_t>(visible.size())) {
                throw Failure{"invalid device ordinal", "cudaErrorInvalidDevice"};
            }
            const double b = visible[static_cast<std::size_t>(d)]->cuda.allreduce_busbw_gbps;
            busbw = first ? b : std::min(busbw, b);
            first = false;
        }
        if (devices.empty())
            throw Failure{"no CUDA-capable device is detected", "cudaErrorNoDevice"};
        const auto ranks = static_cast<double>(devices.size());
        r["ranks"] = devices.size();
        r["bytes"] = bytes / 4 * 4;
        r["iterations"] = iterations;
        r["algbw_gbps"] = ranks > 1 ? busbw * ranks / (2 * (ranks - 1)) : busbw;
        r["busbw_gbps"] = ranks > 1 ? busbw : 0.0;
        r["mismatches"] = 0;
        r["correct"] = true;
    }
    return r;
}

constexpr std::string_view kChecks[] = {"gemm",   "hbm",    "d2d_bw",        "h2d_bw",
                                        "d2h_bw", "p2p_bw", "nccl_allreduce"};

int Run(const char* check_name, int device, const char* params_json, char* out,
        std::size_t out_len) {
    const auto start = std::chrono::steady_clock::now();
    const std::string check = check_name != nullptr ? check_name : "";
    auto fail = [&](const std::string& message, const std::string& name) {
        Json json = {{"error", message}};
        if (!name.empty()) json["error_name"] = name;
        json["check"] = check;
        json["device"] = device;
        return Write(json, out, out_len, -1);
    };
    Scenario scenario;
    std::string error;
    if (!LoadScenario(&scenario, &error)) return fail(error, "");
    if (!scenario.init_error.empty()) {
        return fail("CUDA driver version is insufficient for CUDA runtime version (fake: " +
                        scenario.init_error + ")",
                    "cudaErrorInsufficientDriver");
    }
    if (std::find(std::begin(kChecks), std::end(kChecks), check) == std::end(kChecks)) {
        return fail("unknown check: " + check, "");
    }
    Json params = Json::object();
    if (params_json != nullptr && params_json[0] != '\0') {
        params = Json::parse(params_json, nullptr, /*allow_exceptions=*/false);
        if (params.is_discarded() || !params.is_object())
            return fail("params: not a JSON object", "");
    }
    const std::vector<const Gpu*> visible = VisibleGpus(scenario);
    if (device < 0 || static_cast<std::size_t>(device) >= visible.size()) {
        return fail("invalid device ordinal", "cudaErrorInvalidDevice");
    }
    const Gpu& gpu = *visible[static_cast<std::size_t>(device)];

    // nccl_allreduce hangs, fails and takes as long as the worst GPU in it.
    std::vector<const Gpu*> involved = {&gpu};
    if (check == "nccl_allreduce") involved = visible;
    double seconds = 0;
    bool hang = false;
    bool failed = false;
    for (const Gpu* g : involved) {
        seconds = std::max(seconds, g->cuda.seconds);
        hang = hang || Names(g->cuda.hang, check);
        failed = failed || Names(g->cuda.fail, check);
    }
    if (hang) SleepSeconds(kHangSeconds);
    SleepSeconds(seconds);
    if (failed) {
        return check == "hbm"
                   ? fail("uncorrectable ECC error encountered", "cudaErrorECCUncorrectable")
                   : fail("unspecified launch failure", "cudaErrorLaunchFailure");
    }
    Json result;
    try {
        result = Answer(check, device, gpu, params, visible);
    } catch (const ParamError& e) {
        return fail(e.message, "");
    } catch (const Failure& f) {
        return fail(f.message, f.name);
    }
    result["device"] = device;
    result["name"] = gpu.name;
    result["pci_bus_id"] = gpu.pci_bus_id;
    result["uuid"] = gpu.uuid;
    result["seconds"] =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return Write(result, out, out_len, 0);
}

template <class Body>
int Guard(char* out, std::size_t out_len, Body body) noexcept {
    try {
        return body();
    } catch (const std::exception& e) {
        try {
            return Write(Json{{"error", std::string("fake: internal: ") + e.what()}}, out, out_len,
                         -1);
        } catch (...) {
        }
    } catch (...) {
    }
    if (out != nullptr && out_len > 0) out[0] = '\0';
    return -1;
}

}  // namespace
}  // namespace autoheal::fake_cuda

extern "C" {

AUTOHEAL_FAKE_EXPORT int autoheal_cuda_abi_version(void) { return AUTOHEAL_CUDA_ABI_VERSION; }

AUTOHEAL_FAKE_EXPORT int autoheal_cuda_device_count(void) {
    return autoheal::fake_cuda::Guard(nullptr, 0, [] {
        autoheal::fake_cuda::Scenario scenario;
        std::string error;
        if (!autoheal::fake_cuda::LoadScenario(&scenario, &error) || !scenario.init_error.empty()) {
            return -1;
        }
        return static_cast<int>(autoheal::fake_cuda::VisibleGpus(scenario).size());
    });
}

AUTOHEAL_FAKE_EXPORT int autoheal_cuda_run(const char* check, int device, const char* params_json,
                                           char* out, size_t out_len) {
    return autoheal::fake_cuda::Guard(out, out_len, [&] {
        return autoheal::fake_cuda::Run(check, device, params_json, out, out_len);
    });
}

}  // extern "C"
