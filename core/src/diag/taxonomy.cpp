#include "autoheal/diag/taxonomy.h"

#include <array>

namespace autoheal::diag {
namespace {

// After Llama 3's Table 5 (root causes of 419 interruptions), plus what a multi-tenant cluster
// needs (user_error, dependency). See shared FAILURES.md.
constexpr std::array kCauses{
    CauseInfo{"faulty_gpu", "gpu", "the GPU failed or left the bus (Xid 79, 8, 143, lost device)",
              true},
    CauseInfo{"gpu_hbm_memory", "gpu",
              "uncorrectable GPU DRAM/HBM error (Xid 48/94/95, ECC, row-remap failure)", true},
    CauseInfo{"gpu_sram_memory", "gpu", "uncorrectable GPU on-chip SRAM error", true},
    CauseInfo{"gpu_system_processor", "gpu", "GSP/PMU firmware error or timeout (Xid 62/119/120)",
              true},
    CauseInfo{"nvlink", "gpu", "NVLink or NVSwitch error (Xid 74/136/144-150, SXid)", true},
    CauseInfo{"silent_data_corruption", "gpu", "wrong results from a GPU without an error", true},
    CauseInfo{"gpu_thermal", "gpu", "GPU thermal slowdown, interface or sensor fault", true},
    CauseInfo{"network_switch_cable", "network",
              "fabric link, switch port or cable (IB retry-exceeded, link down)", true},
    CauseInfo{"nic", "network", "the node's network adapter (HCA missing, firmware, PCIe)", true},
    CauseInfo{"nccl_timeout", "unknown",
              "NCCL collective timed out and no root cause was found in the evidence", true},
    CauseInfo{"host_cpu", "host", "CPU machine check", true},
    CauseInfo{"host_memory", "host", "host DRAM error (EDAC/MCE memory)", true},
    CauseInfo{"storage", "storage", "local disk or SSD I/O errors", true},
    CauseInfo{"io_network", "storage", "shared filesystem (NFS, Lustre, LNet) timeouts", true},
    CauseInfo{"power_supply", "host", "power supply failure or lost redundancy", true},
    CauseInfo{"server_chassis", "host", "board, riser, fan or chassis fault", true},
    CauseInfo{"host_maintenance", "host", "unplanned host maintenance (missed reboot, config)",
              true},
    CauseInfo{"dependency", "software",
              "driver, fabric manager, NCCL or library outside the job (version mismatch, "
              "service down, config)",
              true},
    CauseInfo{"user_error", "software",
              "the job's own bug: illegal address, out of memory, bad configuration, time limit",
              false},
    CauseInfo{"unknown", "unknown", "no evidence names a cause", false},
};

constexpr std::array kActions{
    ActionInfo{"none", "no action", 0},
    ActionInfo{"drain", "drain the node so no new job lands on it", 1},
    ActionInfo{"reset_gpu", "reset the GPU (nvidia-smi -r) once the node is idle", 2},
    ActionInfo{"reboot", "reboot the node (scontrol reboot ASAP nextstate=resume)", 3},
    ActionInfo{"rma_ticket", "open a hardware (RMA) ticket for the part", 4},
    ActionInfo{"network_ticket", "open a network ticket for the link, cable or switch port", 5},
    ActionInfo{"notify", "tell the admins; change nothing", 6},
};

}  // namespace

std::span<const CauseInfo> Causes() { return kCauses; }
std::span<const ActionInfo> Actions() { return kActions; }

const CauseInfo* FindCause(std::string_view name) {
    for (const CauseInfo& c : kCauses) {
        if (c.name == name) return &c;
    }
    return nullptr;
}

const ActionInfo* FindAction(std::string_view name) {
    for (const ActionInfo& a : kActions) {
        if (a.name == name) return &a;
    }
    return nullptr;
}

}  // namespace autoheal::diag
