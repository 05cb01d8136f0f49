// CollectSnapshot against the fake libnvidia-ml.so.1 (tests/fakes/fake_nvml), driven by scenario
// files (tests/fakes/SCENARIO.md) written to a temporary folder; and the snapshot's JSON form.
#include "autoheal/health/nvml_backend.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <thread>

#include "autoheal/health/gpu_snapshot.h"

#ifndef AUTOHEAL_FAKE_NVML
#error "AUTOHEAL_FAKE_NVML (path of the fake libnvidia-ml.so.1) must be defined"
#endif

namespace autoheal::health {
namespace {

namespace fs = std::filesystem;

constexpr const char* kFakeNvml = AUTOHEAL_FAKE_NVML;
constexpr std::uint64_t kH100Memory = 85520809984ULL;

bool Contains(const std::vector<std::string>& lines, const std::string& line) {
    for (const std::string& l : lines) {
        if (l == line) return true;
    }
    return false;
}

class NvmlBackendTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (fs::temp_directory_path() / "nvml_backend_test.XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
        unsetenv("SLURMD_NODENAME");
        unsetenv("AUTOHEAL_FAKE_GPU_SCENARIO");
    }
    void TearDown() override {
        unsetenv("AUTOHEAL_FAKE_GPU_SCENARIO");
        unsetenv("SLURMD_NODENAME");
        std::error_code ec;
        fs::remove_all(dir_, ec);
    }

    // Writes `scenario` and points the fake at it.
    void UseScenario(const std::string& scenario) {
        const std::string path = dir_ + "/scenario-" + std::to_string(++files_) + ".json";
        std::ofstream(path) << scenario;
        setenv("AUTOHEAL_FAKE_GPU_SCENARIO", path.c_str(), 1);
    }

    NodeSnapshot Collect(const std::string& scenario) {
        UseScenario(scenario);
        return CollectSnapshot(kFakeNvml);
    }

