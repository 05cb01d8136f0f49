// End-to-end checks of the foundation on the real local cluster: options registered with
// sbatch, bad values refused at submit, job_submit forcing requeue, and the options reaching
// the prolog, the epilog and EpilogSlurmctld.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <pwd.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <thread>

#include "cluster_client.h"

namespace autoheal::testing {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

const char* kQuickScript =
    "#!/bin/bash\necho running on $(hostname)\nenv | grep AUTOHEAL || true\n";

// Lines of the autoheal log that mention this job in one area ("prolog", "epilog-ctld", ...).
std::vector<std::string> LogLines(const std::string& area, const std::string& job_id) {
    std::vector<std::string> lines;
    std::istringstream in(AutohealLog());
    std::string line;
    const std::string want_area = "autoheal: " + area + ": job seen: job=" + job_id + " ";
    while (std::getline(in, line)) {
        if (line.find(want_area) != std::string::npos) lines.push_back(line);
    }
    return lines;
}

TEST(Options, SbatchHelpListsThem) {
    CommandResult r = RunCommand({"sbatch", "--help"});
    ASSERT_EQ(r.exit_code, 0) << r.err;
    EXPECT_THAT(r.out, HasSubstr("--auto-resume=N"));
    EXPECT_THAT(r.out, HasSubstr("--ckpt-dir=DIR"));
    EXPECT_THAT(r.out, HasSubstr("--health-check=quick|full|off"));
    EXPECT_THAT(r.out, HasSubstr("--hang-timeout=DURATION|off"));
    EXPECT_THAT(r.out, HasSubstr("--flight-recorder=on|off"));
    EXPECT_THAT(r.out, HasSubstr("[autoheal]"));
}

TEST(Options, BadHealthCheckIsRefusedWithAllowedValues) {
    CommandResult r;
    auto id = Submit({"--health-check=fast"}, kQuickScript, &r);
    EXPECT_FALSE(id.has_value()) << "job " << r.out << " was accepted";
    EXPECT_NE(r.exit_code, 0);
    EXPECT_THAT(r.err, HasSubstr("--health-check: invalid value 'fast'"));
    EXPECT_THAT(r.err, HasSubstr("allowed values are quick, full, off"));
}

TEST(Options, BadAutoResumeIsRefusedWithRange) {
    for (const char* bad : {"--auto-resume=0", "--auto-resume=many", "--auto-resume=11"}) {
        CommandResult r;
        auto id = Submit({bad}, kQuickScript, &r);
        EXPECT_FALSE(id.has_value()) << bad;
        EXPECT_THAT(r.err, HasSubstr("--auto-resume")) << bad;
        EXPECT_THAT(r.err, HasSubstr("from 1 to 10")) << bad;
    }
}

TEST(Options, BadHangTimeoutIsRefusedNamingTheOption) {
    for (const char* bad : {"--hang-timeout=soon", "--hang-timeout=31d", "--hang-timeout=1h30m"}) {
        CommandResult r;
        auto id = Submit({bad}, kQuickScript, &r);
        EXPECT_FALSE(id.has_value()) << bad;
        EXPECT_THAT(r.err, HasSubstr("--hang-timeout: ")) << bad;
        EXPECT_THAT(r.err, HasSubstr("1s to 30d")) << bad;
    }
}

TEST(Options, BadFlightRecorderIsRefusedNamingTheOption) {
    CommandResult r;
    EXPECT_FALSE(Submit({"--flight-recorder=yes"}, kQuickScript, &r).has_value());
    EXPECT_THAT(r.err, HasSubstr("--flight-recorder: invalid value 'yes'"));
    EXPECT_THAT(r.err, HasSubstr("allowed values are on, off"));
}

TEST(Options, EmptyCheckpointDirIsRefused) {
    CommandResult r;
    EXPECT_FALSE(Submit({"--ckpt-dir="}, kQuickScript, &r).has_value());
    EXPECT_THAT(r.err, HasSubstr("--ckpt-dir"));
}

// Hostile values: shell metacharacters, newlines, very long strings, bytes that are not UTF-8.
// Each is refused by sbatch with a message naming the option, and no job is created.
TEST(Options, HostileValuesAreRefusedAndNoJobIsCreated) {
    auto queued = [] { return RunCommand({"squeue", "-h", "-o", "%i"}).out; };
    const std::string before = queued();
    const std::vector<std::pair<std::string, std::string>> cases = {
        {"--health-check=quick;reboot", "--health-check"},
        {"--health-check=$(reboot)", "--health-check"},
        {"--auto-resume=3`id`", "--auto-resume"},
        {"--auto-resume=3\nrm -rf /", "--auto-resume"},
        {"--ckpt-dir=/scratch/run\n/etc", "--ckpt-dir"},
        {"--ckpt-dir=/scratch/" + std::string(5000, 'a'), "--ckpt-dir"},
        {"--ckpt-dir=/scratch/run\xff\xfe", "--ckpt-dir"},
    };
    for (const auto& [arg, option] : cases) {
        CommandResult r;
        auto id = Submit({arg}, kQuickScript, &r);
        EXPECT_FALSE(id.has_value()) << arg << ": job " << r.out << " was accepted";
        EXPECT_NE(r.exit_code, 0) << arg;
        EXPECT_THAT(r.err, HasSubstr(option)) << arg;
    }
    EXPECT_EQ(queued(), before);
}

// The short form of the load bench (bench/submit_bench.sh submits 1,000): 200 jobs with
// autoheal's options in a burst from 4 concurrent submitters, through the job_submit and SPANK
// plugins: every one accepted and queued with the plugin's change, and slurmctld still answers.
TEST(JobSubmit, BurstOfJobsThroughThePluginsAllAccepted) {
    constexpr int kSubmitters = 4;
    constexpr int kEach = 50;
    std::vector<std::vector<std::string>> ids(kSubmitters);
    std::vector<int> failures(kSubmitters, 0);
    std::vector<std::thread> threads;
    threads.reserve(kSubmitters);
    for (int t = 0; t < kSubmitters; ++t) {
        threads.emplace_back([&, t] {
            for (int i = 0; i < kEach; ++i) {
                auto r = RunAsUser(t % 2 == 0 ? kJobUser : kOtherJobUser,
                                   {"sbatch", "--parsable", "--hold", "--no-requeue",
                                    "--auto-resume=3", "--ckpt-dir=/tmp/burst-ckpt",
                                    "--health-check=quick", "-o", "/dev/null", "--wrap", "true"});
                if (r.exit_code == 0) {
                    ids[t].push_back(r.out.substr(0, r.out.find_first_of(";\n")));
                } else {
                    ++failures[t];
                }
            }
        });
    }
    for (auto& th : threads) th.join();
    std::vector<std::string> all;
    for (const auto& v : ids) all.insert(all.end(), v.begin(), v.end());
    for (int t = 0; t < kSubmitters; ++t) EXPECT_EQ(failures[t], 0) << "submitter " << t;
    EXPECT_EQ(all.size(), static_cast<std::size_t>(kSubmitters * kEach));
    const std::string queued = RunCommand({"squeue", "-h", "-t", "PD", "-o", "%i"}).out;
    int found = 0;
    for (const std::string& id : all) found += queued.find(id + "\n") != std::string::npos ? 1 : 0;
    EXPECT_EQ(found, kSubmitters * kEach);
    if (!all.empty()) {
        EXPECT_EQ(ShowJob(all.back())["Requeue"], "1");
    }
    EXPECT_THAT(RunCommand({"scontrol", "ping"}).out, HasSubstr("is UP"));
    std::vector<std::string> cancel = {"scancel"};
    cancel.insert(cancel.end(), all.begin(), all.end());
    RunCommand(cancel);
    EXPECT_TRUE(WaitUntil([&] {
        return RunCommand({"squeue", "-h", "-t", "PD", "-o", "%i"}).out.empty();
    }));
}

TEST(JobSubmit, AutoResumeJobGetsRequeueAndRunsOnTwoNodes) {
    CommandResult r;
    auto id = Submit({"-N", "2", "--gpus-per-node=2", "--no-requeue", "--auto-resume=2",
                      "--ckpt-dir=ckpt", "--health-check=full"},
                     kQuickScript, &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    EXPECT_EQ(ShowJob(*id)["Requeue"], "1") << "job_submit did not force requeue";
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); })) << ShowJob(*id)["JobState"];
    auto job = ShowJob(*id);
    EXPECT_EQ(job["JobState"], "COMPLETED");
    EXPECT_EQ(job["NumNodes"], "2");
    EXPECT_EQ(job["Requeue"], "1");

    // The batch step sees the recorded options too (Slurm adds SLURM_SPANK_).
    std::ifstream out(ClusterDir() + "/state/slurm-" + *id + ".out");
    std::stringstream ss;
    ss << out.rdbuf();
    EXPECT_THAT(ss.str(), HasSubstr("SLURM_SPANK_AUTOHEAL_AUTO_RESUME=2"));
    EXPECT_THAT(ss.str(),
                HasSubstr("SLURM_SPANK_AUTOHEAL_CKPT_DIR=" + ClusterDir() + "/state/ckpt"));
}

