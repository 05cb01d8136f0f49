// remediation/settings.h: autoheal.yaml read once, each section parsed once into its typed
// struct; the last good copy when the file breaks; the programs' start-up on it.
#include "autoheal/remediation/settings.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>
#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autoheal/remediation/program_start.h"
#include "diag_test_util.h"

namespace autoheal::remediation {
namespace {

namespace fs = std::filesystem;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

// A temporary folder only this user may write (CheckTrustedFile accepts files in it).
class SettingsDir {
  public:
    SettingsDir()
        : root_(fs::temp_directory_path() / ("autoheal-settings-" + std::to_string(getpid()) + "-" +
                                             std::to_string(counter_++))) {
        fs::remove_all(root_);
        fs::create_directories(root_);
        fs::permissions(root_, fs::perms::owner_all | fs::perms::group_read |
                                   fs::perms::group_exec | fs::perms::others_read |
                                   fs::perms::others_exec);
    }
    ~SettingsDir() {
        std::error_code ec;
        fs::remove_all(root_, ec);
    }
    std::string Path(const std::string& name) const { return (root_ / name).string(); }
    std::string Write(const std::string& name, const std::string& text) const {
        std::string path = Path(name);
        std::ofstream(path) << text;
        fs::permissions(path, fs::perms::owner_read | fs::perms::owner_write |
                                  fs::perms::group_read | fs::perms::others_read);
        return path;
    }

