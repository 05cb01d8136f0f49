// CollectSnapshot: NVML through dlopen/dlsym, one GpuSnapshot per NVML index. Every query that
// fails leaves its value unset and adds "<function>: <NVML error string>" to that GPU's errors
// (once per function and error); nothing here throws.
#include "autoheal/health/nvml_backend.h"

#include <dlfcn.h>

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <utility>
#include <vector>

#include "nvml_api.h"
#include "nvml_library.h"

namespace autoheal::health {
namespace {

using nvml::Api;

// NVML's "Function Not Found" text, for symbols an older library does not export.
constexpr const char* kFunctionNotFound = "Function Not Found";

// Reads the queries of one GPU into `gpu`.
class GpuReader {
  public:
    GpuReader(const Api& api, nvmlDevice_t device, GpuSnapshot* gpu)
        : api_(api), device_(device), gpu_(*gpu) {}

    void ReadAll() {
        ReadIdentity();
        ReadEcc();
        ReadRemappedRows();
        ReadRetiredPages();
        ReadRecoveryAction();
        ReadPcie();
        ReadNvLinks();
        ReadThermal();
        ReadClockEvents();
        ReadPersistence();
        ReadProcesses();
        ReadMemory();
        ReadUtilization();
    }

    // The few queries autoheal-agent samples while a job runs (Scope::kTelemetry).
    void ReadTelemetry() { ReadSampled(); }  // defined below the NVML call macro

  private:
    void AddError(const char* function, const std::string& why) {
        std::string line = std::string(function) + ": " + why;
        if (std::find(gpu_.errors.begin(), gpu_.errors.end(), line) == gpu_.errors.end()) {
            gpu_.errors.push_back(std::move(line));
        }
    }

    // Calls fn(device, args...); true on NVML_SUCCESS (or `also_ok`), else records
    // the error. A missing symbol is recorded as NVML's "Function Not Found".
    template <typename Fn, typename... Args>
    bool Call(const char* name, Fn fn, Args... args) {
        return CallAllowing(name, NVML_SUCCESS, fn, args...);
    }
    template <typename Fn, typename... Args>
    bool CallAllowing(const char* name, nvmlReturn_t also_ok, Fn fn, Args... args) {
        if (fn == nullptr) {
            AddError(name, kFunctionNotFound);
            return false;
        }
        const nvmlReturn_t rc = fn(device_, args...);
        if (rc == NVML_SUCCESS || rc == also_ok) return true;
        AddError(name, ErrorText(api_, rc));
        return false;
    }

#define AUTOHEAL_NVML_CALL(fn, ...) Call(#fn, api_.fn, __VA_ARGS__)