// Issue 12 point 8: variables a user passes that look like autoheal's (the records' names of
// earlier versions, the names job scripts see) are not options: the job is not made
// auto-resume, and neither its script nor the epilogs see them as recorded values.
TEST(JobSubmit, ForgedSpankVariablesAreNotOptions) {
    CommandResult r;
    auto id =
        Submit({"--no-requeue",
                "--export=ALL,SPANK_AUTOHEAL_AUTO_RESUME=99,SLURM_SPANK_AUTOHEAL_AUTO_RESUME=99,"
                "SLURM_SPANK_AUTOHEAL_HEALTH_CHECK=off,AUTOHEAL_AUTO_RESUME=99"},
               kQuickScript, &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    EXPECT_EQ(ShowJob(*id)["Requeue"], "0");
    ASSERT_TRUE(WaitUntil([&] { return !LogLines("epilog-ctld", *id).empty(); })) << AutohealLog();
    EXPECT_THAT(LogLines("epilog-ctld", *id)[0], HasSubstr("auto_resume=off"));
    std::ifstream out(ClusterDir() + "/state/slurm-" + *id + ".out");
    std::stringstream ss;
    ss << out.rdbuf();
    EXPECT_THAT(ss.str(), HasSubstr("running on"));
    // Lines of `env` (SLURM_EXPORT_ENV quotes the forged ones inside its value).
    EXPECT_THAT(ss.str(), Not(HasSubstr("\nSLURM_SPANK_AUTOHEAL_AUTO_RESUME=")));
    EXPECT_THAT(ss.str(), Not(HasSubstr("\nSLURM_SPANK_AUTOHEAL_HEALTH_CHECK=")));
}

// Issue 17 point 1: PyTorch's flight recorder is the job's choice (--flight-recorder=on|off),
// else the site's default (on for --auto-resume jobs). The batch step's environment shows it.
TEST(JobSubmit, FlightRecorderFollowsTheJobsChoiceThenTheSitesDefault) {
    const char* script = "#!/bin/bash\nenv | grep -E '^(TORCH_|SLURM_SPANK_AUTOHEAL_)' || true\n";
    auto output_of = [&](const std::vector<std::string>& args) {
        CommandResult r;
        auto id = Submit(args, script, &r);
        EXPECT_TRUE(id.has_value()) << r.err;
        if (!id) return std::string();
        EXPECT_TRUE(WaitUntil([&] { return JobFinished(*id); })) << ShowJob(*id)["JobState"];
        return "\n" + ReadFile(ClusterDir() + "/state/slurm-" + *id + ".out");
    };
    const std::string on = output_of({"--flight-recorder=on"});
    EXPECT_THAT(on, HasSubstr("\nSLURM_SPANK_AUTOHEAL_FLIGHT_RECORDER=on"));
    EXPECT_THAT(on, HasSubstr("\nTORCH_NCCL_TRACE_BUFFER_SIZE=2000"));
    EXPECT_THAT(on, HasSubstr("\nTORCH_NCCL_DEBUG_INFO_TEMP_FILE=" + ClusterDir() +
                              "/state/autoheal/jobs/"));
    const std::string resume = output_of({"--auto-resume"});
    EXPECT_THAT(resume, HasSubstr("\nTORCH_NCCL_DUMP_ON_TIMEOUT=1"));
    const std::string resume_off = output_of({"--auto-resume", "--flight-recorder=off"});
    EXPECT_THAT(resume_off, HasSubstr("\nSLURM_SPANK_AUTOHEAL_FLIGHT_RECORDER=off"));
    EXPECT_THAT(resume_off, Not(HasSubstr("\nTORCH_")));
    EXPECT_THAT(output_of({}), Not(HasSubstr("\nTORCH_")));
}

TEST(JobSubmit, JobWithoutAutoResumeIsLeftAlone) {
    CommandResult r;
    auto id = Submit({"--no-requeue"}, kQuickScript, &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    EXPECT_EQ(ShowJob(*id)["Requeue"], "0");
    ASSERT_TRUE(WaitUntil([&] { return JobFinished(*id); }));
    EXPECT_EQ(ShowJob(*id)["JobState"], "COMPLETED");
}

TEST(Scripts, OptionsReachPrologEpilogAndEpilogSlurmctld) {
    CommandResult r;
    auto id = Submit({"-N", "2", "--gpus-per-node=1", "--auto-resume", "--ckpt-dir=/scratch/run 7",
                      "--health-check=quick"},
                     kQuickScript, &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return !LogLines("epilog-ctld", *id).empty(); })) << AutohealLog();
    ASSERT_TRUE(WaitUntil([&] { return LogLines("epilog", *id).size() == 2; })) << AutohealLog();

    const std::string options = "auto_resume=3 ckpt_dir=\"/scratch/run 7\" health_check=quick";
    auto prologs = LogLines("prolog", *id);
    ASSERT_EQ(prologs.size(), 2u) << AutohealLog();
    std::set<std::string> nodes;
    for (const std::string& line : prologs) {
        EXPECT_THAT(line, HasSubstr(options));
        EXPECT_THAT(line, HasSubstr("gpus=0"));  // one fake GPU requested per node
        std::smatch m;
        ASSERT_TRUE(std::regex_search(line, m, std::regex(" node=(node[0-9]+) ")));
        nodes.insert(m[1]);
    }
    EXPECT_EQ(nodes.size(), 2u) << "prolog should run on each allocated node";
    for (const std::string& line : LogLines("epilog", *id)) {
        EXPECT_THAT(line, HasSubstr(options));
        EXPECT_THAT(line, HasSubstr("exit_code=0"));
    }
    auto ctld = LogLines("epilog-ctld", *id);
    ASSERT_EQ(ctld.size(), 1u);
    EXPECT_THAT(ctld[0], HasSubstr(options));
    EXPECT_THAT(ctld[0], Not(HasSubstr(" node=")));
}

