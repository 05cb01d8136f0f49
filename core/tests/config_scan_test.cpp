// The plugins' reader of autoheal.yaml (config_scan.h) against yaml-cpp: where both accept a
// text they must read the same settings, and what the scanner refuses it names.
#include "autoheal/core/config_scan.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "autoheal/core/config.h"

namespace autoheal {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// What yaml-cpp reads for the scanner's settings (the reference).
SubmitSettings ReadWithYamlCpp(const std::string& text) {
    SubmitSettings s;
    const YAML::Node root = YAML::Load(text);
    if (root["state_dir"]) s.state_dir = root["state_dir"].as<std::string>();
    const YAML::Node policy = root["policy"];
    if (policy && policy["max_auto_resume"]) {
        s.policy.max_auto_resume = policy["max_auto_resume"].as<int>();
    }
    s.policy.quarantine_file = policy && policy["quarantine_file"]
                                   ? policy["quarantine_file"].as<std::string>()
                                   : s.state_dir + "/quarantine.json";
    const YAML::Node health = root["health"];
    if (health && health["allow_off"]) s.allow_health_off = health["allow_off"].as<bool>();
    return s;
}

void ExpectSameAsYamlCpp(const std::string& text) {
    SCOPED_TRACE(text);
    auto scanned = ScanSubmitSettings(text, "a.yaml");
    ASSERT_TRUE(scanned.ok()) << scanned.error();
    const SubmitSettings want = ReadWithYamlCpp(text);
    EXPECT_EQ(scanned->state_dir, want.state_dir);
    EXPECT_EQ(scanned->policy.max_auto_resume, want.policy.max_auto_resume);
    EXPECT_EQ(scanned->policy.quarantine_file, want.policy.quarantine_file);
    EXPECT_EQ(scanned->allow_health_off, want.allow_health_off);
}

TEST(ScanSubmitSettings, ReadsTheShippedConfigAsYamlCppDoes) {
    std::ifstream in(std::string(AUTOHEAL_SOURCE_DIR) + "/etc/autoheal.yaml");
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    ASSERT_THAT(text, HasSubstr("max_auto_resume"));
    ExpectSameAsYamlCpp(text);
    std::string moved = text;
    const std::size_t at = moved.find("state_dir: /var/lib/autoheal\n");
    ASSERT_NE(at, std::string::npos);
    moved.replace(at, 29, "state_dir: \"/srv/x\"   # moved\n");
    ExpectSameAsYamlCpp(moved);
}

// Found by fuzz_config: after a NUL byte in a comment, yaml-cpp and the scanner read different
// max_auto_resume values. Both now refuse the file, naming where the byte is.
TEST(ScanSubmitSettings, ANulByteIsRefusedByTheScannerAndTheYamlReader) {
    using namespace std::string_literals;
    const std::string text = "policy:\n  # a comment\0 with a NUL\n  max_auto_resume: 7\n"s;
    auto scanned = ScanSubmitSettings(text, "a.yaml");
    ASSERT_FALSE(scanned);
    EXPECT_EQ(scanned.error(), "a.yaml:2:14: a NUL byte: the file must be text");
    auto parsed = ParseConfigDocument(text, "a.yaml");
    ASSERT_FALSE(parsed);
    EXPECT_EQ(parsed.error(), "a.yaml:2:14: a NUL byte: the file must be text");
}

TEST(ScanSubmitSettings, DefaultsWhenEmpty) {
    auto s = ScanSubmitSettings("# nothing\n\n", "a.yaml");
    ASSERT_TRUE(s.ok()) << s.error();
    EXPECT_EQ(s->state_dir, "/var/lib/autoheal");
    EXPECT_EQ(s->policy.max_auto_resume, 10);
    EXPECT_EQ(s->policy.quarantine_file, "/var/lib/autoheal/quarantine.json");
    EXPECT_TRUE(s->allow_health_off);
}

// Settings-like lines inside other values are not settings; quoting, comments, line ends and
// indentation are read as YAML reads them.
TEST(ScanSubmitSettings, AgreesWithYamlCppOnTrickyTexts) {
    for (const char* text : {
             "state_dir: '/srv/it''s'   # quoted\npolicy:\n  max_auto_resume: \"7\"\n",
             "policy:\n    max_auto_resume: 3 # four spaces\n    quarantine_file: /q.json\n",
             "  state_dir: /srv/in\n  policy:\n     max_auto_resume: 2\n",
             "\xEF\xBB\xBFstate_dir: /srv/bom\r\npolicy:\r\n  max_auto_resume: 1\r\n",
             "---\nstate_dir: /srv/doc\n...\npolicy:\n  max_auto_resume: 99\n",
             "remediation:\n  note: |\n    policy:\n      max_auto_resume: 1\n"
             "policy:\n  max_auto_resume: 6\n",
             "remediation:\n  argv: [a,\n  b, \"policy: x\",\n  c]\nstate_dir: /srv/flow\n",
             "remediation:\n  msg: \"two\n    lines # not a comment\n    state_dir: /no\"\n",
             "remediation:\n  msg: plain text\n    \"state_dir\" policy\nhealth:\n  allow_off: "
             "Off\n",
             "health:\n  models:\n    - {match: H200, nvlinks: 18}\n    - match: A100\n"
             "      allow_off: false\n  allow_off: YES\n",
             "health:\n  allow_off: n\npolicy:\n  quarantine_file: \"/q/#1.json\"\n",
             "log_file: /a#b\nstate_dir: /srv/hash#x # comment\n",
         }) {
        ExpectSameAsYamlCpp(text);
    }
}

TEST(ScanSubmitSettings, ErrorsAreLocated) {
    auto s = ScanSubmitSettings("health:\n  allow_off: sometimes\n", "h.yaml");
    ASSERT_FALSE(s.ok());
    EXPECT_EQ(s.code(), ErrorCode::kInvalid);
    EXPECT_THAT(s.error(), StartsWith("h.yaml:2:14: health.allow_off: expected true or false"));
    s = ScanSubmitSettings("policy:\n  max_auto_resume: 010\n", "p.yaml");
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error(), StartsWith("p.yaml:2:20: policy.max_auto_resume: expected a whole"));
    s = ScanSubmitSettings("state_dir: var\n", "s.yaml");
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error(), StartsWith("s.yaml:1:12: state_dir: expected an absolute path"));
    s = ScanSubmitSettings("policy:\n  max_auto_resume: 1\npolicy:\n", "d.yaml");
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error(), StartsWith("d.yaml:3:1: 'policy' is set twice"));
    s = ScanSubmitSettings("policy:\n\t max_auto_resume: 1\n", "t.yaml");
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error(), StartsWith("t.yaml:2:1: a tab in the indentation"));
    s = ScanSubmitSettings("policy:\n  - max_auto_resume: 1\n", "l.yaml");
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error(), StartsWith("l.yaml:2:5: policy: expected a mapping of settings"));
}

