// The scenario parser of the fake NVML (scenario.h).
#include "scenario.h"

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <limits>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <type_traits>

namespace autoheal::fake_nvml {
using nlohmann::json;

namespace {

void ParseBusId(Gpu* g) {
    unsigned domain = 0, bus = 0, device = 0, function = 0;
    char extra = 0;
    if (std::sscanf(g->pci_bus_id.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &device, &function,
                    &extra) != 4) {
        throw std::runtime_error("pci_bus_id \"" + g->pci_bus_id + "\" is not DDDD:BB:DD.F");
    }
    g->pci_domain = domain;
    g->pci_bus = bus;
    g->pci_device = device;
    g->pci_function = function;
}

}  // namespace

Gpu HealthyGpu(unsigned i) {
    Gpu g;
    char buf[64];
    g.index = i;
    g.name = "NVIDIA H100 80GB HBM3";
    std::snprintf(buf, sizeof(buf), "GPU-00000000-0000-0000-0000-%012u", i);
    g.uuid = buf;
    std::snprintf(buf, sizeof(buf), "0000:%02x:00.0", 0x10 + i);
    g.pci_bus_id = buf;
    // Serial numbers are unique per board: on the local cluster each node's GPUs get their own
    // (from the node's name), so a GPU's history by serial does not mix nodes.
    unsigned host = 0;
    if (const char* node = std::getenv("SLURMD_NODENAME"); node != nullptr) {
        for (const char* c = node; *c != '\0'; ++c)
            host = host * 31 + static_cast<unsigned char>(*c);
        host %= 100000;
    }
    std::snprintf(buf, sizeof(buf), "1650%05u%04u", host, i);
    g.serial = buf;
    g.minor = i;
    g.links.assign(18, Link{});
    ParseBusId(&g);
    return g;
}

namespace {

std::runtime_error Bad(const char* key, const char* expected) {
    return std::runtime_error(std::string("\"") + key + "\": expected " + expected);
}

// A field's value, of the JSON type T needs and, for numbers, in T's range (a scenario is a test
// fixture: a mistyped field is an error, never a silently converted or wrapped value).
template <typename T>
T Value(const json& v, const char* key) {
    if constexpr (std::is_same_v<T, bool>) {
        if (!v.is_boolean()) throw Bad(key, "true or false");
        return v.get<bool>();
    } else if constexpr (std::is_same_v<T, std::string>) {
        if (!v.is_string()) throw Bad(key, "a string");
        return v.get<std::string>();
    } else if constexpr (std::is_floating_point_v<T>) {
        if (!v.is_number() || !std::isfinite(v.get<double>())) throw Bad(key, "a number");
        return v.get<T>();
    } else {
        static_assert(std::is_unsigned_v<T>);
        if (!v.is_number_unsigned() || v.get<std::uint64_t>() > std::numeric_limits<T>::max()) {
            throw Bad(key, "a whole number >= 0 in range");
        }
        return static_cast<T>(v.get<std::uint64_t>());
    }
}

// Sets *out from j[key] when the key is there and not null. j must be an object.
template <typename T>
void Take(const json& j, const char* key, T* out) {
    if (!j.is_object()) throw Bad(key, "to be in an object");
    auto it = j.find(key);
    if (it != j.end() && !it->is_null()) *out = Value<T>(*it, key);
}

// An object-valued field, or nullptr when absent or null.
const json* Section(const json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return nullptr;
    if (!it->is_object()) throw Bad(key, "an object");
    return &*it;
}

// A list-valued field, or nullptr when absent or null.
const json::array_t* List(const json& j, const char* key) {
    auto it = j.find(key);
    if (it == j.end() || it->is_null()) return nullptr;
    if (!it->is_array()) throw Bad(key, "a list");
    return &it->get_ref<const json::array_t&>();
}

void ParseTelemetry(const json& j, Telemetry* t) {
    Take(j, "power_watts", &t->power_watts);
    Take(j, "power_swing_watts", &t->power_swing_watts);
    Take(j, "period_seconds", &t->period_seconds);
    Take(j, "temperature_rise_c_per_minute", &t->temperature_rise_c_per_minute);
    Take(j, "sm_clock_mhz", &t->sm_clock_mhz);
    Take(j, "power_violation_percent", &t->power_violation_percent);
    Take(j, "thermal_violation_percent", &t->thermal_violation_percent);
    Take(j, "hw_slowdown_percent", &t->hw_slowdown_percent);
    if (!(t->power_watts >= 0 && t->power_watts <= 5000 && t->power_swing_watts >= 0 &&
          t->power_swing_watts <= t->power_watts)) {
        throw Bad("telemetry.power_watts", "0 to 5000 W, a swing no larger than the mean");
    }
    if (!(t->period_seconds >= 1 && t->period_seconds <= 86400)) {
        throw Bad("telemetry.period_seconds", "1 to 86400");
    }
    if (!(t->temperature_rise_c_per_minute >= 0 && t->temperature_rise_c_per_minute <= 100)) {
        throw Bad("telemetry.temperature_rise_c_per_minute", "0 to 100");
    }
    for (double pct :
         {t->power_violation_percent, t->thermal_violation_percent, t->hw_slowdown_percent}) {
        if (!(pct >= 0 && pct <= 100)) throw Bad("telemetry", "percentages from 0 to 100");
    }
}

Gpu ParseGpu(const json& j, unsigned i) {
    if (!j.is_object()) throw std::runtime_error("gpus[" + std::to_string(i) + "] not an object");
    Gpu g = HealthyGpu(i);
    Take(j, "name", &g.name);
    Take(j, "uuid", &g.uuid);
    Take(j, "pci_bus_id", &g.pci_bus_id);
    Take(j, "serial", &g.serial);
    Take(j, "minor", &g.minor);
    if (const json* it = Section(j, "ecc")) {
        Take(*it, "volatile_uncorrected", &g.ecc_volatile);
        Take(*it, "aggregate_uncorrected", &g.ecc_aggregate);
        Take(*it, "dram_uncorrected", &g.ecc_dram);
        Take(*it, "sram_uncorrected", &g.ecc_sram);
    }
    if (const json* it = Section(j, "remapped_rows")) {
        Take(*it, "correctable", &g.rows_correctable);
        Take(*it, "uncorrectable", &g.rows_uncorrectable);
        Take(*it, "pending", &g.rows_pending);
        Take(*it, "failure", &g.rows_failure);
    }
    if (const json* it = Section(j, "retired_pages")) {
        Take(*it, "dbe", &g.retired_dbe);
        Take(*it, "pending", &g.retired_pending);
    }
    Take(j, "recovery_action", &g.recovery_action);
    if (const json* it = Section(j, "pcie")) {
        Take(*it, "gen", &g.pcie_gen);
        Take(*it, "gen_max", &g.pcie_gen_max);
        Take(*it, "width", &g.pcie_width);
        Take(*it, "width_max", &g.pcie_width_max);
    }
    unsigned nvlink_count = 18;
    Take(j, "nvlink_count", &nvlink_count);
    if (nvlink_count > kMaxNvLinks) throw Bad("nvlink_count", "at most 64");
    g.links.assign(nvlink_count, Link{});
    if (const json::array_t* links = List(j, "nvlinks")) {
        if (links->size() > kMaxNvLinks) throw Bad("nvlinks", "at most 64 links");
        g.links.clear();
        for (const json& l : *links) {
            Link link;
            Take(l, "active", &link.active);
            Take(l, "crc_flit", &link.crc_flit);
            Take(l, "replay", &link.replay);
            Take(l, "recovery", &link.recovery);
            g.links.push_back(link);
        }
    }
    Take(j, "temperature_c", &g.temperature_c);
    Take(j, "slowdown_temperature_c", &g.slowdown_temperature_c);
    Take(j, "clock_event_reasons", &g.clock_event_reasons);
    Take(j, "persistence_mode", &g.persistence_mode);
    Take(j, "processes", &g.processes);
    Take(j, "memory_used_bytes", &g.memory_used);
    Take(j, "memory_total_bytes", &g.memory_total);
    if (const json* u = Section(j, "utilization")) {
        Take(*u, "gpu", &g.utilization_gpu);
        Take(*u, "memory", &g.utilization_memory);
        if (g.utilization_gpu > 100 || g.utilization_memory > 100) {
            throw Bad("utilization", "percentages from 0 to 100");
        }
    }
    if (const json* t = Section(j, "telemetry")) ParseTelemetry(*t, &g.telemetry);
    if (const json::array_t* calls = List(j, "unsupported")) {
        for (const json& f : *calls) {
            g.unsupported.insert(Value<std::string>(f, "unsupported"));
        }
    }
    ParseBusId(&g);
    return g;
}

nvmlReturn_t ReturnByName(const json& j) {
    // A number must be one NVML's enum can hold (0..999), or the cast would be undefined.
    if (j.is_number_integer()) {
        if (!j.is_number_unsigned() || j.get<std::uint64_t>() > NVML_ERROR_UNKNOWN) {
            throw Bad("init_error", "an NVML error name or a number from 0 to 999");
        }
        return static_cast<nvmlReturn_t>(j.get<std::uint64_t>());
    }
    const std::string name = Value<std::string>(j, "init_error");
    for (const ReturnName& r : kReturns) {
        if (name == r.name) return r.value;
    }
    throw std::runtime_error("unknown NVML error name \"" + name + "\"");
}

}  // namespace

Scenario ParseScenario(const std::string& text) {
    const json j = json::parse(text);
    if (!j.is_object()) throw std::runtime_error("not a JSON object");
    Scenario s;
    Take(j, "driver_version", &s.driver_version);
    Take(j, "nvml_version", &s.nvml_version);
    if (auto it = j.find("init_error"); it != j.end() && !it->is_null()) {
        s.init_error = ReturnByName(*it);
    }
    for (const char* key : {"hang", "crash"}) {
        const json* it = Section(j, key);
        if (it == nullptr) continue;
        const std::string k = key;
        Hang h;
        h.crash = k == "crash";
        if (!it->contains("call")) {
            throw Bad((k + ".call").c_str(),
                      h.crash ? "the NVML call that crashes" : "the NVML call that hangs");
        }
        Take(*it, "call", &h.call);
        unsigned gpu = 0;
        if (auto g = it->find("gpu"); g != it->end() && !g->is_null()) {
            Take(*it, "gpu", &gpu);
            h.gpu = gpu;
        }
        Take(*it, "seconds", &h.seconds);
        // sleep_for converts to nanoseconds: a huge or negative value would overflow there.
        if (!(h.seconds >= 0 && h.seconds <= kMaxHangSeconds)) {
            throw Bad((k + ".seconds").c_str(), "seconds from 0 to 86400");
        }
        s.hang = h;
    }
    if (const json::array_t* events = List(j, "xid_events")) {
        for (const json& e : *events) {
            XidEvent x;
            if (!e.is_object() || !e.contains("xid")) throw Bad("xid_events", "{gpu, xid} entries");
            Take(e, "gpu", &x.gpu);
            Take(e, "xid", &x.xid);
            s.xid_events.push_back(x);
        }
    }
    const json::array_t* gpus = List(j, "gpus");
    if (gpus == nullptr) {
        for (unsigned i = 0; i < 8; ++i) s.gpus.push_back(HealthyGpu(i));
    } else {
        unsigned i = 0;
        for (const json& g : *gpus) {
            s.gpus.push_back(ParseGpu(g, i++));
        }
    }
    return s;
}

}  // namespace autoheal::fake_nvml
