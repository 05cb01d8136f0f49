#include "autoheal/core/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace autoheal {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

TEST(ParseConfig, EmptyMeansDefaults) {
    auto r = ParseConfig("", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->log_file, "/var/log/autoheal/autoheal.log");
    EXPECT_EQ(r->log_level, "info");
}

TEST(ParseConfig, ReadsSettings) {
    auto r = ParseConfig("log_file: /tmp/x.log\nlog_level: debug\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->log_file, "/tmp/x.log");
    EXPECT_EQ(r->log_level, "debug");
}

TEST(ParseConfig, UnknownKeyNamesFileLineColumn) {
    auto r = ParseConfig("log_level: info\n  \nlogfile: /x\n", "autoheal.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("autoheal.yaml:3:1: unknown setting 'logfile'"));
}

TEST(ParseConfig, BadValuesAreLocated) {
    auto r = ParseConfig("log_level: loud\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("c.yaml:1:12: log_level: 'loud'"));
    r = ParseConfig("log_file: relative.log\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("absolute path"));
}

TEST(ParseConfig, LogTargetAndFormat) {
    auto r = ParseConfig("", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->log_target, "file");
    EXPECT_EQ(r->log_format, "text");
    r = ParseConfig("log_target: syslog\nlog_format: json\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->log_target, "syslog");
    EXPECT_EQ(r->log_format, "json");
    r = ParseConfig("log_level: info\nlog_target: journald\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), "c.yaml:2:13: log_target: 'journald' is not one of file, syslog");
    r = ParseConfig("log_format: xml\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), "c.yaml:1:13: log_format: 'xml' is not one of text, json");
    r = ParseConfig("log_format: [json]\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("c.yaml:1:13: log_format: expected a string"));
    r = ParseConfig("log_formatt: json\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("c.yaml:1:1: unknown setting 'log_formatt'"));
}

TEST(ParseConfig, SyntaxErrorIsLocated) {
    auto r = ParseConfig("log_file: [unclosed\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("c.yaml:"));
}

TEST(ParseConfig, PolicyDefaults) {
    auto r = ParseConfig("state_dir: /srv/ah\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->policy.max_auto_resume, 10);
    EXPECT_EQ(r->policy.quarantine_file, "/srv/ah/quarantine.json");
    r = ParseConfig("", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->policy.quarantine_file, "/var/lib/autoheal/quarantine.json");
}

TEST(ParseConfig, PolicySectionIsRead) {
    // state_dir after policy: the default file still follows it; an explicit file wins.
    auto r = ParseConfig("policy:\n  max_auto_resume: 5\nstate_dir: /srv/ah\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->policy.max_auto_resume, 5);
    EXPECT_EQ(r->policy.quarantine_file, "/srv/ah/quarantine.json");
    r = ParseConfig("policy:\n  max_auto_resume: 0\n  quarantine_file: /q/nodes.json\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->policy.max_auto_resume, 0);
    EXPECT_EQ(r->policy.quarantine_file, "/q/nodes.json");
    r = ParseConfig("policy:\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->policy.max_auto_resume, 10);
}

TEST(ParseConfig, PolicyErrorsAreLocated) {
    auto r = ParseConfig("log_level: info\npolicy:\n  max_auto_resume: 101\n", "p.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("p.yaml:3:20: policy.max_auto_resume: expected a whole "
                                      "number from 0 to 100"));
    for (const char* bad : {"-1", "2.5", "many", "[1]"}) {
        r = ParseConfig(std::string("policy:\n  max_auto_resume: ") + bad + "\n", "p.yaml");
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_THAT(r.error(), HasSubstr("policy.max_auto_resume")) << bad;
    }
    r = ParseConfig("policy:\n  quarantine_file: q.json\n", "p.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("p.yaml:2:20: policy.quarantine_file: expected an absolute"));
    r = ParseConfig("policy:\n  max_autoresume: 3\n", "p.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("p.yaml:2:3: unknown setting 'policy.max_autoresume'"));
    r = ParseConfig("policy: 5\n", "p.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("p.yaml:1:9: policy: expected a mapping"));
}

TEST(FindConfigPath, PrefersEnvironmentThenRelocatedInstall) {
    EXPECT_EQ(FindConfigPath("/x/y.yaml", "/usr/bin/autoheal"), "/x/y.yaml");
    auto root = std::filesystem::temp_directory_path() / "autoheal-config-test";
    std::filesystem::remove_all(root);
    std::filesystem::create_directories(root / "bin");
    std::filesystem::create_directories(root / "etc/autoheal");
    EXPECT_EQ(FindConfigPath(nullptr, (root / "bin/prog").string()), "/etc/autoheal/autoheal.yaml");
    std::ofstream(root / "etc/autoheal/autoheal.yaml") << "log_level: info\n";
    EXPECT_EQ(FindConfigPath("", (root / "bin/prog").string()),
              (root / "etc/autoheal/autoheal.yaml").string());
    std::filesystem::remove_all(root);
}

TEST(LoadConfigFile, MissingFileIsAnError) {
    auto r = LoadConfigFile("/nonexistent/autoheal.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("cannot open"));
}

// A config broken while being edited: the programs keep running with the last good copy, or,
// with none, with the defaults in dry-run (a typo must never turn remediation on).
TEST(LoadConfigKeepingLastGood, BrokenFileFallsBackToTheLastGoodCopyOrToDryRun) {
    namespace fs = std::filesystem;
    const fs::path root =
        fs::temp_directory_path() / ("autoheal-lastgood-" + std::to_string(getpid()));
    fs::remove_all(root);
    fs::create_directories(root);
    fs::permissions(root, fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                              fs::perms::others_read | fs::perms::others_exec);
    const std::string path = (root / "autoheal.yaml").string();
    const std::string state = (root / "state").string();
    auto write = [&](const std::string& text) {
        std::ofstream(path) << text;
        fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write |
                                  fs::perms::group_read | fs::perms::others_read);
    };

    // No file: the defaults, said.
    LoadedConfig none = LoadConfigKeepingLastGood(path);
    EXPECT_THAT(none.problem, HasSubstr("no such file"));

    // Broken before any good load: defaults with remediation in dry-run, state_dir kept.
    write("state_dir: " + state + "\nremediation:\n  dry_run: false\nlog_level: [\n");
    LoadedConfig first = LoadConfigKeepingLastGood(path);
    EXPECT_THAT(first.problem, HasSubstr(path + ":"));
    EXPECT_THAT(first.problem, HasSubstr("no last good copy"));
    EXPECT_EQ(first.config.state_dir, state);
    EXPECT_TRUE(first.config.remediation["dry_run"].as<bool>());

    // A good load keeps a copy.
    write("state_dir: " + state + "\nlog_level: warn\nremediation:\n  dry_run: true\n");
    LoadedConfig good = LoadConfigKeepingLastGood(path);
    EXPECT_EQ(good.problem, "");
    EXPECT_EQ(good.config.log_level, "warn");
    EXPECT_TRUE(fs::exists(state + "/last-good/autoheal.yaml"));

    // Broken again (syntax): the copy is used, and the message names the line.
    write("state_dir: " + state + "\nlog_level: debug\nremediation: [\n");
    LoadedConfig broken = LoadConfigKeepingLastGood(path);
    EXPECT_THAT(broken.problem, HasSubstr(path + ":"));
    EXPECT_THAT(broken.problem, HasSubstr("using the last good copy"));
    EXPECT_EQ(broken.config.log_level, "warn");
    EXPECT_TRUE(broken.config.remediation["dry_run"].as<bool>());

    // Valid YAML that a section validator rejects counts as broken too.
    write("state_dir: " + state + "\nlog_level: error\n");
    LoadedConfig rejected = LoadConfigKeepingLastGood(path, [](const Config& c) {
        return c.log_level == "error" ? std::string("remediation: bad key at 3:1") : "";
    });
    EXPECT_THAT(rejected.problem, HasSubstr("remediation: bad key at 3:1"));
    EXPECT_EQ(rejected.config.log_level, "warn");

    // A file any user may write steers root's actions: refused like a broken one.
    write("state_dir: " + state + "\nlog_level: trace\n");
    fs::permissions(path, fs::perms::others_write, fs::perm_options::add);
    LoadedConfig open_to_all = LoadConfigKeepingLastGood(path);
    EXPECT_THAT(open_to_all.problem,
                HasSubstr(path + ": refused: writable by every user (mode 0646)"));
    EXPECT_EQ(open_to_all.config.log_level, "warn");
    fs::remove_all(root);
}

}  // namespace
}  // namespace autoheal
