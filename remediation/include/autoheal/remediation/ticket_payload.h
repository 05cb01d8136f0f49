// The JSON a ticket carries (RMA or network): the node, cause, rule, GPU identity, the node's
// health and NVML evidence, the rule's evidence and up to 50 history records.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autoheal/remediation/decision.h"

namespace autoheal::remediation {

// `plan` is null for the switch ticket (then d.network names the switch); `verdict` and
// `report` may be null. `now` is the creation time (seconds since the epoch).
nlohmann::json TicketPayload(const std::string& kind, const JobDecision& d, const NodePlan* plan,
                             const NodeVerdict* verdict, const NodeReport* report,
                             const std::vector<diag::HistoryRecord>& history,
                             const std::string& cluster_job, std::int64_t now);

}  // namespace autoheal::remediation