    std::string dir_;
    int files_ = 0;
};

void ExpectHealthyH100(const GpuSnapshot& g, unsigned i) {
    SCOPED_TRACE("gpu " + std::to_string(i));
    char buf[64];
    EXPECT_EQ(g.index, i);
    EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
    std::snprintf(buf, sizeof(buf), "GPU-00000000-0000-0000-0000-%012u", i);
    EXPECT_EQ(g.uuid, buf);
    std::snprintf(buf, sizeof(buf), "0000:%02x:00.0", 0x10 + i);
    EXPECT_EQ(g.pci_bus_id, buf);
    std::snprintf(buf, sizeof(buf), "1650%09u", i);
    EXPECT_EQ(g.serial, buf);
    EXPECT_EQ(g.minor, i);
    EXPECT_EQ(g.ecc_uncorrected_volatile, 0u);
    EXPECT_EQ(g.ecc_uncorrected_aggregate, 0u);
    EXPECT_EQ(g.ecc_uncorrected_dram, 0u);
    EXPECT_EQ(g.ecc_uncorrected_sram, 0u);
    ASSERT_TRUE(g.remapped_rows.has_value());
    EXPECT_EQ(g.remapped_rows->correctable, 0u);
    EXPECT_EQ(g.remapped_rows->uncorrectable, 0u);
    EXPECT_FALSE(g.remapped_rows->pending);
    EXPECT_FALSE(g.remapped_rows->failure);
    EXPECT_EQ(g.retired_pages_dbe, 0u);
    EXPECT_EQ(g.retired_pages_pending, false);
    EXPECT_EQ(g.recovery_action, 0u);
    EXPECT_EQ(g.pcie_gen, 5u);
    EXPECT_EQ(g.pcie_gen_max, 5u);
    EXPECT_EQ(g.pcie_width, 16u);
    EXPECT_EQ(g.pcie_width_max, 16u);
    ASSERT_EQ(g.nvlinks.size(), 18u);
    for (unsigned l = 0; l < g.nvlinks.size(); ++l) {
        EXPECT_EQ(g.nvlinks[l].link, l);
        EXPECT_TRUE(g.nvlinks[l].active);
        EXPECT_EQ(g.nvlinks[l].crc_flit_errors, 0u);
        EXPECT_EQ(g.nvlinks[l].replay_errors, 0u);
        EXPECT_EQ(g.nvlinks[l].recovery_errors, 0u);
    }
    EXPECT_EQ(g.temperature_c, 35u);
    EXPECT_EQ(g.slowdown_temperature_c, 90u);
    EXPECT_EQ(g.clock_event_reasons, 0u);
    EXPECT_EQ(g.persistence_mode, true);
    EXPECT_EQ(g.compute_processes, 0u);
    EXPECT_EQ(g.memory_used_bytes, 0u);
    EXPECT_EQ(g.memory_total_bytes, kH100Memory);
    EXPECT_TRUE(g.errors.empty()) << ::testing::PrintToString(g.errors);
}

TEST_F(NvmlBackendTest, EmptyScenarioIsEightHealthyH100s) {
    const NodeSnapshot node = Collect("{}");
    EXPECT_TRUE(node.driver_present);
    EXPECT_EQ(node.problem, "");
    EXPECT_EQ(node.driver_version, "550.54.15");
    EXPECT_EQ(node.nvml_version, "12.550.54.15");
    ASSERT_EQ(node.gpus.size(), 8u);
    for (unsigned i = 0; i < 8; ++i) ExpectHealthyH100(node.gpus[i], i);
}

TEST_F(NvmlBackendTest, BuiltInScenarioWithoutAnyFile) {
    const fs::path scenarios = fs::path(kFakeNvml).parent_path() / "scenarios";
    if (fs::exists(scenarios)) GTEST_SKIP() << scenarios << " exists (the cluster's scenarios)";
    const NodeSnapshot node = CollectSnapshot(kFakeNvml);
    EXPECT_TRUE(node.driver_present);
    ASSERT_EQ(node.gpus.size(), 8u);
    for (unsigned i = 0; i < 8; ++i) ExpectHealthyH100(node.gpus[i], i);
}

// The node's file next to the fake is used when $AUTOHEAL_FAKE_GPU_SCENARIO is unset, and the
// variable wins over it when set.
TEST_F(NvmlBackendTest, ScenarioLookupByNodeName) {
    const fs::path scenarios = fs::path(kFakeNvml).parent_path() / "scenarios";
    const bool created = !fs::exists(scenarios);
    fs::create_directories(scenarios);
    const std::string node_name = "unit-" + std::to_string(getpid());
    const fs::path file = scenarios / (node_name + ".json");
    std::ofstream(file) << R"({"driver_version": "1.2.3", "gpus": [{}, {}]})";
    setenv("SLURMD_NODENAME", node_name.c_str(), 1);

    const NodeSnapshot by_node = CollectSnapshot(kFakeNvml);
    UseScenario(R"({"driver_version": "4.5.6", "gpus": [{}]})");
    const NodeSnapshot by_env = CollectSnapshot(kFakeNvml);

    std::error_code ec;
    fs::remove(file, ec);
    if (created) fs::remove(scenarios, ec);

    EXPECT_EQ(by_node.driver_version, "1.2.3");
    EXPECT_EQ(by_node.gpus.size(), 2u);
    EXPECT_EQ(by_env.driver_version, "4.5.6");
    EXPECT_EQ(by_env.gpus.size(), 1u);
}

constexpr const char* kFaultScenario = R"({
  "driver_version": "535.104.12",
  "gpus": [
    {"ecc": {"volatile_uncorrected": 3, "aggregate_uncorrected": 7,
             "dram_uncorrected": 2, "sram_uncorrected": 1},
     "remapped_rows": {"correctable": 1, "uncorrectable": 4, "pending": true, "failure": true},
     "retired_pages": {"dbe": 5, "pending": true},
     "recovery_action": 2},
    {"pcie": {"gen": 3, "width": 8},
     "nvlinks": [{"active": true, "crc_flit": 11, "replay": 12, "recovery": 13},
                 {"active": false}],
     "temperature_c": 93,
     "clock_event_reasons": 72,
     "persistence_mode": false,
     "processes": 3,
     "memory_used_bytes": 1073741824},
    {"name": "NVIDIA A100-SXM4-80GB", "pci_bus_id": "0000:3b:00.0", "minor": 6,
     "nvlink_count": 0, "slowdown_temperature_c": 87}
  ]
})";

