#include "autoheal/core/checkpoint.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>

namespace autoheal {
namespace {

namespace fs = std::filesystem;
using ::testing::AllOf;
using ::testing::Contains;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// A fresh directory tree per test; files get explicit mtimes so that ordering by time does not
// depend on how fast the test runs.
class CheckpointTest : public ::testing::Test {
  protected:
    void SetUp() override {
        std::string tmpl = (fs::temp_directory_path() / "autoheal-ckpt-XXXXXX").string();
        ASSERT_NE(mkdtemp(tmpl.data()), nullptr);
        base_ = tmpl;
        root_ = base_ / "ckpt";
        fs::create_directory(root_);
    }

    void TearDown() override {
        std::error_code ec;
        fs::permissions(root_ / "locked", fs::perms::owner_all, ec);
        fs::remove_all(base_, ec);
    }

    // Writes root/rel (creating parents) with `content` and an mtime of `t` seconds after a fixed
    // epoch.
    fs::path File(const fs::path& rel, const std::string& content = "x", int t = 0) {
        fs::path p = root_ / rel;
        fs::create_directories(p.parent_path());
        std::ofstream(p, std::ios::binary) << content;
        SetTime(p, t);
        return p;
    }

    fs::path Dir(const fs::path& rel) {
        fs::create_directories(root_ / rel);
        return root_ / rel;
    }

    static void SetTime(const fs::path& p, int t) {
        auto sys = std::chrono::sys_seconds(std::chrono::seconds(kEpoch + t));
        fs::last_write_time(p, std::chrono::file_clock::from_sys(sys));
    }

    // A complete PyTorch DCP save in root/rel.
    void Dcp(const fs::path& rel, int t = 0) {
        File(rel / "__0_0.distcp", "shard", t);
        File(rel / "__1_0.distcp", "shard", t);
        File(rel / ".metadata", "meta", t);
    }

    CheckpointSearch Find(const CheckpointLimits& limits = {}) {
        return FindNewestCheckpoint(root_.string(), limits);
    }

    std::string Path(const fs::path& rel) const { return (root_ / rel).string(); }

    static constexpr std::int64_t kEpoch = 1'700'000'000;
    fs::path base_;
    fs::path root_;
};

TEST(StepFromName, ReadsTheUsualNames) {
    EXPECT_EQ(StepFromName("step_1200"), 1200);
    EXPECT_EQ(StepFromName("global_step1200"), 1200);
    EXPECT_EQ(StepFromName("checkpoint-1200"), 1200);
    EXPECT_EQ(StepFromName("iter_0001200"), 1200);
    EXPECT_EQ(StepFromName("iteration-7"), 7);
    EXPECT_EQ(StepFromName("epoch=3-step=1200.ckpt"), 1200);
    EXPECT_EQ(StepFromName("Step-5"), 5);
    EXPECT_EQ(StepFromName("1200"), 1200);
    EXPECT_EQ(StepFromName("run1-step_10-step_20"), 20);
}

TEST(StepFromName, UnknownIsMinusOne) {
    EXPECT_EQ(StepFromName(""), -1);
    EXPECT_EQ(StepFromName("last.ckpt"), -1);
    EXPECT_EQ(StepFromName("pytorch_model_fsdp_0"), -1);
    EXPECT_EQ(StepFromName("timestep_5"), -1);  // "step" inside a word
    EXPECT_EQ(StepFromName("step_"), -1);
    EXPECT_EQ(StepFromName("epoch=3"), -1);
    EXPECT_EQ(StepFromName("step_99999999999999999999999"), -1);  // does not fit
}

TEST_F(CheckpointTest, TorchDcpComplete) {
    Dcp("step_1000", 10);
    Dcp("step_1200", 20);
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("step_1200"));
    EXPECT_EQ(found.newest->format, kCkptFormatTorchDcp);
    EXPECT_EQ(found.newest->step, 1200);
    EXPECT_EQ(found.newest->mtime, kEpoch + 20);
    EXPECT_THAT(found.skipped, IsEmpty());
}

TEST_F(CheckpointTest, TorchDcpWithoutMetadataIsIncomplete) {
    Dcp("step_1200");
    File("step_1300/__0_0.distcp");
    File("step_1400/__0_0.distcp");
    File("step_1400/.metadata", "");  // empty key file
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->step, 1200);
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("step_1300") + ": "),
                                              HasSubstr("without .metadata"))));
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("step_1400") + ": "),
                                              HasSubstr(".metadata is empty"))));
}

