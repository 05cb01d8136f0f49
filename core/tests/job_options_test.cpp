#include "autoheal/core/job_options.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>

namespace autoheal {
namespace {

using ::testing::HasSubstr;

TEST(ParseAutoResume, BareOptionUsesSiteDefault) {
    OptionLimits limits{.default_auto_resume = 4, .max_auto_resume = 10};
    auto r = ParseAutoResume(std::nullopt, limits);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, 4);
}

TEST(ParseAutoResume, AcceptsNumbersInRange) {
    OptionLimits limits;
    EXPECT_EQ(*ParseAutoResume("1", limits), 1);
    EXPECT_EQ(*ParseAutoResume("10", limits), 10);
}

TEST(ParseAutoResume, RefusesOutOfRangeNamingOptionAndRange) {
    OptionLimits limits{.default_auto_resume = 3, .max_auto_resume = 5};
    for (const char* bad : {"0", "6", "-1", "99999999999"}) {
        auto r = ParseAutoResume(bad, limits);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_THAT(r.error(), HasSubstr("--auto-resume"));
        EXPECT_THAT(r.error(), HasSubstr("from 1 to 5"));
    }
}

TEST(ParseAutoResume, RefusesNonNumbers) {
    OptionLimits limits;
    for (const char* bad : {"", "yes", "3x", " 3", "3.0", "+3"}) {
        auto r = ParseAutoResume(bad, limits);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_THAT(r.error(), HasSubstr("--auto-resume: invalid value"));
    }
}

TEST(ParseHealthCheck, AcceptsTheThreeTiers) {
    EXPECT_EQ(*ParseHealthCheck("quick"), HealthTier::kQuick);
    EXPECT_EQ(*ParseHealthCheck("full"), HealthTier::kFull);
    EXPECT_EQ(*ParseHealthCheck("off"), HealthTier::kOff);
}

TEST(ParseHealthCheck, RefusesOthersListingAllowedValues) {
    for (const char* bad : {"fast", "", "Quick", "quick "}) {
        auto r = ParseHealthCheck(bad);
        ASSERT_FALSE(r.ok()) << bad;
        EXPECT_THAT(r.error(), HasSubstr("--health-check"));
        EXPECT_THAT(r.error(), HasSubstr("allowed values are quick, full, off"));
    }
}

TEST(ParseHealthCheck, EscapesControlCharactersInMessage) {
    auto r = ParseHealthCheck("a\nb");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("'a\\x0ab'"));
}

TEST(ParseHangTimeout, TakesADurationOrOff) {
    EXPECT_EQ(*ParseHangTimeout("45s"), 45);
    EXPECT_EQ(*ParseHangTimeout("20m"), 1200);
    EXPECT_EQ(*ParseHangTimeout("90"), 90);
    EXPECT_EQ(*ParseHangTimeout("30d"), 30 * 86400);
    EXPECT_EQ(*ParseHangTimeout("off"), 0);
    EXPECT_EQ(*ParseHangTimeout("0"), 0);
}

