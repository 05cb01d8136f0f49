// Every call autoheal makes to Slurm goes through this adapter (Slurm's C API, -lslurm; no
// shelling out to scontrol), so the rest of autoheal is tested without Slurm and the rules for
// touching nodes live in one place:
// - a node drained or down for a reason autoheal did not set ("autoheal: ..." prefix) is never
//   drained again, relabelled or resumed: an admin put it there.
#pragma once

#include <string>

#include "autoheal/core/result.h"

namespace autoheal::remediation {

inline constexpr const char* kReasonPrefix = "autoheal:";

struct NodeInfo {
    std::string name;
    std::string state;     // Slurm's words: "IDLE", "MIXED+DRAIN", ...
    std::string reason;    // empty when none
    bool drained = false;  // DRAIN flag set (draining or drained)
    bool down = false;
    bool ReasonIsOurs() const;
};

class SlurmAdapter {
  public:
    // Connects with Slurm's configuration: `slurm_conf` if not empty, else $SLURM_CONF, else
    // Slurm's default.
    explicit SlurmAdapter(const std::string& slurm_conf = "");
    ~SlurmAdapter();
    SlurmAdapter(const SlurmAdapter&) = delete;
    SlurmAdapter& operator=(const SlurmAdapter&) = delete;

    Result<NodeInfo> GetNode(const std::string& name);

    enum class DrainOutcome { kDrained, kAlreadyOurs, kAdminOwned };
    // Drains `node` with `reason` (which must start with "autoheal:"), unless an admin already
    // drained it or took it down.
    Result<DrainOutcome> Drain(const std::string& node, const std::string& reason);
};

}  // namespace autoheal::remediation