    void ReadIdentity() {
        char name[NVML_DEVICE_NAME_V2_BUFFER_SIZE] = {};
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetName, name, unsigned{sizeof(name)})) {
            gpu_.name = FromBuffer(name, sizeof(name));
        }
        char uuid[NVML_DEVICE_UUID_V2_BUFFER_SIZE] = {};
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetUUID, uuid, unsigned{sizeof(uuid)})) {
            gpu_.uuid = FromBuffer(uuid, sizeof(uuid));
        }
        nvmlPciInfo_t pci = {};
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetPciInfo_v3, &pci)) {
            pci.busId[sizeof(pci.busId) - 1] = '\0';
            gpu_.pci_bus_id = NormalizeBusId(pci.busId);
        }
        char serial[NVML_DEVICE_SERIAL_BUFFER_SIZE] = {};
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetSerial, serial, unsigned{sizeof(serial)})) {
            gpu_.serial = FromBuffer(serial, sizeof(serial));
        }
        unsigned minor = 0;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetMinorNumber, &minor)) gpu_.minor = minor;
    }

    void ReadEcc() {
        unsigned long long count = 0;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetTotalEccErrors, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                               NVML_VOLATILE_ECC, &count)) {
            gpu_.ecc_uncorrected_volatile = count;
        }
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetTotalEccErrors, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                               NVML_AGGREGATE_ECC, &count)) {
            gpu_.ecc_uncorrected_aggregate = count;
        }

        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetMemoryErrorCounter, NVML_MEMORY_ERROR_TYPE_UNCORRECTED,
                               NVML_VOLATILE_ECC, NVML_MEMORY_LOCATION_DEVICE_MEMORY, &count)) {
            gpu_.ecc_uncorrected_dram = count;
        }
        // On-chip memories: each GPU generation reports a different subset of these locations
        // (Ampere and newer only SRAM), so the sum is over those that answer; an error is
        // recorded only when none does.
        if (api_.nvmlDeviceGetMemoryErrorCounter == nullptr) return;
        static constexpr nvmlMemoryLocation_t kSram[] = {
            NVML_MEMORY_LOCATION_SRAM,           NVML_MEMORY_LOCATION_L1_CACHE,
            NVML_MEMORY_LOCATION_L2_CACHE,       NVML_MEMORY_LOCATION_REGISTER_FILE,
            NVML_MEMORY_LOCATION_TEXTURE_MEMORY, NVML_MEMORY_LOCATION_TEXTURE_SHM,
        };
        std::uint64_t sum = 0;
        bool any = false;
        nvmlReturn_t first_error = NVML_SUCCESS;
        for (nvmlMemoryLocation_t location : kSram) {
            count = 0;
            const nvmlReturn_t rc = api_.nvmlDeviceGetMemoryErrorCounter(
                device_, NVML_MEMORY_ERROR_TYPE_UNCORRECTED, NVML_VOLATILE_ECC, location, &count);
            if (rc == NVML_SUCCESS) {
                sum += count;
                any = true;
            } else if (first_error == NVML_SUCCESS) {
                first_error = rc;
            }
        }
        if (any) {
            gpu_.ecc_uncorrected_sram = sum;
        } else {
            AddError("nvmlDeviceGetMemoryErrorCounter", ErrorText(api_, first_error));
        }
    }

    void ReadRemappedRows() {
        unsigned corrected = 0, uncorrected = 0, pending = 0, failure = 0;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetRemappedRows, &corrected, &uncorrected, &pending,
                               &failure)) {
            gpu_.remapped_rows = RemappedRows{corrected, uncorrected, pending != 0, failure != 0};
        }
    }

    void ReadRetiredPages() {
        // A count query: with a zero-sized buffer NVML answers NVML_ERROR_INSUFFICIENT_SIZE and
        // the count when there are pages, NVML_SUCCESS when there are none.
        unsigned count = 0;
        if (CallAllowing("nvmlDeviceGetRetiredPages_v2", NVML_ERROR_INSUFFICIENT_SIZE,
                         api_.nvmlDeviceGetRetiredPages_v2,
                         NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR, &count,
                         static_cast<unsigned long long*>(nullptr),
                         static_cast<unsigned long long*>(nullptr))) {
            gpu_.retired_pages_dbe = count;
        }
        nvmlEnableState_t pending = NVML_FEATURE_DISABLED;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetRetiredPagesPendingStatus, &pending)) {
            gpu_.retired_pages_pending = pending == NVML_FEATURE_ENABLED;
        }
    }

    void ReadRecoveryAction() {
        nvmlFieldValue_t value = {};
        value.fieldId = NVML_FI_DEV_GET_GPU_RECOVERY_ACTION;
        if (!AUTOHEAL_NVML_CALL(nvmlDeviceGetFieldValues, 1, &value)) return;
        // Drivers older than the field answer per field (NOT_SUPPORTED or INVALID_ARGUMENT).
        if (value.nvmlReturn != NVML_SUCCESS) {
            AddError("nvmlDeviceGetFieldValues", ErrorText(api_, value.nvmlReturn));
            return;
        }
        switch (value.valueType) {
            case NVML_VALUE_TYPE_UNSIGNED_INT:
                gpu_.recovery_action = value.value.uiVal;
                break;
            case NVML_VALUE_TYPE_UNSIGNED_LONG:
                gpu_.recovery_action = static_cast<unsigned>(value.value.ulVal);
                break;
            case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG:
                gpu_.recovery_action = static_cast<unsigned>(value.value.ullVal);
                break;
            case NVML_VALUE_TYPE_SIGNED_INT:
                gpu_.recovery_action = static_cast<unsigned>(value.value.siVal);
                break;
            case NVML_VALUE_TYPE_SIGNED_LONG_LONG:
                gpu_.recovery_action = static_cast<unsigned>(value.value.sllVal);
                break;
            case NVML_VALUE_TYPE_UNSIGNED_SHORT:
                gpu_.recovery_action = value.value.usVal;
                break;
            default:
                AddError("nvmlDeviceGetFieldValues",
                         "unexpected value type " + std::to_string(value.valueType));
        }
    }

    void ReadPcie() {
        unsigned v = 0;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetCurrPcieLinkGeneration, &v)) gpu_.pcie_gen = v;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetMaxPcieLinkGeneration, &v)) gpu_.pcie_gen_max = v;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetCurrPcieLinkWidth, &v)) gpu_.pcie_width = v;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetMaxPcieLinkWidth, &v)) gpu_.pcie_width_max = v;
    }

    // Links are numbered from 0; the first link NVML calls an invalid argument (past the last
    // link) or not supported (a GPU without NVLink) ends the list and is not an error.
    void ReadNvLinks() {
        if (api_.nvmlDeviceGetNvLinkState == nullptr) {
            AddError("nvmlDeviceGetNvLinkState", kFunctionNotFound);
            return;
        }
        for (unsigned link = 0; link < NVML_NVLINK_MAX_LINKS; ++link) {
            nvmlEnableState_t active = NVML_FEATURE_DISABLED;
            const nvmlReturn_t rc = api_.nvmlDeviceGetNvLinkState(device_, link, &active);
            if (rc == NVML_ERROR_INVALID_ARGUMENT || rc == NVML_ERROR_NOT_SUPPORTED) break;
            if (rc != NVML_SUCCESS) {
                AddError("nvmlDeviceGetNvLinkState", ErrorText(api_, rc));
                break;
            }
            NvLinkState state;
            state.link = link;
            state.active = active == NVML_FEATURE_ENABLED;
            state.crc_flit_errors = Counter(link, NVML_NVLINK_ERROR_DL_CRC_FLIT);
            state.replay_errors = Counter(link, NVML_NVLINK_ERROR_DL_REPLAY);
            state.recovery_errors = Counter(link, NVML_NVLINK_ERROR_DL_RECOVERY);
            gpu_.nvlinks.push_back(state);
        }
    }

    // 0 when the counter cannot be read (recorded in errors).
    std::uint64_t Counter(unsigned link, nvmlNvLinkErrorCounter_t counter) {
        unsigned long long value = 0;
        if (!AUTOHEAL_NVML_CALL(nvmlDeviceGetNvLinkErrorCounter, link, counter, &value)) return 0;
        return value;
    }

    void ReadThermal() {
        unsigned t = 0;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetTemperature, NVML_TEMPERATURE_GPU, &t)) {
            gpu_.temperature_c = t;
        }
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetTemperatureThreshold,
                               NVML_TEMPERATURE_THRESHOLD_SLOWDOWN, &t)) {
            gpu_.slowdown_temperature_c = t;
        }
    }

    // nvmlDeviceGetCurrentClocksEventReasons is the R535+ name of the same query.
    void ReadClockEvents() {
        unsigned long long reasons = 0;
        if (api_.nvmlDeviceGetCurrentClocksEventReasons != nullptr ||
            api_.nvmlDeviceGetCurrentClocksThrottleReasons == nullptr) {
            if (AUTOHEAL_NVML_CALL(nvmlDeviceGetCurrentClocksEventReasons, &reasons)) {
                gpu_.clock_event_reasons = reasons;
            }
            return;
        }
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetCurrentClocksThrottleReasons, &reasons)) {
            gpu_.clock_event_reasons = reasons;
        }
    }

    void ReadPersistence() {
        nvmlEnableState_t mode = NVML_FEATURE_DISABLED;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetPersistenceMode, &mode)) {
            gpu_.persistence_mode = mode == NVML_FEATURE_ENABLED;
        }
    }

    void ReadProcesses() {
        // A count query, as for retired pages.
        unsigned count = 0;
        if (CallAllowing("nvmlDeviceGetComputeRunningProcesses_v3", NVML_ERROR_INSUFFICIENT_SIZE,
                         api_.nvmlDeviceGetComputeRunningProcesses_v3, &count,
                         static_cast<nvmlProcessInfo_t*>(nullptr))) {
            gpu_.compute_processes = count;
        }
    }

    void ReadMemory() {
        nvmlMemory_t memory = {};
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetMemoryInfo, &memory)) {
            gpu_.memory_used_bytes = memory.used;
            gpu_.memory_total_bytes = memory.total;
        }
    }

    void ReadUtilization() {
        nvmlUtilization_t utilization = {};
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetUtilizationRates, &utilization)) {
            gpu_.utilization_gpu = utilization.gpu;
            gpu_.utilization_memory = utilization.memory;
        }
    }

    void ReadSampled() {
        nvmlPciInfo_t pci = {};
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetPciInfo_v3, &pci)) {
            pci.busId[sizeof(pci.busId) - 1] = '\0';
            gpu_.pci_bus_id = NormalizeBusId(pci.busId);
        }
        unsigned minor = 0;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetMinorNumber, &minor)) gpu_.minor = minor;
        unsigned t = 0;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetTemperature, NVML_TEMPERATURE_GPU, &t)) {
            gpu_.temperature_c = t;
        }
        ReadClockEvents();
        ReadPower();
    }

    void ReadPower() {
        unsigned value = 0;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetPowerUsage, &value)) gpu_.power_mw = value;
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetClockInfo, NVML_CLOCK_SM, &value)) {
            gpu_.sm_clock_mhz = value;
        }
        nvmlViolationTime_t v = {};
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetViolationStatus, NVML_PERF_POLICY_POWER, &v)) {
            gpu_.power_violation_ns = v.violationTime;
        }
        if (AUTOHEAL_NVML_CALL(nvmlDeviceGetViolationStatus, NVML_PERF_POLICY_THERMAL, &v)) {
            gpu_.thermal_violation_ns = v.violationTime;
        }
    }

