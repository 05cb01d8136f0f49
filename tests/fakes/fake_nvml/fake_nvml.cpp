// A fake libnvidia-ml.so.1: the NVML functions autoheal calls (health/src/nvml_api.h), with
// NVML's C signatures, answering from a scenario file (tests/fakes/SCENARIO.md) instead of a
// GPU. The scenario is read by the nvmlInit_v2 that takes the reference count from 0 to 1.
//
// Lookup order: $AUTOHEAL_FAKE_GPU_SCENARIO, <this library's folder>/scenarios/
// $SLURMD_NODENAME.json, <folder>/scenarios/default.json, then 8 healthy H100s. A path that does
// not exist is skipped (the next one is tried); a file that exists but is not a valid scenario
// makes nvmlInit_v2 fail with NVML_ERROR_UNKNOWN and a line on stderr, so a broken test fixture
// never passes as a healthy node.
#include <dlfcn.h>
#include <sys/stat.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <mutex>
#include <new>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "nvml_api.h"
#include "scenario.h"

// Every function of the list is declared here with C linkage, default visibility and noexcept,
// so a definition below whose signature differs from nvml_api.h does not compile.
#define FAKE_NVML_DECLARE(name, ret, params) \
    extern "C" __attribute__((visibility("default"))) ret name params noexcept;
AUTOHEAL_NVML_FUNCTIONS(FAKE_NVML_DECLARE)
#undef FAKE_NVML_DECLARE