TEST(ParseHangTimeout, RefusesOthersNamingTheOptionAndTheRange) {
    for (const char* bad : {"", "soon", "1h30m", "-5m", "31d", "2w6d", "5 m"}) {
        auto r = ParseHangTimeout(bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_THAT(r.error(), HasSubstr("--hang-timeout: ")) << bad;
        EXPECT_THAT(r.error(), HasSubstr("1s to 30d")) << bad;
    }
}

TEST(ParseFlightRecorder, TakesOnOrOffAndRefusesTheRestNamingTheOption) {
    EXPECT_EQ(*ParseFlightRecorder("on"), true);
    EXPECT_EQ(*ParseFlightRecorder("off"), false);
    for (const char* bad : {"", "yes", "ON", "1", "on "}) {
        auto r = ParseFlightRecorder(bad);
        ASSERT_FALSE(r) << bad;
        EXPECT_THAT(r.error(), HasSubstr("--flight-recorder: invalid value")) << bad;
        EXPECT_THAT(r.error(), HasSubstr("allowed values are on, off")) << bad;
    }
}

// The site's default decides only for jobs that did not say; a site that turned the recorder off
// is never overruled (job_submit also refuses --flight-recorder=on there).
TEST(FlightRecorderWanted, JobsChoiceThenTheSitesDefault) {
    const JobOptions plain{};
    const JobOptions resume{.auto_resume = 3};
    const JobOptions on{.flight_recorder = true};
    const JobOptions resume_off{.auto_resume = 3, .flight_recorder = false};
    using P = FlightRecorderPolicy;
    EXPECT_FALSE(FlightRecorderWanted(plain, P::kAutoResume));
    EXPECT_TRUE(FlightRecorderWanted(resume, P::kAutoResume));
    EXPECT_TRUE(FlightRecorderWanted(on, P::kAutoResume));
    EXPECT_FALSE(FlightRecorderWanted(resume_off, P::kAutoResume));
    EXPECT_TRUE(FlightRecorderWanted(plain, P::kOn));
    EXPECT_FALSE(FlightRecorderWanted(resume_off, P::kOn));
    EXPECT_FALSE(FlightRecorderWanted(resume, P::kOff));
    EXPECT_FALSE(FlightRecorderWanted(on, P::kOff));
    EXPECT_EQ(FlightRecorderPolicyFromName("auto-resume"), P::kAutoResume);
    EXPECT_EQ(FlightRecorderPolicyFromName("on"), P::kOn);
    EXPECT_EQ(FlightRecorderPolicyFromName("off"), P::kOff);
    EXPECT_FALSE(FlightRecorderPolicyFromName("true"));
}

TEST(ParseCkptDir, KeepsAbsoluteAndNormalises) {
    EXPECT_EQ(*ParseCkptDir("/scratch/run7", "/home/u"), "/scratch/run7");
    EXPECT_EQ(*ParseCkptDir("/scratch//run7/./a/../", "/home/u"), "/scratch/run7");
}

// Found by fuzz_job_options: a relative --ckpt-dir took control characters from the submit
// directory, and the recorded value was then refused by every reader of the environment.
TEST(ParseCkptDir, RefusesRelativeUnderSubmitDirectoryWithControlCharacters) {
    auto r = ParseCkptDir("ckpt", "/home/u/a\x01b");
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error(), HasSubstr("control characters"));
    EXPECT_EQ(*ParseCkptDir("/scratch/ckpt", "/home/u/a\x01b"), "/scratch/ckpt");
}

// Found by fuzz_job_options: under a submit directory of "//" the result kept a leading "//",
// which the job's environment then read back as another path.
TEST(ParseCkptDir, CollapsesLeadingDoubleSlash) {
    EXPECT_EQ(*ParseCkptDir("ckpt", "//"), "/ckpt");
    EXPECT_EQ(*ParseCkptDir("//scratch//run7", "/home/u"), "/scratch/run7");
    EXPECT_FALSE(ParseCkptDir("//", "/home/u"));
}

TEST(ParseCkptDir, ResolvesRelativeAgainstSubmitDirectory) {
    EXPECT_EQ(*ParseCkptDir("ckpt", "/home/u/proj"), "/home/u/proj/ckpt");
    EXPECT_EQ(*ParseCkptDir("../ckpt", "/home/u/proj"), "/home/u/ckpt");
}

TEST(ParseCkptDir, RefusesBadPaths) {
    EXPECT_FALSE(ParseCkptDir("", "/home").ok());
    EXPECT_FALSE(ParseCkptDir("/a\nb", "/home").ok());
    EXPECT_FALSE(ParseCkptDir("/", "/home").ok());
    EXPECT_FALSE(ParseCkptDir("/../..", "/home").ok());
    EXPECT_FALSE(ParseCkptDir("rel", "").ok());
    EXPECT_FALSE(ParseCkptDir("/" + std::string(kMaxCkptDirLength + 1, 'a'), "/").ok());
    auto r = ParseCkptDir("x\ty", "/home");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("--ckpt-dir"));
}

