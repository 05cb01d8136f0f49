// The catalog of causes, actions and outcomes (diag/taxonomy.h): words and enums agree, the
// behaviour columns hold what the code relies on, and old spellings still read.
#include <gtest/gtest.h>

#include <set>
#include <string>

#include "autoheal/diag/taxonomy.h"

namespace autoheal::diag {
namespace {

TEST(Catalog, EveryWordParsesBackToItsEntry) {
    std::set<std::string_view> words;
    for (const CauseInfo& c : Causes()) {
        EXPECT_EQ(ParseCause(c.name), c.id) << c.name;
        EXPECT_EQ(ToString(c.id), c.name);
        EXPECT_EQ(&Info(c.id), &c);
        EXPECT_TRUE(words.insert(c.name).second) << "twice: " << c.name;
        EXPECT_FALSE(c.title.empty()) << c.name;
        EXPECT_FALSE(c.summary.empty()) << c.name;
    }
    for (const ActionInfo& a : Actions()) {
        EXPECT_EQ(ParseAction(a.name), a.id) << a.name;
        EXPECT_EQ(ToString(a.id), a.name);
        EXPECT_EQ(FindAction(a.name), &a);
    }
    for (const OutcomeInfo& o : Outcomes()) EXPECT_EQ(ParseOutcome(o.name), o.id) << o.name;
    for (const RunOutcomeInfo& o : RunOutcomes()) EXPECT_EQ(ParseRunOutcome(o.name), o.id);
    EXPECT_EQ(ParseCause("no_such_cause"), std::nullopt);
    EXPECT_EQ(ParseAction("resume@"), std::nullopt);
    EXPECT_EQ(ParseAction("resume@12x"), std::nullopt);
    EXPECT_EQ(ParseOutcome("admin_owned"), std::nullopt);
    EXPECT_EQ(ToString(Outcome::kAdminOwned), "admin-owned");
}

TEST(Catalog, OldResumeRowsReadAsResume) {
    EXPECT_EQ(ParseAction("resume@1764612345"), Action::kResume);
    EXPECT_EQ(ParseAction("resume"), Action::kResume);
}

TEST(Catalog, CauseColumnsHoldWhatTheDecisionReliesOn) {
    EXPECT_TRUE(IsUnexplained("unknown"));
    EXPECT_TRUE(IsUnexplained("nccl_timeout"));
    EXPECT_EQ(BlameOf("nccl_timeout"), Blame::kNobody);
    EXPECT_EQ(BlameOf("faulty_gpu"), Blame::kNode);
    EXPECT_EQ(BlameOf("user_error"), Blame::kJob);
    EXPECT_FALSE(IsInfrastructure("user_error"));
    EXPECT_TRUE(IsNetworkCause("nic"));
    EXPECT_FALSE(IsNetworkCause("nvlink"));
    EXPECT_EQ(Info(Cause::kNetworkSwitchCable).ticket, TicketKind::kNetwork);
    EXPECT_EQ(Info(Cause::kGpuHbmMemory).ticket, TicketKind::kRma);
    // A word of another version behaves as the most careful cause.
    EXPECT_FALSE(IsInfrastructure("from_the_future"));
    EXPECT_EQ(BlameOf("from_the_future"), Blame::kNobody);
    EXPECT_FALSE(IsUnexplained("from_the_future"));
    for (const CauseInfo& c : Causes()) {
        // An unexplained cause names no culprit; a cause that blames the job is no reason to
        // requeue it.
        if (c.unexplained) {
            EXPECT_EQ(c.blame, Blame::kNobody) << c.name;
        }
        if (c.blame == Blame::kJob) {
            EXPECT_FALSE(c.infrastructure) << c.name;
        }
    }
    for (Cause own : {Cause::kAdminResume, Cause::kHealth, Cause::kLemon}) {
        EXPECT_FALSE(Info(own).rules) << ToString(own);
    }
}

TEST(Catalog, ActionColumnsHoldWhatThePlanAndTheBreakerRelyOn) {
    // Plan actions come first, in plan order; the store-only ones after them.
    bool store_only_seen = false;
    int last = -1;
    for (const ActionInfo& a : Actions()) {
        EXPECT_GT(a.order, last);
        last = a.order;
        if (!a.plan) store_only_seen = true;
        EXPECT_FALSE(a.plan && store_only_seen) << a.name << " after a store-only action";
        if (a.breaker) {
            EXPECT_TRUE(a.takes_out) << a.name;
        }
    }
    std::set<std::string_view> breaker;
    for (const ActionInfo& a : Actions()) {
        if (a.breaker) breaker.insert(a.name);
    }
    EXPECT_EQ(breaker, (std::set<std::string_view>{"drain", "reset_gpu", "reboot"}));
    EXPECT_EQ(Info(Action::kResetGpu).runs, Place::kNode);
    EXPECT_EQ(Info(Action::kResume).runs, Place::kAdmin);
    EXPECT_EQ(TicketOf("rma_ticket"), TicketKind::kRma);
    EXPECT_EQ(TicketOf("network_ticket"), TicketKind::kNetwork);
    EXPECT_EQ(TicketOf("drain"), TicketKind::kNone);
    EXPECT_FALSE(CountsAgainstBreaker("notify"));
    EXPECT_TRUE(CountsAgainstBreaker("reset_gpu"));
}

TEST(Catalog, RunOutcomesSayWhatIsAnInterruption) {
    std::set<std::string_view> interruptions;
    for (const RunOutcomeInfo& o : RunOutcomes()) {
        if (o.interruption) interruptions.insert(o.name);
    }
    EXPECT_EQ(interruptions, (std::set<std::string_view>{"blamed", "unexplained", "other"}));
    EXPECT_EQ(ToString(Category::kGpu), "gpu");
    EXPECT_EQ(Title(Category::kGpu), "GPU");
}

}  // namespace
}  // namespace autoheal::diag