namespace {

using namespace autoheal::fake_nvml;

std::string OwnFolder() {
    Dl_info info{};
    if (dladdr(reinterpret_cast<void*>(&nvmlInit_v2), &info) == 0 || info.dli_fname == nullptr) {
        return ".";
    }
    const std::string path = info.dli_fname;
    const std::size_t slash = path.rfind('/');
    return slash == std::string::npos ? "." : path.substr(0, slash);
}

bool IsFile(const std::string& path) {
    struct stat st {};
    return !path.empty() && stat(path.c_str(), &st) == 0 && S_ISREG(st.st_mode);
}

// The scenario file to use; "" for the built-in one.
std::string ScenarioPath() {
    if (const char* env = std::getenv("AUTOHEAL_FAKE_GPU_SCENARIO"); env != nullptr) {
        if (IsFile(env)) return env;
    }
    const std::string dir = OwnFolder() + "/scenarios/";
    if (const char* node = std::getenv("SLURMD_NODENAME"); node != nullptr && *node != '\0') {
        if (IsFile(dir + node + ".json")) return dir + node + ".json";
    }
    if (IsFile(dir + "default.json")) return dir + "default.json";
    return "";
}

// ---- State -------------------------------------------------------------------------------------

std::mutex g_mutex;
int g_init_count = 0;
Scenario g_scenario;

void MaybeHang(const char* call, int gpu_index) {
    if (!g_scenario.hang || g_scenario.hang->call != call) return;
    const Hang& h = *g_scenario.hang;
    // Calls without a device hang whatever GPU the scenario names.
    if (h.gpu && gpu_index >= 0 && static_cast<unsigned>(gpu_index) != *h.gpu) return;
    if (h.crash) std::raise(SIGSEGV);
    std::this_thread::sleep_for(std::chrono::duration<double>(h.seconds));
}

// Checks common to every device query: initialised, a handle this library gave out, the hang
// and the GPU's unsupported list. On NVML_SUCCESS *gpu is the device.
// Seconds since the scenario's t = 0 (SCENARIO.md, "telemetry").
double ScenarioSeconds() {
    const double now =
        std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
    return g_scenario.origin > 0 ? std::max(0.0, now - g_scenario.origin) : now;
}

// Whether t falls in the first `percent` of its period.
bool InShare(double t, double period, double percent) {
    return std::fmod(t, period) < period * percent / 100;
}

nvmlReturn_t Enter(const char* call, nvmlDevice_t device, const Gpu** gpu) {
    if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
    *gpu = nullptr;
    for (const Gpu& g : g_scenario.gpus) {
        if (reinterpret_cast<const Gpu*>(device) == &g) *gpu = &g;
    }
    if (*gpu == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    MaybeHang(call, static_cast<int>((*gpu)->index));
    if ((*gpu)->unsupported.count(call) != 0) return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}

// The exception firewall of every entry point: fn(call), where `call` is the exported
// function's name (passed from outside the lambda, where __func__ names that function).
template <typename Fn>
nvmlReturn_t Guard(const char* call, Fn fn) noexcept {
    try {
        return fn(call);
    } catch (const std::exception& e) {
        std::fprintf(stderr, "fake_nvml: %s\n", e.what());
        return NVML_ERROR_UNKNOWN;
    } catch (...) {
        return NVML_ERROR_UNKNOWN;
    }
}

nvmlReturn_t CopyString(const std::string& value, char* out, unsigned length) {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    if (value.size() + 1 > length) return NVML_ERROR_INSUFFICIENT_SIZE;
    std::memcpy(out, value.c_str(), value.size() + 1);
    return NVML_SUCCESS;
}

template <typename T>
nvmlReturn_t Put(T value, T* out) {
    if (out == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
    *out = value;
    return NVML_SUCCESS;
}

// A device query: Enter's checks, then body(gpu).
#define FAKE_NVML_DEVICE_QUERY(device, body)                                            \
    Guard(__func__, [&](const char* call) -> nvmlReturn_t {                             \
        const Gpu* gpu = nullptr;                                                       \
        if (nvmlReturn_t rc = Enter(call, device, &gpu); rc != NVML_SUCCESS) return rc; \
        body                                                                            \
    })

}  // namespace

// ---- Library ------------------------------------------------------------------------------------

nvmlReturn_t nvmlInit_v2(void) noexcept {
    return Guard(__func__, [](const char* call) -> nvmlReturn_t {
        {
            std::lock_guard<std::mutex> lock(g_mutex);
            if (g_init_count == 0) {
                const std::string path = ScenarioPath();
                try {
                    std::string text = "{}";
                    if (!path.empty()) {
                        std::ifstream in(path);
                        std::stringstream ss;
                        ss << in.rdbuf();
                        if (!in) throw std::runtime_error("cannot read the file");
                        text = ss.str();
                    }
                    g_scenario = ParseScenario(text);
                    struct stat st {};
                    if (!path.empty() && stat(path.c_str(), &st) == 0) {
                        g_scenario.origin = static_cast<double>(st.st_mtim.tv_sec) +
                                            static_cast<double>(st.st_mtim.tv_nsec) / 1e9;
                    }
                } catch (const std::exception& e) {
                    std::fprintf(stderr, "fake_nvml: bad scenario %s: %s\n", path.c_str(),
                                 e.what());
                    return NVML_ERROR_UNKNOWN;
                }
            }
        }
        MaybeHang(call, -1);
        if (g_scenario.init_error) return *g_scenario.init_error;
        std::lock_guard<std::mutex> lock(g_mutex);
        ++g_init_count;
        return NVML_SUCCESS;
    });
}

nvmlReturn_t nvmlShutdown(void) noexcept {
    return Guard(__func__, [](const char* call) -> nvmlReturn_t {
        if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
        MaybeHang(call, -1);
        std::lock_guard<std::mutex> lock(g_mutex);
        --g_init_count;
        return NVML_SUCCESS;
    });
}

const char* nvmlErrorString(nvmlReturn_t result) noexcept {
    for (const ReturnName& r : kReturns) {
        if (r.value == result) return r.text;
    }
    return "Unknown Error";
}

nvmlReturn_t nvmlSystemGetDriverVersion(char* version, unsigned int length) noexcept {
    return Guard(__func__, [&](const char* call) -> nvmlReturn_t {
        if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
        MaybeHang(call, -1);
        return CopyString(g_scenario.driver_version, version, length);
    });
}

nvmlReturn_t nvmlSystemGetNVMLVersion(char* version, unsigned int length) noexcept {
    return Guard(__func__, [&](const char* call) -> nvmlReturn_t {
        if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
        MaybeHang(call, -1);
        return CopyString(g_scenario.nvml_version, version, length);
    });
}

nvmlReturn_t nvmlDeviceGetCount_v2(unsigned int* deviceCount) noexcept {
    return Guard(__func__, [&](const char* call) -> nvmlReturn_t {
        if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
        MaybeHang(call, -1);
        return Put(static_cast<unsigned>(g_scenario.gpus.size()), deviceCount);
    });
}

nvmlReturn_t nvmlDeviceGetHandleByIndex_v2(unsigned int index, nvmlDevice_t* device) noexcept {
    return Guard(__func__, [&](const char* call) -> nvmlReturn_t {
        if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
        if (device == nullptr || index >= g_scenario.gpus.size()) {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        const Gpu& gpu = g_scenario.gpus[index];
        MaybeHang(call, static_cast<int>(index));
        if (gpu.unsupported.count(call) != 0) return NVML_ERROR_NOT_SUPPORTED;
        // The handle is the GPU's entry; Enter checks it points into the scenario.
        *device = reinterpret_cast<nvmlDevice_t>(const_cast<Gpu*>(&gpu));
        return NVML_SUCCESS;
    });
}

// ---- Identity -----------------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetName(nvmlDevice_t device, char* name, unsigned int length) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, { return CopyString(gpu->name, name, length); });
}

nvmlReturn_t nvmlDeviceGetUUID(nvmlDevice_t device, char* uuid, unsigned int length) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, { return CopyString(gpu->uuid, uuid, length); });
}

