// Verdicts on NVML values. Thresholds follow NVIDIA's guidance (FAILURES.md): any uncorrected
// ECC error since driver load, a row-remap failure or a pending remap, retired pages pending,
// a recovery action other than none, a PCIe link below its maximum, an inactive NVLink, a GPU at
// its slowdown temperature, hardware slowdown or power brake, and a previous job's processes.
#include <algorithm>
#include <cstdio>
#include <string>

#include "autoheal/health/check.h"

namespace autoheal::health {
namespace {

CheckResult Make(std::string check, const GpuSnapshot* gpu) {
    CheckResult r;
    r.check = std::move(check);
    if (gpu != nullptr) r.gpu = gpu->pci_bus_id;
    return r;
}

CheckResult Unknown(CheckResult r, const std::string& why) {
    r.status = Status::kUnknown;
    r.summary = why;
    return r;
}

std::string Str(std::uint64_t v) { return std::to_string(v); }

}  // namespace

std::string_view StatusName(Status status) {
    switch (status) {
        case Status::kPass:
            return "pass";
        case Status::kWarn:
            return "warn";
        case Status::kFail:
            return "fail";
        case Status::kUnknown:
            return "unknown";
    }
    return "unknown";
}

const GpuModel* FindModel(const HealthConfig& config, std::string_view gpu_name) {
    for (const GpuModel& m : config.models) {
        if (!m.match.empty() && gpu_name.find(m.match) != std::string_view::npos) return &m;
    }
    return nullptr;
}

const CheckResult* HealthReport::Worst() const {
    for (Status s : {Status::kFail, Status::kUnknown, Status::kWarn}) {
        for (const CheckResult& r : results) {
            if (r.status == s) return &r;
        }
    }
    return nullptr;
}

// NVML answers that no GPU can give (a driver in a bad state, memory corruption) are not
// evidence against the GPU: the check says unknown, never fail.
constexpr std::uint64_t kMaxPlausibleCount = 1ULL << 40;
constexpr unsigned kMaxPlausibleTemperatureC = 200;

CheckResult Implausible(CheckResult r, const std::string& what) {
    r.Set("unreliable", "yes");  // the verdict is unknown, not pass (runner.cpp)
    return Unknown(std::move(r), "NVML returned an implausible " + what);
}

CheckResult CheckDriver(const NodeSnapshot& node) {
    CheckResult r = Make("driver", nullptr);
    if (!node.driver_present) {
        // No driver is not evidence against the node (a CPU node, or NVML not installed);
        // a version mismatch is: no GPU job can run until the node reboots.
        if (node.problem.find("mismatch") != std::string::npos) {
            r.status = Status::kFail;
            r.summary = node.problem;
            return r;
        }
        return Unknown(r, node.problem.empty() ? "no NVIDIA driver" : node.problem);
    }
    r.status = Status::kPass;
    r.summary = "driver " + node.driver_version;
    r.Set("driver_version", node.driver_version);
    return r;
}

CheckResult CheckGpuCount(const NodeSnapshot& node, const std::vector<unsigned>& allocated) {
    CheckResult r = Make("gpu-count", nullptr);
    if (!node.driver_present) return Unknown(r, "no NVIDIA driver");
    r.Set("visible", std::to_string(node.gpus.size()));
    r.Set("allocated", std::to_string(allocated.size()));
    std::vector<unsigned> missing;
    for (unsigned minor : allocated) {
        bool found = std::any_of(node.gpus.begin(), node.gpus.end(), [&](const GpuSnapshot& g) {
            return g.minor.value_or(g.index) == minor;
        });
        if (!found) missing.push_back(minor);
    }
    if (!missing.empty()) {
        std::string list;
        for (unsigned m : missing) list += (list.empty() ? "" : ",") + std::to_string(m);
        r.status = Status::kFail;
        r.summary = "allocated GPU(s) " + list + " not visible to the driver (" +
                    std::to_string(node.gpus.size()) + " visible)";
        return r;
    }
    r.status = Status::kPass;
    r.summary = std::to_string(node.gpus.size()) + " GPUs visible";
    return r;
}

CheckResult CheckEcc(const GpuSnapshot& gpu) {
    CheckResult r = Make("ecc-uncorrected", &gpu);
    if (!gpu.ecc_uncorrected_volatile && !gpu.ecc_uncorrected_dram && !gpu.ecc_uncorrected_sram) {
        return Unknown(r, "ECC counters not available");
    }
    const std::uint64_t vol = gpu.ecc_uncorrected_volatile.value_or(0);
    const std::uint64_t dram = gpu.ecc_uncorrected_dram.value_or(0);
    const std::uint64_t sram = gpu.ecc_uncorrected_sram.value_or(0);
    if (vol > kMaxPlausibleCount || dram > kMaxPlausibleCount || sram > kMaxPlausibleCount) {
        return Implausible(r, "ECC error count");
    }
    r.Set("volatile", Str(vol));
    if (gpu.ecc_uncorrected_aggregate) r.Set("aggregate", Str(*gpu.ecc_uncorrected_aggregate));
    if (gpu.ecc_uncorrected_dram) r.Set("dram", Str(dram));
    if (gpu.ecc_uncorrected_sram) r.Set("sram", Str(sram));
    if (vol > 0 || dram > 0 || sram > 0) {
        r.status = Status::kFail;
        r.summary = Str(std::max(vol, dram + sram)) +
                    " uncorrected ECC error(s) since driver load" +
                    (sram > 0   ? " (SRAM)"
                     : dram > 0 ? " (DRAM)"
                                : "");
        return r;
    }
    r.status = Status::kPass;
    r.summary = "no uncorrected ECC errors";
    return r;
}

CheckResult CheckRemappedRows(const GpuSnapshot& gpu) {
    CheckResult r = Make("row-remap", &gpu);
    if (!gpu.remapped_rows) return Unknown(r, "row remapping not reported (pre-Ampere GPU?)");
    const RemappedRows& rows = *gpu.remapped_rows;
    if (rows.correctable > 1000000 || rows.uncorrectable > 1000000) {
        return Implausible(r, "remapped row count");
    }
    r.Set("correctable", std::to_string(rows.correctable));
    r.Set("uncorrectable", std::to_string(rows.uncorrectable));
    r.Set("pending", rows.pending ? "yes" : "no");
    r.Set("failure", rows.failure ? "yes" : "no");
    if (rows.failure) {
        r.status = Status::kFail;
        r.summary = "row remapping failed (RMA criterion)";
    } else if (rows.pending) {
        r.status = Status::kFail;
        r.summary = "row remap pending: the GPU needs a reset before it is used";
    } else {
        r.status = Status::kPass;
        r.summary = std::to_string(rows.uncorrectable) + " rows remapped for uncorrectable errors";
    }
    return r;
}

CheckResult CheckRetiredPages(const GpuSnapshot& gpu) {
    CheckResult r = Make("retired-pages", &gpu);
    if (!gpu.retired_pages_pending && !gpu.retired_pages_dbe) {
        return Unknown(r, "page retirement not reported (row remapping GPUs use that instead)");
    }
    if (gpu.retired_pages_dbe) r.Set("dbe", std::to_string(*gpu.retired_pages_dbe));
    if (gpu.retired_pages_pending.value_or(false)) {
        r.status = Status::kFail;
        r.summary = "page retirement pending: the GPU needs a reset";
        r.Set("pending", "yes");
        return r;
    }
    r.status = Status::kPass;
    r.summary = "no page retirement pending";
    return r;
}

CheckResult CheckRecoveryAction(const GpuSnapshot& gpu) {
    CheckResult r = Make("recovery-action", &gpu);
    if (!gpu.recovery_action) return Unknown(r, "driver does not report a recovery action");
    static constexpr const char* kNames[] = {"none", "GPU reset required", "node reboot required",
                                             "drain P2P", "drain and reset"};
    const unsigned a = *gpu.recovery_action;
    if (a > 64) return Implausible(r, "recovery action (" + std::to_string(a) + ")");
    const std::string name = a < 5 ? kNames[a] : "action " + std::to_string(a);
    r.Set("action", std::to_string(a));
    if (a == 0) {
        r.status = Status::kPass;
        r.summary = "no recovery action pending";
    } else {
        r.status = Status::kFail;
        r.summary = "driver asks for recovery: " + name;
    }
    return r;
}

CheckResult CheckPcieLink(const GpuSnapshot& gpu, const GpuModel* model) {
    CheckResult r = Make("pcie-link", &gpu);
    if (!gpu.pcie_gen || !gpu.pcie_width) return Unknown(r, "PCIe link not reported");
    if (*gpu.pcie_gen == 0 || *gpu.pcie_gen > 8 || *gpu.pcie_width == 0 || *gpu.pcie_width > 32) {
        return Implausible(r, "PCIe link (gen " + std::to_string(*gpu.pcie_gen) + " x" +
                                  std::to_string(*gpu.pcie_width) + ")");
    }
    const unsigned want_gen =
        model != nullptr && model->pcie_gen != 0 ? model->pcie_gen : gpu.pcie_gen_max.value_or(0);
    const unsigned want_width = model != nullptr && model->pcie_width != 0
                                    ? model->pcie_width
                                    : gpu.pcie_width_max.value_or(0);
    r.Set("gen", std::to_string(*gpu.pcie_gen));
    r.Set("width", std::to_string(*gpu.pcie_width));
    r.Set("gen_expected", std::to_string(want_gen));
    r.Set("width_expected", std::to_string(want_width));
    // The link generation drops at idle to save power on many GPUs; the width does not. A
    // narrower link is a hardware fault (riser, slot, card); a slower generation a warning.
    if (want_width != 0 && *gpu.pcie_width < want_width) {
        r.status = Status::kFail;
        r.summary = "PCIe link x" + std::to_string(*gpu.pcie_width) + ", expected x" +
                    std::to_string(want_width);
    } else if (want_gen != 0 && *gpu.pcie_gen < want_gen) {
        r.status = Status::kWarn;
        r.summary = "PCIe gen " + std::to_string(*gpu.pcie_gen) + ", expected gen " +
                    std::to_string(want_gen) + " (may be idle power saving)";
    } else {
        r.status = Status::kPass;
        r.summary =
            "PCIe gen " + std::to_string(*gpu.pcie_gen) + " x" + std::to_string(*gpu.pcie_width);
    }
    return r;
}

CheckResult CheckNvLink(const GpuSnapshot& gpu, const GpuModel* model) {
    CheckResult r = Make("nvlink", &gpu);
    if (gpu.nvlinks.size() > 64) return Implausible(r, "NVLink count");
    if (gpu.nvlinks.empty()) {
        if (model != nullptr && model->nvlinks > 0) {
            r.status = Status::kFail;
            r.summary = "no NVLink reported, expected " + std::to_string(model->nvlinks);
            return r;
        }
        r.status = Status::kPass;
        r.summary = "no NVLink";
        return r;
    }
    unsigned active = 0;
    std::uint64_t crc = 0, replay = 0, recovery = 0;
    std::string down;
    for (const NvLinkState& l : gpu.nvlinks) {
        if (l.active) {
            ++active;
        } else {
            down += (down.empty() ? "" : ",") + std::to_string(l.link);
        }
        crc += l.crc_flit_errors;
        replay += l.replay_errors;
        recovery += l.recovery_errors;
    }
    const unsigned expected = model != nullptr && model->nvlinks > 0
                                  ? model->nvlinks
                                  : static_cast<unsigned>(gpu.nvlinks.size());
    r.Set("active", std::to_string(active));
    r.Set("expected", std::to_string(expected));
    r.Set("crc_flit", Str(crc));
    r.Set("replay", Str(replay));
    r.Set("recovery", Str(recovery));
    if (active < expected) {
        r.status = Status::kFail;
        r.summary = std::to_string(active) + "/" + std::to_string(expected) + " NVLinks active" +
                    (down.empty() ? "" : " (down: " + down + ")");
    } else if (recovery > 0) {
        r.status = Status::kWarn;
        r.summary = Str(recovery) + " NVLink recovery events";
    } else {
        r.status = Status::kPass;
        r.summary = std::to_string(active) + " NVLinks active";
    }
    return r;
}

CheckResult CheckThermal(const GpuSnapshot& gpu, const HealthConfig& config, bool after_job) {
    CheckResult r = Make("thermal", &gpu);
    if (!gpu.temperature_c) return Unknown(r, "temperature not reported");
    if (*gpu.temperature_c > kMaxPlausibleTemperatureC ||
        gpu.slowdown_temperature_c.value_or(0) > kMaxPlausibleTemperatureC) {
        return Implausible(r, "temperature (" + std::to_string(*gpu.temperature_c) + " C)");
    }
    r.Set("temperature_c", std::to_string(*gpu.temperature_c));
    if (gpu.slowdown_temperature_c) {
        r.Set("slowdown_c", std::to_string(*gpu.slowdown_temperature_c));
        const unsigned limit = *gpu.slowdown_temperature_c > config.temperature_margin_c
                                   ? *gpu.slowdown_temperature_c - config.temperature_margin_c
                                   : 0;
        if (*gpu.temperature_c >= limit) {
            r.status = after_job ? Status::kWarn : Status::kFail;
            r.summary = std::to_string(*gpu.temperature_c) +
                        (after_job ? " C right after the job (the next prolog checks it cooled)"
                                   : " C before the job starts") +
                        ", slowdown at " + std::to_string(*gpu.slowdown_temperature_c) + " C";
            return r;
        }
    }
    r.status = Status::kPass;
    r.summary = std::to_string(*gpu.temperature_c) + " C";
    return r;
}

CheckResult CheckClockEvents(const GpuSnapshot& gpu) {
    CheckResult r = Make("clock-events", &gpu);
    if (!gpu.clock_event_reasons) return Unknown(r, "clock event reasons not reported");
    const std::uint64_t reasons = *gpu.clock_event_reasons;
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%llx", static_cast<unsigned long long>(reasons));
    r.Set("reasons", hex);
    std::string active;
    if (reasons & kClocksEventHwSlowdown) active += " hw_slowdown";
    if (reasons & kClocksEventHwThermal) active += " hw_thermal";
    if (reasons & kClocksEventHwPowerBrake) active += " hw_power_brake";
    if (!active.empty()) {
        r.status = Status::kFail;
        r.summary = "hardware clock slowdown active:" + active;
        return r;
    }
    if (reasons & kClocksEventSwThermal) {
        r.status = Status::kWarn;
        r.summary = "software thermal slowdown active";
        return r;
    }
    r.status = Status::kPass;
    r.summary = "no hardware slowdown";
    return r;
}

CheckResult CheckPersistence(const GpuSnapshot& gpu) {
    CheckResult r = Make("persistence-mode", &gpu);
    if (!gpu.persistence_mode) return Unknown(r, "persistence mode not reported");
    r.Set("enabled", *gpu.persistence_mode ? "yes" : "no");
    // Without persistence every job pays driver initialisation; worth fixing, not a fault.
    r.status = *gpu.persistence_mode ? Status::kPass : Status::kWarn;
    r.summary = *gpu.persistence_mode ? "persistence mode on" : "persistence mode off";
    return r;
}

CheckResult CheckLeftovers(const GpuSnapshot& gpu) {
    CheckResult r = Make("leftover-processes", &gpu);
    if (!gpu.compute_processes) return Unknown(r, "running processes not reported");
    r.Set("processes", std::to_string(*gpu.compute_processes));
    if (gpu.memory_used_bytes) r.Set("memory_used_bytes", Str(*gpu.memory_used_bytes));
    if (*gpu.compute_processes > 0) {
        r.status = Status::kFail;
        r.summary = std::to_string(*gpu.compute_processes) +
                    " compute process(es) still on the GPU from an earlier job";
        return r;
    }
    r.status = Status::kPass;
    r.summary = "no leftover processes";
    return r;
}

const std::vector<NvmlCheckInfo>& NvmlChecks() {
    static const std::vector<NvmlCheckInfo> kChecks{
        {"driver", HealthTier::kQuick, "NVIDIA driver loaded, user-space library matches it"},
        {"gpu-count", HealthTier::kQuick, "every GPU Slurm allocated is visible"},
        {"ecc-uncorrected", HealthTier::kQuick, "no uncorrected ECC error since driver load"},
        {"row-remap", HealthTier::kQuick, "no row-remap failure or pending remap"},
        {"retired-pages", HealthTier::kQuick, "no page retirement pending"},
        {"recovery-action", HealthTier::kQuick, "the driver asks for no recovery (Xid 154)"},
        {"pcie-link", HealthTier::kQuick, "PCIe link width and generation at their maximum"},
        {"nvlink", HealthTier::kQuick, "every NVLink active"},
        {"thermal", HealthTier::kQuick, "GPU cool enough before the job"},
        {"clock-events", HealthTier::kQuick, "no hardware slowdown or power brake"},
        {"persistence-mode", HealthTier::kQuick, "persistence mode on"},
        {"leftover-processes", HealthTier::kQuick, "no processes from an earlier job"},
    };
    return kChecks;
}

}  // namespace autoheal::health
