#include "autoheal/core/submit_policy.h"

#include <gtest/gtest.h>

namespace autoheal {
namespace {

TEST(DecideOnSubmit, AutoResumeForcesRequeue) {
    auto d = DecideOnSubmit(JobOptions{.auto_resume = 2});
    EXPECT_TRUE(d.force_requeue);
    EXPECT_EQ(d.note, "auto_resume=2: requeue=1");
}

TEST(DecideOnSubmit, OtherJobsAreLeftAlone) {
    auto d = DecideOnSubmit(JobOptions{.ckpt_dir = "/x", .health_check = HealthTier::kFull});
    EXPECT_FALSE(d.force_requeue);
    EXPECT_TRUE(d.note.empty());
}

}  // namespace
}  // namespace autoheal