TEST_F(NvmlBackendTest, FaultScenario) {
    const NodeSnapshot node = Collect(kFaultScenario);
    ASSERT_TRUE(node.driver_present) << node.problem;
    EXPECT_EQ(node.driver_version, "535.104.12");
    ASSERT_EQ(node.gpus.size(), 3u);

    const GpuSnapshot& ecc = node.gpus[0];
    EXPECT_EQ(ecc.ecc_uncorrected_volatile, 3u);
    EXPECT_EQ(ecc.ecc_uncorrected_aggregate, 7u);
    EXPECT_EQ(ecc.ecc_uncorrected_dram, 2u);
    EXPECT_EQ(ecc.ecc_uncorrected_sram, 1u);
    ASSERT_TRUE(ecc.remapped_rows.has_value());
    EXPECT_EQ(ecc.remapped_rows->correctable, 1u);
    EXPECT_EQ(ecc.remapped_rows->uncorrectable, 4u);
    EXPECT_TRUE(ecc.remapped_rows->pending);
    EXPECT_TRUE(ecc.remapped_rows->failure);
    EXPECT_EQ(ecc.retired_pages_dbe, 5u);
    EXPECT_EQ(ecc.retired_pages_pending, true);
    EXPECT_EQ(ecc.recovery_action, 2u);
    EXPECT_EQ(ecc.pcie_gen, 5u);
    EXPECT_TRUE(ecc.errors.empty()) << ::testing::PrintToString(ecc.errors);

    const GpuSnapshot& links = node.gpus[1];
    EXPECT_EQ(links.uuid, "GPU-00000000-0000-0000-0000-000000000001");
    EXPECT_EQ(links.pcie_gen, 3u);
    EXPECT_EQ(links.pcie_gen_max, 5u);
    EXPECT_EQ(links.pcie_width, 8u);
    EXPECT_EQ(links.pcie_width_max, 16u);
    ASSERT_EQ(links.nvlinks.size(), 2u);
    EXPECT_TRUE(links.nvlinks[0].active);
    EXPECT_EQ(links.nvlinks[0].crc_flit_errors, 11u);
    EXPECT_EQ(links.nvlinks[0].replay_errors, 12u);
    EXPECT_EQ(links.nvlinks[0].recovery_errors, 13u);
    EXPECT_EQ(links.nvlinks[1].link, 1u);
    EXPECT_FALSE(links.nvlinks[1].active);
    EXPECT_EQ(links.temperature_c, 93u);
    EXPECT_EQ(links.slowdown_temperature_c, 90u);
    EXPECT_EQ(links.clock_event_reasons, kClocksEventHwSlowdown | kClocksEventHwThermal);
    EXPECT_EQ(links.persistence_mode, false);
    EXPECT_EQ(links.compute_processes, 3u);
    EXPECT_EQ(links.memory_used_bytes, 1073741824u);
    EXPECT_EQ(links.ecc_uncorrected_volatile, 0u);
    EXPECT_TRUE(links.errors.empty()) << ::testing::PrintToString(links.errors);

    const GpuSnapshot& pcie = node.gpus[2];
    EXPECT_EQ(pcie.name, "NVIDIA A100-SXM4-80GB");
    EXPECT_EQ(pcie.pci_bus_id, "0000:3b:00.0");  // NVML says "00000000:3B:00.0"
    EXPECT_EQ(pcie.minor, 6u);
    EXPECT_TRUE(pcie.nvlinks.empty());  // no NVLink is not an error
    EXPECT_EQ(pcie.slowdown_temperature_c, 87u);
    EXPECT_TRUE(pcie.errors.empty()) << ::testing::PrintToString(pcie.errors);
}

