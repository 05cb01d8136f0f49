// The post-job health check as evidence: the runner's verdicts (with the fake NVML and CUDA
// libraries) become health-check evidence, diagnosed with the shipped rules.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "autoheal/remediation/evidence_sources.h"
#include "diag_test_util.h"
#include "fake_gpu_test.h"

namespace autoheal::remediation {
namespace {

class HealthEvidenceTest : public health::testing::FakeGpuTest {
  protected:
    static diag::Diagnosis Diagnose(const health::HealthReport& report) {
        diag::EvidenceSet set;
        for (diag::Evidence& e : HealthCheckEvidence(report)) {
            diag::AddEvidence(&set, "health", std::move(e));
        }
        diag::Analyze(&set);
        return diag::Diagnose(diag::testing::ShippedRules(), set, {});
    }
};

constexpr const char* kPeerMismatch = R"({"gpus": [
    {"minor": 0, "pci_bus_id": "0000:10:00.0"},
    {"minor": 1, "pci_bus_id": "0000:20:00.0", "cuda": {"gemm_checksum_differs": true}},
    {"minor": 2, "pci_bus_id": "0000:30:00.0"}]})";

// With three GPUs or more, a GPU whose GEMM checksum differs from its peers' (its own check
// passing) is silent data corruption on that GPU; the shipped rules once matched only the
// "wrong result" wording and lost it.
TEST_F(HealthEvidenceTest, PeerChecksumMismatchIsSilentDataCorruptionOnThatGpu) {
    const health::HealthReport report = Run(kPeerMismatch, HealthTier::kQuick);
    ASSERT_EQ(report.status, health::Status::kFail) << health::FormatReport(report);
    const diag::Diagnosis d = Diagnose(report);
    EXPECT_EQ(d.cause, "silent_data_corruption") << health::FormatReport(report);
    EXPECT_EQ(d.culprit.gpu, "0000:20:00.0");
    EXPECT_THAT(d.actions, ::testing::ElementsAre("drain", "rma_ticket"));
    ASSERT_FALSE(d.evidence.empty());
    EXPECT_EQ(d.evidence[0].Field("reason"), "peer-mismatch");
    EXPECT_EQ(d.evidence[0].text,
              "check gemm-bf16 failed on gpu 0000:20:00.0: GEMM result differs from the other "
              "GPUs' (silent data corruption)");
}

TEST_F(HealthEvidenceTest, WrongGemmResultIsSilentDataCorruptionOnThatGpu) {
    const health::HealthReport report = Run(R"({"gpus": [{"minor": 0, "pci_bus_id": "0000:10:00.0"},
        {"minor": 1, "pci_bus_id": "0000:20:00.0", "cuda": {"gemm_wrong": true}}]})",
                                            HealthTier::kQuick);
    const diag::Diagnosis d = Diagnose(report);
    EXPECT_EQ(d.cause, "silent_data_corruption") << health::FormatReport(report);
    EXPECT_EQ(d.culprit.gpu, "0000:20:00.0");
}

}  // namespace
}  // namespace autoheal::remediation
