#include "autoheal/core/hostlist.h"

#include <gtest/gtest.h>

namespace autoheal {
namespace {

TEST(NthHost, ReadsNamesRangesAndPadding) {
    EXPECT_EQ(NthHost("node7", 0), "node7");
    EXPECT_EQ(NthHost("node[2-3]", 1), "node3");
    EXPECT_EQ(NthHost("a,node[1-3,7],b", 0), "a");
    EXPECT_EQ(NthHost("a,node[1-3,7],b", 3), "node3");
    EXPECT_EQ(NthHost("a,node[1-3,7],b", 4), "node7");
    EXPECT_EQ(NthHost("a,node[1-3,7],b", 5), "b");
    EXPECT_EQ(NthHost("gpu[007-010]", 3), "gpu010");
    EXPECT_EQ(NthHost("r1n[1-2]-ib", 1), "r1n2-ib");
}

TEST(NthHost, NothingBeyondTheListOrForWhatItCannotRead) {
    EXPECT_EQ(NthHost("node[1-3]", 3), std::nullopt);
    EXPECT_EQ(NthHost("", 0), std::nullopt);
    EXPECT_EQ(NthHost("node[3-1]", 0), std::nullopt);
    EXPECT_EQ(NthHost("r[1-2]n[1-2]", 0), std::nullopt);
    EXPECT_EQ(NthHost("node[x]", 0), std::nullopt);
    EXPECT_EQ(NthHost("node]1", 0), std::nullopt);
}

}  // namespace
}  // namespace autoheal
