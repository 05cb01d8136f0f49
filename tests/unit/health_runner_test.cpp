// The runner end to end in-process, with the fake NVML and CUDA libraries: tiers, cross-GPU
// verdicts, deadlines.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "autoheal/health/runner.h"
#include "fake_gpu_test.h"

namespace autoheal::health {
namespace {

using ::testing::HasSubstr;

class RunnerTest : public testing::FakeGpuTest {
  protected:
    static const CheckResult* Find(const HealthReport& r, const std::string& check,
                                   const std::string& gpu = "") {
        for (const CheckResult& c : r.results) {
            if (c.check == check && (gpu.empty() || c.gpu == gpu)) return &c;
        }
        return nullptr;
    }
};

constexpr const char* kFour = R"({"gpus": [{"minor": 0, "pci_bus_id": "0000:10:00.0"},
    {"minor": 1, "pci_bus_id": "0000:20:00.0"}, {"minor": 2, "pci_bus_id": "0000:30:00.0"},
    {"minor": 3, "pci_bus_id": "0000:40:00.0"}]})";

TEST_F(RunnerTest, HealthyNodePassesQuickAndFull) {
    HealthReport quick = Run(kFour, HealthTier::kQuick);
    EXPECT_EQ(quick.status, Status::kPass) << FormatReport(quick);
    ASSERT_NE(Find(quick, "gemm-bf16", "0000:30:00.0"), nullptr);
    EXPECT_EQ(Find(quick, "nccl-allreduce"), nullptr);
    HealthReport full = Run(kFour, HealthTier::kFull);
    EXPECT_EQ(full.status, Status::kPass) << FormatReport(full);
    ASSERT_NE(Find(full, "nccl-allreduce"), nullptr) << FormatReport(full);
    ASSERT_NE(Find(full, "p2p_bw", "0000:10:00.0"), nullptr);
    EXPECT_EQ(full.snapshot.gpus.size(), 4u);
}

TEST_F(RunnerTest, StragglerAndSilentCorruptionAreCaughtAcrossGpus) {
    HealthReport r = Run(R"({"gpus": [{"minor": 0}, {"minor": 1, "cuda": {"gemm_tflops": 500}},
                                      {"minor": 2, "cuda": {"gemm_wrong": true}}, {"minor": 3}]})",
                         HealthTier::kQuick);
    EXPECT_EQ(r.status, Status::kFail);
    const CheckResult* slow = nullptr;
    const CheckResult* wrong = nullptr;
    for (const CheckResult& c : r.results) {
        if (c.check != "gemm-bf16") continue;
        if (c.summary.find("TFLOP/s") != std::string::npos && c.status == Status::kFail) slow = &c;
        if (c.summary.find("wrong") != std::string::npos) wrong = &c;
    }
    ASSERT_NE(slow, nullptr) << FormatReport(r);  // 500 of a 750 median: 67% < 75%
    EXPECT_THAT(slow->summary, HasSubstr("% of peers"));
    ASSERT_NE(wrong, nullptr) << FormatReport(r);
    EXPECT_EQ(wrong->reason, "wrong-result");
    EXPECT_EQ(slow->reason, "slow");
}

// A GPU whose own check passes but whose checksum differs from its peers' fails with the
// reason rules match (peer-mismatch); the healthy majority passes.
TEST_F(RunnerTest, PeerChecksumMismatchFailsThatGpuOnly) {
    HealthReport r = Run(R"({"gpus": [{"minor": 0, "pci_bus_id": "0000:10:00.0"},
        {"minor": 1, "pci_bus_id": "0000:20:00.0", "cuda": {"gemm_checksum_differs": true}},
        {"minor": 2, "pci_bus_id": "0000:30:00.0"}]})",
                         HealthTier::kQuick);
    const CheckResult* odd = Find(r, "gemm-bf16", "0000:20:00.0");
    ASSERT_NE(odd, nullptr) << FormatReport(r);
    EXPECT_EQ(odd->status, Status::kFail);
    EXPECT_EQ(odd->reason, "peer-mismatch");
    EXPECT_EQ(Find(r, "gemm-bf16", "0000:10:00.0")->status, Status::kPass);
    EXPECT_EQ(Find(r, "gemm-bf16", "0000:30:00.0")->status, Status::kPass);
}

TEST_F(RunnerTest, HungCudaCheckIsUnknownAndFailsWithinTheBudget) {
    auto start = std::chrono::steady_clock::now();
    HealthReport r = Run(R"({"gpus": [{"minor": 0, "cuda": {"hang": "hbm"}}, {"minor": 1}]})",
                         HealthTier::kQuick, 2);
    double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    EXPECT_LT(seconds, 4.0);
    EXPECT_EQ(r.status, Status::kFail);
    const CheckResult* hbm = nullptr;
    for (const CheckResult& c : r.results) {
        if (c.check == "hbm" && c.status == Status::kUnknown) hbm = &c;
    }
    ASSERT_NE(hbm, nullptr) << FormatReport(r);
    EXPECT_THAT(hbm->summary, HasSubstr("time budget"));
}

TEST_F(RunnerTest, NvmlFailureSkipsCudaChecksAndOnlyAllocatedGpusAreChecked) {
    RunRequest request;
    const auto path = dir_ / "s.json";
    std::ofstream(path) << R"({"gpus": [{"minor": 0, "ecc": {"volatile_uncorrected": 2}},
                                        {"minor": 1}]})";
    setenv("AUTOHEAL_FAKE_GPU_SCENARIO", path.c_str(), 1);
    request.config.nvml_library = AUTOHEAL_FAKE_NVML;
    request.cuda_module = AUTOHEAL_FAKE_CUDA;
    request.gpu_minors = {1};
    HealthReport healthy_gpu = RunHealthChecks(request);
    EXPECT_EQ(healthy_gpu.status, Status::kPass) << FormatReport(healthy_gpu);
    request.gpu_minors = {0, 1};
    HealthReport bad = RunHealthChecks(request);
    EXPECT_EQ(bad.status, Status::kFail);
    EXPECT_EQ(Find(bad, "gemm-bf16"), nullptr) << "no CUDA work on a node NVML already failed";
}

TEST_F(RunnerTest, NoDriverIsUnknownNotFailure) {
    RunRequest request;
    request.config.nvml_library = "/nonexistent/libnvidia-ml.so.1";
    HealthReport r = RunHealthChecks(request);
    EXPECT_EQ(r.status, Status::kPass);
    ASSERT_EQ(r.results.size(), 1u);
    EXPECT_EQ(r.results[0].status, Status::kUnknown);
}

}  // namespace
}  // namespace autoheal::health