TEST_F(CheckpointTest, MegatronFollowsTracker) {
    File("iter_0001000/mp_rank_00/model_optim_rng.pt");
    File("iter_0001200/mp_rank_00/model_optim_rng.pt");
    File("latest_checkpointed_iteration.txt", "1200\n", 30);
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("iter_0001200"));
    EXPECT_EQ(found.newest->format, kCkptFormatMegatron);
    EXPECT_EQ(found.newest->step, 1200);
    EXPECT_EQ(found.newest->mtime, kEpoch + 30);
}

TEST_F(CheckpointTest, MegatronLongIterationAndRelease) {
    File("iter_12345678/mp_rank_00/model_optim_rng.pt");
    File("latest_checkpointed_iteration.txt", "12345678");
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("iter_12345678"));

    fs::remove_all(root_);
    File("release/mp_rank_00/model_optim_rng.pt");
    File("latest_checkpointed_iteration.txt", "release");
    found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("release"));
    EXPECT_EQ(found.newest->step, 0);
}

TEST_F(CheckpointTest, MegatronTrackerToMissingDirIsSkippedThenOtherFormatsCount) {
    File("iter_0001000/mp_rank_00/model_optim_rng.pt");  // no fallback to older iter_ dirs
    File("latest_checkpointed_iteration.txt", "1200");
    Dcp("dcp/step_900");
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("dcp/step_900"));
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("iter_0001200") + ": "),
                                              HasSubstr("does not exist"))));
}

TEST_F(CheckpointTest, MegatronTrackerToEmptyDirOrGarbage) {
    Dir("iter_0001200");
    File("latest_checkpointed_iteration.txt", "1200");
    auto found = Find();
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped,
                Contains(AllOf(HasSubstr(Path("iter_0001200") + ": "), HasSubstr("is empty"))));

    File("latest_checkpointed_iteration.txt", "../../etc");
    found = Find();
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped, Contains(HasSubstr("not an iteration number")));

    File("latest_checkpointed_iteration.txt", "");
    found = Find();
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped, Contains(HasSubstr("tracker file is empty")));
}

TEST_F(CheckpointTest, MegatronTorchDistBeyondTrackerIsNotFinalised) {
    Dcp("iter_0001200", 10);
    Dcp("iter_0001300", 20);  // .metadata written, tracker not yet updated
    File("latest_checkpointed_iteration.txt", "1200", 15);
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("iter_0001200"));
    EXPECT_EQ(found.newest->format, kCkptFormatMegatron);
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("iter_0001300") + ": "),
                                              HasSubstr("not finalised"))));
}

TEST_F(CheckpointTest, DeepSpeedFollowsLatest) {
    File("global_step1000/mp_rank_00_model_states.pt");
    File("global_step1200/mp_rank_00_model_states.pt");
    File("global_step1200/zero_pp_rank_0_mp_rank_00_optim_states.pt");
    File("latest", "global_step1200\n", 40);
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("global_step1200"));
    EXPECT_EQ(found.newest->format, kCkptFormatDeepSpeed);
    EXPECT_EQ(found.newest->step, 1200);
    EXPECT_EQ(found.newest->mtime, kEpoch + 40);
}

TEST_F(CheckpointTest, DeepSpeedIncompleteVariants) {
    File("global_step1200/mp_rank_00_model_states.pt", "");  // empty model states
    File("latest", "global_step1200");
    auto found = Find();
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("global_step1200") + ": "),
                                              HasSubstr("mp_rank_00_model_states.pt is empty"))));

    fs::remove(root_ / "global_step1200/mp_rank_00_model_states.pt");
    File("global_step1200/zero_pp_rank_0_mp_rank_00_optim_states.pt");
    found = Find();
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped, Contains(HasSubstr("no *model_states.pt file")));

    File("latest", "../outside");  // a tag never leaves the tracker's directory
    found = Find();
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped, Contains(HasSubstr("not a checkpoint tag")));
}