nvmlReturn_t nvmlDeviceGetPciInfo_v3(nvmlDevice_t device, nvmlPciInfo_t* pci) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (pci == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        *pci = nvmlPciInfo_t{};
        std::snprintf(pci->busIdLegacy, sizeof(pci->busIdLegacy), "%04X:%02X:%02X.%X",
                      gpu->pci_domain & 0xffff, gpu->pci_bus, gpu->pci_device, gpu->pci_function);
        std::snprintf(pci->busId, sizeof(pci->busId), "%08X:%02X:%02X.%X", gpu->pci_domain,
                      gpu->pci_bus, gpu->pci_device, gpu->pci_function);
        pci->domain = gpu->pci_domain;
        pci->bus = gpu->pci_bus;
        pci->device = gpu->pci_device;
        pci->pciDeviceId = 0x233010DE;  // H100 SXM5, NVIDIA
        pci->pciSubSystemId = 0x16C110DE;
        return NVML_SUCCESS;
    });
}

nvmlReturn_t nvmlDeviceGetSerial(nvmlDevice_t device, char* serial, unsigned int length) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, { return CopyString(gpu->serial, serial, length); });
}

nvmlReturn_t nvmlDeviceGetMinorNumber(nvmlDevice_t device, unsigned int* minorNumber) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, { return Put(gpu->minor, minorNumber); });
}

// ---- Memory errors ------------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetTotalEccErrors(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                         nvmlEccCounterType_t counterType,
                                         unsigned long long* eccCounts) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (errorType >= NVML_MEMORY_ERROR_TYPE_COUNT ||
            counterType >= NVML_ECC_COUNTER_TYPE_COUNT) {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        unsigned long long count = 0;
        if (errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED) {
            count = counterType == NVML_VOLATILE_ECC ? gpu->ecc_volatile : gpu->ecc_aggregate;
        }
        return Put(count, eccCounts);
    });
}

// Like Hopper: DRAM and SRAM answer, the older per-unit locations are not supported. The
// scenario's split is of volatile counts; the aggregate counters report the same numbers.
nvmlReturn_t nvmlDeviceGetMemoryErrorCounter(nvmlDevice_t device, nvmlMemoryErrorType_t errorType,
                                             nvmlEccCounterType_t counterType,
                                             nvmlMemoryLocation_t locationType,
                                             unsigned long long* count) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (errorType >= NVML_MEMORY_ERROR_TYPE_COUNT ||
            counterType >= NVML_ECC_COUNTER_TYPE_COUNT ||
            locationType >= NVML_MEMORY_LOCATION_COUNT) {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        const bool uncorrected = errorType == NVML_MEMORY_ERROR_TYPE_UNCORRECTED;
        if (locationType == NVML_MEMORY_LOCATION_DRAM) {
            return Put<unsigned long long>(uncorrected ? gpu->ecc_dram : 0, count);
        }
        if (locationType == NVML_MEMORY_LOCATION_SRAM) {
            return Put<unsigned long long>(uncorrected ? gpu->ecc_sram : 0, count);
        }
        return NVML_ERROR_NOT_SUPPORTED;
    });
}