TEST(JobControlEnv, OneRecordRoundTripsThroughSpankPrefix) {
    JobOptions options{.auto_resume = 3,
                       .ckpt_dir = "/scratch/a b;c=d",
                       .health_check = HealthTier::kFull,
                       .hang_timeout = 1200,
                       .flight_recorder = false};
    std::map<std::string, std::string, std::less<>> env;
    for (auto& [k, v] : ToJobControlEnv(options)) env["SPANK_" + k] = v;
    EXPECT_EQ(env.size(), 1u);
    EXPECT_EQ(env.at("SPANK_AUTOHEAL_OPTIONS"),
              "auto_resume=3;health_check=full;hang_timeout=1200;flight_recorder=off;"
              "ckpt_dir=/scratch/a b;c=d");
    std::vector<std::string> problems;
    auto back = JobOptionsFromEnv(
        [&](std::string_view name) -> std::optional<std::string> {
            auto it = env.find(name);
            if (it == env.end()) return std::nullopt;
            return it->second;
        },
        "SPANK_", &problems);
    EXPECT_EQ(back, options);
    EXPECT_TRUE(problems.empty());
}

TEST(JobControlEnv, RecordHoldsOnlyTheOptionsGiven) {
    EXPECT_THAT(ToJobControlEnv(JobOptions{.ckpt_dir = "/c"}),
                ::testing::ElementsAre(
                    std::pair<std::string, std::string>{"AUTOHEAL_OPTIONS", "ckpt_dir=/c"}));
    EXPECT_THAT(ToJobControlEnv(JobOptions{.auto_resume = 1}),
                ::testing::ElementsAre(
                    std::pair<std::string, std::string>{"AUTOHEAL_OPTIONS", "auto_resume=1"}));
}

// A record set by hand that is not in the format is reported and read as no options.
TEST(JobControlEnv, MalformedRecordsAreReportedAndIgnored) {
    for (const std::string record :
         {"health_check=full;auto_resume=3", "auto_resume=3;bogus=1", "ckpt", "auto_resume=3;;"}) {
        std::vector<std::string> problems;
        auto back = JobOptionsFromEnv(
            [&](std::string_view name) -> std::optional<std::string> {
                if (name == kEnvOptions) return record;
                return std::nullopt;
            },
            "", &problems);
        EXPECT_EQ(back, JobOptions{}) << record;
        ASSERT_EQ(problems.size(), 1u) << record;
        EXPECT_THAT(problems[0], HasSubstr("AUTOHEAL_OPTIONS: malformed record")) << record;
    }
}

TEST(JobControlEnv, JobScriptsSeeTheDocumentedNames) {
    JobOptions options{.auto_resume = 2,
                       .ckpt_dir = "/c",
                       .health_check = HealthTier::kQuick,
                       .flight_recorder = true};
    EXPECT_THAT(
        ToJobScriptEnv(options),
        ::testing::ElementsAre(
            std::pair<std::string, std::string>{"SLURM_SPANK_AUTOHEAL_AUTO_RESUME", "2"},
            std::pair<std::string, std::string>{"SLURM_SPANK_AUTOHEAL_CKPT_DIR", "/c"},
            std::pair<std::string, std::string>{"SLURM_SPANK_AUTOHEAL_HEALTH_CHECK", "quick"},
            std::pair<std::string, std::string>{"SLURM_SPANK_AUTOHEAL_FLIGHT_RECORDER", "on"}));
}

TEST(JobControlEnv, UnsetOptionsRecordNothing) {
    EXPECT_TRUE(ToJobControlEnv(JobOptions{}).empty());
}

TEST(JobControlEnv, DropsAndReportsTamperedValues) {
    std::vector<std::string> problems;
    auto back = JobOptionsFromEnv(
        [](std::string_view name) -> std::optional<std::string> {
            if (name == kEnvOptions) {
                return "auto_resume=lots;health_check=quick;hang_timeout=forever;"
                       "flight_recorder=yes;ckpt_dir=rel/dir";
            }
            return std::nullopt;
        },
        "", &problems);
    EXPECT_FALSE(back.auto_resume.has_value());
    EXPECT_FALSE(back.ckpt_dir.has_value());
    EXPECT_FALSE(back.hang_timeout.has_value());
    EXPECT_FALSE(back.flight_recorder.has_value());
    EXPECT_EQ(back.health_check, HealthTier::kQuick);
    ASSERT_EQ(problems.size(), 4u);
    EXPECT_THAT(problems[0], HasSubstr("--auto-resume: invalid value 'lots'"));
    EXPECT_THAT(problems[1], HasSubstr("--ckpt-dir"));
    EXPECT_THAT(problems[2], HasSubstr("--hang-timeout: invalid value 'forever'"));
}

