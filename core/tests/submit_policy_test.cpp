#include "autoheal/core/submit_policy.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

namespace autoheal {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::StartsWith;

constexpr std::int64_t kNow = 1'790'000'000;

SubmitPolicy Policy(int max_auto_resume = 10, bool allow_health_off = true,
                    std::vector<QuarantinedNode> quarantine = {}) {
    return SubmitPolicy{max_auto_resume, allow_health_off, std::move(quarantine)};
}

EnvLookup FromPairs(std::vector<std::pair<std::string, std::string>> env) {
    return [env = std::move(env)](std::string_view name) -> std::optional<std::string> {
        for (const auto& [k, v] : env) {
            if (k == name) return v;
        }
        return std::nullopt;
    };
}

EnvLookup Record(const std::string& value) {
    return FromPairs({{std::string(kEnvOptions), value}});
}

TEST(SubmittedOptions, ReadsTheValidatedRecord) {
    auto o = SubmittedOptions(Record("auto_resume=4;health_check=full;ckpt_dir=/scratch/r"));
    ASSERT_TRUE(o.ok()) << o.error();
    EXPECT_EQ(*o,
              (JobOptions{
                  .auto_resume = 4, .ckpt_dir = "/scratch/r", .health_check = HealthTier::kFull}));
}

// Entries set by hand (the submit API, srun's SLURM_SPANK_* copies) meet the SPANK plugin's
// parsers: a bad value refuses the job, naming the option.
TEST(SubmittedOptions, RefusesForgedValuesNamingTheOption) {
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"auto_resume=lots", "--auto-resume"},    {"auto_resume=(null)", "--auto-resume"},
        {"auto_resume=1001", "--auto-resume"},    {"ckpt_dir=relative", "--ckpt-dir"},
        {"health_check=maybe", "--health-check"}, {"auto_resume=1;x=y", "AUTOHEAL_OPTIONS"}};
    for (const auto& [record, option] : cases) {
        auto o = SubmittedOptions(Record(record));
        ASSERT_FALSE(o.ok()) << record;
        EXPECT_EQ(o.code(), ErrorCode::kInvalid);
        EXPECT_THAT(o.error(), StartsWith("autoheal: " + option + ": ")) << record;
    }
    // Above the site's cap the record is read and DecideOnSubmit refuses in its own words.
    auto o = SubmittedOptions(Record("auto_resume=11"));
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(DecideOnSubmit(*o, Policy(10), {}, kNow).refusal,
              "autoheal: --auto-resume=11 is more than this cluster allows (10)");
}

// With --auto-resume forbidden (0), the record is read and DecideOnSubmit says so.
TEST(SubmittedOptions, ForbiddenAutoResumeIsLeftToTheDecision) {
    auto o = SubmittedOptions(Record("auto_resume=2"));
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(DecideOnSubmit(*o, Policy(0), {}, kNow).refusal,
              "autoheal: --auto-resume is not allowed on this cluster");
}

TEST(SubmittedOptions, UsersOwnAutohealVariablesAreNotRecords) {
    auto o = SubmittedOptions(FromPairs({{"AUTOHEAL_AUTO_RESUME", "99"},
                                         {"SPANK_AUTOHEAL_AUTO_RESUME", "99"},
                                         {"_SLURM_SPANK_OPTION_autoheal_auto_resume", "99"}}));
    ASSERT_TRUE(o.ok());
    EXPECT_EQ(*o, JobOptions{});
}

TEST(CappedAutoResume, TheSitesCapWinsWhateverTheRecordsSay) {
    EXPECT_EQ(CappedAutoResume(99, 10), 10);
    EXPECT_EQ(CappedAutoResume(3, 10), 3);
    EXPECT_EQ(CappedAutoResume(3, 0), std::nullopt);
    EXPECT_EQ(CappedAutoResume(std::nullopt, 10), std::nullopt);
}

TEST(DecideOnSubmit, AutoResumeForcesRequeue) {
    auto d = DecideOnSubmit(JobOptions{.auto_resume = 2}, Policy(), {}, kNow);
    EXPECT_FALSE(d.refused());
    EXPECT_TRUE(d.force_requeue);
    EXPECT_EQ(d.note, "auto_resume=2: requeue=1");
}

