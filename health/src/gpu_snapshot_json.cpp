// NodeSnapshot <-> JSON. Keys are the struct members' names; an unset optional is an absent key.
// Reading is strict about types (a wrong type or an out-of-range number makes the whole input
// malformed) and lenient about presence (a missing key keeps the member's default) and about
// unknown keys (ignored, so an older reader accepts a newer writer's output).
#include <cstdint>
#include <exception>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "autoheal/health/gpu_snapshot.h"

namespace autoheal::health {
namespace {

using nlohmann::json;

template <typename T>
void PutOptional(json& j, const char* key, const std::optional<T>& value) {
    if (value) j[key] = *value;
}

json GpuToJson(const GpuSnapshot& g) {
    json j = json::object();
    j["index"] = g.index;
    j["name"] = g.name;
    j["uuid"] = g.uuid;
    j["pci_bus_id"] = g.pci_bus_id;
    j["serial"] = g.serial;
    PutOptional(j, "minor", g.minor);
    PutOptional(j, "ecc_uncorrected_volatile", g.ecc_uncorrected_volatile);
    PutOptional(j, "ecc_uncorrected_aggregate", g.ecc_uncorrected_aggregate);
    PutOptional(j, "ecc_uncorrected_dram", g.ecc_uncorrected_dram);
    PutOptional(j, "ecc_uncorrected_sram", g.ecc_uncorrected_sram);
    if (g.remapped_rows) {
        j["remapped_rows"] = {{"correctable", g.remapped_rows->correctable},
                              {"uncorrectable", g.remapped_rows->uncorrectable},
                              {"pending", g.remapped_rows->pending},
                              {"failure", g.remapped_rows->failure}};
    }
    PutOptional(j, "retired_pages_dbe", g.retired_pages_dbe);
    PutOptional(j, "retired_pages_pending", g.retired_pages_pending);
    PutOptional(j, "recovery_action", g.recovery_action);
    PutOptional(j, "pcie_gen", g.pcie_gen);
    PutOptional(j, "pcie_gen_max", g.pcie_gen_max);
    PutOptional(j, "pcie_width", g.pcie_width);
    PutOptional(j, "pcie_width_max", g.pcie_width_max);
    json links = json::array();
    for (const NvLinkState& l : g.nvlinks) {
        links.push_back({{"link", l.link},
                         {"active", l.active},
                         {"crc_flit_errors", l.crc_flit_errors},
                         {"replay_errors", l.replay_errors},
                         {"recovery_errors", l.recovery_errors}});
    }
    j["nvlinks"] = std::move(links);
    PutOptional(j, "temperature_c", g.temperature_c);
    PutOptional(j, "slowdown_temperature_c", g.slowdown_temperature_c);
    PutOptional(j, "clock_event_reasons", g.clock_event_reasons);
    PutOptional(j, "persistence_mode", g.persistence_mode);
    PutOptional(j, "compute_processes", g.compute_processes);
    PutOptional(j, "memory_used_bytes", g.memory_used_bytes);
    PutOptional(j, "memory_total_bytes", g.memory_total_bytes);
    PutOptional(j, "utilization_gpu", g.utilization_gpu);
    PutOptional(j, "utilization_memory", g.utilization_memory);
    PutOptional(j, "power_mw", g.power_mw);
    PutOptional(j, "sm_clock_mhz", g.sm_clock_mhz);
    PutOptional(j, "power_violation_ns", g.power_violation_ns);
    PutOptional(j, "thermal_violation_ns", g.thermal_violation_ns);
    j["errors"] = g.errors;
    return j;
}

// Reads members of one JSON object; the first problem makes ok() false and later reads no-ops.
class Reader {
  public:
    explicit Reader(const json& object) : j_(object), ok_(object.is_object()) {}

    bool ok() const { return ok_; }

    void Get(const char* key, bool* out) {
        const json* v = Find(key);
        if (v == nullptr) return;
        if (!v->is_boolean()) return Fail();
        *out = v->get<bool>();
    }
    void Get(const char* key, std::string* out) {
        const json* v = Find(key);
        if (v == nullptr) return;
        if (!v->is_string()) return Fail();
        *out = v->get<std::string>();
    }
    // Unsigned integers of any width: a negative, fractional or too large number is malformed.
    template <typename T>
    void Get(const char* key, T* out) {
        static_assert(std::is_unsigned_v<T> && !std::is_same_v<T, bool>);
        const json* v = Find(key);
        if (v == nullptr) return;
        if (!v->is_number_unsigned()) {
            // nlohmann stores a non-negative literal as unsigned; anything else is not ours.
            return Fail();
        }
        const std::uint64_t n = v->get<std::uint64_t>();
        if (n > std::numeric_limits<T>::max()) return Fail();
        *out = static_cast<T>(n);
    }
    template <typename T>
    void Get(const char* key, std::optional<T>* out) {
        if (Find(key) == nullptr) return;
        T value{};
        Get(key, &value);
        if (ok_) *out = value;
    }
    void Get(const char* key, std::vector<std::string>* out) {
        const json* v = Find(key);
        if (v == nullptr) return;
        if (!v->is_array()) return Fail();
        for (const json& e : *v) {
            if (!e.is_string()) return Fail();
            out->push_back(e.get<std::string>());
        }
    }
    // An array member: each element read by `read` (which returns false when malformed).
    template <typename Fn>
    void Each(const char* key, Fn read) {
        const json* v = Find(key);
        if (v == nullptr) return;
        if (!v->is_array()) return Fail();
        for (const json& e : *v) {
            if (!read(e)) return Fail();
        }
    }
    // An object member, read by `read` when present.
    template <typename Fn>
    void Object(const char* key, Fn read) {
        const json* v = Find(key);
        if (v == nullptr) return;
        if (!read(*v)) Fail();
    }

