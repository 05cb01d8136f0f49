// The records under state_dir/jobs (remediation/job_records.h): round trips, and what each reader
// refuses by version.
#include "autoheal/remediation/job_records.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autoheal/remediation/decision.h"

namespace autoheal::remediation {
namespace {

using ::testing::HasSubstr;

NodeReport SampleReport() {
    NodeReport r;
    r.job = "77";
    r.node = "node2";
    r.restart = 1;
    r.time = 1'800'000'000;
    r.exit_code = "0:9";
    diag::AddEvidence(&r.evidence, "kernel",
                      {"xid",
                       0,
                       12,
                       "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                       {{"xid", "79"}, {"pci", "0000:3b:00"}}});
    // Another signature on the same line: its text travels once.
    diag::AddEvidence(&r.evidence, "kernel",
                      {"context-nvrm-gpu", 0, 12, r.evidence.items[0].text, {}});
    diag::AddEvidence(&r.evidence, "nvml",
                      {"nvml-delta",
                       0,
                       1,
                       "gpu 0000:3b:00.0 ecc_uncorrected_volatile increased by 3",
                       {{"gpu", "0000:3b:00.0"}, {"counter", "ecc_uncorrected_volatile"}}});
    r.evidence.counts[0].second = 700;  // more xid lines than were kept
    diag::AddEvidence(&r.job_output, "job-output",
                      {"cuda-oom", 0, 3, "torch.OutOfMemoryError: CUDA out of memory.", {}});
    r.job_output_read = true;
    r.gpus = {{"0000:3b:00.0", "GPU-1", "S1", "H100"}};
    r.local_cause = "faulty_gpu (xid-79-fallen-off-bus)";
    r.problems = {"kernel log: gone"};
    return r;
}

TEST(NodeReport, TypedEvidenceRoundTrips) {
    NodeReport r = SampleReport();
    r.job_gpus = {"0000:3b:00.0"};
    const std::string json = NodeReportToJson(r);
    const auto j = nlohmann::json::parse(json);
    EXPECT_EQ(j["version"], kNodeReportVersion);
    EXPECT_TRUE(j["evidence"]["items"][1][3].is_null());  // the text travels once
    EXPECT_EQ(j["evidence"]["items"][0], nlohmann::json::parse(R"(["xid", "kernel", 12,
                  "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                  "xid", "79", "pci", "0000:3b:00"])"));
    auto back = NodeReportFromJson(json);
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->version, 2);
    ASSERT_EQ(back->evidence.items.size(), 3u);
    EXPECT_EQ(back->evidence.items[1].text, r.evidence.items[0].text);
    const diag::Evidence& x = back->evidence.items[0];
    EXPECT_EQ(x.signature, "xid");
    EXPECT_EQ(back->evidence.sources[x.source], "kernel");
    EXPECT_EQ(x.line, 12u);
    EXPECT_EQ(x.text, r.evidence.items[0].text);
    EXPECT_EQ(x.Field("xid"), "79");
    EXPECT_EQ(x.Field("pci"), "0000:3b:00");
    const diag::Evidence& d = back->evidence.items[2];
    EXPECT_EQ(back->evidence.sources[d.source], "nvml");
    EXPECT_EQ(d.Field("counter"), "ecc_uncorrected_volatile");
    EXPECT_EQ(back->evidence.Count("xid"), 700u);
    EXPECT_EQ(back->evidence.Count("nvml-delta"), 1u);
    ASSERT_EQ(back->job_output.items.size(), 1u);
    EXPECT_EQ(back->job_output.sources[0], "job-output");
    EXPECT_TRUE(back->job_output_read);
    EXPECT_EQ(back->gpus[0].serial, "S1");
    EXPECT_EQ(back->job_gpus, r.job_gpus);
    EXPECT_EQ(back->local_cause, r.local_cause);
    EXPECT_EQ(back->problems, r.problems);
    EXPECT_EQ(NodeReportToJson(*back), json);
}

TEST(NodeReport, OldAndNewerVersionsAreRefusedNamingTheVersion) {
    auto j = nlohmann::json::parse(NodeReportToJson(SampleReport()));
    j.erase("version");
    j["kernel"] = {"NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus."};
    auto old = NodeReportFromJson(j.dump());
    ASSERT_FALSE(old);
    EXPECT_EQ(old.code(), ErrorCode::kInvalid);
    EXPECT_THAT(old.error(), HasSubstr("node report: version 1 (no version field) is not read"));
    EXPECT_THAT(old.error(), HasSubstr("this autoheal reads version 2"));
    j["version"] = 3;
    auto newer = NodeReportFromJson(j.dump());
    ASSERT_FALSE(newer);
    EXPECT_THAT(newer.error(),
                HasSubstr("node report: version 3 is not read: this autoheal reads version 2"));
    j["version"] = "2";
    EXPECT_THAT(NodeReportFromJson(j.dump()).error(), HasSubstr("version is not a whole number"));
}

TEST(NodeReport, MalformedEvidenceItemsAreRefused) {
    auto j = nlohmann::json::parse(NodeReportToJson(SampleReport()));
    j["evidence"]["items"][2][0] = "";
    auto r = NodeReportFromJson(j.dump());
    ASSERT_FALSE(r);
    EXPECT_THAT(r.error(), HasSubstr("node report: evidence: item 3: no signature"));
    j = nlohmann::json::parse(NodeReportToJson(SampleReport()));
    j["job_output"]["items"][0][1] = "";
    EXPECT_THAT(NodeReportFromJson(j.dump()).error(), HasSubstr("job_output: item 1: no source"));
    j = nlohmann::json::parse(NodeReportToJson(SampleReport()));
    j["evidence"]["items"][0].push_back("lonely-field");
    EXPECT_THAT(NodeReportFromJson(j.dump()).error(), HasSubstr("item 1: not a list"));
    j = nlohmann::json::parse(NodeReportToJson(SampleReport()));
    j["evidence"]["items"][0][5] = 79;
    EXPECT_THAT(NodeReportFromJson(j.dump()).error(),
                HasSubstr("item 1: a field or value that is not text"));
}

TEST(PrologBaseline, RoundTripsAndReadsVersion1WithoutAVersionField) {
    PrologBaseline b;
    b.time = 1'800'000'000;
    b.kernel_cursor = "kmsg:42";
    b.options.hang_timeout = 600;
    b.job_gpus = "0,2";
    health::NodeSnapshot snap;
    snap.driver_present = true;
    health::GpuSnapshot g;
    g.pci_bus_id = "0000:3b:00.0";
    g.ecc_uncorrected_volatile = 1;
    snap.gpus = {g};
    b.snapshot = snap;
    health::HealthReport report;
    report.results = {{"ecc-uncorrected", "0000:3b:00.0", health::Status::kPass, "ok", {}, 0, ""}};
    const std::string json = PrologBaselineToJson(b, &report);
    auto j = nlohmann::json::parse(json);
    EXPECT_EQ(j["version"], 1);
    EXPECT_EQ(j["results"][0]["check"], "ecc-uncorrected");  // for people
    auto back = PrologBaselineFromJson(json);
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->kernel_cursor, "kmsg:42");
    EXPECT_EQ(back->time, b.time);
    EXPECT_EQ(back->options.hang_timeout, 600);
    EXPECT_EQ(back->job_gpus, "0,2");
    ASSERT_TRUE(back->snapshot);
    ASSERT_EQ(back->snapshot->gpus.size(), 1u);
    EXPECT_EQ(back->snapshot->gpus[0].ecc_uncorrected_volatile, 1u);

    j.erase("version");  // what the prolog wrote before versions
    back = PrologBaselineFromJson(j.dump());
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->version, 1);
    EXPECT_EQ(back->kernel_cursor, "kmsg:42");