TEST(DecideOnSubmit, OtherJobsAreLeftAlone) {
    auto d = DecideOnSubmit(JobOptions{.ckpt_dir = "/x", .health_check = HealthTier::kFull},
                            Policy(), {}, kNow);
    EXPECT_FALSE(d.refused());
    EXPECT_FALSE(d.force_requeue);
    EXPECT_THAT(d.exclude, IsEmpty());
    EXPECT_TRUE(d.note.empty());
}

TEST(DecideOnSubmit, AutoResumeAboveTheCapIsRefused) {
    auto d = DecideOnSubmit(JobOptions{.auto_resume = 8}, Policy(5), {}, kNow);
    ASSERT_TRUE(d.refused());
    EXPECT_EQ(d.refusal, "autoheal: --auto-resume=8 is more than this cluster allows (5)");
    EXPECT_FALSE(d.force_requeue);
    EXPECT_THAT(d.exclude, IsEmpty());

    d = DecideOnSubmit(JobOptions{.auto_resume = 5}, Policy(5), {}, kNow);
    EXPECT_FALSE(d.refused()) << d.refusal;
    EXPECT_TRUE(d.force_requeue);
}

TEST(DecideOnSubmit, CapOfZeroRefusesAnyAutoResume) {
    auto d = DecideOnSubmit(JobOptions{.auto_resume = 1}, Policy(0), {}, kNow);
    EXPECT_EQ(d.refusal, "autoheal: --auto-resume is not allowed on this cluster");
    d = DecideOnSubmit(JobOptions{.ckpt_dir = "/x"}, Policy(0), {}, kNow);
    EXPECT_FALSE(d.refused());
}

TEST(DecideOnSubmit, HealthCheckOffRefusedOnlyWhenTheClusterSaysSo) {
    const JobOptions off{.health_check = HealthTier::kOff};
    auto d = DecideOnSubmit(off, Policy(10, false), {}, kNow);
    EXPECT_EQ(d.refusal, "autoheal: --health-check=off is not allowed on this cluster");
    EXPECT_FALSE(DecideOnSubmit(off, Policy(10, true), {}, kNow).refused());
    EXPECT_FALSE(
        DecideOnSubmit(JobOptions{.health_check = HealthTier::kQuick}, Policy(10, false), {}, kNow)
            .refused());
}

TEST(DecideOnSubmit, FlightRecorderOnRefusedOnlyWhereTheSiteTurnedItOff) {
    const JobOptions on{.flight_recorder = true};
    SubmitPolicy off = Policy();
    off.flight_recorder = FlightRecorderPolicy::kOff;
    EXPECT_EQ(DecideOnSubmit(on, off, {}, kNow).refusal,
              "autoheal: --flight-recorder=on is not allowed on this cluster "
              "(policy.flight_recorder: off)");
    EXPECT_FALSE(DecideOnSubmit(JobOptions{.flight_recorder = false}, off, {}, kNow).refused());
    EXPECT_FALSE(DecideOnSubmit(on, Policy(), {}, kNow).refused());
}

TEST(SubmitPolicyFromSettings, ReadsTheFlightRecorderDefault) {
    auto settings = ScanSubmitSettings("policy:\n  flight_recorder: off\n", "a.yaml");
    ASSERT_TRUE(settings.ok()) << settings.error();
    EXPECT_EQ(SubmitPolicyFromSettings(*settings, {}).flight_recorder, FlightRecorderPolicy::kOff);
    settings = ScanSubmitSettings("state_dir: /x\n", "a.yaml");
    ASSERT_TRUE(settings.ok()) << settings.error();
    EXPECT_EQ(SubmitPolicyFromSettings(*settings, {}).flight_recorder,
              FlightRecorderPolicy::kAutoResume);
    settings = ScanSubmitSettings("policy:\n  flight_recorder: yes\n", "a.yaml");
    ASSERT_FALSE(settings.ok());
    EXPECT_EQ(settings.error(),
              "a.yaml:2:20: policy.flight_recorder: expected auto-resume, on or off");
}