TEST_F(CheckpointTest, LightningLastAndStepFiles) {
    File("checkpoints/last.ckpt", "weights", 50);
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("checkpoints/last.ckpt"));
    EXPECT_EQ(found.newest->format, kCkptFormatLightning);
    EXPECT_EQ(found.newest->step, -1);

    // last.ckpt takes the step of the siblings saved before it.
    File("checkpoints/epoch=1-step=500.ckpt", "weights", 10);
    File("checkpoints/epoch=2-step=1000.ckpt", "weights", 20);
    File("checkpoints/epoch=3-step=1500.ckpt", "weights", 60);  // newer than last.ckpt
    found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("checkpoints/epoch=3-step=1500.ckpt"));
    EXPECT_EQ(found.newest->step, 1500);

    fs::remove(root_ / "checkpoints/epoch=3-step=1500.ckpt");
    found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("checkpoints/last.ckpt"));
    EXPECT_EQ(found.newest->step, 1000);

    File("checkpoints/last.ckpt", "", 70);  // empty: a save that did not finish
    found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("checkpoints/epoch=2-step=1000.ckpt"));
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("checkpoints/last.ckpt") + ": "),
                                              HasSubstr("empty checkpoint file"))));
}

TEST_F(CheckpointTest, LightningIgnoresCkptWithoutStep) {
    File("best.ckpt");
    File("epoch=3.ckpt");
    EXPECT_FALSE(Find().newest);
}

TEST_F(CheckpointTest, HfTrainerNeedsTrainerState) {
    File("checkpoint-500/model.safetensors");
    File("checkpoint-500/trainer_state.json", "{}", 10);
    File("checkpoint-1000/model.safetensors", "x", 20);  // save in progress
    File("checkpoint-1100/model.safetensors");
    File("checkpoint-1100/trainer_state.json", "");
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("checkpoint-500"));
    EXPECT_EQ(found.newest->format, kCkptFormatHfTrainer);
    EXPECT_EQ(found.newest->step, 500);
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("checkpoint-1000") + ": "),
                                              HasSubstr("no trainer_state.json"))));
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("checkpoint-1100") + ": "),
                                              HasSubstr("trainer_state.json is empty"))));
}

TEST_F(CheckpointTest, HfTrainerOwnsWhatIsInside) {
    // HF + DeepSpeed: the DeepSpeed save inside is part of checkpoint-1000.
    File("checkpoint-1000/global_step1000/mp_rank_00_model_states.pt");
    File("checkpoint-1000/latest", "global_step1000");
    File("checkpoint-1000/trainer_state.json", "{}");
    // HF + FSDP, save in progress: the finished DCP part inside must not be chosen.
    Dcp("checkpoint-2000/pytorch_model_fsdp_0", 99);
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("checkpoint-1000"));
    EXPECT_EQ(found.newest->format, kCkptFormatHfTrainer);
    EXPECT_THAT(found.skipped, Contains(HasSubstr(Path("checkpoint-2000") + ": ")));
}

TEST_F(CheckpointTest, GenericMarker) {
    File("save_7/model.bin");
    File("save_7/.autoheal_complete", "", 10);  // an empty marker is fine
    File("save_8/model.bin");
    File("save_8/COMPLETE", "", 20);
    File("save_9/model.bin");  // no marker: not a checkpoint at all
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("save_8"));
    EXPECT_EQ(found.newest->format, kCkptFormatGeneric);
    EXPECT_EQ(found.newest->step, -1);  // "save_" is not a step word
    EXPECT_EQ(found.newest->mtime, kEpoch + 20);

    File("step_3/COMPLETE", "", 20);
    found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("step_3"));  // same time: the known step wins
    SetTime(root_ / "step_3/COMPLETE", 19);
    found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("save_8"));  // a later save with no step wins
}

TEST_F(CheckpointTest, MarkerDoesNotOverrideAnUnfinishedDcpSave) {
    Dcp("step_100");
    File("step_200/__0_0.distcp");
    File("step_200/COMPLETE");
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("step_100"));
    EXPECT_THAT(found.skipped, Contains(HasSubstr(Path("step_200") + ": ")));
}

TEST_F(CheckpointTest, MixedFormatsHighestStepWins) {
    Dcp("dcp/step_1000", 50);
    File("hf/checkpoint-1500/trainer_state.json", "{}", 10);
    File("lightning/epoch=9-step=1200.ckpt", "w", 60);
    File("ds/global_step1400/mp_rank_00_model_states.pt");
    File("ds/latest", "global_step1400", 70);
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("hf/checkpoint-1500"));
    EXPECT_EQ(found.newest->step, 1500);
}

