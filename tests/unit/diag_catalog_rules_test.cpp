// The shipped rules against NVIDIA's Xid catalog as data (../shared/data/xid_catalog.jsonl):
// every catalog Xid has a rule that fires on its Xid alone and follows the catalog's resolution
// bucket; every NVLink5 decode row lands in its bucket; causal roles (an Xid caused by an
// earlier one, teardown Xids after a job's crash) name the root, and a storm of teardown Xids
// over many nodes takes no node out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autoheal/diag/taxonomy.h"
#include "diag_test_util.h"

namespace autoheal::diag::testing {
namespace {

using ::testing::ElementsAre;

std::vector<nlohmann::json> CatalogRows() {
    std::vector<nlohmann::json> rows;
    std::ifstream in(std::string(AUTOHEAL_SHARED_DIR) + "/data/xid_catalog.jsonl");
    std::string line;
    while (std::getline(in, line)) {
        if (!line.empty()) rows.push_back(nlohmann::json::parse(line));
    }
    return rows;
}

std::string XidLine(int xid, const std::string& text) {
    return "NVRM: Xid (PCI:0000:3b:00): " + std::to_string(xid) + ", pid=77, name=app, " + text +
           "\n";
}

bool TakesNodeOut(const Diagnosis& d) {
    for (const std::string& a : d.actions) {
        const ActionInfo* info = FindAction(a);
        if (info != nullptr && info->takes_out) return true;
    }
    return false;
}

TEST(XidCatalog, EveryCatalogXidHasARuleThatFiresOnItAlone) {
    auto rows = CatalogRows();
    if (rows.empty()) GTEST_SKIP() << "shared/data/xid_catalog.jsonl not found";
    int checked = 0;
    for (const auto& r : rows) {
        if (r["row_type"] == "nvlink_decode") continue;
        const int xid = r["xid"];
        std::string text = r["description"].is_string() ? r["description"].get<std::string>()
                                                        : std::string("event");
        std::replace(text.begin(), text.end(), '\n', ' ');
        Diagnosis d = Classify(XidLine(xid, text));
        ++checked;
        ASSERT_FALSE(d.rule.empty()) << "Xid " << xid << " (" << r["name"] << ") has no rule";
        EXPECT_EQ(d.culprit.gpu, "0000:3b:00.0") << "Xid " << xid;
        const auto& action = r["immediate_action"];
        if (action == "RESTART_APP" && xid != 94) {
            // The application's channel: no node action for one occurrence. (Xid 94, a
            // contained ECC error, also resets the GPU to apply the row remap: 10-gpu.yaml.)
            EXPECT_FALSE(TakesNodeOut(d)) << "Xid " << xid << " rule " << d.rule;
        } else if (action == "RESET_GPU") {
            EXPECT_THAT(d.actions, ::testing::Contains("reset_gpu"))
                << "Xid " << xid << " rule " << d.rule;
        } else if (action == "RESTART_BM") {
            EXPECT_THAT(d.actions, ::testing::Contains("reboot")) << "Xid " << xid;
        } else if (action == "IGNORE") {
            EXPECT_FALSE(TakesNodeOut(d)) << "Xid " << xid << " rule " << d.rule;
        }
    }
    EXPECT_GE(checked, 172);
}

TEST(XidCatalog, EveryNvlink5DecodeRowLandsInItsBucket) {
    auto rows = CatalogRows();
    if (rows.empty()) GTEST_SKIP() << "shared/data/xid_catalog.jsonl not found";
    int checked = 0;
    for (const auto& r : rows) {
        if (r["row_type"] != "nvlink_decode") continue;
        const int xid = r["xid"];
        const std::string unit = r["name"];
        const int subcode = r["subcode"];
        const auto status = std::stoul(r["error_status"].get<std::string>(), nullptr, 16);
        char regs[160];
        std::snprintf(regs, sizeof regs,
                      "(0x%08x 0x%08lx 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
                      static_cast<unsigned>(subcode) << 20, status);
        Diagnosis d = Classify(XidLine(xid, unit + " Nonfatal XC0 i0 Link 00 " + regs));
        ++checked;
        const std::string action = r["immediate_action"];
        if (action == "RESET_GPU") {
            EXPECT_THAT(d.actions, ElementsAre("reset_gpu")) << r["id"] << " rule " << d.rule;
        } else {
            EXPECT_TRUE(d.actions.empty()) << r["id"] << " rule " << d.rule;
        }
        EXPECT_EQ(d.cause, "nvlink") << r["id"];
    }
    EXPECT_GE(checked, 90);
}

// The rules written from documentation say which (`doc:`, printed by classify --explain).
TEST(XidCatalog, RulesFromDocumentationCiteIt) {
    int checked = 0;
    for (const Rule& r : ShippedRules().rules) {
        const std::string file = std::filesystem::path(r.where.file).filename().string();
        for (const char* f : {"11-", "16-", "21-", "31-", "41-", "42-"}) {
            if (file.rfind(f, 0) != 0) continue;
            ++checked;
            EXPECT_FALSE(r.doc.empty()) << r.name << " (" << file << ") cites no documentation";
        }
    }
    EXPECT_GE(checked, 190);
}

TEST(CausalRoles, AnXidCausedByAnEarlierOneIsTheEarlierOnesFault) {
    Diagnosis d = Classify(
        "NVRM: Xid (PCI:0000:c1:00): 45, pid=4242, name=python3, Ch 00000010, caused by "
        "previous Xid 149\n");
    EXPECT_EQ(d.cause, "nvlink");
    EXPECT_EQ(d.culprit.gpu, "0000:c1:00.0");
    EXPECT_THAT(d.actions, ElementsAre("reset_gpu"));
}

TEST(CausalRoles, TeardownXidsAfterTheJobsCrashAreTheJobsNotTheGpus) {
    Diagnosis d = Classify(
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
        "NVRM: Xid (PCI:0000:3b:00): 13, pid=4242, name=python3, Graphics Exception\n"
        "NVRM: Xid (PCI:0000:3b:00): 43, pid=4242, name=python3, Ch 00000008\n"
        "NVRM: Xid (PCI:0000:3b:00): 45, pid=4242, name=python3, Ch 00000008\n");
    EXPECT_EQ(d.cause, "user_error");
    EXPECT_FALSE(d.requeue);
    EXPECT_FALSE(TakesNodeOut(d));
}

// NVSentinel#1710/#1629's false-positive storm: one job crashes, and every node of it logs
// teardown Xids (43/45) while the driver cleans up; only the node where the fault began may be
// taken out.
TEST(CausalRoles, ATeardownStormOverSixteenNodesTakesOutOnlyTheRoot) {
    int taken_out = 0;
    for (int n = 0; n < 16; ++n) {
        std::string log =
            "NVRM: Xid (PCI:0000:3b:00): 43, pid=900, name=python3, Ch 00000008\n"
            "NVRM: Xid (PCI:0000:3b:00): 45, pid=900, name=python3, Ch 00000008\n";
        if (n == 5) {
            log =
                "NVRM: Xid (PCI:0000:3b:00): 79, pid=900, name=python3, GPU has fallen off "
                "the bus.\n" +
                log;
        }
        DiagnoseOptions options;
        options.node = "gpu" + std::to_string(n);
        Diagnosis d = Classify(log, options);
        if (TakesNodeOut(d)) {
            ++taken_out;
            EXPECT_EQ(d.culprit.node, "gpu5");
        }
    }
    EXPECT_EQ(taken_out, 1);
}

TEST(CausalRoles, OneNetirEventAmongRemoteLinkErrorsNamesItsGpu) {
    const std::string regs149 =
        "(0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)";
    std::string log;
    for (const char* gpu : {"0000:1b:00", "0000:43:00", "0000:52:00"}) {
        log += std::string("NVRM: Xid (PCI:") + gpu +
               "): 145, RLW_SRC_TRACK Fatal XC0 i0 Link 02 (0x00000000 0x00000001 0x00000000 "
               "0x00000000 0x00000000 0x00000000 0x00000000)\n";
    }
    log += "NVRM: Xid (PCI:0000:9d:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 05 " + regs149 + "\n";
    Diagnosis d = Classify(log);
    EXPECT_EQ(d.cause, "nvlink");
    EXPECT_EQ(d.culprit.gpu, "0000:9d:00.0") << d.rule;
}

}  // namespace
}  // namespace autoheal::diag::testing
