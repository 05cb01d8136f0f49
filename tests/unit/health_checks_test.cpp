// Verdict logic of every NVML check, from fake values, at the boundaries.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>

#include "autoheal/core/config.h"
#include "autoheal/core/files.h"
#include "autoheal/health/check.h"
#include "autoheal/health/health_config.h"
#include "autoheal/health/runner.h"

namespace autoheal::health {
namespace {

using ::testing::HasSubstr;

GpuSnapshot Healthy() {
    GpuSnapshot g;
    g.name = "NVIDIA H100 80GB HBM3";
    g.pci_bus_id = "0000:3b:00.0";
    g.minor = 0;
    g.ecc_uncorrected_volatile = 0;
    g.ecc_uncorrected_aggregate = 3;  // lifetime errors already handled by remapping
    g.ecc_uncorrected_dram = 0;
    g.ecc_uncorrected_sram = 0;
    g.remapped_rows = RemappedRows{2, 1, false, false};
    g.retired_pages_pending = false;
    g.recovery_action = 0;
    g.pcie_gen = 5;
    g.pcie_gen_max = 5;
    g.pcie_width = 16;
    g.pcie_width_max = 16;
    for (unsigned l = 0; l < 18; ++l) g.nvlinks.push_back(NvLinkState{l, true, 0, 0, 0});
    g.temperature_c = 35;
    g.slowdown_temperature_c = 90;
    g.clock_event_reasons = 0;
    g.persistence_mode = true;
    g.compute_processes = 0;
    return g;
}

TEST(HealthChecks, HealthyGpuPassesEveryCheck) {
    const GpuSnapshot g = Healthy();
    HealthConfig config;
    for (const CheckResult& r :
         {CheckEcc(g), CheckRemappedRows(g), CheckRetiredPages(g), CheckRecoveryAction(g),
          CheckPcieLink(g, nullptr), CheckNvLink(g, nullptr), CheckThermal(g, config),
          CheckClockEvents(g), CheckPersistence(g), CheckLeftovers(g)}) {
        EXPECT_EQ(r.status, Status::kPass) << r.check << ": " << r.summary;
        EXPECT_EQ(r.gpu, "0000:3b:00.0");
    }
}

TEST(HealthChecks, AnyUncorrectedEccSinceDriverLoadFails) {
    GpuSnapshot g = Healthy();
    g.ecc_uncorrected_volatile = 1;
    EXPECT_EQ(CheckEcc(g).status, Status::kFail);
    g = Healthy();
    g.ecc_uncorrected_sram = 1;
    auto r = CheckEcc(g);
    EXPECT_EQ(r.status, Status::kFail);
    EXPECT_THAT(r.summary, HasSubstr("SRAM"));
    g = Healthy();
    g.ecc_uncorrected_volatile.reset();
    g.ecc_uncorrected_dram.reset();
    g.ecc_uncorrected_sram.reset();
    EXPECT_EQ(CheckEcc(g).status, Status::kUnknown);
}

TEST(HealthChecks, RowRemapPendingOrFailedFails) {
    GpuSnapshot g = Healthy();
    g.remapped_rows->pending = true;
    EXPECT_EQ(CheckRemappedRows(g).status, Status::kFail);
    g = Healthy();
    g.remapped_rows->failure = true;
    EXPECT_THAT(CheckRemappedRows(g).summary, HasSubstr("RMA"));
    g.remapped_rows.reset();
    EXPECT_EQ(CheckRemappedRows(g).status, Status::kUnknown);
}

TEST(HealthChecks, RetiredPagesPendingFails) {
    GpuSnapshot g = Healthy();
    g.retired_pages_pending = true;
    EXPECT_EQ(CheckRetiredPages(g).status, Status::kFail);
}

TEST(HealthChecks, AnyRecoveryActionFails) {
    GpuSnapshot g = Healthy();
    g.recovery_action = 2;
    auto r = CheckRecoveryAction(g);
    EXPECT_EQ(r.status, Status::kFail);
    EXPECT_THAT(r.summary, HasSubstr("node reboot required"));
    g.recovery_action.reset();
    EXPECT_EQ(CheckRecoveryAction(g).status, Status::kUnknown);
}

TEST(HealthChecks, NarrowPcieLinkFailsSlowGenerationWarns) {
    GpuSnapshot g = Healthy();
    g.pcie_width = 8;
    EXPECT_EQ(CheckPcieLink(g, nullptr).status, Status::kFail);
    g = Healthy();
    g.pcie_gen = 4;
    EXPECT_EQ(CheckPcieLink(g, nullptr).status, Status::kWarn);
    GpuModel model;
    model.pcie_gen = 4;
    model.pcie_width = 16;
    EXPECT_EQ(CheckPcieLink(g, &model).status, Status::kPass);
}

TEST(HealthChecks, InactiveNvLinkFails) {
    GpuSnapshot g = Healthy();
    g.nvlinks[5].active = false;
    auto r = CheckNvLink(g, nullptr);
    EXPECT_EQ(r.status, Status::kFail);
    EXPECT_THAT(r.summary, HasSubstr("17/18"));
    EXPECT_THAT(r.summary, HasSubstr("down: 5"));
    g = Healthy();
    g.nvlinks[0].recovery_errors = 1;
    EXPECT_EQ(CheckNvLink(g, nullptr).status, Status::kWarn);
    GpuModel model;
    model.nvlinks = 18;
    g.nvlinks.clear();
    EXPECT_EQ(CheckNvLink(g, &model).status, Status::kFail);
    EXPECT_EQ(CheckNvLink(g, nullptr).status, Status::kPass);  // PCIe-only GPU
}

TEST(HealthChecks, ThermalFailsAtSlowdownMinusMargin) {
    HealthConfig config;  // margin 5 C
    GpuSnapshot g = Healthy();
    g.temperature_c = 84;
    EXPECT_EQ(CheckThermal(g, config).status, Status::kPass);
    g.temperature_c = 85;
    EXPECT_EQ(CheckThermal(g, config).status, Status::kFail);
}

// Issue 13.6: right after a job the GPU is still hot from its load: the epilog's check warns,
// never calls it a thermal fault (the next prolog checks that it cooled).
TEST(HealthChecks, ThermalRightAfterTheJobWarnsInsteadOfFailing) {
    HealthConfig config;
    GpuSnapshot g = Healthy();
    g.temperature_c = 89;
    const CheckResult after = CheckThermal(g, config, /*after_job=*/true);
    EXPECT_EQ(after.status, Status::kWarn);
    EXPECT_NE(after.summary.find("right after the job"), std::string::npos) << after.summary;
    EXPECT_EQ(CheckThermal(g, config).status, Status::kFail);
}

// Values no GPU can report are NVML's garbage, not evidence: unknown (and flagged so that the
// verdict is unknown), never fail.
TEST(HealthChecks, ImplausibleNvmlValuesAreUnknownNotFailures) {
    HealthConfig config;
    auto unreliable = [](const CheckResult& r) {
        return r.status == Status::kUnknown &&
               std::find(r.values.begin(), r.values.end(),
                         std::pair<std::string, std::string>{"unreliable", "yes"}) !=
                   r.values.end();
    };
    GpuSnapshot g = Healthy();
    g.temperature_c = 4294967295u;
    EXPECT_TRUE(unreliable(CheckThermal(g, config)));
    g = Healthy();
    g.pcie_width = 0;
    EXPECT_TRUE(unreliable(CheckPcieLink(g, nullptr)));
    g = Healthy();
    g.ecc_uncorrected_volatile = ~std::uint64_t{0};
    EXPECT_TRUE(unreliable(CheckEcc(g)));
    g = Healthy();
    g.recovery_action = 4000000000u;
    EXPECT_TRUE(unreliable(CheckRecoveryAction(g)));
    // A real fault just below the limits is still a failure.
    g = Healthy();
    g.ecc_uncorrected_volatile = 1000000;
    EXPECT_EQ(CheckEcc(g).status, Status::kFail);
}

TEST(HealthChecks, HardwareSlowdownFailsSoftwareThermalWarns) {
    GpuSnapshot g = Healthy();
    g.clock_event_reasons = kClocksEventSwPowerCap;  // power capping is normal
    EXPECT_EQ(CheckClockEvents(g).status, Status::kPass);
    g.clock_event_reasons = kClocksEventSwThermal;
    EXPECT_EQ(CheckClockEvents(g).status, Status::kWarn);
    for (std::uint64_t bit :
         {kClocksEventHwSlowdown, kClocksEventHwThermal, kClocksEventHwPowerBrake}) {
        g.clock_event_reasons = bit;
        EXPECT_EQ(CheckClockEvents(g).status, Status::kFail) << bit;
    }
}

TEST(HealthChecks, LeftoverProcessesFailPersistenceOffWarns) {
    GpuSnapshot g = Healthy();
    g.compute_processes = 1;
    EXPECT_EQ(CheckLeftovers(g).status, Status::kFail);
    g = Healthy();
    g.persistence_mode = false;
    EXPECT_EQ(CheckPersistence(g).status, Status::kWarn);
}

TEST(HealthChecks, DriverAndGpuCount) {
    NodeSnapshot node;
    node.driver_present = false;
    node.problem = "no NVIDIA driver: libnvidia-ml.so.1: cannot open shared object file";
    EXPECT_EQ(CheckDriver(node).status, Status::kUnknown);  // not evidence against the node
    node.problem = "driver/library version mismatch: NVML_ERROR_LIB_RM_VERSION_MISMATCH";
    EXPECT_EQ(CheckDriver(node).status, Status::kFail);
    node.driver_present = true;
    node.gpus = {Healthy()};
    node.gpus[0].minor = 3;
    EXPECT_EQ(CheckGpuCount(node, {3}).status, Status::kPass);
    auto r = CheckGpuCount(node, {3, 4});
    EXPECT_EQ(r.status, Status::kFail);
    EXPECT_THAT(r.summary, HasSubstr("4 not visible"));
}

TEST(HealthChecks, RegistryNamesMatchResults) {
    std::vector<std::string> names;
    for (const auto& c : NvmlChecks()) names.push_back(c.name);
    const GpuSnapshot g = Healthy();
    for (const CheckResult& r : {CheckEcc(g), CheckRemappedRows(g), CheckLeftovers(g)}) {
        EXPECT_NE(std::find(names.begin(), names.end(), r.check), names.end()) << r.check;
    }
}

TEST(ParseGpuList, SlurmForms) {
    EXPECT_EQ(ParseGpuList("0,1"), (std::vector<unsigned>{0, 1}));
    EXPECT_EQ(ParseGpuList("0-3,6"), (std::vector<unsigned>{0, 1, 2, 3, 6}));
    EXPECT_EQ(ParseGpuList(""), (std::vector<unsigned>{}));
    EXPECT_EQ(ParseGpuList("a"), std::nullopt);
    EXPECT_EQ(ParseGpuList("3-1"), std::nullopt);
    EXPECT_EQ(ParseGpuList("1,,2"), std::nullopt);
}

TEST(HealthConfigParse, ReadsSettingsAndModels) {
    auto r =
        ParseHealthConfig(YAML::Load("default_tier: full\nallow_off: false\n"
                                     "quick_budget_seconds: 4\nmodels:\n"
                                     "  - {match: H100, gemm_tflops_bf16: 700, nvlinks: 18}\n"),
                          "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->default_tier, HealthTier::kFull);
    EXPECT_FALSE(r->allow_off);
    EXPECT_EQ(r->quick_budget_seconds, 4);
    ASSERT_EQ(r->models.size(), 1u);
    EXPECT_EQ(FindModel(*r, "NVIDIA H100 80GB HBM3"), &r->models[0]);
    EXPECT_EQ(FindModel(*r, "NVIDIA A100"), nullptr);
}

TEST(HealthConfigParse, ShippedConfigLoads) {
    const std::string path = std::string(AUTOHEAL_SOURCE_DIR) + "/etc/autoheal.yaml";
    auto text = ReadSmallFile(path, kMaxConfigBytes);
    ASSERT_TRUE(text.ok()) << text.error();
    auto doc = ParseConfigDocument(*text, path);
    ASSERT_TRUE(doc.ok()) << doc.error();
    auto health = ParseHealthConfig((*doc)["health"], path);
    ASSERT_TRUE(health.ok()) << health.error();
    EXPECT_EQ(health->nvml_timeout_seconds, 5);
    EXPECT_TRUE(health->timeout_is_failure);
}

// .nan passed `d <= 0 || d > 3600` and became a check deadline (found with fuzz_config).
TEST(HealthConfigParse, RefusesNonFiniteNumbers) {
    for (const char* text : {"quick_budget_seconds: .nan\n", "full_budget_seconds: .inf\n",
                             "nvml_timeout_seconds: .NAN\n", "hbm_test_fraction: .nan\n"}) {
        EXPECT_FALSE(ParseHealthConfig(YAML::Load(text), "a.yaml").ok()) << text;
    }
}

TEST(HealthConfigParse, ErrorsAreLocated) {
    auto r = ParseHealthConfig(YAML::Load("quick_budget: 4\n"), "a.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("a.yaml:1:1: unknown setting 'health.quick_budget'"));
    r = ParseHealthConfig(YAML::Load("default_tier: fast\n"), "a.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(),
                HasSubstr("a.yaml:1:15: health.default_tier: expected quick, full or off"));
    r = ParseHealthConfig(YAML::Load("perf_warn_fraction: 0.5\nperf_fail_fraction: 0.8\n"), "a");
    EXPECT_FALSE(r.ok());
}

}  // namespace
}  // namespace autoheal::health
