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
    EXPECT_EQ(j["actions"], nlohmann::json::array({"reboot"}));
    EXPECT_EQ(j["requeue"], true);
    EXPECT_EQ(j["culprit"]["node"], "gpu7");
    EXPECT_EQ(j["culprit"]["gpu"], "0000:3b:00.0");
    EXPECT_TRUE(j["culprit"]["rank"].is_null());
    EXPECT_EQ(j["rule"], "xid-79-fallen-off-bus");
    ASSERT_FALSE(j["evidence"].empty());
    EXPECT_EQ(j["evidence"][0]["line"], 2);
    EXPECT_EQ(j["evidence"][0]["signature"], "xid");
    EXPECT_GT(j["confidence"].get<double>(), 0.5);
    EXPECT_EQ(j["evidence_kind"], "kernel record");
}

TEST(CliClassify, ForgedKernelLinesTakeNoNodeOut) {
    // Issue 12 point 4: a program named after a driver message, a process that named itself, and
    // `logger` in a syslog file. None is the driver speaking; none may plan a node action.
    const std::vector<std::string> forged = {
        "[12345.678901] x[4242]: segfault at 0 ip 0000000000401136 sp 00007ffd5d2c8e70 error 6 "
        "in NVRM: Xid (PCI:0000:3b:00): 64, x[401000+1000]\n",
        "Memory cgroup out of memory: Killed process 4242 (GPU is lost)\n",
        "Dec  1 10:00:00 node7 alice: NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=x, GPU has "
        "fallen off the bus.\n",
        "14,2001,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=x, GPU has fallen off "
        "the bus.\n"};
    for (const std::string& line : forged) {
        auto r = RunProcess({kCli, "classify", "--json", "--rules", kRules, "-"}, {}, "", line);
        ASSERT_EQ(r.exit_code, 0) << r.err;
        auto j = nlohmann::json::parse(r.out);
        EXPECT_EQ(j["actions"], nlohmann::json::array()) << line << j.dump();
        EXPECT_NE(j["cause"], "faulty_gpu") << line;
        EXPECT_NE(j["cause"], "gpu_hbm_memory") << line;
    }
    // The kernel's own record, in kmsg's format, still is evidence.
    auto r = RunProcess({kCli, "classify", "--json", "--rules", kRules, "-"}, {}, "",
                        "6,2001,5678901,-;NVRM: Xid (PCI:0000:3b:00): 79, pid=4242, name=x, GPU "
                        "has fallen off the bus.\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    EXPECT_EQ(j["cause"], "faulty_gpu");
    EXPECT_EQ(j["rule"], "xid-79-fallen-off-bus");
}

TEST(CliClassify, ControlCharactersInEvidenceAreEscapedForPeople) {
    auto r = RunProcess({kCli, "classify", "--rules", kRules, "-"}, {}, "",
                        "RuntimeError: CUDA error: an illegal memory access was encountered"
                        "\x1b[2J\x1b[31m\x07\x08 forged\n");
    ASSERT_EQ(r.exit_code, 0) << r.err;
    // Escape sequences come off before rules read the line (paste_marks.h); other control
    // characters stay in the evidence and are shown escaped.
    EXPECT_EQ(r.out.find('\x1b'), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\x07'), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find('\x08'), std::string::npos) << r.out;
    EXPECT_THAT(r.out, HasSubstr("encountered\\x07\\x08 forged"));
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
    EXPECT_EQ(nlohmann::json::parse(r.out)["actions"], nlohmann::json::array({"reboot"}));
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
    EXPECT_THAT(sig.out, HasSubstr("signature nccl-ranks-desync (built-in)"));
    auto kind = RunProcess({kCli, "rules", "explain", "health-check", "--rules", kRules});
    EXPECT_THAT(kind.out, HasSubstr("fields: gpu, check, verdict, reason"));
    EXPECT_THAT(kind.out, HasSubstr("example: gpu=0000:3b:00.0 check=gemm-bf16"));
    EXPECT_EQ(RunProcess({kCli, "rules", "explain", "nonesuch", "--rules", kRules}).exit_code, 1);
}

TEST(CliRules, PatternsListsEverySignature) {
    auto r = RunProcess({kCli, "rules", "patterns", "--rules", kRules});
    EXPECT_EQ(r.exit_code, 0);
    EXPECT_THAT(r.out, HasSubstr("NVRM: Xid"));
    EXPECT_GT(std::count(r.out.begin(), r.out.end(), '\n'), 40);
}

TEST(CliRules, CatalogPrintsCausesActionsAndOutcomesWithTheirColumns) {
    auto r = RunProcess({kCli, "rules", "catalog", "--json"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    auto j = nlohmann::json::parse(r.out);
    ASSERT_GE(j["causes"].size(), 20u);
    const auto& gpu = j["causes"][0];
    EXPECT_EQ(gpu["name"], "faulty_gpu");
    EXPECT_EQ(gpu["category"], "gpu");
    EXPECT_EQ(gpu["infrastructure"], true);
    EXPECT_EQ(gpu["blame"], "node");
    EXPECT_EQ(gpu["ticket"], "rma");
    EXPECT_EQ(gpu["rules"], true);
    EXPECT_EQ(gpu["title"], "Faulty GPU");
    bool admin_resume = false;
    for (const auto& c : j["causes"]) {
        if (c["name"] == "admin_resume") admin_resume = c["rules"] == false;
    }
    EXPECT_TRUE(admin_resume);
    std::vector<std::string> breaker;
    for (const auto& a : j["actions"]) {
        if (a["breaker"] == true) breaker.push_back(a["name"]);
    }
    EXPECT_EQ(breaker, (std::vector<std::string>{"drain", "reset_gpu", "reboot"}));
    EXPECT_EQ(j["actions"][2]["runs"], "node");
    std::vector<std::string> outcomes;
    for (const auto& o : j["outcomes"]) outcomes.push_back(o["name"]);
    EXPECT_THAT(outcomes, ::testing::IsSupersetOf({"done", "already", "admin-owned", "failed",
                                                   "held", "dry-run", "opened", "logged", "on-node",
                                                   "refused", "raised", "not-out"}));
    EXPECT_EQ(j["run_outcomes"].size(), 5u);

    auto text = RunProcess({kCli, "rules", "catalog"});
    EXPECT_EQ(text.exit_code, 0);
    EXPECT_THAT(text.out, HasSubstr("actions (in plan order)"));
    EXPECT_THAT(text.out, HasSubstr("NCCL watchdog timeouts"));
    EXPECT_EQ(RunProcess({kCli, "rules", "catalog", "--yaml"}).exit_code, 2);
}

TEST(CliConfig, ShippedConfigIsOk) {
    const std::string shipped = std::string(AUTOHEAL_SOURCE_DIR) + "/etc/autoheal.yaml";
    auto r = RunProcess({kCli, "config", "check", shipped});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    EXPECT_EQ(r.out, shipped + ": Ok\n");
}

TEST(CliConfig, ProblemsNameFileLineColumnPerSection) {
    // One problem in the health section and one in remediation: both reported in one run.
    std::string f = TempFile("two-problems.yaml",
                             "log_level: info\n"
                             "health:\n"
                             "  default_tier: fast\n"
                             "remediation:\n"
                             "  dryrun: true\n");
    auto r = RunProcess({kCli, "config", "check", f});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.out, HasSubstr(f + ": Invalid\n"));
    EXPECT_THAT(r.out, HasSubstr(f + ":3:17: health.default_tier: expected quick, full or off"));
    EXPECT_THAT(r.out, HasSubstr(f + ":5:3: remediation.dryrun: unknown setting"));

    f = TempFile("bad-top.yaml", "log_level: info\nlog_target: journald\n");
    r = RunProcess({kCli, "config", "check", f});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.out, HasSubstr(f + ":2:13: log_target: 'journald' is not one of file, syslog"));

    f = TempFile("bad-ticket.yaml", "remediation:\n  tickets:\n    sinks:\n      - {type: fax}\n");
    r = RunProcess({kCli, "config", "check", f});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.out, HasSubstr(f + ":4:"));
}

TEST(CliConfig, DefaultFileAndErrors) {
    std::string f = TempFile("env.yaml", "log_format: json\n");
    auto r = RunProcess({kCli, "config", "check"}, {"AUTOHEAL_CONFIG=" + f});
    EXPECT_EQ(r.exit_code, 0) << r.out;
    EXPECT_EQ(r.out, f + ": Ok\n");
    r = RunProcess({kCli, "config", "check", "/nonexistent/autoheal.yaml"});
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_THAT(r.out, HasSubstr("/nonexistent/autoheal.yaml: cannot open"));
    EXPECT_EQ(RunProcess({kCli, "config", "check", f, f}).exit_code, 2);
    EXPECT_EQ(RunProcess({kCli, "config", "check", "--strict"}).exit_code, 2);
    EXPECT_EQ(RunProcess({kCli, "config", "frobnicate"}).exit_code, 2);
    EXPECT_EQ(RunProcess({kCli, "config"}).exit_code, 2);
}

TEST(CliConfig, PrintSlurmUsesTheBuildFolder) {
    const std::filesystem::path bin = std::filesystem::path(kCli).parent_path();
    auto r = RunProcess({kCli, "config", "print-slurm"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.err, "");  // everything it names exists
    EXPECT_THAT(r.out, HasSubstr("\nJobSubmitPlugins=autoheal\n"));
    EXPECT_THAT(r.out, HasSubstr("\nPrologFlags=Alloc\n"));
    EXPECT_THAT(r.out, HasSubstr("\nProlog=" + (bin / "autoheal-prolog").string() + "\n"));
    EXPECT_THAT(r.out, HasSubstr("\nEpilog=" + (bin / "autoheal-epilog").string() + "\n"));
    EXPECT_THAT(r.out,
                HasSubstr("\nEpilogSlurmctld=" + (bin / "autoheal-epilog-ctld").string() + "\n"));
    EXPECT_THAT(r.out, HasSubstr("\nSchedulerParameters=nohold_on_prolog_fail\n"));
    EXPECT_THAT(r.out, HasSubstr("#RebootProgram="));
    // The build folder's plugins (bin/../plugins) are not in Slurm's plugin folder.
    const std::string plugins = (bin.parent_path() / "plugins").string();
    EXPECT_THAT(r.out, HasSubstr(":" + plugins + "\n"));
    EXPECT_THAT(r.out, HasSubstr("required " + plugins + "/spank_autoheal.so"));
}

TEST(CliConfig, PrintSlurmFollowsWhereTheProgramIs) {
    // An installed layout: autoheal in <prefix>/bin, the Slurm programs in <prefix>/sbin.
    namespace fs = std::filesystem;
    const fs::path prefix = fs::temp_directory_path() / "autoheal-cli-test" / "prefix";
    fs::remove_all(prefix);
    fs::create_directories(prefix / "bin");
    fs::create_directories(prefix / "sbin");
    fs::copy_file(kCli, prefix / "bin/autoheal");
    fs::permissions(prefix / "bin/autoheal", fs::perms::owner_all);
    std::ofstream(prefix / "sbin/autoheal-prolog") << "";
    std::ofstream(prefix / "sbin/autoheal-epilog") << "";
    auto r = RunProcess({(prefix / "bin/autoheal").string(), "config", "print-slurm"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("\nProlog=" + (prefix / "sbin/autoheal-prolog").string() + "\n"));
    EXPECT_THAT(r.out, HasSubstr("\nEpilog=" + (prefix / "sbin/autoheal-epilog").string() + "\n"));
    // Missing programs are still printed where they belong, with a warning.
    EXPECT_THAT(
        r.out,
        HasSubstr("\nEpilogSlurmctld=" + (prefix / "sbin/autoheal-epilog-ctld").string() + "\n"));
    EXPECT_THAT(r.err,
                HasSubstr((prefix / "sbin/autoheal-epilog-ctld").string() + " does not exist"));
    fs::remove_all(prefix);
}

}  // namespace
}  // namespace autoheal::testing
