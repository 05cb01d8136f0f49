// The fake CUDA check module (tests/fakes/fake_cuda) through its C ABI, loaded with dlopen as
// autoheal loads the real one: scenario lookup, CUDA_VISIBLE_DEVICES, and each scenario knob.
// When the real module was built (a CUDA compiler existed), it is loaded too and must refuse
// bad requests the same way, with or without a GPU.
#include <dlfcn.h>
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "autoheal_cuda_checks.h"

namespace {

namespace fs = std::filesystem;
using Json = nlohmann::json;

// The three ABI functions of one loaded module.
struct Module {
    void* handle = nullptr;
    int (*abi_version)() = nullptr;
    int (*device_count)() = nullptr;
    int (*run)(const char*, int, const char*, char*, size_t) = nullptr;

    explicit Module(const char* path) {
        handle = dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (handle == nullptr) return;
        abi_version = reinterpret_cast<int (*)()>(dlsym(handle, "autoheal_cuda_abi_version"));
        device_count = reinterpret_cast<int (*)()>(dlsym(handle, "autoheal_cuda_device_count"));
        run = reinterpret_cast<int (*)(const char*, int, const char*, char*, size_t)>(
            dlsym(handle, "autoheal_cuda_run"));
    }
    ~Module() {
        if (handle != nullptr) dlclose(handle);
    }
    bool ok() const {
        return handle != nullptr && abi_version != nullptr && device_count != nullptr &&
               run != nullptr;
    }
};

struct Result {
    int rc = 0;
    Json json;
    double wall_seconds = 0;
};

class FakeCudaTest : public ::testing::Test {
  protected:
    void SetUp() override {
        for (const char* name :
             {"AUTOHEAL_FAKE_GPU_SCENARIO", "CUDA_VISIBLE_DEVICES", "SLURMD_NODENAME"}) {
            unsetenv(name);
        }
        char dir_template[] = "/tmp/autoheal_fake_cuda_test.XXXXXX";
        ASSERT_NE(mkdtemp(dir_template), nullptr);
        dir_ = dir_template;
        ASSERT_TRUE(module_.ok()) << dlerror();
    }
    void TearDown() override {
        std::error_code ignored;
        fs::remove_all(dir_, ignored);
    }

    // Writes a scenario and points $AUTOHEAL_FAKE_GPU_SCENARIO at it.
    void UseScenario(const std::string& json) {
        const std::string path = (dir_ / "scenario.json").string();
        std::ofstream(path) << json;
        setenv("AUTOHEAL_FAKE_GPU_SCENARIO", path.c_str(), 1);
    }

    Result Run(const std::string& check, int device, const std::string& params = "{}") {
        char out[8192];
        const auto start = std::chrono::steady_clock::now();
        Result result;
        result.rc = module_.run(check.c_str(), device, params.c_str(), out, sizeof out);
        result.wall_seconds =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        result.json = Json::parse(out, nullptr, /*allow_exceptions=*/false);
        return result;
    }

