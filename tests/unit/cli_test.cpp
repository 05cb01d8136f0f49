// The autoheal CLI as a user runs it: exit codes, JSON shape, rule check reports.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "subprocess.h"

namespace autoheal::testing {
namespace {

using ::testing::HasSubstr;

const std::string kCli = AUTOHEAL_CLI;
const std::string kRules = std::string(AUTOHEAL_SOURCE_DIR) + "/etc/rules.d";

std::string TempFile(const std::string& name, const std::string& text) {
    auto dir = std::filesystem::temp_directory_path() / "autoheal-cli-test";
    std::filesystem::create_directories(dir);
    auto path = dir / name;
    std::ofstream(path) << text;
    return path.string();
}

TEST(CliClassify, JsonShapeForAKernelLog) {
    auto r =
        RunProcess({kCli, "classify", "--json", "--rules", kRules, "--node", "gpu7", "-"}, {}, "",
                   "[1.0] boot\n[2.0] NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, "
                   "GPU has fallen off the bus.\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["cause"], "faulty_gpu");
    EXPECT_EQ(j["actions"], nlohmann::json::array({"drain", "reboot"}));
    EXPECT_EQ(j["requeue"], true);
    EXPECT_EQ(j["culprit"]["node"], "gpu7");
    EXPECT_EQ(j["culprit"]["gpu"], "0000:3b:00.0");
    EXPECT_TRUE(j["culprit"]["rank"].is_null());
    EXPECT_EQ(j["rule"], "xid-79-fallen-off-bus");
    ASSERT_FALSE(j["evidence"].empty());
    EXPECT_EQ(j["evidence"][0]["line"], 2);
    EXPECT_EQ(j["evidence"][0]["signature"], "xid");
    EXPECT_GT(j["confidence"].get<double>(), 0.5);
}

TEST(CliClassify, NothingFoundIsUnknownAndExitsZero) {
    auto r = RunProcess({kCli, "classify", "--json", "--rules", kRules}, {}, "", "all good\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["cause"], "unknown");
    EXPECT_EQ(j["actions"], nlohmann::json::array());
    EXPECT_EQ(j["requeue"], false);
    EXPECT_TRUE(j["rule"].is_null());
}

TEST(CliClassify, PlainTextForPeople) {
    std::string log = TempFile("oom.log", "torch.OutOfMemoryError: CUDA out of memory.\n");
    auto r = RunProcess({kCli, "classify", "--rules", kRules, log});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("cause:      user_error"));
    EXPECT_THAT(r.out, HasSubstr("requeue:    no"));
    EXPECT_THAT(r.out, HasSubstr(log + ":1  [cuda-oom]"));
}

TEST(CliClassify, MissingInputAndBadUsage) {
    EXPECT_EQ(RunProcess({kCli, "classify", "--rules", kRules, "/nonexistent.log"}).exit_code, 1);
    EXPECT_EQ(RunProcess({kCli, "classify", "--bogus"}).exit_code, 2);
    EXPECT_EQ(RunProcess({kCli, "classify", "--node"}).exit_code, 2);
    EXPECT_EQ(RunProcess({kCli, "frobnicate"}).exit_code, 2);
}

TEST(CliClassify, HistoryEscalates) {
    std::string history = TempFile("history.jsonl",
                                   "{\"time\": 1, \"gpu\": \"0000:3b:00.0\", \"rule\": "
                                   "\"xid-79-fallen-off-bus\"}\n");
    // A record from 1970 is outside the 30 d window: no escalation.
    auto r = RunProcess({kCli, "classify", "--json", "--rules", kRules, "--history", history}, {},
                        "", "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(nlohmann::json::parse(r.out)["actions"], nlohmann::json::array({"drain", "reboot"}));
    const auto now = std::chrono::duration_cast<std::chrono::seconds>(
                         std::chrono::system_clock::now().time_since_epoch())
                         .count();
    history = TempFile("history2.jsonl", "{\"time\": " + std::to_string(now - 86400) +
                                             ", \"gpu\": \"0000:3b:00.0\", \"rule\": "
                                             "\"xid-79-fallen-off-bus\"}\n");
    r = RunProcess({kCli, "classify", "--json", "--rules", kRules, "--history", history}, {}, "",
                   "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.\n");
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["actions"], nlohmann::json::array({"drain", "rma_ticket"}));
    EXPECT_TRUE(j.contains("escalation"));
    std::string bad = TempFile("bad-history.jsonl", "not json\n");
    EXPECT_EQ(RunProcess({kCli, "classify", "--history", bad, "--rules", kRules}, {}, "", "x\n")
                  .exit_code,
              1);
}

TEST(CliRules, ShippedRulesAreOkWithoutWarnings) {
    auto r = RunProcess({kCli, "rules", "check", kRules});
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_THAT(r.out, HasSubstr("00-signatures.yaml: Ok\n"));
    EXPECT_THAT(r.out, Not(HasSubstr("warning")));
}

TEST(CliRules, BrokenFileIsInvalidWithLocationAndSnippet) {
    std::string f = TempFile("90-local.yaml",
                             "- rule: my-rule\n  match: {xid: 79}\n  cause: faulty_gpu\n"
                             "  actions: [drain, reboot, pray]\n");
    auto r = RunProcess({kCli, "rules", "check", kRules, f});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.out, HasSubstr(f + ": Invalid"));
    EXPECT_THAT(r.out, HasSubstr(f + ":4:28: error: LOAD_ERR_UNKNOWN_ACTION: In rule 'my-rule'"));
    EXPECT_THAT(r.out,
                HasSubstr("  actions: [drain, reboot, pray]\n                           ^\n"));

    auto j = RunProcess({kCli, "rules", "check", "--json", kRules, f});
    EXPECT_EQ(j.exit_code, 1);
    auto parsed = nlohmann::json::parse(j.out);
    EXPECT_EQ(parsed["ok"], false);
    const auto& last = parsed["files"].back();
    EXPECT_EQ(last["status"], "Invalid");
    EXPECT_EQ(last["messages"][0]["code"], "LOAD_ERR_UNKNOWN_ACTION");
    EXPECT_EQ(last["messages"][0]["line"], 4);
}

TEST(CliRules, ClassifyRefusesInvalidRules) {
    std::string f = TempFile("broken.yaml", "- rule: [\n");
    auto r = RunProcess({kCli, "classify", "--rules", f}, {}, "", "x\n");
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.err, HasSubstr("LOAD_ERR_YAML_PARSE"));
}

TEST(CliRules, UsageErrorsExitTwo) {
    EXPECT_EQ(RunProcess({kCli, "rules"}).exit_code, 2);
    EXPECT_EQ(RunProcess({kCli, "rules", "check"}).exit_code, 2);
    EXPECT_EQ(RunProcess({kCli, "rules", "check", "--strict", kRules}).exit_code, 2);
}

TEST(CliRules, ExplainCauseRuleAndSignature) {
    auto cause = RunProcess({kCli, "rules", "explain", "gpu_hbm_memory", "--rules", kRules});
    EXPECT_EQ(cause.exit_code, 0);
    EXPECT_THAT(cause.out, HasSubstr("cause gpu_hbm_memory (gpu)"));
    EXPECT_THAT(cause.out, HasSubstr("xid-48-dbe"));
    auto rule = RunProcess({kCli, "rules", "explain", "xid-app-fault", "--rules", kRules});
    EXPECT_EQ(rule.exit_code, 0);
    EXPECT_THAT(rule.out, HasSubstr("escalates after 3 jobs on the same gpu within 7d"));
    auto sig = RunProcess({kCli, "rules", "explain", "nccl-ranks-desync", "--rules", kRules});
    EXPECT_THAT(sig.out, HasSubstr("built-in analyzer"));
    EXPECT_EQ(RunProcess({kCli, "rules", "explain", "nonesuch", "--rules", kRules}).exit_code, 1);
}

TEST(CliRules, PatternsListsEverySignature) {
    auto r = RunProcess({kCli, "rules", "patterns", "--rules", kRules});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_THAT(r.out, HasSubstr("NVRM: Xid"));
    EXPECT_GT(std::count(r.out.begin(), r.out.end(), '\n'), 40);
}

}  // namespace
}  // namespace autoheal::testing