// Forms valid in YAML that the scanner does not read are refused where they hold a setting it
// reads (and only there), saying what was found.
TEST(ScanSubmitSettings, RefusesFormsItDoesNotRead) {
    struct Case {
        const char* text;
        const char* error;
    };
    for (const Case& c : {
             Case{"policy: {max_auto_resume: 3}\n",
                  "a.yaml:1:9: policy: expected a mapping of settings on the lines under it, "
                  "as one `key: value` line (found a flow collection)"},
             Case{"policy:\n  max_auto_resume: &n 3\n", "(found an anchor or a tag)"},
             Case{"policy:\n  max_auto_resume: 3\n    4\n", "(found a value over several lines)"},
             Case{"state_dir: \"/srv/\\x41\"\n", "(found an escape sequence)"},
             Case{"state_dir: |\n  /srv\n", "(found a block scalar)"},
             Case{"health:\n  allow_off: *no\n", "(found an alias)"},
             Case{"health:\n  allow_off:\n    - false\n",
                  "health.allow_off: expected true or false"},
         }) {
        auto s = ScanSubmitSettings(c.text, "a.yaml");
        ASSERT_FALSE(s.ok()) << c.text;
        EXPECT_THAT(s.error(), HasSubstr(c.error)) << c.text;
    }
    // The same forms elsewhere are skipped.
    ExpectSameAsYamlCpp("remediation: {dry_run: true}\nhealth:\n  models: &m []\n");
}

TEST(LoadSubmitSettings, MissingFileGivesDefaultsAndAFileIsRead) {
    const std::filesystem::path dir =
        std::filesystem::temp_directory_path() / ("config_scan_test." + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    auto s = LoadSubmitSettings((dir / "absent.yaml").string());
    ASSERT_TRUE(s.ok()) << s.error();
    EXPECT_EQ(s->policy.max_auto_resume, 10);
    std::ofstream(dir / "a.yaml") << "policy:\n  max_auto_resume: 2\n";
    s = LoadSubmitSettings((dir / "a.yaml").string());
    ASSERT_TRUE(s.ok()) << s.error();
    EXPECT_EQ(s->policy.max_auto_resume, 2);
    std::ofstream(dir / "big.yaml") << std::string(kMaxConfigBytes + 1, '#');
    s = LoadSubmitSettings((dir / "big.yaml").string());
    ASSERT_FALSE(s.ok());
    EXPECT_THAT(s.error(), HasSubstr("larger than"));
    std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace autoheal
