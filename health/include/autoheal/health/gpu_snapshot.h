// What NVML says about a node's GPUs at one moment. Filled by the NVML backend (nvml_backend.h)
// in an isolated child process; read by the checks' verdict logic and kept by the prolog as the
// baseline the epilog compares against. Absent values (std::nullopt) mean "NVML could not tell"
// (not supported on this GPU or driver, or the call failed: see `errors`).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace autoheal::health {

struct RemappedRows {
    std::uint32_t correctable = 0;
    std::uint32_t uncorrectable = 0;
    bool pending = false;
    bool failure = false;
};

struct NvLinkState {
    unsigned link = 0;
    bool active = false;
    std::uint64_t crc_flit_errors = 0;  // NVML_NVLINK_ERROR_DL_CRC_FLIT
    std::uint64_t replay_errors = 0;    // NVML_NVLINK_ERROR_DL_REPLAY
    std::uint64_t recovery_errors = 0;  // NVML_NVLINK_ERROR_DL_RECOVERY
};

struct GpuSnapshot {
    unsigned index = 0;      // NVML index
    std::string name;        // "NVIDIA H100 80GB HBM3"
    std::string uuid;        // "GPU-..."
    std::string pci_bus_id;  // normalised "0000:3b:00.0"
    std::string serial;
    std::optional<unsigned> minor;  // /dev/nvidiaN

    // ECC, uncorrected: volatile (since the last driver load) and aggregate (lifetime).
    std::optional<std::uint64_t> ecc_uncorrected_volatile;
    std::optional<std::uint64_t> ecc_uncorrected_aggregate;
    // Split by location where the driver reports it (volatile counts).
    std::optional<std::uint64_t> ecc_uncorrected_dram;  // device memory
    std::optional<std::uint64_t> ecc_uncorrected_sram;  // L1/L2/register file/texture/SRAM
    std::optional<RemappedRows> remapped_rows;
    std::optional<std::uint32_t> retired_pages_dbe;
    std::optional<bool> retired_pages_pending;
    std::optional<unsigned>
        recovery_action;  // 0 none, 1 reset, 2 reboot, 3 drain p2p, 4 drain+reset

    std::optional<unsigned> pcie_gen;
    std::optional<unsigned> pcie_gen_max;
    std::optional<unsigned> pcie_width;
    std::optional<unsigned> pcie_width_max;
    std::vector<NvLinkState> nvlinks;

    std::optional<unsigned> temperature_c;
    std::optional<unsigned> slowdown_temperature_c;
    std::optional<std::uint64_t> clock_event_reasons;  // nvmlClocksEventReason* bit mask
    std::optional<bool> persistence_mode;
    std::optional<unsigned> compute_processes;
    std::optional<std::uint64_t> memory_used_bytes;
    std::optional<std::uint64_t> memory_total_bytes;
    std::optional<unsigned> utilization_gpu;  // percent of the last sample period a kernel ran
    // Percent of the last sample period device memory was read or written.
    std::optional<unsigned> utilization_memory;
    // Power and clocks (autoheal-agent's sampling, gpu_telemetry.h): the board's power draw in
    // milliwatts, the SM clock in MHz, and NVML's violation counters (ns the clocks were held
    // down by the power and the thermal policy since the driver loaded: they only grow).
    std::optional<unsigned> power_mw;
    std::optional<unsigned> sm_clock_mhz;
    std::optional<std::uint64_t> power_violation_ns;
    std::optional<std::uint64_t> thermal_violation_ns;

    std::vector<std::string> errors;  // "nvmlDeviceGetRemappedRows: Not Supported", ...
};

struct NodeSnapshot {
    bool driver_present = false;  // false: no NVIDIA driver / libnvidia-ml on this node
    std::string problem;          // why not, or a driver/library version mismatch
    std::string driver_version;
    std::string nvml_version;
    std::vector<GpuSnapshot> gpus;  // every GPU NVML sees, in NVML index order
};

// clock_event_reasons bits (NVML's nvmlClocksEventReason* values).
inline constexpr std::uint64_t kClocksEventSwPowerCap = 0x4;
inline constexpr std::uint64_t kClocksEventHwSlowdown = 0x8;
inline constexpr std::uint64_t kClocksEventSwThermal = 0x20;
inline constexpr std::uint64_t kClocksEventHwThermal = 0x40;
inline constexpr std::uint64_t kClocksEventHwPowerBrake = 0x80;

// JSON round trip (the child process sends its snapshot to the parent this way, and the prolog
// stores it for the epilog).
std::string SnapshotToJson(const NodeSnapshot& snapshot);
std::optional<NodeSnapshot> SnapshotFromJson(const std::string& json);

}  // namespace autoheal::health
