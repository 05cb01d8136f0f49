#include "autoheal/core/resume_record.h"

#include <gtest/gtest.h>

namespace autoheal {
namespace {

TEST(ResumeRecord, RoundTrips) {
    ResumeRecord r{2, "faulty_gpu", "autoheal: requeued (2 of 3)", "gpu-node-07"};
    auto back = ResumeRecordFromJson(ResumeRecordToJson(r));
    ASSERT_TRUE(back);
    EXPECT_EQ(back->restart, 2);
    EXPECT_EQ(back->cause, "faulty_gpu");
    EXPECT_EQ(back->explanation, r.explanation);
    EXPECT_EQ(back->excluded, "gpu-node-07");
}

// A restart number outside int's range used to wrap (4294967301 read as 5): it reads as the
// default, like a missing one. Mistyped fields keep their defaults and nothing throws.
TEST(ResumeRecord, OutOfRangeOrMistypedFieldsKeepDefaults) {
    for (const char* text : {R"({"restart": 4294967301})", R"({"restart": -4294967296})",
                             R"({"restart": 18446744073709551615})", R"({"restart": 1.5})",
                             R"({"restart": "3", "cause": 7, "excluded": ["a"]})"}) {
        auto r = ResumeRecordFromJson(text);
        ASSERT_TRUE(r) << text;
        EXPECT_EQ(r->restart, 0) << text;
        EXPECT_EQ(r->cause, "") << text;
        EXPECT_EQ(r->excluded, "") << text;
    }
    EXPECT_EQ(ResumeRecordFromJson(R"({"restart": -3})")->restart, -3);
    EXPECT_FALSE(ResumeRecordFromJson("[1]"));
    EXPECT_FALSE(ResumeRecordFromJson("{\"restart\": 1"));
}

}  // namespace
}  // namespace autoheal
