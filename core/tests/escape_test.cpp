#include "autoheal/core/escape.h"

#include <gtest/gtest.h>

namespace autoheal {
namespace {

TEST(EscapeControl, ControlBytesAndBackslashAreEscaped) {
    EXPECT_EQ(EscapeControl("plain text, ok"), "plain text, ok");
    EXPECT_EQ(EscapeControl("a\nb\tc\rd"), "a\\x0ab\\x09c\\x0dd");
    EXPECT_EQ(EscapeControl("\x1b[2J\x1b[31mred"), "\\x1b[2J\\x1b[31mred");
    EXPECT_EQ(EscapeControl(std::string_view("nul\0del\x7f", 8)), "nul\\x00del\\x7f");
    EXPECT_EQ(EscapeControl("C:\\x0a"), "C:\\\\x0a");  // reads back unambiguously
    EXPECT_EQ(EscapeControl("Überprüfung"), "Überprüfung");
    EXPECT_EQ(EscapeControl(""), "");
}

}  // namespace
}  // namespace autoheal