nvmlReturn_t nvmlDeviceGetRemappedRows(nvmlDevice_t device, unsigned int* corrRows,
                                       unsigned int* uncRows, unsigned int* isPending,
                                       unsigned int* failureOccurred) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (corrRows == nullptr || uncRows == nullptr || isPending == nullptr ||
            failureOccurred == nullptr) {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        *corrRows = gpu->rows_correctable;
        *uncRows = gpu->rows_uncorrectable;
        *isPending = gpu->rows_pending ? 1 : 0;
        *failureOccurred = gpu->rows_failure ? 1 : 0;
        return NVML_SUCCESS;
    });
}

// NVML's sizing protocol: a buffer smaller than the count gets NVML_ERROR_INSUFFICIENT_SIZE and
// the count; otherwise the pages and NVML_SUCCESS.
nvmlReturn_t nvmlDeviceGetRetiredPages_v2(nvmlDevice_t device, nvmlPageRetirementCause_t cause,
                                          unsigned int* pageCount, unsigned long long* addresses,
                                          unsigned long long* timestamps) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (pageCount == nullptr || cause >= NVML_PAGE_RETIREMENT_CAUSE_COUNT) {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        const unsigned n =
            cause == NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR ? gpu->retired_dbe : 0;
        if (*pageCount < n) {
            *pageCount = n;
            return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        for (unsigned i = 0; i < n; ++i) {
            if (addresses != nullptr) addresses[i] = 0x1000ULL * (i + 1);
            if (timestamps != nullptr) timestamps[i] = 1700000000ULL + i;
        }
        *pageCount = n;
        return NVML_SUCCESS;
    });
}

nvmlReturn_t nvmlDeviceGetRetiredPagesPendingStatus(nvmlDevice_t device,
                                                    nvmlEnableState_t* isPending) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        return Put(gpu->retired_pending ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED, isPending);
    });
}

// Only NVML_FI_DEV_GET_GPU_RECOVERY_ACTION is known; other fields answer NOT_SUPPORTED.
nvmlReturn_t nvmlDeviceGetFieldValues(nvmlDevice_t device, int valuesCount,
                                      nvmlFieldValue_t* values) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (valuesCount < 0 || (valuesCount > 0 && values == nullptr)) {
            return NVML_ERROR_INVALID_ARGUMENT;
        }
        const long long now = std::chrono::duration_cast<std::chrono::microseconds>(
                                  std::chrono::system_clock::now().time_since_epoch())
                                  .count();
        for (int i = 0; i < valuesCount; ++i) {
            nvmlFieldValue_t& v = values[i];
            v.timestamp = now;
            v.latencyUsec = 0;
            if (v.fieldId == NVML_FI_DEV_GET_GPU_RECOVERY_ACTION) {
                v.valueType = NVML_VALUE_TYPE_UNSIGNED_INT;
                v.nvmlReturn = NVML_SUCCESS;
                v.value.uiVal = gpu->recovery_action;
            } else {
                v.nvmlReturn = NVML_ERROR_NOT_SUPPORTED;
            }
        }
        return NVML_SUCCESS;
    });
}

// ---- PCIe ---------------------------------------------------------------------------------------

nvmlReturn_t nvmlDeviceGetCurrPcieLinkGeneration(nvmlDevice_t device,
                                                 unsigned int* currLinkGen) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, { return Put(gpu->pcie_gen, currLinkGen); });
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkGeneration(nvmlDevice_t device,
                                                unsigned int* maxLinkGen) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, { return Put(gpu->pcie_gen_max, maxLinkGen); });
}