  private:
    const json* Find(const char* key) const {
        if (!ok_) return nullptr;
        auto it = j_.find(key);
        return it == j_.end() ? nullptr : &*it;
    }
    void Fail() { ok_ = false; }

    const json& j_;
    bool ok_;
};

bool ReadLink(const json& j, NvLinkState* l) {
    Reader r(j);
    r.Get("link", &l->link);
    r.Get("active", &l->active);
    r.Get("crc_flit_errors", &l->crc_flit_errors);
    r.Get("replay_errors", &l->replay_errors);
    r.Get("recovery_errors", &l->recovery_errors);
    return r.ok();
}

bool ReadRemappedRows(const json& j, RemappedRows* rows) {
    Reader r(j);
    r.Get("correctable", &rows->correctable);
    r.Get("uncorrectable", &rows->uncorrectable);
    r.Get("pending", &rows->pending);
    r.Get("failure", &rows->failure);
    return r.ok();
}

bool ReadGpu(const json& j, GpuSnapshot* g) {
    Reader r(j);
    r.Get("index", &g->index);
    r.Get("name", &g->name);
    r.Get("uuid", &g->uuid);
    r.Get("pci_bus_id", &g->pci_bus_id);
    r.Get("serial", &g->serial);
    r.Get("minor", &g->minor);
    r.Get("ecc_uncorrected_volatile", &g->ecc_uncorrected_volatile);
    r.Get("ecc_uncorrected_aggregate", &g->ecc_uncorrected_aggregate);
    r.Get("ecc_uncorrected_dram", &g->ecc_uncorrected_dram);
    r.Get("ecc_uncorrected_sram", &g->ecc_uncorrected_sram);
    r.Object("remapped_rows", [&](const json& v) {
        RemappedRows rows;
        if (!ReadRemappedRows(v, &rows)) return false;
        g->remapped_rows = rows;
        return true;
    });
    r.Get("retired_pages_dbe", &g->retired_pages_dbe);
    r.Get("retired_pages_pending", &g->retired_pages_pending);
    r.Get("recovery_action", &g->recovery_action);
    r.Get("pcie_gen", &g->pcie_gen);
    r.Get("pcie_gen_max", &g->pcie_gen_max);
    r.Get("pcie_width", &g->pcie_width);
    r.Get("pcie_width_max", &g->pcie_width_max);
    r.Each("nvlinks", [&](const json& v) {
        NvLinkState l;
        if (!ReadLink(v, &l)) return false;
        g->nvlinks.push_back(l);
        return true;
    });
    r.Get("temperature_c", &g->temperature_c);
    r.Get("slowdown_temperature_c", &g->slowdown_temperature_c);
    r.Get("clock_event_reasons", &g->clock_event_reasons);
    r.Get("persistence_mode", &g->persistence_mode);
    r.Get("compute_processes", &g->compute_processes);
    r.Get("memory_used_bytes", &g->memory_used_bytes);
    r.Get("memory_total_bytes", &g->memory_total_bytes);
    r.Get("utilization_gpu", &g->utilization_gpu);
    r.Get("utilization_memory", &g->utilization_memory);
    r.Get("power_mw", &g->power_mw);
    r.Get("sm_clock_mhz", &g->sm_clock_mhz);
    r.Get("power_violation_ns", &g->power_violation_ns);
    r.Get("thermal_violation_ns", &g->thermal_violation_ns);
    r.Get("errors", &g->errors);
    return r.ok();
}

}  // namespace

std::string SnapshotToJson(const NodeSnapshot& snapshot) {
    try {
        json j = json::object();
        j["driver_present"] = snapshot.driver_present;
        j["problem"] = snapshot.problem;
        j["driver_version"] = snapshot.driver_version;
        j["nvml_version"] = snapshot.nvml_version;
        json gpus = json::array();
        for (const GpuSnapshot& g : snapshot.gpus) gpus.push_back(GpuToJson(g));
        j["gpus"] = std::move(gpus);
        // Driver strings are not guaranteed UTF-8: invalid bytes become U+FFFD, not an error.
        return j.dump(-1, ' ', false, json::error_handler_t::replace);
    } catch (const std::exception&) {
        // Only allocation can fail here; an empty object still parses as "no driver".
        return "{}";
    }
}

std::optional<NodeSnapshot> SnapshotFromJson(const std::string& text) {
    try {
        const json j = json::parse(text, nullptr, /*allow_exceptions=*/false);
        if (j.is_discarded()) return std::nullopt;
        NodeSnapshot node;
        Reader r(j);
        r.Get("driver_present", &node.driver_present);
        r.Get("problem", &node.problem);
        r.Get("driver_version", &node.driver_version);
        r.Get("nvml_version", &node.nvml_version);
        r.Each("gpus", [&](const json& v) {
            GpuSnapshot g;
            if (!ReadGpu(v, &g)) return false;
            node.gpus.push_back(std::move(g));
            return true;
        });
        if (!r.ok()) return std::nullopt;
        return node;
    } catch (const std::exception&) {
        return std::nullopt;
    }
}

}  // namespace autoheal::health