TEST_F(CheckpointTest, UnknownStepComparedByTime) {
    Dcp("step_100", 10);
    File("last.ckpt", "w", 20);
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("last.ckpt"));

    SetTime(root_ / "last.ckpt", 10);  // same time: the known step wins
    found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("step_100"));
}

TEST_F(CheckpointTest, EqualStepsBrokenByTime) {
    Dcp("a/step_100", 20);
    Dcp("b/step_100", 10);
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("a/step_100"));
    SetTime(root_ / "b/step_100/.metadata", 30);
    found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("b/step_100"));
}

TEST_F(CheckpointTest, SymlinksAreNeverFollowed) {
    Dcp("step_100");
    // A newer checkpoint outside ckpt_dir, linked in as a directory...
    fs::path outside = base_ / "outside";
    fs::create_directories(outside / "step_9999");
    for (const char* f : {"__0_0.distcp", ".metadata"}) {
        std::ofstream(outside / "step_9999" / f) << "x";
    }
    fs::create_directory_symlink(outside / "step_9999", root_ / "step_9999");
    fs::create_directory_symlink(outside, root_ / "more");
    // ...a key file that is a link does not count...
    File("step_200/__0_0.distcp");
    fs::create_symlink(outside / "step_9999/.metadata", root_ / "step_200/.metadata");
    // ...nor does a tracker that is a link, nor a target directory that is a link.
    std::ofstream(outside / "tracker") << "9999";
    fs::create_symlink(outside / "tracker", root_ / "latest_checkpointed_iteration.txt");
    File("ds/latest", "global_step9999");
    fs::create_directory_symlink(outside / "step_9999", root_ / "ds/global_step9999");

    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, Path("step_100"));
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("step_200") + ": "),
                                              HasSubstr("without .metadata"))));
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("ds/global_step9999") + ": "),
                                              HasSubstr("symbolic link"))));
}

TEST_F(CheckpointTest, RootMayBeALink) {
    Dcp("step_5");
    fs::create_directory_symlink(root_, base_ / "link");
    auto found = FindNewestCheckpoint((base_ / "link/").string());
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, (base_ / "link/step_5").string());
}

TEST_F(CheckpointTest, RootItselfCanBeTheCheckpoint) {
    Dcp("");
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->path, root_.string());
    EXPECT_EQ(found.newest->format, kCkptFormatTorchDcp);
}

TEST_F(CheckpointTest, DepthLimit) {
    Dcp("a/b/step_3");    // its directory is at depth 3: read by default
    Dcp("a/b/c/step_4");  // depth 4: not read by default
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->step, 3);

    found = Find({.max_depth = 4});
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->step, 4);

    found = Find({.max_depth = 2});
    EXPECT_FALSE(found.newest);
}

TEST_F(CheckpointTest, EntryBudgetReadsNewestFirst) {
    for (int i = 1; i <= 20; ++i) Dcp("step_" + std::to_string(i));
    // 20 root entries + 3 for step_20, then the budget is spent.
    auto found = Find({.max_entries = 23});
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->step, 20);
    EXPECT_THAT(found.skipped, Contains(HasSubstr("search stopped after 23")));

    found = Find({.max_entries = 10});  // not even the root could be read in full
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped, Contains(HasSubstr("search stopped after 10")));
}

TEST_F(CheckpointTest, EmptyMissingAndNotADirectory) {
    auto found = Find();
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped, IsEmpty());

    found = FindNewestCheckpoint((base_ / "nope").string());
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped, Contains(HasSubstr("no such directory")));

    found = FindNewestCheckpoint(File("plain").string());
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped, Contains(HasSubstr("not a directory")));

    found = FindNewestCheckpoint("");
    EXPECT_FALSE(found.newest);
    EXPECT_THAT(found.skipped, Contains(HasSubstr("no checkpoint directory given")));
}

TEST_F(CheckpointTest, UnreadableDirectoryIsReported) {
    if (geteuid() == 0) GTEST_SKIP() << "root reads any directory";
    Dcp("step_1");
    Dcp("locked/step_2");
    fs::permissions(root_ / "locked", fs::perms::none);
    auto found = Find();
    ASSERT_TRUE(found.newest);
    EXPECT_EQ(found.newest->step, 1);
    EXPECT_THAT(found.skipped, Contains(AllOf(HasSubstr(Path("locked") + ": "),
                                              HasSubstr("cannot read directory"))));
}

}  // namespace
}  // namespace autoheal