TEST(Scripts, JobWithoutOptionsShowsDefaults) {
    CommandResult r;
    auto id = Submit({}, kQuickScript, &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return !LogLines("epilog-ctld", *id).empty(); }));
    auto prologs = LogLines("prolog", *id);
    ASSERT_EQ(prologs.size(), 1u);
    EXPECT_THAT(prologs[0], HasSubstr("auto_resume=off ckpt_dir=\"\" health_check=default"));
}

// The hand-off between the nodes and the controller is state_dir/jobs, owned by slurm, 0755
// (docs/admin-guide.md). A job's user can plant nothing there: no folder for a future job id,
// no file in a job's folder or run folder; nor read a node's report. resume.json stays readable.
TEST(HandOff, AnUnprivilegedUserCannotPlantOrReadAReport) {
    const std::string jobs = ClusterDir() + "/state/autoheal/jobs";
    struct stat st {};
    ASSERT_EQ(::stat(jobs.c_str(), &st), 0);
    const struct passwd* slurm = ::getpwnam("slurm");
    ASSERT_NE(slurm, nullptr);
    EXPECT_EQ(st.st_uid, slurm->pw_uid);
    EXPECT_EQ(st.st_mode & 07777, 0755u);
    CommandResult r;
    auto id = Submit({"-N", "1"}, "#!/bin/bash\nexit 1\n", &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    const std::string run0 = jobs + "/" + *id + "/run0";
    ASSERT_TRUE(WaitUntil([&] {
        std::error_code ec;
        for (const auto& e : std::filesystem::directory_iterator(run0, ec)) {
            if (e.path().string().ends_with(".epilog.json")) return true;
        }
        return false;
    })) << run0;
    const std::string future = std::to_string(std::stoul(*id) + 1000);
    for (const auto& argv : std::vector<std::vector<std::string>>{
             {"mkdir", "-p", jobs + "/" + future + "/run0"},
             {"touch", jobs + "/" + *id + "/node1.prolog.json.planted"},
             {"touch", run0 + "/node9.epilog.json"},
             {"cp", "/etc/hostname", run0 + "/decision.json"}}) {
        CommandResult planted = RunAsUser(kJobUser, argv);
        EXPECT_NE(planted.exit_code, 0) << argv.back() << ": " << planted.out;
        EXPECT_THAT(planted.err, HasSubstr("Permission denied")) << argv.back();
    }
    EXPECT_FALSE(std::filesystem::exists(jobs + "/" + future));
    EXPECT_FALSE(std::filesystem::exists(run0 + "/node9.epilog.json"));
    std::string report;
    for (const auto& e : std::filesystem::directory_iterator(run0)) {
        if (e.path().string().ends_with(".epilog.json")) report = e.path().string();
    }
    CommandResult read = RunAsUser(kJobUser, {"cat", report});
    EXPECT_NE(read.exit_code, 0);
    EXPECT_THAT(read.err, HasSubstr("Permission denied"));
}

}  // namespace
}  // namespace autoheal::testing
