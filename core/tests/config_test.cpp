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

// core's part of a config on its own (no other layer's sections): the document, then its keys.
Result<Config> ParseCore(std::string_view text, std::string_view source) {
    auto root = ParseConfigDocument(text, source);
    if (!root) return root.status();
    return ParseCoreConfig(*root, text, source, {});
}

TEST(ParseConfig, EmptyMeansDefaults) {
    auto r = ParseCore("", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->log_file, "/var/log/autoheal/autoheal.log");
    EXPECT_EQ(r->log_level, "info");
}

TEST(ParseConfig, ReadsSettings) {
    auto r = ParseCore("log_file: /tmp/x.log\nlog_level: debug\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->log_file, "/tmp/x.log");
    EXPECT_EQ(r->log_level, "debug");
}

TEST(ParseConfig, UnknownKeyNamesFileLineColumn) {
    auto r = ParseCore("log_level: info\n  \nlogfile: /x\n", "autoheal.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("autoheal.yaml:3:1: unknown setting 'logfile'"));
}

TEST(ParseConfig, BadValuesAreLocated) {
    auto r = ParseCore("log_level: loud\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("c.yaml:1:12: log_level: 'loud'"));
    r = ParseCore("log_file: relative.log\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("absolute path"));
}

TEST(ParseConfig, LogTargetAndFormat) {
    auto r = ParseCore("", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->log_target, "file");
    EXPECT_EQ(r->log_format, "text");
    r = ParseCore("log_target: syslog\nlog_format: json\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->log_target, "syslog");
    EXPECT_EQ(r->log_format, "json");
    r = ParseCore("log_level: info\nlog_target: journald\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), "c.yaml:2:13: log_target: 'journald' is not one of file, syslog");
    r = ParseCore("log_format: xml\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.error(), "c.yaml:1:13: log_format: 'xml' is not one of text, json");
    r = ParseCore("log_format: [json]\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("c.yaml:1:13: log_format: expected a string"));
    r = ParseCore("log_formatt: json\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("c.yaml:1:1: unknown setting 'log_formatt'"));
}

TEST(ParseConfig, SyntaxErrorIsLocated) {
    auto r = ParseCore("log_file: [unclosed\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("c.yaml:"));
}

TEST(ParseConfig, PolicyDefaults) {
    auto r = ParseCore("state_dir: /srv/ah\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->policy.max_auto_resume, 10);
    EXPECT_EQ(r->policy.quarantine_file, "/srv/ah/quarantine.json");
    r = ParseCore("", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->policy.quarantine_file, "/var/lib/autoheal/quarantine.json");
}

TEST(ParseConfig, PolicySectionIsRead) {
    // state_dir after policy: the default file still follows it; an explicit file wins.
    auto r = ParseCore("policy:\n  max_auto_resume: 5\nstate_dir: /srv/ah\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->policy.max_auto_resume, 5);
    EXPECT_EQ(r->policy.quarantine_file, "/srv/ah/quarantine.json");
    r = ParseCore("policy:\n  max_auto_resume: 0\n  quarantine_file: /q/nodes.json\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->policy.max_auto_resume, 0);
    EXPECT_EQ(r->policy.quarantine_file, "/q/nodes.json");
    r = ParseCore("policy:\n", "a.yaml");
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(r->policy.max_auto_resume, 10);
}

TEST(ParseConfig, PolicyErrorsAreLocated) {
    auto r = ParseCore("log_level: info\npolicy:\n  max_auto_resume: 101\n", "p.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("p.yaml:3:20: policy.max_auto_resume: expected a whole "
                                      "number from 0 to 100"));
    for (const char* bad : {"-1", "2.5", "many", "[1]"}) {
        r = ParseCore(std::string("policy:\n  max_auto_resume: ") + bad + "\n", "p.yaml");
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_THAT(r.error(), HasSubstr("policy.max_auto_resume")) << bad;
    }
    r = ParseCore("policy:\n  quarantine_file: q.json\n", "p.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("p.yaml:2:20: policy.quarantine_file: expected an absolute"));
    r = ParseCore("policy:\n  max_autoresume: 3\n", "p.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("p.yaml:2:3: unknown setting 'policy.max_autoresume'"));
    r = ParseCore("policy: 5\n", "p.yaml");
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

// Sections that other layers parse are mappings; core refuses anything else at the top level.
TEST(ParseCoreConfig, OtherSectionsAreLeftToTheirOwners) {
    const std::string text = "health:\n  x: 1\nlog_level: warn\n";
    auto root = ParseConfigDocument(text, "a.yaml");
    ASSERT_TRUE(root) << root.error();
    auto r = ParseCoreConfig(*root, text, "a.yaml", {"health"});
    ASSERT_TRUE(r) << r.error();
    EXPECT_EQ(r->log_level, "warn");
    r = ParseCoreConfig(*root, text, "a.yaml", {});
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error(), StartsWith("a.yaml:1:1: unknown setting 'health'"));
    const std::string scalar = "health: 5\n";
    root = ParseConfigDocument(scalar, "a.yaml");
    ASSERT_TRUE(root) << root.error();
    r = ParseCoreConfig(*root, scalar, "a.yaml", {"health"});
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error(), "a.yaml:1:9: health: expected a mapping of settings");
    EXPECT_EQ(r.code(), ErrorCode::kInvalid);
    auto list = ParseConfigDocument("- a\n", "a.yaml");
    ASSERT_FALSE(list);
    EXPECT_EQ(list.error(), "a.yaml:1:1: expected a mapping of settings");
}

TEST(ScanStateDir, FirstTopLevelAbsolutePath) {
    EXPECT_EQ(ScanStateDir("log_level: x\nstate_dir: \"/srv/ah\"  # here\nstate_dir: /b\n"),
              "/srv/ah");
    EXPECT_EQ(ScanStateDir("  state_dir: /nested\n"), "");
    EXPECT_EQ(ScanStateDir("state_dir: relative\n"), "");
    EXPECT_EQ(ScanStateDir("state_dir: /crlf\r\n"), "/crlf");
}

}  // namespace
}  // namespace autoheal
