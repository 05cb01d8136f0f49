// The fake NVML's scenario (tests/fakes/SCENARIO.md): what the fake libnvidia-ml.so.1 answers,
// and the parser of scenario files. Apart from the library so that the parser can be fuzzed
// (tests/fuzz/fuzz_nvml_scenario.cpp).
#pragma once

#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "nvml_api.h"

namespace autoheal::fake_nvml {

struct Link {
    bool active = true;
    std::uint64_t crc_flit = 0;
    std::uint64_t replay = 0;
    std::uint64_t recovery = 0;
};

// Power, clocks and throttling over time (the "telemetry" key; autoheal-agent samples them).
// t: seconds since the scenario file was written (its mtime; 0 for the built-in scenario).
struct Telemetry {
    double power_watts = 350;                  // mean draw
    double power_swing_watts = 0;              // + swing * sin(2 pi t / period)
    double period_seconds = 60;                // of the power swing and of hw_slowdown_percent
    double temperature_rise_c_per_minute = 0;  // temperature_c + rise * t / 60, capped
    unsigned sm_clock_mhz = 1980;
    double power_violation_percent = 0;    // the POWER violation counter grows at this share
    double thermal_violation_percent = 0;  // of wall time; THERMAL likewise
    double hw_slowdown_percent = 0;        // share of each period with the HW slowdown reason set
};

struct Gpu {
    unsigned index = 0;
    std::string name;
    std::string uuid;
    std::string pci_bus_id;  // as in the scenario: "0000:1n:00.0"
    unsigned pci_domain = 0, pci_bus = 0, pci_device = 0, pci_function = 0;
    std::string serial;
    unsigned minor = 0;
    std::uint64_t ecc_volatile = 0, ecc_aggregate = 0, ecc_dram = 0, ecc_sram = 0;
    unsigned rows_correctable = 0, rows_uncorrectable = 0;
    bool rows_pending = false, rows_failure = false;
    unsigned retired_dbe = 0;
    bool retired_pending = false;
    unsigned recovery_action = 0;
    unsigned pcie_gen = 5, pcie_gen_max = 5, pcie_width = 16, pcie_width_max = 16;
    std::vector<Link> links;
    unsigned temperature_c = 35, slowdown_temperature_c = 90;
    std::uint64_t clock_event_reasons = 0;
    bool persistence_mode = true;
    unsigned processes = 0;
    std::uint64_t memory_used = 0, memory_total = 85520809984ULL;
    unsigned utilization_gpu = 0, utilization_memory = 0;  // percent; idle
    Telemetry telemetry;
    std::set<std::string> unsupported;
};

struct Hang {
    std::string call;
    std::optional<unsigned> gpu;
    double seconds = 3600;
    bool crash = false;  // "crash": the call kills the process (SIGSEGV) instead of sleeping
};

// An Xid the driver reports through NVML's event API (the "xid_events" key): on GPU `gpu` (its
// index). A waiting event set gets each listed event once, in order (the file is read again at
// each wait, so a test appends events while a watcher waits).
struct XidEvent {
    unsigned gpu = 0;
    unsigned long long xid = 0;
};

struct Scenario {
    double origin = 0;  // when t = 0, seconds since 1970 (the scenario file's mtime)
    std::string driver_version = "550.54.15";
    std::string nvml_version = "12.550.54.15";
    std::optional<nvmlReturn_t> init_error;
    std::optional<Hang> hang;
    std::vector<Gpu> gpus;
    std::vector<XidEvent> xid_events;
};

// NVML's names and (approximately) its nvmlErrorString texts.
struct ReturnName {
    nvmlReturn_t value;
    const char* name;
    const char* text;
};
inline constexpr ReturnName kReturns[] = {
    {NVML_SUCCESS, "NVML_SUCCESS", "Success"},
    {NVML_ERROR_UNINITIALIZED, "NVML_ERROR_UNINITIALIZED", "Uninitialized"},
    {NVML_ERROR_INVALID_ARGUMENT, "NVML_ERROR_INVALID_ARGUMENT", "Invalid Argument"},
    {NVML_ERROR_NOT_SUPPORTED, "NVML_ERROR_NOT_SUPPORTED", "Not Supported"},
    {NVML_ERROR_NO_PERMISSION, "NVML_ERROR_NO_PERMISSION", "Insufficient Permissions"},
    {NVML_ERROR_ALREADY_INITIALIZED, "NVML_ERROR_ALREADY_INITIALIZED", "Already Initialized"},
    {NVML_ERROR_NOT_FOUND, "NVML_ERROR_NOT_FOUND", "Not Found"},
    {NVML_ERROR_INSUFFICIENT_SIZE, "NVML_ERROR_INSUFFICIENT_SIZE", "Insufficient Size"},
    {NVML_ERROR_INSUFFICIENT_POWER, "NVML_ERROR_INSUFFICIENT_POWER", "Insufficient External Power"},
    {NVML_ERROR_DRIVER_NOT_LOADED, "NVML_ERROR_DRIVER_NOT_LOADED", "Driver Not Loaded"},
    {NVML_ERROR_TIMEOUT, "NVML_ERROR_TIMEOUT", "Timeout"},
    {NVML_ERROR_IRQ_ISSUE, "NVML_ERROR_IRQ_ISSUE", "Interrupt request issue"},
    {NVML_ERROR_LIBRARY_NOT_FOUND, "NVML_ERROR_LIBRARY_NOT_FOUND", "NVML Shared Library Not Found"},
    {NVML_ERROR_FUNCTION_NOT_FOUND, "NVML_ERROR_FUNCTION_NOT_FOUND", "Function Not Found"},
    {NVML_ERROR_CORRUPTED_INFOROM, "NVML_ERROR_CORRUPTED_INFOROM", "Corrupted infoROM"},
    {NVML_ERROR_GPU_IS_LOST, "NVML_ERROR_GPU_IS_LOST", "GPU is lost"},
    {NVML_ERROR_RESET_REQUIRED, "NVML_ERROR_RESET_REQUIRED", "GPU requires restart"},
    {NVML_ERROR_OPERATING_SYSTEM, "NVML_ERROR_OPERATING_SYSTEM",
     "GPU access blocked by the operating system"},
    {NVML_ERROR_LIB_RM_VERSION_MISMATCH, "NVML_ERROR_LIB_RM_VERSION_MISMATCH",
     "Driver/library version mismatch"},
    {NVML_ERROR_IN_USE, "NVML_ERROR_IN_USE", "In use by another client"},
    {NVML_ERROR_MEMORY, "NVML_ERROR_MEMORY", "Insufficient Memory"},
    {NVML_ERROR_NO_DATA, "NVML_ERROR_NO_DATA", "No data"},
    {NVML_ERROR_VGPU_ECC_NOT_SUPPORTED, "NVML_ERROR_VGPU_ECC_NOT_SUPPORTED",
     "vGPU ECC Not Supported"},
    {NVML_ERROR_INSUFFICIENT_RESOURCES, "NVML_ERROR_INSUFFICIENT_RESOURCES",
     "Insufficient Resources"},
    {NVML_ERROR_FREQ_NOT_SUPPORTED, "NVML_ERROR_FREQ_NOT_SUPPORTED", "Frequency Not Supported"},
    {NVML_ERROR_ARGUMENT_VERSION_MISMATCH, "NVML_ERROR_ARGUMENT_VERSION_MISMATCH",
     "Argument Version Mismatch"},
    {NVML_ERROR_DEPRECATED, "NVML_ERROR_DEPRECATED", "Deprecated"},
    {NVML_ERROR_NOT_READY, "NVML_ERROR_NOT_READY", "Not Ready"},
    {NVML_ERROR_GPU_NOT_FOUND, "NVML_ERROR_GPU_NOT_FOUND", "GPU Not Found"},
    {NVML_ERROR_INVALID_STATE, "NVML_ERROR_INVALID_STATE", "Invalid State"},
    {NVML_ERROR_UNKNOWN, "NVML_ERROR_UNKNOWN", "Unknown Error"},
};

// Bounds a scenario must keep to (more would only exhaust memory or overflow a sleep).
inline constexpr unsigned kMaxNvLinks = 64;
inline constexpr double kMaxHangSeconds = 86400;

// The built-in healthy GPU number i (an H100; serial numbers from $SLURMD_NODENAME).
Gpu HealthyGpu(unsigned i);

// Parses a scenario file's text. Throws std::exception (with a message) when the text is not a
// valid scenario: not JSON, a field of the wrong type or out of its range, an unknown NVML error
// name, a malformed pci_bus_id.
Scenario ParseScenario(const std::string& text);

}  // namespace autoheal::fake_nvml