// A record without a value ("(null)": Slurm's copy of a bare --auto-resume that the SPANK
// plugin did not overwrite) or above the largest cap a site may set is refused.
TEST(JobControlEnv, AutoResumeRecordsNeedAValueWithinTheLimits) {
    std::vector<std::string> problems;
    auto lookup = [](const std::string& value) {
        return [value](std::string_view name) -> std::optional<std::string> {
            if (name == kEnvOptions) return "auto_resume=" + value;
            return std::nullopt;
        };
    };
    EXPECT_FALSE(JobOptionsFromEnv(lookup("(null)"), "", &problems).auto_resume.has_value());
    EXPECT_FALSE(JobOptionsFromEnv(lookup("1001"), "", &problems).auto_resume.has_value());
    EXPECT_EQ(JobOptionsFromEnv(lookup("1000"), "", &problems).auto_resume, 1000);
    EXPECT_EQ(problems.size(), 2u);
    auto r = ParseAutoResume(std::nullopt, kRecordLimits);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("--auto-resume: a value is required"));
}

// autoheal's records of earlier versions (AUTOHEAL_AUTO_RESUME, ...) and Slurm's own copies
// of the options (removed by the SPANK plugin) are not read: a variable of such a name comes
// from a user.
TEST(JobControlEnv, OtherNamesAreNotRead) {
    auto back = JobOptionsFromEnv(
        [](std::string_view name) -> std::optional<std::string> {
            if (name == "SPANK_AUTOHEAL_AUTO_RESUME") return "99";
            if (name == "SPANK_AUTOHEAL_HEALTH_CHECK") return "off";
            if (name == "SPANK__SLURM_SPANK_OPTION_autoheal_auto_resume") return "99";
            return std::nullopt;
        },
        "SPANK_");
    EXPECT_EQ(back, JobOptions{});
}

TEST(LookupEnvArray, FindsExactNamesOnly) {
    const char* env[] = {"AUTOHEAL_AUTO_RESUMEX=9", "AUTOHEAL_AUTO_RESUME=2", nullptr,
                         "_SLURM_SPANK_OPTION_autoheal_auto_resume=2"};
    EXPECT_EQ(LookupEnvArray(env, 4, "AUTOHEAL_AUTO_RESUME"), "2");
    EXPECT_EQ(LookupEnvArray(env, 4, "AUTOHEAL_CKPT_DIR"), std::nullopt);
    EXPECT_EQ(LookupEnvArray(nullptr, 0, "X"), std::nullopt);
    const char* empty_value[] = {"X="};
    EXPECT_EQ(LookupEnvArray(empty_value, 1, "X"), "");
}

TEST(ParseCkptDir, RefusesBytesThatAreNotUtf8AndQuotesThemSafely) {
    auto r = ParseCkptDir("/scratch/run\xff\xfe", "/home/u");
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("--ckpt-dir: invalid value '/scratch/run\\xff\\xfe'"));
    EXPECT_THAT(r.error(), HasSubstr("not UTF-8"));
    EXPECT_FALSE(ParseCkptDir("/scratch/\xc0\xaf", "/home/u").ok());      // overlong '/'
    EXPECT_FALSE(ParseCkptDir("/scratch/\xed\xa0\x80", "/home/u").ok());  // a surrogate
    EXPECT_FALSE(ParseCkptDir("/scratch/\xe2\x82", "/home/u").ok());      // cut short
    EXPECT_EQ(*ParseCkptDir("/scratch/r\xc3\xa9sultats", "/home/u"), "/scratch/r\xc3\xa9sultats");
    // A relative path under a submit directory whose name is not UTF-8 (found by the fuzzer:
    // the result must read back the same).
    EXPECT_FALSE(ParseCkptDir("ckpt", "/home/ali\x9d\x9a").ok());
    // Shell metacharacters are just bytes of a path: never given to a shell, kept verbatim.
    EXPECT_EQ(*ParseCkptDir("/scratch/a;b $(id)", "/home/u"), "/scratch/a;b $(id)");
}

}  // namespace
}  // namespace autoheal
