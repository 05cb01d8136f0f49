// Node reasons: the one formatter and the one parser (remediation/node_reason.h).
#include "autoheal/remediation/node_reason.h"

#include <gtest/gtest.h>

namespace autoheal::remediation {
namespace {

using diag::Cause;

NodeReason Reason(Cause cause, std::vector<std::pair<std::string, std::string>> fields,
                  std::optional<std::int64_t> incident = std::nullopt, std::string note = "") {
    NodeReason r;
    r.cause = cause;
    r.fields = std::move(fields);
    r.incident = incident;
    r.note = std::move(note);
    return r;
}

TEST(NodeReason, FormatsTheDocumentedShape) {
    EXPECT_EQ(FormatReason(Reason(Cause::kFaultyGpu, {{"xid", "79"}, {"gpu", "0000:3b:00.0"}}, 42)),
              "autoheal: faulty_gpu xid=79 gpu=0000:3b:00.0 inc=42");
    // Empty values are left out; no incident, no inc=.
    EXPECT_EQ(FormatReason(Reason(Cause::kNvlink, {{"gpu", ""}, {"rule", "sxid-fatal"}})),
              "autoheal: nvlink rule=sxid-fatal");
    EXPECT_EQ(FormatReason(Reason(Cause::kHealth, {{"check", "row-remap"}}, std::nullopt,
                                  "row remapping failed\n(RMA criterion)")),
              "autoheal: health check=row-remap; row remapping failed (RMA criterion)");
}

TEST(NodeReason, RoundTrips) {
    const NodeReason in = Reason(
        Cause::kGpuHbmMemory,
        {{"xid", "64"}, {"gpu", "0000:3b:00.0"}, {"rule", "xid-64-row-remap"}, {"job", "17"}}, 9,
        "a note: with colons; and a semicolon");
    auto out = ParseReason(FormatReason(in));
    ASSERT_TRUE(out);
    EXPECT_EQ(out->cause, in.cause);
    EXPECT_EQ(out->fields, in.fields);
    EXPECT_EQ(out->incident, 9);
    EXPECT_EQ(out->note, in.note);
    EXPECT_EQ(out->Field("gpu"), "0000:3b:00.0");
    EXPECT_EQ(out->Field("nope"), std::nullopt);
}

TEST(NodeReason, ValuesNeverBreakTheFields) {
    const std::string text =
        FormatReason(Reason(Cause::kLemon, {{"within", "7 d;x"}, {"job", "1"}}, 3, "free text"));
    EXPECT_EQ(text, "autoheal: lemon within=7_d_x job=1 inc=3; free text");
    auto parsed = ParseReason(text);
    ASSERT_TRUE(parsed);
    EXPECT_EQ(parsed->Field("within"), "7_d_x");
    EXPECT_EQ(parsed->incident, 3);
    EXPECT_EQ(parsed->note, "free text");
}

TEST(NodeReason, ControlCharactersAreEscaped) {
    // A job's output can reach a note (a quoted line) or a value: nothing in it may drive the
    // terminal of an admin reading `sinfo -R`.
    const std::string r = FormatReason(Reason(Cause::kUserError, {{"rule", "x\x1b[2Jy"}},
                                              std::nullopt, "said \x1b[31mred\x07 done"));
    EXPECT_EQ(r, "autoheal: user_error rule=x\\x1b[2Jy; said \\x1b[31mred\\x07 done");
    EXPECT_EQ(r.find('\x1b'), std::string::npos);
}

TEST(NodeReason, OnlyTheNoteIsShortened) {
    const std::string text = FormatReason(
        Reason(Cause::kFaultyGpu, {{"gpu", "0000:3b:00.0"}}, 1, std::string(500, 'x')));
    EXPECT_EQ(text.size(), kMaxReasonBytes);
    EXPECT_EQ(text.rfind("autoheal: faulty_gpu gpu=0000:3b:00.0 inc=1; xx", 0), 0u);
    EXPECT_EQ(text.substr(text.size() - 3), "...");
}

TEST(NodeReason, OlderReasonsAreOursAndKeepTheirCause) {
    auto drain = ParseReason("autoheal: faulty_gpu gpu=0000:3b:00.0 (xid 79) job 1234");
    ASSERT_TRUE(drain);
    EXPECT_EQ(drain->cause, Cause::kFaultyGpu);
    EXPECT_EQ(drain->Field("gpu"), "0000:3b:00.0");
    EXPECT_EQ(drain->note, "(xid 79) job 1234");
    auto older = ParseReason("autoheal: gpu_hbm_memory gpu=0000:3b:00.0: xid 64");
    ASSERT_TRUE(older);
    EXPECT_EQ(older->cause, Cause::kGpuHbmMemory);
    EXPECT_EQ(older->Field("gpu"), "0000:3b:00.0");
    EXPECT_EQ(older->note, "xid 64");
    auto lemon = ParseReason("autoheal: lemon: 3 unexplained job failures within 7d; deep");
    ASSERT_TRUE(lemon);
    EXPECT_EQ(lemon->cause, Cause::kLemon);
    EXPECT_EQ(lemon->note, "3 unexplained job failures within 7d; deep");
    auto health = ParseReason("autoheal: health row-remap gpu=0000:3b:00.0: row remapping failed");
    ASSERT_TRUE(health);
    EXPECT_EQ(health->cause, Cause::kHealth);
    auto foreign = ParseReason("autoheal: something_newer x=1");
    ASSERT_TRUE(foreign);
    EXPECT_EQ(foreign->cause, Cause::kUnknown);
    EXPECT_TRUE(ReasonIsOurs("autoheal:"));
}

TEST(NodeReason, AnAdminsReasonIsNotOurs) {
    EXPECT_FALSE(ReasonIsOurs("admin: fan replacement"));
    EXPECT_FALSE(ReasonIsOurs(" autoheal: faulty_gpu"));
    EXPECT_FALSE(ParseReason("Not responding"));
    EXPECT_FALSE(ParseReason(""));
}

}  // namespace
}  // namespace autoheal::remediation