nvmlReturn_t nvmlDeviceGetCurrPcieLinkWidth(nvmlDevice_t device,
                                            unsigned int* currLinkWidth) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, { return Put(gpu->pcie_width, currLinkWidth); });
}

nvmlReturn_t nvmlDeviceGetMaxPcieLinkWidth(nvmlDevice_t device,
                                           unsigned int* maxLinkWidth) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, { return Put(gpu->pcie_width_max, maxLinkWidth); });
}

// ---- NVLink -------------------------------------------------------------------------------------

// A GPU without links answers NOT_SUPPORTED; a link past the last one INVALID_ARGUMENT.
nvmlReturn_t nvmlDeviceGetNvLinkState(nvmlDevice_t device, unsigned int link,
                                      nvmlEnableState_t* isActive) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (gpu->links.empty()) return NVML_ERROR_NOT_SUPPORTED;
        if (link >= gpu->links.size()) return NVML_ERROR_INVALID_ARGUMENT;
        return Put(gpu->links[link].active ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED,
                   isActive);
    });
}

nvmlReturn_t nvmlDeviceGetNvLinkErrorCounter(nvmlDevice_t device, unsigned int link,
                                             nvmlNvLinkErrorCounter_t counter,
                                             unsigned long long* counterValue) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (gpu->links.empty()) return NVML_ERROR_NOT_SUPPORTED;
        if (link >= gpu->links.size()) return NVML_ERROR_INVALID_ARGUMENT;
        const Link& l = gpu->links[link];
        switch (counter) {
            case NVML_NVLINK_ERROR_DL_REPLAY:
                return Put<unsigned long long>(l.replay, counterValue);
            case NVML_NVLINK_ERROR_DL_RECOVERY:
                return Put<unsigned long long>(l.recovery, counterValue);
            case NVML_NVLINK_ERROR_DL_CRC_FLIT:
                return Put<unsigned long long>(l.crc_flit, counterValue);
            case NVML_NVLINK_ERROR_DL_CRC_DATA:
            case NVML_NVLINK_ERROR_DL_ECC_DATA:
                return Put<unsigned long long>(0, counterValue);
            default:
                return NVML_ERROR_INVALID_ARGUMENT;
        }
    });
}

// The scenario's reasons, with HW slowdown in its share of each period.
unsigned long long CurrentReasons(const Gpu& gpu) {
    const Telemetry& t = gpu.telemetry;
    const bool slowed = t.hw_slowdown_percent > 0 &&
                        InShare(ScenarioSeconds(), t.period_seconds, t.hw_slowdown_percent);
    return gpu.clock_event_reasons | (slowed ? nvmlClocksEventReasonHwSlowdown : 0);
}

// ---- Thermal, clocks, processes, memory ---------------------------------------------------------

nvmlReturn_t nvmlDeviceGetTemperature(nvmlDevice_t device, nvmlTemperatureSensors_t sensorType,
                                      unsigned int* temp) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (sensorType != NVML_TEMPERATURE_GPU) return NVML_ERROR_INVALID_ARGUMENT;
        // The scenario's value as written (a test may give one no GPU reports) unless it rises.
        if (gpu->telemetry.temperature_rise_c_per_minute <= 0) return Put(gpu->temperature_c, temp);
        const double rise = gpu->telemetry.temperature_rise_c_per_minute * ScenarioSeconds() / 60;
        const double cap = gpu->slowdown_temperature_c + 10.0;
        return Put(static_cast<unsigned>(std::min(gpu->temperature_c + rise, cap)), temp);
    });
}

nvmlReturn_t nvmlDeviceGetTemperatureThreshold(nvmlDevice_t device,
                                               nvmlTemperatureThresholds_t thresholdType,
                                               unsigned int* temp) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        switch (thresholdType) {
            case NVML_TEMPERATURE_THRESHOLD_SLOWDOWN:
                return Put(gpu->slowdown_temperature_c, temp);
            case NVML_TEMPERATURE_THRESHOLD_SHUTDOWN:
                return Put(gpu->slowdown_temperature_c + 2, temp);
            case NVML_TEMPERATURE_THRESHOLD_GPU_MAX:
                return Put(gpu->slowdown_temperature_c - 3, temp);
            default:
                return NVML_ERROR_NOT_SUPPORTED;
        }
    });
}

