// The epilogs' two child-process helpers (to be replaced by the shared Subprocess).
#pragma once

#include <sys/types.h>

#include <string>
#include <vector>

#include "autoheal/core/result.h"

namespace autoheal::remediation {

// Runs argv (no shell) with a time limit; returns "ok" or the failure.
std::string RunCommand(const std::vector<std::string>& argv, double timeout_seconds);

// Appends `text` to the user's file as that user (a child process with the user's ids), so root
// never writes through a link or into a file the user could not write.
Result<bool> AppendAsUser(const std::string& path, const std::string& text, uid_t uid);

}  // namespace autoheal::remediation
