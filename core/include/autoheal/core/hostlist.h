// Slurm hostlist expressions without Slurm (the SPANK plugin's task context, where a task must
// find its own node): "node1,node3", "node[1-3,7]", "gpu[007-010]", "r1n[1-2]-ib".
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

namespace autoheal {

// The n-th name (0-based) of `hostlist`, in Slurm's order; nullopt when there are fewer names or
// the expression is not one this reader knows (at most one bracket group per name).
std::optional<std::string> NthHost(std::string_view hostlist, std::size_t n);

}  // namespace autoheal