nvmlReturn_t nvmlDeviceGetCurrentClocksEventReasons(
    nvmlDevice_t device, unsigned long long* clocksEventReasons) noexcept {
    return FAKE_NVML_DEVICE_QUERY(
        device, { return Put<unsigned long long>(CurrentReasons(*gpu), clocksEventReasons); });
}

nvmlReturn_t nvmlDeviceGetCurrentClocksThrottleReasons(
    nvmlDevice_t device, unsigned long long* clocksThrottleReasons) noexcept {
    return FAKE_NVML_DEVICE_QUERY(
        device, { return Put<unsigned long long>(CurrentReasons(*gpu), clocksThrottleReasons); });
}

nvmlReturn_t nvmlDeviceGetPersistenceMode(nvmlDevice_t device, nvmlEnableState_t* mode) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        return Put(gpu->persistence_mode ? NVML_FEATURE_ENABLED : NVML_FEATURE_DISABLED, mode);
    });
}

// The same sizing protocol as nvmlDeviceGetRetiredPages_v2.
nvmlReturn_t nvmlDeviceGetComputeRunningProcesses_v3(nvmlDevice_t device, unsigned int* infoCount,
                                                     nvmlProcessInfo_t* infos) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (infoCount == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        const unsigned n = gpu->processes;
        if (*infoCount < n) {
            *infoCount = n;
            return NVML_ERROR_INSUFFICIENT_SIZE;
        }
        if (n > 0 && infos == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        for (unsigned i = 0; i < n; ++i) {
            infos[i].pid = 4000 + 100 * gpu->index + i;
            infos[i].usedGpuMemory = gpu->memory_used / n;
            infos[i].gpuInstanceId = 0xFFFFFFFFu;
            infos[i].computeInstanceId = 0xFFFFFFFFu;
        }
        *infoCount = n;
        return NVML_SUCCESS;
    });
}

nvmlReturn_t nvmlDeviceGetMemoryInfo(nvmlDevice_t device, nvmlMemory_t* memory) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (memory == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        memory->total = gpu->memory_total;
        memory->used = gpu->memory_used;
        memory->free =
            gpu->memory_total > gpu->memory_used ? gpu->memory_total - gpu->memory_used : 0;
        return NVML_SUCCESS;
    });
}

nvmlReturn_t nvmlDeviceGetUtilizationRates(nvmlDevice_t device,
                                           nvmlUtilization_t* utilization) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (utilization == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        utilization->gpu = gpu->utilization_gpu;
        utilization->memory = gpu->utilization_memory;
        return NVML_SUCCESS;
    });
}

// ---- Power and clocks over time (SCENARIO.md, "telemetry") -----------------------------------

nvmlReturn_t nvmlDeviceGetPowerUsage(nvmlDevice_t device, unsigned int* power) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        const Telemetry& t = gpu->telemetry;
        constexpr double kTwoPi = 6.283185307179586;
        const double watts =
            t.power_watts +
            t.power_swing_watts * std::sin(kTwoPi * ScenarioSeconds() / t.period_seconds);
        return Put(static_cast<unsigned>(watts * 1000), power);
    });
}

nvmlReturn_t nvmlDeviceGetClockInfo(nvmlDevice_t device, nvmlClockType_t type,
                                    unsigned int* clock) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (type != NVML_CLOCK_SM && type != NVML_CLOCK_GRAPHICS) return NVML_ERROR_NOT_SUPPORTED;
        return Put(gpu->telemetry.sm_clock_mhz, clock);
    });
}

