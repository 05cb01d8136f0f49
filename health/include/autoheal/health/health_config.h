// The `health:` section of autoheal.yaml. Unknown keys and bad values are errors naming
// file:line:column; an absent section means the defaults in HealthConfig.
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "autoheal/core/result.h"
#include "autoheal/health/check.h"

namespace autoheal::health {

Result<HealthConfig> ParseHealthConfig(const YAML::Node& section, const std::string& source);

// The CUDA check module to load: config.cuda_module when set, else the module installed next to
// the programs (<exe_dir>/../lib/autoheal/libautoheal_cuda_checks.so) when it exists, else ""
// (no CUDA checks).
std::string ResolveCudaModule(const HealthConfig& config, const std::string& exe_path);

}  // namespace autoheal::health
