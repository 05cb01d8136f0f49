// The rules and the scanner built from them, as both epilogs use them.
#pragma once

#include <memory>
#include <string>

#include "autoheal/core/result.h"
#include "autoheal/diag/rules.h"
#include "autoheal/diag/scanner.h"

namespace autoheal::remediation {

struct Engine {
    diag::RuleSet rules;
    std::shared_ptr<const diag::Scanner> scanner;
};

// The rules in use: the rules folder, or its last good copy when it is broken (then logged). The
// compiled scanner is kept in `<state_dir>/cache-<euid>` for the next epilog to read back.
Result<Engine> LoadEngine(const std::string& self_exe, const std::string& state_dir);

}  // namespace autoheal::remediation