TEST_F(NvmlBackendTest, UnsupportedQueriesLeaveValuesUnsetWithAnErrorLine) {
    const NodeSnapshot node = Collect(R"({"gpus": [
      {"unsupported": ["nvmlDeviceGetMinorNumber", "nvmlDeviceGetTotalEccErrors",
                       "nvmlDeviceGetMemoryErrorCounter", "nvmlDeviceGetRemappedRows",
                       "nvmlDeviceGetRetiredPages_v2", "nvmlDeviceGetRetiredPagesPendingStatus",
                       "nvmlDeviceGetFieldValues", "nvmlDeviceGetCurrPcieLinkGeneration",
                       "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetNvLinkErrorCounter",
                       "nvmlDeviceGetTemperature", "nvmlDeviceGetTemperatureThreshold",
                       "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetPersistenceMode",
                       "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetMemoryInfo",
                       "nvmlDeviceGetSerial"],
       "nvlink_count": 2},
      {"unsupported": ["nvmlDeviceGetNvLinkState"]},
      {"unsupported": ["nvmlDeviceGetHandleByIndex_v2"]}
    ]})");
    ASSERT_TRUE(node.driver_present) << node.problem;
    ASSERT_EQ(node.gpus.size(), 3u);

    const GpuSnapshot& g = node.gpus[0];
    EXPECT_EQ(g.name, "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(g.serial, "");
    EXPECT_FALSE(g.minor);
    EXPECT_FALSE(g.ecc_uncorrected_volatile);
    EXPECT_FALSE(g.ecc_uncorrected_aggregate);
    EXPECT_FALSE(g.ecc_uncorrected_dram);
    EXPECT_FALSE(g.ecc_uncorrected_sram);
    EXPECT_FALSE(g.remapped_rows);
    EXPECT_FALSE(g.retired_pages_dbe);
    EXPECT_FALSE(g.retired_pages_pending);
    EXPECT_FALSE(g.recovery_action);
    EXPECT_FALSE(g.pcie_gen);
    EXPECT_EQ(g.pcie_gen_max, 5u);
    EXPECT_EQ(g.pcie_width, 16u);
    EXPECT_FALSE(g.pcie_width_max);
    ASSERT_EQ(g.nvlinks.size(), 2u);  // states known, counters not
    EXPECT_TRUE(g.nvlinks[1].active);
    EXPECT_EQ(g.nvlinks[1].crc_flit_errors, 0u);
    EXPECT_FALSE(g.temperature_c);
    EXPECT_FALSE(g.slowdown_temperature_c);
    EXPECT_FALSE(g.clock_event_reasons);
    EXPECT_FALSE(g.persistence_mode);
    EXPECT_FALSE(g.compute_processes);
    EXPECT_FALSE(g.memory_used_bytes);
    EXPECT_FALSE(g.memory_total_bytes);
    for (const char* fn : {"nvmlDeviceGetMinorNumber", "nvmlDeviceGetTotalEccErrors",
                           "nvmlDeviceGetMemoryErrorCounter", "nvmlDeviceGetRemappedRows",
                           "nvmlDeviceGetRetiredPages_v2", "nvmlDeviceGetRetiredPagesPendingStatus",
                           "nvmlDeviceGetFieldValues", "nvmlDeviceGetCurrPcieLinkGeneration",
                           "nvmlDeviceGetMaxPcieLinkWidth", "nvmlDeviceGetNvLinkErrorCounter",
                           "nvmlDeviceGetTemperature", "nvmlDeviceGetTemperatureThreshold",
                           "nvmlDeviceGetCurrentClocksEventReasons", "nvmlDeviceGetPersistenceMode",
                           "nvmlDeviceGetComputeRunningProcesses_v3", "nvmlDeviceGetMemoryInfo",
                           "nvmlDeviceGetSerial"}) {
        EXPECT_TRUE(Contains(g.errors, std::string(fn) + ": Not Supported"))
            << fn << " in " << ::testing::PrintToString(g.errors);
    }
    // One line per function and error, however often it was called.
    EXPECT_EQ(g.errors.size(), 17u) << ::testing::PrintToString(g.errors);

    // A GPU without NVLink: no links, and no error.
    EXPECT_TRUE(node.gpus[1].nvlinks.empty());
    EXPECT_TRUE(node.gpus[1].errors.empty()) << ::testing::PrintToString(node.gpus[1].errors);
    EXPECT_EQ(node.gpus[1].temperature_c, 35u);

    // A GPU without a handle is still listed at its index.
    const GpuSnapshot& lost = node.gpus[2];
    EXPECT_EQ(lost.index, 2u);
    EXPECT_EQ(lost.uuid, "");
    EXPECT_FALSE(lost.temperature_c);
    EXPECT_EQ(lost.errors,
              std::vector<std::string>{"nvmlDeviceGetHandleByIndex_v2: Not Supported"});
}

