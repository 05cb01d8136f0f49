// Slurm's printed topology (slurm_topology.h): the lines as Slurm 24.11 and 26.05 print them
// (topology_tree.c and topology_block.c, _print_topo_record), parsed into switches and blocks;
// and the same text read from a command, as the adapter runs `scontrol show topology`.
#include "autoheal/remediation/slurm_topology.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace autoheal::remediation {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

// "SwitchName=%s Level=%u LinkSpeed=%u" [" Nodes=%s"] [" Switches=%s"], one record a line.
constexpr const char* kTree =
    "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[1-2]\n"
    "SwitchName=leaf2 Level=0 LinkSpeed=1 Nodes=node[3-4]\n"
    "SwitchName=spine Level=1 LinkSpeed=1 Nodes=node[1-4] Switches=leaf[1-2]\n";

// "%s=%s BlockIndex=%u" [" Nodes=%s"] " BlockSize=%u", BlockName or AggregatedBlock.
constexpr const char* kBlock =
    "BlockName=rack1 BlockIndex=0 Nodes=gpu[001-018] BlockSize=18\n"
    "BlockName=rack2 BlockIndex=1 Nodes=gpu[019-036] BlockSize=18\n"
    "AggregatedBlock=rack[1-2] BlockIndex=2 Nodes=gpu[001-036] BlockSize=36\n";

std::vector<std::string> Names(const std::vector<SwitchInfo>& switches) {
    std::vector<std::string> names;
    names.reserve(switches.size());
    for (const SwitchInfo& s : switches) names.push_back(s.name + "@" + std::to_string(s.level));
    return names;
}

TEST(SlurmTopology, TreeSwitchesKeepTheirLevelAndNodes) {
    const auto switches = ParseTopology(kTree);
    EXPECT_THAT(Names(switches), ElementsAre("leaf1@0", "leaf2@0", "spine@1"));
    EXPECT_THAT(switches[0].nodes, ElementsAre("node1", "node2"));
    EXPECT_THAT(switches[1].nodes, ElementsAre("node3", "node4"));
}

TEST(SlurmTopology, BlocksAreLeavesAndAggregatedBlocksTheLevelAbove) {
    const auto blocks = ParseTopology(kBlock);
    EXPECT_THAT(Names(blocks), ElementsAre("rack1@0", "rack2@0", "rack[1-2]@1"));
    ASSERT_EQ(blocks[0].nodes.size(), 18u);
    EXPECT_EQ(blocks[0].nodes.front(), "gpu001");
    EXPECT_EQ(blocks[1].nodes.back(), "gpu036");
    EXPECT_EQ(blocks[2].nodes.size(), 36u);
}

TEST(SlurmTopology, OtherLinesAndEmptyFieldsAreSkipped) {
    const auto switches = ParseTopology(
        "slurm_load_topo error: Unable to contact slurm controller\n"
        "\n"
        "SwitchName=(null) Level=0 LinkSpeed=1 Nodes=node1\n"
        "SwitchName=lonely Level=0 LinkSpeed=1\n"
        "NodeName=node1 SwitchName=leaf9\n");
    ASSERT_THAT(Names(switches), ElementsAre("lonely@0"));
    EXPECT_TRUE(switches[0].nodes.empty());
    EXPECT_TRUE(ParseTopology("").empty());
}

TEST(SlurmTopology, ReadFromACommandThroughTheSameParser) {
    auto read = TopologyFromCommand({"/bin/sh", "-c", std::string("printf '%s' '") + kBlock + "'"},
                                    std::nullopt, std::chrono::seconds(10));
    ASSERT_TRUE(read) << read.error();
    EXPECT_THAT(Names(*read), ElementsAre("rack1@0", "rack2@0", "rack[1-2]@1"));
}

TEST(SlurmTopology, ACommandThatFailsIsAnErrorNamingItAndWhatItSaid) {
    auto read = TopologyFromCommand(
        {"/bin/sh", "-c",
         "echo 'slurm_load_topo error: Unable to contact slurm controller' >&2; "
         "exit 1"},
        std::nullopt, std::chrono::seconds(10));
    ASSERT_FALSE(read);
    EXPECT_EQ(read.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(read.error(), HasSubstr("slurm: topology: /bin/sh -c"));
    EXPECT_THAT(read.error(), HasSubstr("exit 1: slurm_load_topo error: Unable to contact"));
}

TEST(SlurmTopology, AMissingOrHungCommandIsAnError) {
    auto missing = TopologyFromCommand({"/nonexistent/scontrol", "show", "topology"}, std::nullopt,
                                       std::chrono::seconds(10));
    ASSERT_FALSE(missing);
    EXPECT_EQ(missing.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(missing.error(), HasSubstr("/nonexistent/scontrol show topology"));
    auto hung =
        TopologyFromCommand({"/bin/sleep", "30"}, std::nullopt, std::chrono::milliseconds(200));
    ASSERT_FALSE(hung);
    EXPECT_EQ(hung.code(), ErrorCode::kUnavailable);
    EXPECT_THAT(hung.error(), HasSubstr("/bin/sleep 30"));
}

TEST(SlurmTopology, TheCommandGetsTheEnvironmentItIsGiven) {
    auto read = TopologyFromCommand(
        {"/bin/sh", "-c", "echo \"SwitchName=$LEAF Level=0 LinkSpeed=1 Nodes=node7\""},
        std::vector<std::string>{"LEAF=leaf7"}, std::chrono::seconds(10));
    ASSERT_TRUE(read) << read.error();
    ASSERT_THAT(Names(*read), ElementsAre("leaf7@0"));
    EXPECT_THAT((*read)[0].nodes, ElementsAre("node7"));
}

}  // namespace
}  // namespace autoheal::remediation