// The violation counters grow at their share of wall time from t = 0.
nvmlReturn_t nvmlDeviceGetViolationStatus(nvmlDevice_t device, nvmlPerfPolicyType_t perfPolicyType,
                                          nvmlViolationTime_t* violTime) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (violTime == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        double percent = 0;
        if (perfPolicyType == NVML_PERF_POLICY_POWER) {
            percent = gpu->telemetry.power_violation_percent;
        } else if (perfPolicyType == NVML_PERF_POLICY_THERMAL) {
            percent = gpu->telemetry.thermal_violation_percent;
        } else {
            return NVML_ERROR_NOT_SUPPORTED;
        }
        const auto now = std::chrono::system_clock::now().time_since_epoch();
        violTime->referenceTime = static_cast<unsigned long long>(
            std::chrono::duration_cast<std::chrono::microseconds>(now).count());
        violTime->violationTime =
            static_cast<unsigned long long>(ScenarioSeconds() * 1e9 * percent / 100);
        return NVML_SUCCESS;
    });
}

// ---- Events -------------------------------------------------------------------------------------
// An event set holds the GPUs registered for Xid events and how many of the scenario's
// xid_events it has handed out. Each wait reads the scenario file again (a test appends events
// while a watcher waits) and hands out the next event of a registered GPU, else sleeps
// `timeoutms` and answers NVML_ERROR_TIMEOUT, as NVML does. The set is the caller's to free.

struct nvmlEventSet_st {
    std::set<unsigned> gpus;  // indexes registered for nvmlEventTypeXidCriticalError
    std::size_t delivered = 0;
};

nvmlReturn_t nvmlEventSetCreate(nvmlEventSet_t* set) noexcept {
    return Guard(__func__, [&](const char* call) -> nvmlReturn_t {
        if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
        if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        MaybeHang(call, -1);
        *set = new (std::nothrow) nvmlEventSet_st;
        return *set != nullptr ? NVML_SUCCESS : NVML_ERROR_MEMORY;
    });
}

nvmlReturn_t nvmlDeviceRegisterEvents(nvmlDevice_t device, unsigned long long eventTypes,
                                      nvmlEventSet_t set) noexcept {
    return FAKE_NVML_DEVICE_QUERY(device, {
        if (set == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        if ((eventTypes & ~nvmlEventTypeXidCriticalError) != 0) return NVML_ERROR_NOT_SUPPORTED;
        set->gpus.insert(gpu->index);
        return NVML_SUCCESS;
    });
}

nvmlReturn_t nvmlEventSetWait_v2(nvmlEventSet_t set, nvmlEventData_t* data,
                                 unsigned int timeoutms) noexcept {
    return Guard(__func__, [&](const char* call) -> nvmlReturn_t {
        if (g_init_count == 0) return NVML_ERROR_UNINITIALIZED;
        if (set == nullptr || data == nullptr) return NVML_ERROR_INVALID_ARGUMENT;
        MaybeHang(call, -1);
        std::vector<XidEvent> events;
        if (const std::string path = ScenarioPath(); !path.empty()) {
            std::ifstream in(path);
            std::stringstream text;
            text << in.rdbuf();
            try {
                events = ParseScenario(text.str()).xid_events;
            } catch (const std::exception&) {
                // A file being rewritten: no new event this wait (nvmlInit_v2 checked it whole).
            }
        }
        while (set->delivered < events.size()) {
            const XidEvent& e = events[set->delivered++];
            if (set->gpus.count(e.gpu) == 0 || e.gpu >= g_scenario.gpus.size()) continue;
            data->device =
                reinterpret_cast<nvmlDevice_t>(const_cast<Gpu*>(&g_scenario.gpus[e.gpu]));
            data->eventType = nvmlEventTypeXidCriticalError;
            data->eventData = e.xid;
            data->gpuInstanceId = 0xFFFFFFFFU;
            data->computeInstanceId = 0xFFFFFFFFU;
            return NVML_SUCCESS;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(timeoutms));
        return NVML_ERROR_TIMEOUT;
    });
}

nvmlReturn_t nvmlEventSetFree(nvmlEventSet_t set) noexcept {
    return Guard(__func__, [&](const char* call) -> nvmlReturn_t {
        MaybeHang(call, -1);
        delete set;
        return NVML_SUCCESS;
    });
}