    auto none = PrologBaselineFromJson(PrologBaselineToJson(PrologBaseline{}, nullptr));
    ASSERT_TRUE(none) << none.error();
    EXPECT_FALSE(none->snapshot);

    j["version"] = 2;
    EXPECT_THAT(PrologBaselineFromJson(j.dump()).error(),
                HasSubstr("prolog baseline: version 2 is not read: this autoheal reads version 1"));
    j["version"] = 1;
    j["kernel_cursor"] = 7;
    EXPECT_THAT(PrologBaselineFromJson(j.dump()).error(), HasSubstr("kernel_cursor is not text"));
    j["kernel_cursor"] = "kmsg:1";
    j["snapshot"] = "none";
    EXPECT_THAT(PrologBaselineFromJson(j.dump()).error(), HasSubstr("not an NVML snapshot"));
}

TEST(DecisionRecord, CarriesAVersionAndRefusesNewerOnes) {
    DecisionRecord d;
    d.explanation = "autoheal: requeued 1/3 after faulty_gpu on node2";
    d.cause = "faulty_gpu";
    d.facts.nodes = {"node1", "node2"};
    auto j = nlohmann::json::parse(DecisionRecordToJson(d));
    EXPECT_EQ(j["version"], kDecisionRecordVersion);
    auto back = DecisionRecordFromJson(j.dump());
    ASSERT_TRUE(back) << back.error();
    EXPECT_EQ(back->explanation, d.explanation);
    EXPECT_EQ(back->facts.nodes, d.facts.nodes);
    j.erase("version");  // written before versions: version 1
    EXPECT_TRUE(DecisionRecordFromJson(j.dump()));
    j["version"] = 2;
    EXPECT_THAT(DecisionRecordFromJson(j.dump()).error(),
                HasSubstr("decision record: version 2 is not read: this autoheal reads version 1"));
}

// What root writes under state_dir/jobs goes to the owner of jobs/ (SlurmUser in production), so
// that EpilogSlurmctld can read the reports and write its decision beside them.
TEST(WriteJobRecord, RootGivesTheFileAndNewFoldersToTheOwnerOfJobs) {
    if (::geteuid() != 0) GTEST_SKIP() << "needs root to give files away";
    const std::string state = ::testing::TempDir() + "/job-records-owner";
    std::filesystem::remove_all(state);
    std::filesystem::create_directories(state + "/jobs");
    constexpr uid_t kSlurm = 64123;
    constexpr gid_t kSlurmGroup = 64124;
    ASSERT_EQ(::chown((state + "/jobs").c_str(), kSlurm, kSlurmGroup), 0);
    const std::string path = EpilogFile(state, "41", 0, "node1");
    ASSERT_TRUE(WriteJobRecord(state, path, "{}", 0640));
    for (const std::string& p : {JobDir(state, "41"), JobDir(state, "41") + "/run0", path}) {
        struct stat st {};
        ASSERT_EQ(::stat(p.c_str(), &st), 0) << p;
        EXPECT_EQ(st.st_uid, kSlurm) << p;
        EXPECT_EQ(st.st_gid, kSlurmGroup) << p;
    }
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_mode & 07777, 0640u);
    std::filesystem::remove_all(state);
}