TEST(DecideOnSubmit, UnexpiredQuarantinedNodesAreExcluded) {
    auto policy = Policy(10, true,
                         {{"node1", kNow + 60, "autoheal: faulty_gpu"},
                          {"node2", kNow, "expired at this very second"},
                          {"node3", kNow - 1, "expired"},
                          {"node4", kNow + 1, "still in"},
                          {"node1", kNow + 600, "listed twice"}});
    auto d = DecideOnSubmit(JobOptions{}, policy, {}, kNow);
    EXPECT_FALSE(d.refused());
    EXPECT_FALSE(d.force_requeue);
    EXPECT_THAT(d.exclude, ElementsAre("node1", "node4"));
    EXPECT_EQ(d.note, "quarantined nodes excluded: exc_nodes+=node1,node4");

    d = DecideOnSubmit(JobOptions{.auto_resume = 3}, policy, {}, kNow);
    EXPECT_TRUE(d.force_requeue);
    EXPECT_EQ(d.note,
              "auto_resume=3: requeue=1; quarantined nodes excluded: exc_nodes+=node1,node4");

    // Once everything has expired nothing is excluded, without a reload.
    EXPECT_THAT(DecideOnSubmit(JobOptions{}, policy, {}, kNow + 600).exclude, IsEmpty());
}

TEST(DecideOnSubmit, RequestedOrAlreadyExcludedNodesAreNotAdded) {
    auto policy = Policy(10, true, {{"node1", kNow + 60, ""}, {"node2", kNow + 60, ""}});
    SubmitContext asks_node1{.req_nodes = {"node1", "node3"}, .exc_nodes = {}};
    EXPECT_THAT(DecideOnSubmit(JobOptions{}, policy, asks_node1, kNow).exclude,
                ElementsAre("node2"));
    SubmitContext excludes_node2{.req_nodes = {}, .exc_nodes = {"node2"}};
    EXPECT_THAT(DecideOnSubmit(JobOptions{}, policy, excludes_node2, kNow).exclude,
                ElementsAre("node1"));
}

// One name slurmctld does not know in exc_nodes fails every submission ("Invalid node name
// specified"): such entries are dropped, and the known ones still apply.
TEST(DecideOnSubmit, NodesSlurmDoesNotKnowAreNeverExcluded) {
    auto policy = Policy(10, true, {{"gone7", kNow + 60, ""}, {"node2", kNow + 60, ""}});
    SubmitContext context;
    context.is_known_node = [](const std::string& n) { return n.rfind("node", 0) == 0; };
    auto d = DecideOnSubmit(JobOptions{}, policy, context, kNow);
    EXPECT_FALSE(d.refused());
    EXPECT_THAT(d.exclude, ElementsAre("node2"));
}

// A systemic false positive (or a hand-edited file) cannot keep most of the cluster away from
// new jobs: at most min(max_nodes, max(1, floor(fraction x nodes))) entries apply, the oldest
// first.
TEST(DecideOnSubmit, QuarantineIsCappedByCountAndFraction) {
    std::vector<QuarantinedNode> many;
    many.reserve(40);
    for (int i = 0; i < 40; ++i) many.push_back({"node" + std::to_string(i), kNow + 60, ""});
    SubmitPolicy policy = Policy(10, true, many);
    policy.quarantine_max_nodes = 5;
    policy.quarantine_max_fraction = 0.10;
    SubmitContext context;
    context.cluster_nodes = 30;  // 10 % of 30: 3, under max_nodes
    EXPECT_THAT(DecideOnSubmit(JobOptions{}, policy, context, kNow).exclude,
                ElementsAre("node0", "node1", "node2"));
    context.cluster_nodes = 1000;  // 100 by the fraction: max_nodes caps it
    EXPECT_EQ(DecideOnSubmit(JobOptions{}, policy, context, kNow).exclude.size(), 5u);
    context.cluster_nodes = 4;  // floor(0.4): still one, as the breaker
    EXPECT_THAT(DecideOnSubmit(JobOptions{}, policy, context, kNow).exclude, ElementsAre("node0"));
    policy.quarantine_max_nodes = 0;  // off
    EXPECT_THAT(DecideOnSubmit(JobOptions{}, policy, context, kNow).exclude, IsEmpty());
    policy.quarantine_max_nodes = 5;
    // Expired and unknown entries take no place under the cap.
    policy.quarantine.insert(policy.quarantine.begin(), {{"old", kNow - 1, ""}});
    context.cluster_nodes = 30;
    context.is_known_node = [](const std::string& n) { return n != "node0"; };
    EXPECT_THAT(DecideOnSubmit(JobOptions{}, policy, context, kNow).exclude,
                ElementsAre("node1", "node2", "node3"));
    EXPECT_EQ(QuarantineLimit(policy, 0), 5);
}