TEST_F(NvmlBackendTest, InitErrors) {
    NodeSnapshot node = Collect(R"({"init_error": "NVML_ERROR_LIB_RM_VERSION_MISMATCH"})");
    EXPECT_FALSE(node.driver_present);
    EXPECT_EQ(node.problem,
              "driver/library version mismatch: nvmlInit_v2: Driver/library version mismatch");
    EXPECT_TRUE(node.gpus.empty());

    node = Collect(R"({"init_error": "NVML_ERROR_DRIVER_NOT_LOADED"})");
    EXPECT_FALSE(node.driver_present);
    EXPECT_EQ(node.problem, "NVIDIA driver not loaded: nvmlInit_v2: Driver Not Loaded");

    node = Collect(R"({"init_error": "NVML_ERROR_NO_PERMISSION"})");
    EXPECT_FALSE(node.driver_present);
    EXPECT_EQ(node.problem, "NVML initialisation failed: nvmlInit_v2: Insufficient Permissions");

    // The fake refuses a scenario it cannot read rather than answering "healthy".
    node = Collect(R"({"gpus": [{"pcie": {"gen": "five"}}]})");
    EXPECT_FALSE(node.driver_present);
    EXPECT_EQ(node.problem, "NVML initialisation failed: nvmlInit_v2: Unknown Error");

    // And the next collection starts afresh.
    node = Collect(R"({"gpus": [{}]})");
    EXPECT_TRUE(node.driver_present);
    EXPECT_EQ(node.gpus.size(), 1u);
}

TEST_F(NvmlBackendTest, MissingLibraryIsNoDriver) {
    const std::string path = dir_ + "/absent/libnvidia-ml.so.1";
    const NodeSnapshot node = CollectSnapshot(path);
    EXPECT_FALSE(node.driver_present);
    EXPECT_EQ(node.problem.rfind("no NVIDIA driver: ", 0), 0u) << node.problem;
    EXPECT_NE(node.problem.find(path), std::string::npos) << node.problem;
    EXPECT_TRUE(node.gpus.empty());
}

TEST_F(NvmlBackendTest, LibraryWithoutNvmlIsNoDriver) {
    const NodeSnapshot node = CollectSnapshot("libm.so.6");
    EXPECT_FALSE(node.driver_present);
    EXPECT_EQ(node.problem.rfind("no NVIDIA driver: ", 0), 0u) << node.problem;
    EXPECT_NE(node.problem.find("nvmlInit_v2"), std::string::npos) << node.problem;
}

