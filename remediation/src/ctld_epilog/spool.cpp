// The spool: runs recorded in memory while the store on disk failed, saved as small store files
// under <state_dir>/spool, and the faults autoheal-agent handled, saved the same way under
// AgentSpoolDir (the shared jobs/ folder); both imported into the store by a controller epilog.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <filesystem>
#include <system_error>

#include "autoheal/remediation/ctld_epilog_steps.h"

namespace autoheal::remediation {

namespace fs = std::filesystem;

std::string SpoolDir(const std::string& state_dir) { return state_dir + "/spool"; }

void SpoolRun(const CtldEnv& env, IncidentStore& spooled) {
    const std::string dir = SpoolDir(env.config.state_dir);
    std::error_code ec;
    fs::create_directories(dir, ec);
    const std::string path = dir + "/run-" + env.ctx.job_id + "-" + env.ctx.restart_count + "-" +
                             std::to_string(::getpid()) + ".sqlite";
    auto saved = ec ? Result<bool>(MakeError(dir + ": " + ec.message())) : spooled.SaveTo(path);
    if (!saved) {
        spdlog::error("autoheal: epilog-ctld: spool: the run's incidents are in this log only: {}",
                      saved.error());
        return;
    }
    spdlog::warn("autoheal: epilog-ctld: spool: run kept in {} until the store takes it", path);
}

namespace {

int ImportFolder(const CtldEnv& env, const std::string& dir) {
    std::error_code ec;
    int imported = 0;
    for (const fs::directory_entry& entry : fs::directory_iterator(dir, ec)) {
        const fs::path& path = entry.path();
        if (path.extension() != ".sqlite" || !entry.is_regular_file(ec)) continue;
        // Claimed by rename, so two job ends never import one file at once (an import twice
        // would add nothing: every row has its key).
        const fs::path claimed = path.string() + ".importing-" + std::to_string(::getpid());
        fs::rename(path, claimed, ec);
        if (ec) continue;
        auto n = env.store.ImportFrom(claimed.string());
        if (!n) {
            spdlog::error("autoheal: epilog-ctld: spool: {}", n.error());
            fs::rename(claimed, path, ec);
            break;  // the store fails again: the next job end tries
        }
        fs::remove(claimed, ec);
        imported += *n;
        spdlog::info("autoheal: epilog-ctld: spool: {} incidents imported from {}", *n,
                     path.string());
    }
    return imported;
}

}  // namespace

int ImportSpooledRuns(const CtldEnv& env) {
    return ImportFolder(env, SpoolDir(env.config.state_dir)) +
           ImportFolder(env, AgentSpoolDir(env.config.state_dir));
}

}  // namespace autoheal::remediation