    Module module_{AUTOHEAL_FAKE_CUDA};
    fs::path dir_;
};

TEST_F(FakeCudaTest, AbiVersionMatchesTheHeader) {
    EXPECT_EQ(module_.abi_version(), AUTOHEAL_CUDA_ABI_VERSION);
}

TEST_F(FakeCudaTest, AnEmptyScenarioIsEightHealthyH100s) {
    UseScenario("{}");
    ASSERT_EQ(module_.device_count(), 8);
    Result r = Run("gemm", 7);
    ASSERT_EQ(r.rc, 0) << r.json.dump();
    EXPECT_EQ(r.json["name"], "NVIDIA H100 80GB HBM3");
    EXPECT_EQ(r.json["uuid"], "GPU-00000000-0000-0000-0000-000000000007");
    EXPECT_EQ(r.json["pci_bus_id"], "0000:17:00.0");
    EXPECT_EQ(r.json["correct"], true);
    EXPECT_DOUBLE_EQ(r.json["tflops"].get<double>(), 750.0);
}

TEST_F(FakeCudaTest, WithoutAnyScenarioFileTheBuiltInNodeIsUsed) {
    const fs::path beside = fs::path(AUTOHEAL_FAKE_CUDA).parent_path() / "scenarios";
    if (fs::exists(beside / "default.json")) GTEST_SKIP() << beside << " has a default.json";
    EXPECT_EQ(module_.device_count(), 8);
}

TEST_F(FakeCudaTest, NodeScenarioBesideTheLibraryIsFoundBySlurmdNodename) {
    const fs::path folder = fs::path(AUTOHEAL_FAKE_CUDA).parent_path() / "scenarios";
    const std::string node = "fake-cuda-test-" + std::to_string(getpid());
    const fs::path file = folder / (node + ".json");
    fs::create_directories(folder);
    std::ofstream(file) << R"({"gpus": [{}, {}, {}]})";
    setenv("SLURMD_NODENAME", node.c_str(), 1);
    const int count = module_.device_count();
    std::error_code ignored;
    fs::remove(file, ignored);
    EXPECT_EQ(count, 3);
}

TEST_F(FakeCudaTest, CudaVisibleDevicesSelectsAndOrdersGpus) {
    UseScenario("{}");
    setenv("CUDA_VISIBLE_DEVICES", "3,1", 1);
    ASSERT_EQ(module_.device_count(), 2);
    EXPECT_EQ(Run("d2d_bw", 0).json["pci_bus_id"], "0000:13:00.0");
    EXPECT_EQ(Run("d2d_bw", 1).json["pci_bus_id"], "0000:11:00.0");
    Result beyond = Run("d2d_bw", 2);
    EXPECT_LT(beyond.rc, 0);
    EXPECT_EQ(beyond.json["error"], "invalid device ordinal");

    setenv("CUDA_VISIBLE_DEVICES", "GPU-00000000-0000-0000-0000-000000000005", 1);
    ASSERT_EQ(module_.device_count(), 1);
    EXPECT_EQ(Run("hbm", 0).json["pci_bus_id"], "0000:15:00.0");

    // Like CUDA: the list ends at the first entry that names no GPU.
    setenv("CUDA_VISIBLE_DEVICES", "0,42,1", 1);
    EXPECT_EQ(module_.device_count(), 1);
    setenv("CUDA_VISIBLE_DEVICES", "", 1);
    EXPECT_EQ(module_.device_count(), 0);
}

TEST_F(FakeCudaTest, GemmWrongGivesAnotherChecksum) {
    UseScenario(R"({"gpus": [{}, {"cuda": {"gemm_wrong": true}}, {}]})");
    Result healthy0 = Run("gemm", 0, R"({"n": 8192, "dtype": "bf16", "iterations": 20})");
    Result wrong = Run("gemm", 1, R"({"n": 8192, "dtype": "bf16", "iterations": 20})");
    Result healthy2 = Run("gemm", 2, R"({"n": 8192, "dtype": "bf16", "iterations": 20})");
    ASSERT_EQ(healthy0.rc, 0);
    ASSERT_EQ(wrong.rc, 0) << "a wrong answer is a verdict, not a failure to run";
    ASSERT_EQ(healthy2.rc, 0);
    EXPECT_EQ(healthy0.json["checksum"], healthy2.json["checksum"]);
    EXPECT_NE(healthy0.json["checksum"], wrong.json["checksum"]);
    EXPECT_EQ(healthy0.json["correct"], true);
    EXPECT_EQ(wrong.json["correct"], false);
    EXPECT_GT(wrong.json["max_rel_error"].get<double>(), 0.0);
    EXPECT_EQ(healthy0.json["max_rel_error"].get<double>(), 0.0);
}

TEST_F(FakeCudaTest, SlowGpuReportsItsTflops) {
    UseScenario(R"({"gpus": [{}, {"cuda": {"gemm_tflops": 400.0}}]})");
    EXPECT_DOUBLE_EQ(Run("gemm", 0).json["tflops"].get<double>(), 750.0);
    EXPECT_DOUBLE_EQ(Run("gemm", 1).json["tflops"].get<double>(), 400.0);
    EXPECT_LT(Run("gemm", 1, R"({"dtype": "fp32"})").json["tflops"].get<double>(), 400.0);
}

TEST_F(FakeCudaTest, FailReturnsNegativeAndAnErrorJson) {
    UseScenario(R"({"gpus": [{"cuda": {"fail": "hbm"}}]})");
    Result failed = Run("hbm", 0, R"({"fraction": 0.05})");
    EXPECT_LT(failed.rc, 0);
    ASSERT_TRUE(failed.json.is_object());
    EXPECT_EQ(failed.json["error"], "uncorrectable ECC error encountered");
    EXPECT_EQ(failed.json["error_name"], "cudaErrorECCUncorrectable");
    EXPECT_FALSE(failed.json.contains("gbps"));
    EXPECT_EQ(Run("gemm", 0).rc, 0) << "only the named check fails";
}

TEST_F(FakeCudaTest, HbmAndBandwidthValuesComeFromTheScenario) {
    UseScenario(R"({"gpus": [{"cuda": {"hbm_errors": 3, "hbm_gbps": 1000.0, "d2d_gbps": 900.0,
                                        "h2d_gbps": 20.0, "d2h_gbps": 21.0, "p2p_gbps": 100.0}},
                             {"cuda": {"allreduce_busbw_gbps": 50.0, "p2p_gbps": null}}]})");
    Result hbm = Run("hbm", 0, R"({"fraction": 0.5})");
    ASSERT_EQ(hbm.rc, 0);
    EXPECT_EQ(hbm.json["errors"], 3);
    EXPECT_DOUBLE_EQ(hbm.json["gbps"].get<double>(), 1000.0);
    EXPECT_GT(hbm.json["bytes_tested"].get<double>(), 30e9);
    EXPECT_DOUBLE_EQ(Run("d2d_bw", 0).json["gbps"].get<double>(), 900.0);
    EXPECT_DOUBLE_EQ(Run("h2d_bw", 0).json["gbps"].get<double>(), 20.0);
    EXPECT_DOUBLE_EQ(Run("d2h_bw", 0).json["gbps"].get<double>(), 21.0);
    Result p2p = Run("p2p_bw", 0, R"({"peer": 1})");
    ASSERT_EQ(p2p.rc, 0);
    EXPECT_EQ(p2p.json["supported"], false);
    Result allreduce = Run("nccl_allreduce", 0, R"({"devices": [0, 1]})");
    ASSERT_EQ(allreduce.rc, 0);
    EXPECT_DOUBLE_EQ(allreduce.json["busbw_gbps"].get<double>(), 50.0);
}

