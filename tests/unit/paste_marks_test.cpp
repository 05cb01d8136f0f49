// What pasting and terminals add to a log (autoheal/diag/paste_marks.h) comes off before rules
// read it; the lines, and so their numbers, stay.
#include "autoheal/diag/paste_marks.h"

#include <gtest/gtest.h>

#include <string>

namespace autoheal::diag {
namespace {

std::string Stripped(std::string_view text) {
    const std::optional<std::string> out = StripPasteMarks(text);
    return out ? *out : std::string(text);
}

TEST(PasteMarks, PlainLogsAreLeftAsTheyAre) {
    EXPECT_FALSE(StripPasteMarks("[1.0] NVRM: Xid 79\n  File \"x.py\", line 1\n").has_value());
    EXPECT_FALSE(StripPasteMarks("").has_value());
    EXPECT_FALSE(StripPasteMarks("\n\n").has_value());
    // Brackets that are not colours, and '>' inside a line.
    EXPECT_FALSE(StripPasteMarks("[mlx5_0] rank 1 -> 2 [5m]\n").has_value());
}

TEST(PasteMarks, QuoteMarksGoAtAnyDepthKeepingTheQuotedIndentation) {
    EXPECT_EQ(Stripped("> CA 'mlx5_7'\n>         State: Down\n"),
              "CA 'mlx5_7'\n        State: Down\n");
    EXPECT_EQ(Stripped("> > nested\n>> tight\n  > indented quote\nplain\n"),
              "nested\ntight\nindented quote\nplain\n");
    EXPECT_EQ(Stripped(">\n> x"), "\nx");
}

TEST(PasteMarks, ColoursGoWithOrWithoutTheirEscapeByte) {
    EXPECT_EQ(Stripped("\x1b[1;31mERROR\x1b[0m: NCCL WARN x\n"), "ERROR: NCCL WARN x\n");
    EXPECT_EQ(Stripped("\x1b]0;title\aline\x1b(B\x1b[m\n"), "line\n");
    EXPECT_EQ(Stripped("[1;31mRuntimeError[0m: CUDA error\n"), "RuntimeError: CUDA error\n");
    EXPECT_EQ(Stripped("^[[33mwarn^[[0m x\n"), "warn x\n");
    // Without a "[0m" anywhere, a bare "[31m" is text.
    EXPECT_EQ(Stripped("timeout [30m]\n"), "timeout [30m]\n");
}

TEST(PasteMarks, CommonIndentationGoesRelativeIndentationStays) {
    EXPECT_EQ(Stripped("    Traceback:\n      File \"x\"\n\n    Error: y\n"),
              "Traceback:\n  File \"x\"\n\nError: y\n");
    EXPECT_EQ(Stripped("\tlink mlx5_7/1 state DOWN\r\n\tnext\r\n"),
              "link mlx5_7/1 state DOWN\r\nnext\r\n");
    EXPECT_EQ(Stripped("> \x1b[32m    a\x1b[0m\n>     b\n"), "a\nb\n");
}

TEST(PasteMarks, LineCountStays) {
    const std::string text = "> a\n\x1b[0m\n    b\n\n> c";
    const std::string out = Stripped(text);
    EXPECT_EQ(std::count(out.begin(), out.end(), '\n'), std::count(text.begin(), text.end(), '\n'));
}

}  // namespace
}  // namespace autoheal::diag