// No entry keeps a node avoided for longer than quarantine_max_hours from now.
TEST(DecideOnSubmit, QuarantineEntriesFurtherOutThanTheMaximumAreIgnored) {
    SubmitPolicy policy = Policy(
        10, true, {{"node1", kNow + 3600, ""}, {"node2", kNow + std::int64_t{10} * 86400, ""}});
    policy.quarantine_max_seconds = std::int64_t{7} * 86400;
    EXPECT_THAT(DecideOnSubmit(JobOptions{}, policy, {}, kNow).exclude, ElementsAre("node1"));
}

TEST(DecideOnSubmit, RefusalComesBeforeExclusions) {
    auto policy = Policy(5, false, {{"node1", kNow + 60, ""}});
    auto d = DecideOnSubmit(JobOptions{.auto_resume = 6, .health_check = HealthTier::kOff}, policy,
                            {}, kNow);
    EXPECT_THAT(d.refusal, HasSubstr("--auto-resume=6"));
    EXPECT_THAT(d.exclude, IsEmpty());
    EXPECT_TRUE(d.note.empty());
}

TEST(DecideOnModify, RequeueOffIsRefusedForAutoResumeJobsOnly) {
    EXPECT_EQ(DecideOnModify(true, false), kRequeueOffRefusal);
    EXPECT_THAT(std::string(kRequeueOffRefusal),
                StartsWith("autoheal: this job asked for --auto-resume; it must stay requeueable"));
    EXPECT_EQ(DecideOnModify(true, true), "");
    EXPECT_EQ(DecideOnModify(true, std::nullopt), "");
    EXPECT_EQ(DecideOnModify(false, false), "");
}

TEST(SubmitPolicyFromSettings, ReadsCapAndHealthAllowOff) {
    auto settings = ScanSubmitSettings(
        "policy:\n  max_auto_resume: 4\nhealth:\n  allow_off: false\n", "a.yaml");
    ASSERT_TRUE(settings.ok()) << settings.error();
    SubmitPolicy p = SubmitPolicyFromSettings(*settings, {{"node1", kNow, "r"}});
    EXPECT_EQ(p.max_auto_resume, 4);
    EXPECT_FALSE(p.allow_health_off);
    EXPECT_EQ(p.quarantine.size(), 1u);

    settings = ScanSubmitSettings("health:\n  default_tier: quick\n", "a.yaml");
    ASSERT_TRUE(settings.ok()) << settings.error();
    p = SubmitPolicyFromSettings(*settings, {});
    EXPECT_TRUE(p.allow_health_off);
    EXPECT_EQ(p.max_auto_resume, 10);
    EXPECT_EQ(p.quarantine_max_nodes, 16);
    EXPECT_DOUBLE_EQ(p.quarantine_max_fraction, 0.10);
    EXPECT_EQ(p.quarantine_max_seconds, 168 * 3600);
}

TEST(SubmitPolicyFromSettings, ReadsTheQuarantineCaps) {
    auto settings = ScanSubmitSettings(
        "policy:\n  quarantine_max_nodes: 4\n  quarantine_max_fraction: 0.25\n"
        "  quarantine_max_hours: 12\n",
        "a.yaml");
    ASSERT_TRUE(settings.ok()) << settings.error();
    SubmitPolicy p = SubmitPolicyFromSettings(*settings, {});
    EXPECT_EQ(p.quarantine_max_nodes, 4);
    EXPECT_DOUBLE_EQ(p.quarantine_max_fraction, 0.25);
    EXPECT_EQ(p.quarantine_max_seconds, 12 * 3600);
    for (const char* bad : {"quarantine_max_fraction: 1.5", "quarantine_max_fraction: -0.1",
                            "quarantine_max_fraction: 0,1", "quarantine_max_nodes: -1",
                            "quarantine_max_hours: 0", "quarantine_max_hours: 9000"}) {
        auto r = ScanSubmitSettings(std::string("policy:\n  ") + bad + "\n", "a.yaml");
        EXPECT_FALSE(r.ok()) << bad;
    }
}