#undef AUTOHEAL_NVML_CALL

    const Api& api_;
    nvmlDevice_t device_;
    GpuSnapshot& gpu_;
};

std::string SystemString(nvmlReturn_t (*fn)(char*, unsigned), unsigned size) {
    if (fn == nullptr) return "";
    std::vector<char> buf(size, '\0');
    if (fn(buf.data(), size) != NVML_SUCCESS) return "";
    return FromBuffer(buf.data(), buf.size());
}

void ReadGpus(const Api& api, Scope scope, NodeSnapshot* node) {
    unsigned count = 0;
    const nvmlReturn_t rc = api.nvmlDeviceGetCount_v2(&count);
    if (rc != NVML_SUCCESS) {
        node->problem = "nvmlDeviceGetCount_v2: " + ErrorText(api, rc);
        return;
    }
    for (unsigned i = 0; i < count; ++i) {
        GpuSnapshot gpu;
        gpu.index = i;
        nvmlDevice_t device = nullptr;
        const nvmlReturn_t h = api.nvmlDeviceGetHandleByIndex_v2(i, &device);
        if (h == NVML_SUCCESS) {
            GpuReader reader(api, device, &gpu);
            if (scope == Scope::kTelemetry) {
                reader.ReadTelemetry();
            } else {
                reader.ReadAll();
            }
        } else {
            // Kept, so that a GPU that fell off the bus still shows up at its index.
            gpu.errors.push_back("nvmlDeviceGetHandleByIndex_v2: " + ErrorText(api, h));
        }
        node->gpus.push_back(std::move(gpu));
    }
}