// A "hang" that ends: the named call takes that long, and the snapshot is still complete.
TEST_F(NvmlBackendTest, SlowCallDelaysButCompletes) {
    UseScenario(R"({"hang": {"call": "nvmlDeviceGetTemperature", "gpu": 1, "seconds": 1},
                    "gpus": [{}, {}, {}]})");
    auto start = std::chrono::steady_clock::now();
    NodeSnapshot node = CollectSnapshot(kFakeNvml);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(seconds, 0.9);
    EXPECT_LT(seconds, 2.5);  // GPUs 0 and 2 do not sleep
    ASSERT_EQ(node.gpus.size(), 3u);
    EXPECT_EQ(node.gpus[1].temperature_c, 35u);
    EXPECT_TRUE(node.gpus[1].errors.empty());

    // Without "gpu", every GPU's call sleeps.
    UseScenario(R"({"hang": {"call": "nvmlDeviceGetMemoryInfo", "seconds": 0.3},
                    "gpus": [{}, {}]})");
    start = std::chrono::steady_clock::now();
    node = CollectSnapshot(kFakeNvml);
    seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_GE(seconds, 0.55);
    ASSERT_EQ(node.gpus.size(), 2u);
    EXPECT_EQ(node.gpus[1].memory_total_bytes, kH100Memory);
}

// ---- JSON ---------------------------------------------------------------------------------------

void ExpectSame(const NodeSnapshot& a, const NodeSnapshot& b) {
    EXPECT_EQ(a.driver_present, b.driver_present);
    EXPECT_EQ(a.problem, b.problem);
    EXPECT_EQ(a.driver_version, b.driver_version);
    EXPECT_EQ(a.nvml_version, b.nvml_version);
    ASSERT_EQ(a.gpus.size(), b.gpus.size());
    for (std::size_t i = 0; i < a.gpus.size(); ++i) {
        SCOPED_TRACE("gpu " + std::to_string(i));
        const GpuSnapshot& x = a.gpus[i];
        const GpuSnapshot& y = b.gpus[i];
        EXPECT_EQ(x.index, y.index);
        EXPECT_EQ(x.name, y.name);
        EXPECT_EQ(x.uuid, y.uuid);
        EXPECT_EQ(x.pci_bus_id, y.pci_bus_id);
        EXPECT_EQ(x.serial, y.serial);
        EXPECT_EQ(x.minor, y.minor);
        EXPECT_EQ(x.ecc_uncorrected_volatile, y.ecc_uncorrected_volatile);
        EXPECT_EQ(x.ecc_uncorrected_aggregate, y.ecc_uncorrected_aggregate);
        EXPECT_EQ(x.ecc_uncorrected_dram, y.ecc_uncorrected_dram);
        EXPECT_EQ(x.ecc_uncorrected_sram, y.ecc_uncorrected_sram);
        ASSERT_EQ(x.remapped_rows.has_value(), y.remapped_rows.has_value());
        if (x.remapped_rows) {
            EXPECT_EQ(x.remapped_rows->correctable, y.remapped_rows->correctable);
            EXPECT_EQ(x.remapped_rows->uncorrectable, y.remapped_rows->uncorrectable);
            EXPECT_EQ(x.remapped_rows->pending, y.remapped_rows->pending);
            EXPECT_EQ(x.remapped_rows->failure, y.remapped_rows->failure);
        }
        EXPECT_EQ(x.retired_pages_dbe, y.retired_pages_dbe);
        EXPECT_EQ(x.retired_pages_pending, y.retired_pages_pending);
        EXPECT_EQ(x.recovery_action, y.recovery_action);
        EXPECT_EQ(x.pcie_gen, y.pcie_gen);
        EXPECT_EQ(x.pcie_gen_max, y.pcie_gen_max);
        EXPECT_EQ(x.pcie_width, y.pcie_width);
        EXPECT_EQ(x.pcie_width_max, y.pcie_width_max);
        ASSERT_EQ(x.nvlinks.size(), y.nvlinks.size());
        for (std::size_t l = 0; l < x.nvlinks.size(); ++l) {
            EXPECT_EQ(x.nvlinks[l].link, y.nvlinks[l].link);
            EXPECT_EQ(x.nvlinks[l].active, y.nvlinks[l].active);
            EXPECT_EQ(x.nvlinks[l].crc_flit_errors, y.nvlinks[l].crc_flit_errors);
            EXPECT_EQ(x.nvlinks[l].replay_errors, y.nvlinks[l].replay_errors);
            EXPECT_EQ(x.nvlinks[l].recovery_errors, y.nvlinks[l].recovery_errors);
        }
        EXPECT_EQ(x.temperature_c, y.temperature_c);
        EXPECT_EQ(x.slowdown_temperature_c, y.slowdown_temperature_c);
        EXPECT_EQ(x.clock_event_reasons, y.clock_event_reasons);
        EXPECT_EQ(x.persistence_mode, y.persistence_mode);
        EXPECT_EQ(x.compute_processes, y.compute_processes);
        EXPECT_EQ(x.memory_used_bytes, y.memory_used_bytes);
        EXPECT_EQ(x.memory_total_bytes, y.memory_total_bytes);
        EXPECT_EQ(x.errors, y.errors);
    }
}

