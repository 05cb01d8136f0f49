// A job's tasks see the newest complete checkpoint in --ckpt-dir, found by the SPANK plugin as
// the job user, on the first run and again after Slurm requeues the job.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "cluster_client.h"

namespace autoheal::testing {
namespace {

using ::testing::HasSubstr;

void Touch(const std::filesystem::path& p, const std::string& content = "x") {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << content;
}

TEST(Resume, TasksGetTheNewestCompleteCheckpointAcrossARequeue) {
    const std::filesystem::path dir = ClusterDir() + "/state/ckpt-resume";
    std::filesystem::remove_all(dir);
    Touch(dir / "step_100/.metadata");
    Touch(dir / "step_100/__0_0.distcp");
    Touch(dir / "step_200/__0_0.distcp");             // no .metadata: the save never finished
    ASSERT_TRUE(GiveToUser(dir.string(), kJobUser));  // the checkpoint folder is the user's
    const std::string out = ClusterDir() + "/state/resume-%j.out";
    CommandResult r;
    auto id = Submit({"-N", "1", "--auto-resume=2", "--ckpt-dir=" + dir.string(),
                      "--open-mode=append", "--output=" + out},
                     "#!/bin/bash\n"
                     "echo \"run restart=$AUTOHEAL_RESTART_COUNT "
                     "resume=$AUTOHEAL_RESUME_CHECKPOINT format=$AUTOHEAL_CHECKPOINT_FORMAT\"\n"
                     "if [ \"$AUTOHEAL_RESTART_COUNT\" = 0 ]; then sleep 60; fi\n",
                     &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    const std::string out_file = ClusterDir() + "/state/resume-" + *id + ".out";
    ASSERT_TRUE(WaitUntil([&] {
        return ReadFile(out_file).find("run restart=0") != std::string::npos;
    })) << ShowJob(*id)["JobState"];
    EXPECT_THAT(
        ReadFile(out_file),
        HasSubstr("run restart=0 resume=" + (dir / "step_100").string() + " format=torch-dcp"));

    // The job saves step 300 completely, then its node fails: Slurm requeues it.
    Touch(dir / "step_300/__0_0.distcp");
    Touch(dir / "step_300/.metadata");
    ASSERT_TRUE(GiveToUser(dir.string(), kJobUser));
    CommandResult requeue = RunCommand({"scontrol", "requeue", *id});
    ASSERT_EQ(requeue.exit_code, 0) << requeue.err;
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "COMPLETED"; },
                          std::chrono::seconds(90)))
        << ShowJob(*id)["JobState"];
    EXPECT_THAT(ReadFile(out_file),
                HasSubstr("run restart=1 resume=" + (dir / "step_300").string()));
    std::filesystem::remove_all(dir);
}

TEST(Resume, NoCheckpointDirectoryMeansNoResumeVariable) {
    const std::string out = ClusterDir() + "/state/resume-none-%j.out";
    CommandResult r;
    auto id = Submit({"--output=" + out},
                     "#!/bin/bash\necho \"resume=[${AUTOHEAL_RESUME_CHECKPOINT-unset}] "
                     "restart=$AUTOHEAL_RESTART_COUNT\"\n",
                     &r);
    ASSERT_TRUE(id.has_value()) << r.err;
    ASSERT_TRUE(WaitUntil([&] { return ShowJob(*id)["JobState"] == "COMPLETED"; }));
    EXPECT_THAT(ReadFile(ClusterDir() + "/state/resume-none-" + *id + ".out"),
                HasSubstr("resume=[unset] restart=0"));
}

}  // namespace
}  // namespace autoheal::testing