// A fresh folder per test, removed afterwards.
class QuarantineFile : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (std::filesystem::temp_directory_path() / "autoheal-q-XXXXXX").string();
        ASSERT_NE(::mkdtemp(tmpl.data()), nullptr);
        dir_ = tmpl;
        path_ = (dir_ / "sub" / "quarantine.json").string();
    }
    void TearDown() override { std::filesystem::remove_all(dir_); }

    void WriteText(const std::string& text) {
        std::filesystem::create_directories(std::filesystem::path(path_).parent_path());
        std::ofstream(path_) << text;
    }
    std::string ReadText() {
        std::ifstream in(path_);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

    std::filesystem::path dir_;
    std::string path_;
};

TEST_F(QuarantineFile, MissingFileIsAnEmptyList) {
    auto r = ReadQuarantineFile(path_);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_THAT(*r, IsEmpty());
}

TEST_F(QuarantineFile, WriteThenReadRoundTrips) {
    std::vector<QuarantinedNode> nodes{{"node3", kNow, "autoheal: faulty_gpu xid=79 inc=4"},
                                       {"gpu-a.rack_2", kNow + 5, ""}};
    auto w = WriteQuarantineFile(path_, nodes);  // creates the missing folder
    ASSERT_TRUE(w.ok()) << w.error();
    auto r = ReadQuarantineFile(path_);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_EQ(*r, nodes);
    struct stat st {};
    ASSERT_EQ(::stat(path_.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 0777, 0644u);
    // Nothing but the file itself is left in the folder.
    std::vector<std::string> names;
    for (const auto& e : std::filesystem::directory_iterator(dir_ / "sub")) {
        names.push_back(e.path().filename().string());
    }
    EXPECT_THAT(names, ElementsAre("quarantine.json"));
}

TEST_F(QuarantineFile, ReadsTheDocumentedShape) {
    WriteText(R"({"nodes": [{"node": "node3", "until": 1790000000, "reason": "autoheal: x",
                  "added_by": "a newer writer"}, {"node": "node4", "until": 5}]})");
    auto r = ReadQuarantineFile(path_);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_THAT(*r, ElementsAre(QuarantinedNode{"node3", 1790000000, "autoheal: x"},
                                QuarantinedNode{"node4", 5, ""}));
    WriteText("{}");
    r = ReadQuarantineFile(path_);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_THAT(*r, IsEmpty());
}

TEST_F(QuarantineFile, BadContentIsAnError) {
    const std::vector<std::pair<std::string, std::string>> cases{
        {"{\"nodes\": [", "not valid JSON"},
        {"", "not valid JSON"},
        {"[]", "expected an object"},
        {R"({"nodes": {}})", "nodes: expected a list"},
        {R"({"nodes": ["node1"]})", "nodes[0]: expected an object"},
        {R"({"nodes": [{"until": 5}]})", "nodes[0].node"},
        {R"({"nodes": [{"node": "node[1-3]", "until": 5}]})", "nodes[0].node"},
        {R"({"nodes": [{"node": "a,b", "until": 5}]})", "nodes[0].node"},
        {R"({"nodes": [{"node": "n1", "until": 5}, {"node": "n2", "until": "soon"}]})",
         "nodes[1].until"},
        {R"({"nodes": [{"node": "n1", "until": 1.5}]})", "nodes[0].until"},
        {R"({"nodes": [{"node": "n1", "until": 18446744073709551615}]})", "nodes[0].until"},
        {R"({"nodes": [{"node": "n1", "until": 5, "reason": 7}]})", "nodes[0].reason"},
    };
    for (const auto& [text, want] : cases) {
        WriteText(text);
        auto r = ReadQuarantineFile(path_);
        ASSERT_FALSE(r.ok()) << text;
        EXPECT_THAT(r.error(), StartsWith(path_ + ": ")) << text;
        EXPECT_THAT(r.error(), HasSubstr(want)) << text;
    }
}