  private:
    static inline int counter_ = 0;
    fs::path root_;
};

int Count(const std::string& haystack, const std::string& needle) {
    int n = 0;
    for (std::size_t at = haystack.find(needle); at != std::string::npos;
         at = haystack.find(needle, at + 1)) {
        ++n;
    }
    return n;
}

// One file, one parse: every section's typed values are in the one Settings.
TEST(ParseSettings, EverySectionTypedFromOneFile) {
    auto s = ParseSettings(
        "state_dir: /srv/ah\n"
        "log_level: debug\n"
        "policy:\n"
        "  max_auto_resume: 4\n"
        "health:\n"
        "  default_tier: full\n"
        "  allow_off: false\n"
        "remediation:\n"
        "  dry_run: true\n"
        "  lemon: {failures: 5, window: 2d}\n"
        "  tickets:\n"
        "    retry_initial_seconds: 60\n"
        "    sinks:\n"
        "      - {type: command, argv: [/usr/bin/true]}\n",
        "autoheal.yaml");
    ASSERT_TRUE(s) << s.error();
    EXPECT_EQ(s->core.source, "autoheal.yaml");
    EXPECT_EQ(s->core.state_dir, "/srv/ah");
    EXPECT_EQ(s->core.log_level, "debug");
    EXPECT_EQ(s->core.policy.max_auto_resume, 4);
    EXPECT_EQ(s->core.policy.quarantine_file, "/srv/ah/quarantine.json");
    EXPECT_EQ(s->health.default_tier, HealthTier::kFull);
    EXPECT_FALSE(s->health.allow_off);
    EXPECT_TRUE(s->remediation.dry_run);
    EXPECT_EQ(s->remediation.lemon.failures, 5);
    EXPECT_EQ(s->remediation.lemon.window_seconds, 2 * 86400);
    EXPECT_EQ(s->remediation.tickets.retry_initial_seconds, 60);
    ASSERT_EQ(s->remediation.tickets.sinks.size(), 1u);
    EXPECT_THAT(s->remediation.tickets.sinks[0].argv, ElementsAre("/usr/bin/true"));
}

// Absent sections are their defaults, placed under the file's state_dir.
TEST(ParseSettings, DefaultsFollowTheStateDir) {
    auto s = ParseSettings("state_dir: /srv/ah\n", "a.yaml");
    ASSERT_TRUE(s) << s.error();
    EXPECT_EQ(s->health.default_tier, HealthTier::kQuick);
    EXPECT_FALSE(s->remediation.dry_run);
    ASSERT_EQ(s->remediation.tickets.sinks.size(), 1u);
    EXPECT_EQ(s->remediation.tickets.sinks[0].dir, "/srv/ah/tickets");
    const Settings d = DefaultSettings("/srv/ah");
    EXPECT_EQ(d.core.policy.quarantine_file, "/srv/ah/quarantine.json");
    ASSERT_EQ(d.remediation.tickets.sinks.size(), 1u);
    EXPECT_EQ(d.remediation.tickets.sinks[0].dir, "/srv/ah/tickets");
}

// Each error names file:line:column and the key, once; a problem in each section is named.
TEST(ParseSettings, ErrorsNameFileLineColumnOncePerSection) {
    auto s = ParseSettings("health:\n  default_tier: fast\nremediation:\n  dryrun: true\n",
                           "autoheal.yaml");
    ASSERT_FALSE(s);
    EXPECT_EQ(s.code(), ErrorCode::kInvalid);
    EXPECT_EQ(s.error(),
              "autoheal.yaml:2:17: health.default_tier: expected quick, full or off\n"
              "autoheal.yaml:4:3: remediation.dryrun: unknown setting");
    s = ParseSettings("remediation:\n  tickets:\n    sinks: [{type: fax}]\n", "a.yaml");
    ASSERT_FALSE(s);
    EXPECT_THAT(s.error(), StartsWith("a.yaml:3:20: remediation.tickets.sinks[0].type: expected"));
    EXPECT_EQ(Count(s.error(), "a.yaml:"), 1);
    // A top-level problem is the one problem: the sections are not read.
    s = ParseSettings("agnet: {}\nhealth: {default_tier: fast}\n", "a.yaml");
    ASSERT_FALSE(s);
    EXPECT_EQ(s.error(), "a.yaml:1:1: unknown setting 'agnet'");
    s = ParseSettings("remediation: [\n", "a.yaml");
    ASSERT_FALSE(s);
    EXPECT_THAT(s.error(), StartsWith("a.yaml:"));
}

TEST(ParseSettings, TheShippedAutohealYamlIsValid) {
    auto s = LoadSettingsFile(AUTOHEAL_SOURCE_DIR "/etc/autoheal.yaml");
    ASSERT_TRUE(s) << s.error();
    EXPECT_EQ(s->core.state_dir, "/var/lib/autoheal");
    EXPECT_EQ(s->health.nvml_timeout_seconds, 5);
    EXPECT_TRUE(s->health.timeout_is_failure);
    EXPECT_FALSE(s->remediation.dry_run);
    EXPECT_THAT(s->remediation.gpu_reset_command,
                ElementsAre("/usr/bin/nvidia-smi", "--gpu-reset", "-i", "{gpu}"));
    ASSERT_EQ(s->remediation.tickets.sinks.size(), 1u);
    EXPECT_EQ(s->remediation.tickets.sinks[0].dir, "/var/lib/autoheal/tickets");
}

TEST(LoadSettingsFile, MissingFileIsAnError) {
    auto r = LoadSettingsFile("/nonexistent/autoheal.yaml");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("cannot open"));
}

// A config broken while being edited: the programs keep running with the last good copy, or,
// with none, with the defaults in dry-run (a typo must never turn remediation on).
TEST(LoadSettingsKeepingLastGood, BrokenFileFallsBackToTheLastGoodCopyOrToDryRun) {
    SettingsDir dir;
    const std::string path = dir.Path("autoheal.yaml");
    const std::string state = dir.Path("state");
    auto write = [&](const std::string& text) { dir.Write("autoheal.yaml", text); };

    // No file: the defaults, said.
    LoadedSettings none = LoadSettingsKeepingLastGood(path);
    EXPECT_THAT(none.problem, HasSubstr("no such file"));
    EXPECT_FALSE(none.settings.remediation.dry_run);

    // Broken before any good load: defaults with remediation in dry-run, state_dir kept.
    write("state_dir: " + state + "\nremediation:\n  dry_run: false\nlog_level: [\n");
    LoadedSettings first = LoadSettingsKeepingLastGood(path);
    EXPECT_THAT(first.problem, HasSubstr(path + ":"));
    EXPECT_THAT(first.problem, HasSubstr("no last good copy"));
    EXPECT_EQ(first.settings.core.state_dir, state);
    EXPECT_EQ(first.settings.core.policy.quarantine_file, state + "/quarantine.json");
    EXPECT_TRUE(first.settings.remediation.dry_run);

    // A good load keeps a copy.
    write("state_dir: " + state + "\nlog_level: warn\nremediation:\n  dry_run: true\n");
    LoadedSettings good = LoadSettingsKeepingLastGood(path);
    EXPECT_EQ(good.problem, "");
    EXPECT_EQ(good.settings.core.log_level, "warn");
    EXPECT_TRUE(fs::exists(state + "/last-good/autoheal.yaml"));

    // Broken again (syntax): the copy is used, and the message names the line.
    write("state_dir: " + state + "\nlog_level: debug\nremediation: [\n");
    LoadedSettings broken = LoadSettingsKeepingLastGood(path);
    EXPECT_THAT(broken.problem, HasSubstr(path + ":"));
    EXPECT_THAT(broken.problem, HasSubstr("using the last good copy"));
    EXPECT_EQ(broken.settings.core.log_level, "warn");
    EXPECT_TRUE(broken.settings.remediation.dry_run);

    // Valid YAML that a section's parser rejects counts as broken too.
    write("state_dir: " + state + "\nlog_level: error\nremediation:\n  dryrun: false\n");
    LoadedSettings rejected = LoadSettingsKeepingLastGood(path);
    EXPECT_THAT(rejected.problem, HasSubstr(path + ":4:3: remediation.dryrun: unknown setting"));
    EXPECT_EQ(rejected.settings.core.log_level, "warn");

    // A file any user may write steers root's actions: refused like a broken one.
    write("state_dir: " + state + "\nlog_level: trace\n");
    fs::permissions(path, fs::perms::others_write, fs::perm_options::add);
    LoadedSettings open_to_all = LoadSettingsKeepingLastGood(path);
    EXPECT_THAT(open_to_all.problem,
                HasSubstr(path + ": refused: writable by every user (mode 0646)"));
    EXPECT_EQ(open_to_all.settings.core.log_level, "warn");
}

// A program starts on the settings: StartProgram hands them out typed and logs where they say.
ProgramStart StartWith(const std::string& config_path, const std::string& name) {
    const auto previous = spdlog::default_logger();
    ::setenv("AUTOHEAL_CONFIG", config_path.c_str(), 1);
    ProgramStart start = StartProgram(name);
    ::unsetenv("AUTOHEAL_CONFIG");
    spdlog::default_logger()->flush();
    spdlog::set_default_logger(previous);
    return start;
}

// The whole path: a config with log_format: json makes StartProgram's logger write JSON lines.
TEST(StartProgram, JsonLinesToTheLogFile) {
    SettingsDir dir;
    const std::string log = dir.Path("sub/autoheal.log");
    const std::string config =
        dir.Write("autoheal.yaml", "log_file: " + log + "\nlog_format: json\nlog_level: debug\n" +
                                       "state_dir: " + dir.Path("state") +
                                       "\nremediation:\n  requeue_delay_seconds: 7\n");
    const auto previous = spdlog::default_logger();
    ::setenv("AUTOHEAL_CONFIG", config.c_str(), 1);
    const ProgramStart start = StartProgram("autoheal-test");
    ::unsetenv("AUTOHEAL_CONFIG");
    ASSERT_EQ(start.config_problem, "");
    EXPECT_EQ(start.settings.remediation.requeue_delay_seconds, 7);
    spdlog::debug("autoheal: test: \"quoted\" and\nnewline \xff");
    spdlog::warn("autoheal: test: second");
    spdlog::default_logger()->flush();
    spdlog::set_default_logger(previous);

    std::ifstream in(log);
    std::string line;
    std::vector<nlohmann::json> records;
    while (std::getline(in, line)) records.push_back(nlohmann::json::parse(line));
    ASSERT_EQ(records.size(), 2u);
    EXPECT_EQ(records[0]["level"], "debug");
    EXPECT_EQ(records[0]["program"], "autoheal-test");
    EXPECT_EQ(records[0]["message"], "autoheal: test: \"quoted\" and\nnewline \xef\xbf\xbd");
    EXPECT_EQ(records[1]["level"], "warning");
}

// A broken section at start-up: the error is logged once, naming file:line:column, and the
// program runs on the last good settings.
TEST(StartProgram, ABrokenSectionIsReportedOnceAndTheLastGoodSettingsAreUsed) {
    SettingsDir dir;
    const std::string log = dir.Path("autoheal.log");
    const std::string head = "log_file: " + log + "\nstate_dir: " + dir.Path("state") + "\n";
    const std::string config =
        dir.Write("autoheal.yaml", head + "health:\n  quick_budget_seconds: 3\n");
    ProgramStart good = StartWith(config, "autoheal-test");
    ASSERT_EQ(good.config_problem, "");
    EXPECT_EQ(good.settings.health.quick_budget_seconds, 3);

    dir.Write("autoheal.yaml", head + "health:\n  quick_budget_seconds: 3\n  quick: 1\n");
    ProgramStart broken = StartWith(config, "autoheal-test");
    EXPECT_EQ(broken.settings.health.quick_budget_seconds, 3);
    const std::string where = config + ":5:3: unknown setting 'health.quick'";
    EXPECT_THAT(broken.config_problem, HasSubstr(where));
    const std::string logged = diag::testing::ReadFile(log);
    EXPECT_EQ(Count(logged, where), 1) << logged;
    EXPECT_THAT(logged, HasSubstr("autoheal: config: " + where));
}

}  // namespace
}  // namespace autoheal::remediation
