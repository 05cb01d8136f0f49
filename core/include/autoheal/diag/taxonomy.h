// The cause and action catalog: one table each, the single source of the stable strings that
// rules, JSON output, node reasons and `autoheal rules explain` use.
#pragma once

#include <optional>
#include <span>
#include <string_view>

namespace autoheal::diag {

struct CauseInfo {
    std::string_view name;      // stable word, e.g. "faulty_gpu"
    std::string_view category;  // gpu | network | host | storage | software | unknown
    std::string_view summary;   // one line
    bool infrastructure;        // true: a job killed by it is worth requeueing
};

struct ActionInfo {
    std::string_view name;  // stable word, e.g. "reset_gpu"
    std::string_view summary;
    int order;  // position in a plan: actions are always listed in this order
};

std::span<const CauseInfo> Causes();
std::span<const ActionInfo> Actions();
const CauseInfo* FindCause(std::string_view name);
const ActionInfo* FindAction(std::string_view name);

}  // namespace autoheal::diag
