#include "autoheal/remediation/engine.h"

#include <spdlog/spdlog.h>
#include <unistd.h>

#include <cstdlib>

#include "autoheal/core/config.h"
#include "autoheal/diag/rule_files.h"

namespace autoheal::remediation {

Result<Engine> LoadEngine(const std::string& self_exe, const std::string& state_dir) {
    const std::string dir = diag::DefaultRulesDir(std::getenv("AUTOHEAL_RULES_DIR"), self_exe);
    diag::RulesInUse in_use =
        diag::LoadRulesKeepingLastGood(dir, LastGoodDir(state_dir) + "/rules.d");
    if (!in_use.problem.empty()) spdlog::error("autoheal: {}", in_use.problem);
    if (!in_use.rules) return MakeError(in_use.problem);
    // One folder per user: on a machine that is both controller and node, the node epilog (root)
    // and EpilogSlurmctld (SlurmUser) share state_dir, and each trusts only its own files.
    auto scanner = diag::Scanner::Build(in_use.rules->signatures, {},
                                        state_dir + "/cache-" + std::to_string(::geteuid()));
    if (!scanner) return MakeError("rules: " + scanner.error());
    return Engine{std::move(*in_use.rules), *scanner};
}

}  // namespace autoheal::remediation