NodeSnapshot Collect(const std::string& library, Scope scope) {
    NodeSnapshot node;
    NvmlLibrary lib(library);
    if (!lib.loaded()) {
        node.problem = "no NVIDIA driver: " + lib.error();
        return node;
    }
    Api api;
    lib.Resolve(&api);
    if (api.nvmlInit_v2 == nullptr) {
        node.problem = "no NVIDIA driver: " + lib.SymbolError("nvmlInit_v2");
        return node;
    }
    const char* missing = api.nvmlShutdown == nullptr            ? "nvmlShutdown"
                          : api.nvmlDeviceGetCount_v2 == nullptr ? "nvmlDeviceGetCount_v2"
                          : api.nvmlDeviceGetHandleByIndex_v2 == nullptr
                              ? "nvmlDeviceGetHandleByIndex_v2"
                              : nullptr;
    if (missing != nullptr) {
        node.problem = "unusable NVML library: " + lib.SymbolError(missing);
        return node;
    }

    const nvmlReturn_t rc = api.nvmlInit_v2();
    if (rc != NVML_SUCCESS) {
        const std::string why = "nvmlInit_v2: " + ErrorText(api, rc);
        switch (rc) {
            case NVML_ERROR_LIB_RM_VERSION_MISMATCH:
                node.problem = "driver/library version mismatch: " + why;
                break;
            case NVML_ERROR_DRIVER_NOT_LOADED:
                node.problem = "NVIDIA driver not loaded: " + why;
                break;
            default:
                node.problem = "NVML initialisation failed: " + why;
        }
        return node;
    }
    node.driver_present = true;
    node.driver_version =
        SystemString(api.nvmlSystemGetDriverVersion, NVML_SYSTEM_DRIVER_VERSION_BUFFER_SIZE);
    node.nvml_version =
        SystemString(api.nvmlSystemGetNVMLVersion, NVML_SYSTEM_NVML_VERSION_BUFFER_SIZE);
    ReadGpus(api, scope, &node);
    api.nvmlShutdown();
    return node;
}

}  // namespace

NodeSnapshot CollectSnapshot(const std::string& library, Scope scope) {
    try {
        return Collect(library, scope);
    } catch (const std::exception& e) {
        NodeSnapshot node;
        node.problem = std::string("NVML query failed: ") + e.what();
        return node;
    } catch (...) {
        NodeSnapshot node;
        node.problem = "NVML query failed";
        return node;
    }
}

}  // namespace autoheal::health