TEST_F(FakeCudaTest, SecondsIsHowLongEachCheckTakes) {
    UseScenario(R"({"gpus": [{"cuda": {"seconds": 0.2}}]})");
    Result r = Run("d2d_bw", 0);
    ASSERT_EQ(r.rc, 0);
    EXPECT_GE(r.wall_seconds, 0.19);
    EXPECT_LT(r.wall_seconds, 2.0);
    EXPECT_NEAR(r.json["seconds"].get<double>(), 0.2, 0.1);
}

TEST_F(FakeCudaTest, BadRequestsAreRefused) {
    UseScenario("{}");
    EXPECT_LT(Run("no_such_check", 0).rc, 0);
    Result typo = Run("gemm", 0, R"({"iters": 5})");
    EXPECT_LT(typo.rc, 0);
    EXPECT_EQ(typo.json["error"], "params: unknown key 'iters' for check 'gemm'");
    EXPECT_LT(Run("gemm", 0, R"({"dtype": "fp8"})").rc, 0);
    EXPECT_LT(Run("gemm", 0, "not json").rc, 0);
    EXPECT_LT(Run("gemm", -1).rc, 0);

    char tiny[8];
    EXPECT_LT(module_.run("gemm", 0, "{}", tiny, sizeof tiny), 0);
}

TEST_F(FakeCudaTest, UnreadableScenarioIsAnErrorNotAHealthyNode) {
    setenv("AUTOHEAL_FAKE_GPU_SCENARIO", (dir_ / "missing.json").c_str(), 1);
    EXPECT_LT(module_.device_count(), 0);
    Result r = Run("gemm", 0);
    EXPECT_LT(r.rc, 0);
    EXPECT_NE(r.json["error"].get<std::string>().find("missing.json"), std::string::npos);
}

TEST_F(FakeCudaTest, DriverInitErrorFailsCudaToo) {
    UseScenario(R"({"init_error": "NVML_ERROR_DRIVER_NOT_LOADED"})");
    EXPECT_LT(module_.device_count(), 0);
    EXPECT_LT(Run("gemm", 0).rc, 0);
}

#ifdef AUTOHEAL_CUDA_MODULE
// The real module, on whatever this machine has: it must load (only the driver is needed, and
// without one the calls fail cleanly), export only the ABI, and refuse bad requests before
// touching a GPU.
TEST(RealCudaModule, LoadsExportsOnlyTheAbiAndRefusesBadRequests) {
    Module real(AUTOHEAL_CUDA_MODULE);
    ASSERT_TRUE(real.ok()) << dlerror();
    EXPECT_EQ(real.abi_version(), AUTOHEAL_CUDA_ABI_VERSION);
    EXPECT_EQ(dlsym(real.handle, "cudaMalloc"), nullptr);
    EXPECT_GE(real.device_count(), -1);

    char out[4096];
    EXPECT_LT(real.run("gemm", 0, R"({"iters": 5})", out, sizeof out), 0);
    Json json = Json::parse(out);
    EXPECT_EQ(json["error"], "params: unknown key 'iters' for check 'gemm'");
    EXPECT_LT(real.run("no_such_check", 0, "{}", out, sizeof out), 0);
    EXPECT_LT(real.run("hbm", 0, R"({"fraction": 2})", out, sizeof out), 0);
    if (real.device_count() <= 0) {
        EXPECT_LT(real.run("gemm", 0, "{}", out, sizeof out), 0);
        EXPECT_TRUE(Json::parse(out).contains("error")) << out;
    }
}
#endif

}  // namespace