// A jobs/ folder of root's (a single-machine install) keeps everything root's.
TEST(WriteJobRecord, ARootOwnedJobsFolderKeepsTheWritersOwnership) {
    const std::string state = ::testing::TempDir() + "/job-records-own";
    std::filesystem::remove_all(state);
    std::filesystem::create_directories(state + "/jobs");
    const std::string path = DecisionFile(state, "42", 1);
    ASSERT_TRUE(WriteJobRecord(state, path, "{}", 0644));
    struct stat st {};
    ASSERT_EQ(::stat(path.c_str(), &st), 0);
    EXPECT_EQ(st.st_uid, ::geteuid());
    EXPECT_EQ(st.st_mode & 07777, 0644u);
    std::filesystem::remove_all(state);
}

// Retention: folders last changed before the cut are removed, a bounded number per call; the
// current job's, younger ones, links and files are kept.
TEST(CleanOldJobRecords, RemovesOnlyOldJobFoldersBounded) {
    const std::string state = ::testing::TempDir() + "/job-records-clean";
    std::filesystem::remove_all(state);
    const std::int64_t cut = 1'800'000'000;
    auto folder = [&](const std::string& job, std::int64_t mtime) {
        ASSERT_TRUE(WriteJobRecord(state, DecisionFile(state, job, 0), "{}", 0644));
        const timespec times[2] = {{mtime, 0}, {mtime, 0}};
        ASSERT_EQ(::utimensat(AT_FDCWD, JobDir(state, job).c_str(), times, 0), 0);
    };
    folder("10", cut - 86400);
    folder("11", cut - 86400);
    folder("12", cut - 86400);
    folder("20", cut + 5);       // younger than the cut
    folder("30", cut - 999999);  // the job this run is for
    std::filesystem::create_directory_symlink(JobDir(state, "10"), JobDir(state, "40"));
    std::ofstream(JobDir(state, "50")) << "x";
    const timespec old[2] = {{cut - 86400, 0}, {cut - 86400, 0}};
    ASSERT_EQ(::utimensat(AT_FDCWD, JobDir(state, "50").c_str(), old, AT_SYMLINK_NOFOLLOW), 0);

    auto first = CleanOldJobRecords(state, cut, "30", 2);
    ASSERT_TRUE(first) << first.error();
    EXPECT_EQ(*first, 2);  // bounded: one of 10-12 is left for the next run
    auto second = CleanOldJobRecords(state, cut, "30", 2);
    ASSERT_TRUE(second);
    EXPECT_EQ(*second, 1);
    for (const char* gone : {"10", "11", "12"}) {
        EXPECT_FALSE(std::filesystem::exists(JobDir(state, gone))) << gone;
    }
    EXPECT_TRUE(std::filesystem::exists(JobDir(state, "20")));
    EXPECT_TRUE(std::filesystem::exists(JobDir(state, "30")));
    EXPECT_TRUE(std::filesystem::is_symlink(JobDir(state, "40")));
    EXPECT_TRUE(std::filesystem::exists(JobDir(state, "50")));
    EXPECT_EQ(*CleanOldJobRecords(state + "/none", cut, "30"), 0);  // no jobs/ yet
    std::filesystem::remove_all(state);
}

}  // namespace
}  // namespace autoheal::remediation