TEST_F(QuarantineFile, SymlinkAndFolderAreRefused) {
    std::filesystem::create_directories(dir_ / "sub");
    std::ofstream(dir_ / "real.json") << R"({"nodes": []})";
    std::filesystem::create_symlink(dir_ / "real.json", path_);
    EXPECT_FALSE(ReadQuarantineFile(path_).ok());
    std::filesystem::remove(path_);
    std::filesystem::create_directory(path_);
    auto r = ReadQuarantineFile(path_);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("not a regular file"));
}

TEST_F(QuarantineFile, AddDropsExpiredAndUpserts) {
    ASSERT_TRUE(WriteQuarantineFile(path_, {{"old", kNow - 10, "expired"},
                                            {"node1", kNow + 100, "first"},
                                            {"node2", kNow + 50, "other"}})
                    .ok());
    // node1 again with an earlier end: the later end stays, the reason is the new one.
    auto r = AddToQuarantine(path_, "node1", kNow + 20, "second", kNow);
    ASSERT_TRUE(r.ok()) << r.error();
    auto read = ReadQuarantineFile(path_);
    ASSERT_TRUE(read.ok()) << read.error();
    EXPECT_EQ(*read, *r);
    EXPECT_THAT(*read, ElementsAre(QuarantinedNode{"node2", kNow + 50, "other"},
                                   QuarantinedNode{"node1", kNow + 100, "second"}));
    // A later end extends it.
    r = AddToQuarantine(path_, "node2", kNow + 500, "again", kNow);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_THAT(*r, ElementsAre(QuarantinedNode{"node1", kNow + 100, "second"},
                                QuarantinedNode{"node2", kNow + 500, "again"}));
    // A new node on a missing file.
    std::filesystem::remove(path_);
    r = AddToQuarantine(path_, "node9", kNow + 1, "new", kNow);
    ASSERT_TRUE(r.ok()) << r.error();
    EXPECT_THAT(*r, ElementsAre(QuarantinedNode{"node9", kNow + 1, "new"}));
}

TEST_F(QuarantineFile, AddRefusesBadNamesAndLeavesABrokenFileAlone) {
    auto r = AddToQuarantine(path_, "node[1-4]", kNow + 1, "x", kNow);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("invalid node name"));
    WriteText("{broken");
    r = AddToQuarantine(path_, "node1", kNow + 1, "x", kNow);
    ASSERT_FALSE(r.ok());
    EXPECT_THAT(r.error(), HasSubstr("not valid JSON"));
    EXPECT_EQ(ReadText(), "{broken");
}

TEST_F(QuarantineFile, ConcurrentAddsFromTwoProcessesLoseNothing) {
    constexpr int kPerProcess = 40;
    pid_t children[2];
    for (int c = 0; c < 2; ++c) {
        children[c] = ::fork();
        ASSERT_GE(children[c], 0);
        if (children[c] == 0) {
            int failures = 0;
            for (int i = 0; i < kPerProcess; ++i) {
                const std::string node = "p" + std::to_string(c) + "n" + std::to_string(i);
                failures += AddToQuarantine(path_, node, kNow + 1000, "r", kNow).ok() ? 0 : 1;
            }
            ::_exit(failures == 0 ? 0 : 1);
        }
    }
    for (pid_t child : children) {
        int status = 0;
        ASSERT_EQ(::waitpid(child, &status, 0), child);
        EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << status;
    }
    auto r = ReadQuarantineFile(path_);
    ASSERT_TRUE(r.ok()) << r.error();
    std::set<std::string> names;
    for (const QuarantinedNode& q : *r) names.insert(q.node);
    EXPECT_EQ(names.size(), 2u * kPerProcess);
    EXPECT_EQ(r->size(), 2u * kPerProcess);
}

TEST(IsValidQuarantineNodeName, OnlyPlainNames) {
    EXPECT_TRUE(IsValidQuarantineNodeName("node1"));
    EXPECT_TRUE(IsValidQuarantineNodeName("gpu-a.rack_2"));
    EXPECT_FALSE(IsValidQuarantineNodeName(""));
    EXPECT_FALSE(IsValidQuarantineNodeName("node[1-2]"));
    EXPECT_FALSE(IsValidQuarantineNodeName("a,b"));
    EXPECT_FALSE(IsValidQuarantineNodeName("a b"));
    EXPECT_FALSE(IsValidQuarantineNodeName(std::string(65, 'a')));
}

}  // namespace
}  // namespace autoheal
