// Slurm's topology as text: the one form every release gives, whether libslurm prints the reply
// itself (slurm_adapter.cpp) or `scontrol show topology` does where the reply cannot be unpacked
// in autoheal's programs (24.11: its topology plugin needs symbols only Slurm's own tools carry).
#pragma once

#include <chrono>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/core/result.h"
#include "autoheal/remediation/slurm_client.h"

namespace autoheal::remediation {

// The switches or blocks in Slurm's printed topology, one record a line:
//   tree:  "SwitchName=leaf1 Level=0 LinkSpeed=1 Nodes=node[1-2] Switches=..."
//   block: "BlockName=b1 BlockIndex=0 Nodes=node[1-18] BlockSize=18"
//          "AggregatedBlock=b1,b2 BlockIndex=2 Nodes=node[1-36] BlockSize=36"
// A switch keeps its Level (0: a leaf); a block is level 0, a blast-radius unit like a leaf
// switch (an NVL72 rack); an aggregated block is the level above its blocks (1). Nodes are
// expanded with Slurm's hostlist code; other lines (messages, headers) are skipped.
std::vector<SwitchInfo> ParseTopology(const std::string& text);

// Runs `argv` (Slurm's `scontrol show topology`; no shell, argv[0] absolute) with `env` (nullopt:
// this process's) and parses what it printed. Bounded: the child is killed at `timeout`. Errors
// (kUnavailable) name the command and say why: not found, timed out, or its exit status and
// the last of what it said.
Result<std::vector<SwitchInfo>> TopologyFromCommand(const std::vector<std::string>& argv,
                                                    std::optional<std::vector<std::string>> env,
                                                    std::chrono::milliseconds timeout);

}  // namespace autoheal::remediation
