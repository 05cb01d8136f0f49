#include "autoheal/health/health_config.h"

#include <filesystem>

#include "autoheal/core/yaml_read.h"

namespace autoheal::health {
namespace {

// "FILE:LINE:COL: health.NAME: expected WHAT"
Error Expected(const std::string& source, const YAML::Node& at, const std::string& name,
               const std::string& what) {
    return MakeError(ErrorCode::kInvalid,
                     YamlWhere(source, at) + ": health." + name + ": expected " + what);
}

// One entry of `models:`.
Result<GpuModel> ParseGpuModel(const YAML::Node& m, const std::string& source) {
    if (!m.IsMap()) return Expected(source, m, "models", "a mapping");
    GpuModel model;
    for (const auto& mk : m) {
        const std::string k = mk.first.as<std::string>();
        const YAML::Node& mv = mk.second;
        bool ok = true;
        if (k == "match") {
            ok = YamlRead(mv, &model.match) && !model.match.empty();
        } else if (k == "gemm_tflops_bf16") {
            ok = YamlRead(mv, &model.gemm_tflops_bf16);
        } else if (k == "hbm_gbps") {
            ok = YamlRead(mv, &model.hbm_gbps);
        } else if (k == "d2d_gbps") {
            ok = YamlRead(mv, &model.d2d_gbps);
        } else if (k == "h2d_gbps") {
            ok = YamlRead(mv, &model.h2d_gbps);
        } else if (k == "pcie_gen") {
            ok = YamlRead(mv, &model.pcie_gen);
        } else if (k == "pcie_width") {
            ok = YamlRead(mv, &model.pcie_width);
        } else if (k == "nvlinks") {
            ok = YamlRead(mv, &model.nvlinks);
        } else {
            return MakeError(ErrorCode::kInvalid, YamlWhere(source, mk.first) +
                                                      ": health.models: unknown key '" + k + "'");
        }
        if (!ok) {
            return MakeError(ErrorCode::kInvalid,
                             YamlWhere(source, mv) + ": health.models." + k + ": bad value");
        }
    }
    if (model.match.empty()) {
        return MakeError(ErrorCode::kInvalid,
                         YamlWhere(source, m) + ": health.models: each needs match");
    }
    return model;
}

// One key of the section into `config`: true when read, false when the section has no such
// setting, an error when its value is bad.
Result<bool> ParseKey(const std::string& key, const YAML::Node& v, const std::string& source,
                      HealthConfig* config) {
    auto bad = [&](const std::string& what) { return Expected(source, v, key, what); };
    if (key == "nvml_library" || key == "cuda_module") {
        std::string s;
        if (!YamlRead(v, &s) || s.empty()) return bad("a path");
        (key == "nvml_library" ? config->nvml_library : config->cuda_module) = s;
    } else if (key == "default_tier") {
        std::string s;
        auto tier = YamlRead(v, &s) ? HealthTierFromName(s) : std::nullopt;
        if (!tier) return bad("quick, full or off");
        config->default_tier = *tier;
    } else if (key == "allow_off" || key == "timeout_is_failure") {
        bool b = false;
        if (!YamlRead(v, &b)) return bad("true or false");
        (key == "allow_off" ? config->allow_off : config->timeout_is_failure) = b;
    } else if (key == "quick_budget_seconds" || key == "full_budget_seconds" ||
               key == "nvml_timeout_seconds") {
        double d = 0;
        if (!YamlRead(v, &d) || d <= 0 || d > 3600) return bad("seconds, more than 0");
        (key == "quick_budget_seconds"  ? config->quick_budget_seconds
         : key == "full_budget_seconds" ? config->full_budget_seconds
                                        : config->nvml_timeout_seconds) = d;
    } else if (key == "perf_warn_fraction" || key == "perf_fail_fraction" ||
               key == "hbm_test_fraction") {
        double d = 0;
        if (!YamlRead(v, &d) || d <= 0 || d > 1) return bad("a fraction in (0, 1]");
        (key == "perf_warn_fraction"   ? config->perf_warn_fraction
         : key == "perf_fail_fraction" ? config->perf_fail_fraction
                                       : config->hbm_test_fraction) = d;
    } else if (key == "temperature_margin_c") {
        if (!YamlRead(v, &config->temperature_margin_c) || config->temperature_margin_c > 50) {
            return bad("degrees from 0 to 50");
        }
    } else if (key == "models") {
        if (!v.IsSequence()) return bad("a list of GPU models");
        for (const YAML::Node& m : v) {
            auto model = ParseGpuModel(m, source);
            if (!model) return model.status();
            config->models.push_back(std::move(model).value());
        }
    } else {
        return false;
    }
    return true;
}

}  // namespace

Result<HealthConfig> ParseHealthConfig(const YAML::Node& section, const std::string& source) {
    HealthConfig config;
    if (!section || section.IsNull()) return config;
    if (!section.IsMap()) {
        return MakeError(ErrorCode::kInvalid,
                         YamlWhere(source, section) + ": health: expected a mapping");
    }
    try {
        for (const auto& kv : section) {
            const std::string key = kv.first.as<std::string>();
            auto parsed = ParseKey(key, kv.second, source, &config);
            if (!parsed) return parsed.status();
            if (!*parsed) {
                return MakeError(ErrorCode::kInvalid, YamlWhere(source, kv.first) +
                                                          ": unknown setting 'health." + key + "'");
            }
        }
    } catch (const YAML::Exception& e) {
        return MakeError(ErrorCode::kInvalid, source + ":" + std::to_string(e.mark.line + 1) + ":" +
                                                  std::to_string(e.mark.column + 1) + ": " + e.msg);
    }
    if (config.perf_fail_fraction > config.perf_warn_fraction) {
        return MakeError(ErrorCode::kInvalid,
                         YamlWhere(source, section) +
                             ": health: perf_fail_fraction is above perf_warn_fraction");
    }
    return config;
}

std::string ResolveCudaModule(const HealthConfig& config, const std::string& exe_path) {
    if (!config.cuda_module.empty()) return config.cuda_module;
    if (exe_path.empty()) return "";
    std::error_code ec;
    auto candidate = std::filesystem::path(exe_path).parent_path().parent_path() / "lib" /
                     "autoheal" / "libautoheal_cuda_checks.so";
    if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    return "";
}

}  // namespace autoheal::health
