#include "autoheal/core/config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

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

TEST(ParseConfig, SyntaxErrorIsLocated) {
    auto r = ParseConfig("log_file: [unclosed\n", "c.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), StartsWith("c.yaml:"));
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

}  // namespace
}  // namespace autoheal
