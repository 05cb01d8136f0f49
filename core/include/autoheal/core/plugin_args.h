// Arguments an admin gives the SPANK plugin in plugstack.conf, e.g.
//   required /usr/lib/x86_64-linux-gnu/slurm-wlm/spank_autoheal.so max_auto_resume=5
// Every default is set first; each key=value is applied in order; unknown keys and bad values
// are reported by name and leave the default in place (a broken plugstack line must not stop
// every submission on the cluster).
#pragma once

#include <string>
#include <vector>

#include "autoheal/core/job_options.h"

namespace autoheal {

struct PluginArgs {
    OptionLimits limits;
};

struct PluginArgsParse {
    PluginArgs args;
    std::vector<std::string> problems;  // one message per refused argument
};

PluginArgsParse ParsePluginArgs(const std::vector<std::string>& argv);

}  // namespace autoheal