TEST_F(NvmlBackendTest, JsonRoundTripOfCollectedSnapshots) {
    for (const char* scenario :
         {"{}", kFaultScenario,
          R"({"gpus": [{"unsupported": ["nvmlDeviceGetRemappedRows", "nvmlDeviceGetMemoryInfo"]},
                       {"unsupported": ["nvmlDeviceGetHandleByIndex_v2"]}]})",
          R"({"init_error": "NVML_ERROR_LIB_RM_VERSION_MISMATCH"})"}) {
        SCOPED_TRACE(scenario);
        const NodeSnapshot node = Collect(scenario);
        const std::string json = SnapshotToJson(node);
        const std::optional<NodeSnapshot> back = SnapshotFromJson(json);
        ASSERT_TRUE(back.has_value()) << json;
        ExpectSame(node, *back);
        EXPECT_EQ(SnapshotToJson(*back), json);
    }
}

TEST(GpuSnapshotJson, RoundTripOfExtremesAndAbsentOptionals) {
    NodeSnapshot node;
    node.driver_present = true;
    node.driver_version = "550.54.15";
    GpuSnapshot g;
    g.index = 7;
    g.name = "NVIDIA \"H100\" \\ \xc3\xa9";  // quotes, backslash, UTF-8
    g.ecc_uncorrected_volatile = UINT64_MAX;
    g.remapped_rows = RemappedRows{UINT32_MAX, 0, true, false};
    g.clock_event_reasons = kClocksEventHwPowerBrake | kClocksEventSwPowerCap;
    g.nvlinks.push_back(NvLinkState{17, false, UINT64_MAX, 1, 2});
    g.errors = {"nvmlDeviceGetTemperature: GPU is lost", ""};
    node.gpus.push_back(g);
    node.gpus.push_back(GpuSnapshot{});

    const std::string text = SnapshotToJson(node);
    const std::optional<NodeSnapshot> back = SnapshotFromJson(text);
    ASSERT_TRUE(back.has_value()) << text;
    ExpectSame(node, *back);

    // Unset optionals are absent keys, not nulls.
    const nlohmann::json j = nlohmann::json::parse(text);
    const nlohmann::json& empty = j.at("gpus").at(1);
    for (const char* key : {"minor", "ecc_uncorrected_volatile", "remapped_rows",
                            "retired_pages_dbe", "recovery_action", "pcie_gen", "temperature_c",
                            "clock_event_reasons", "persistence_mode", "memory_total_bytes"}) {
        EXPECT_FALSE(empty.contains(key)) << key;
    }
    EXPECT_TRUE(j.at("gpus").at(0).contains("remapped_rows"));
    EXPECT_EQ(j.at("gpus").at(0).at("ecc_uncorrected_volatile").get<std::uint64_t>(), UINT64_MAX);
}

