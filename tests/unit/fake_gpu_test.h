// A test fixture that runs the health checks in-process on the fake NVML and CUDA libraries
// (tests/fakes), driven by a scenario (tests/fakes/SCENARIO.md). The test target defines
// AUTOHEAL_FAKE_NVML and AUTOHEAL_FAKE_CUDA, the libraries' paths.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "autoheal/health/runner.h"

namespace autoheal::health::testing {

class FakeGpuTest : public ::testing::Test {
  protected:
    void SetUp() override {
        dir_ = std::filesystem::temp_directory_path() /
               ("autoheal-fake-gpu-" + std::to_string(getpid()));
        std::filesystem::create_directories(dir_);
    }
    void TearDown() override {
        unsetenv("AUTOHEAL_FAKE_GPU_SCENARIO");
        std::filesystem::remove_all(dir_);
    }
    // Runs `tier` on every GPU of `scenario` (JSON) within `budget` seconds.
    HealthReport Run(const std::string& scenario, HealthTier tier, double budget = 10) {
        const auto path = dir_ / "scenario.json";
        std::ofstream(path) << scenario;
        setenv("AUTOHEAL_FAKE_GPU_SCENARIO", path.c_str(), 1);
        RunRequest request;
        request.tier = tier;
        request.config.nvml_library = AUTOHEAL_FAKE_NVML;
        request.config.quick_budget_seconds = budget;
        request.config.full_budget_seconds = budget;
        request.config.nvml_timeout_seconds = 2;
        request.cuda_module = AUTOHEAL_FAKE_CUDA;
        return RunHealthChecks(request);
    }
    std::filesystem::path dir_;
};

}  // namespace autoheal::health::testing