TEST(GpuSnapshotJson, InvalidUtf8IsReplacedNotThrown) {
    NodeSnapshot node;
    GpuSnapshot g;
    g.serial = "bad\xff\xfe";
    node.gpus.push_back(g);
    const std::optional<NodeSnapshot> back = SnapshotFromJson(SnapshotToJson(node));
    ASSERT_TRUE(back.has_value());
    ASSERT_EQ(back->gpus.size(), 1u);
    EXPECT_EQ(back->gpus[0].serial.rfind("bad", 0), 0u);
}

TEST(GpuSnapshotJson, MissingAndUnknownKeysAreAccepted) {
    const std::optional<NodeSnapshot> node =
        SnapshotFromJson(R"({"driver_present": true, "future": [1, 2],
                             "gpus": [{"index": 3, "temperature_c": 40, "new_field": {}}]})");
    ASSERT_TRUE(node.has_value());
    EXPECT_TRUE(node->driver_present);
    ASSERT_EQ(node->gpus.size(), 1u);
    EXPECT_EQ(node->gpus[0].index, 3u);
    EXPECT_EQ(node->gpus[0].temperature_c, 40u);
    EXPECT_FALSE(node->gpus[0].memory_total_bytes);
    EXPECT_TRUE(node->gpus[0].nvlinks.empty());
}

TEST(GpuSnapshotJson, MalformedInputIsNullopt) {
    for (const char* text : {
             "",
             "garbage",
             "{",
             "[]",
             "null",
             "42",
             R"("a string")",
             R"({"driver_present": "yes"})",
             R"({"driver_present": true, "gpus": {}})",
             R"({"gpus": [1]})",
             R"({"gpus": [{"index": -1}]})",
             R"({"gpus": [{"index": 1.5}]})",
             R"({"gpus": [{"minor": 4294967296}]})",
             R"({"gpus": [{"temperature_c": null}]})",
             R"({"gpus": [{"remapped_rows": {"pending": 1}}]})",
             R"({"gpus": [{"remapped_rows": []}]})",
             R"({"gpus": [{"nvlinks": [{"link": "0"}]}]})",
             R"({"gpus": [{"errors": [1]}]})",
             R"({"gpus": [{"errors": "x"}]})",
             R"({"problem": 5})",
             "{\"gpus\": []} trailing",
         }) {
        EXPECT_FALSE(SnapshotFromJson(text).has_value()) << text;
    }
}

}  // namespace
}  // namespace autoheal::health

namespace autoheal::health {
namespace {

// autoheal-agent's sampling reads only power, clocks, temperature, reasons and the violation
// counters; the counters grow with time since the scenario file was written.
TEST_F(NvmlBackendTest, TelemetryScopeReadsPowerClocksAndViolationCounters) {
    UseScenario(R"({"gpus": [{"minor": 4, "temperature_c": 70,
        "telemetry": {"power_watts": 450, "sm_clock_mhz": 1410,
                      "thermal_violation_percent": 100}}]})");
    const NodeSnapshot a = CollectSnapshot(kFakeNvml, Scope::kTelemetry);
    ASSERT_EQ(a.gpus.size(), 1u);
    const GpuSnapshot& g = a.gpus[0];
    EXPECT_TRUE(g.errors.empty()) << g.errors.front();
    EXPECT_EQ(g.minor, 4u);
    EXPECT_EQ(g.power_mw, 450000u);
    EXPECT_EQ(g.sm_clock_mhz, 1410u);
    EXPECT_EQ(g.temperature_c, 70u);
    EXPECT_EQ(g.power_violation_ns, 0u);
    ASSERT_TRUE(g.thermal_violation_ns);
    EXPECT_TRUE(g.name.empty());  // not read in this scope
    EXPECT_FALSE(g.ecc_uncorrected_volatile);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    const NodeSnapshot b = CollectSnapshot(kFakeNvml, Scope::kTelemetry);
    EXPECT_GT(*b.gpus[0].thermal_violation_ns, *g.thermal_violation_ns);
}

}  // namespace
}  // namespace autoheal::health
