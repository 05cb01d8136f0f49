// Dispatch: only the callbacks Slurm looks up, each behind the exception firewall, switching on
// the context. The work lives in one file per concern (spank_options.cpp).
#include <string>
#include <vector>

#include "c_guard.h"
#include "spank_state.h"

#define AUTOHEAL_EXPORT __attribute__((visibility("default")))

extern "C" {
// SPANK_PLUGIN() leaves these unexported in C++; define them by hand (see SLURM-LAB.md).
AUTOHEAL_EXPORT extern const char plugin_name[] = "autoheal";
AUTOHEAL_EXPORT extern const char plugin_type[] = "spank";
AUTOHEAL_EXPORT extern const unsigned int plugin_version = SLURM_VERSION_NUMBER;
AUTOHEAL_EXPORT extern const unsigned int spank_plugin_version = 0;
}

namespace autoheal::spank {

State& GetState() {
    static State state;
    return state;
}

void LogGuardFailure(const char* where, const char* what) {
    slurm_error("autoheal: spank: %s: internal error, continuing without autoheal: %s", where,
                what);
}

namespace {

int Init(spank_t sp, int ac, char** av) {
    std::vector<std::string> argv(av, av + (ac > 0 ? ac : 0));
    PluginArgsParse parsed = ParsePluginArgs(argv);
    for (const std::string& problem : parsed.problems) {
        slurm_error("autoheal: plugstack.conf: %s", problem.c_str());
    }
    GetState().args = parsed.args;
    switch (spank_context()) {
        case S_CTX_LOCAL:
        case S_CTX_ALLOCATOR:
        case S_CTX_REMOTE:
            // A failed registration is logged; the job still runs (fail open).
            RegisterOptions(sp);
            return 0;
        default:
            return 0;
    }
}

int InitPostOpt(spank_t sp) {
    switch (spank_context()) {
        case S_CTX_LOCAL:
        case S_CTX_ALLOCATOR:
            return RecordJobControlEnv(sp);
        default:
            return 0;
    }
}

}  // namespace
}  // namespace autoheal::spank

extern "C" {

AUTOHEAL_EXPORT int slurm_spank_init(spank_t sp, int ac, char** av) {
    using namespace autoheal;
    return plugin::CallGuarded("init", 0, spank::LogGuardFailure,
                               [&] { return spank::Init(sp, ac, av); });
}

AUTOHEAL_EXPORT int slurm_spank_user_init(spank_t sp, int ac, char** av) {
    using namespace autoheal;
    if (spank_context() != S_CTX_REMOTE) return 0;
    return plugin::CallGuarded("user_init", 0, spank::LogGuardFailure,
                               [&] { return spank::ExportResumeEnv(sp); });
}

AUTOHEAL_EXPORT int slurm_spank_task_init(spank_t sp, int ac, char** av) {
    using namespace autoheal;
    if (spank_context() != S_CTX_REMOTE) return 0;
    return plugin::CallGuarded("task_init", 0, spank::LogGuardFailure,
                               [&] { return spank::ExportRestartCount(sp); });
}

AUTOHEAL_EXPORT int slurm_spank_task_init_privileged(spank_t sp, int ac, char** av) {
    using namespace autoheal;
    if (spank_context() != S_CTX_REMOTE) return 0;
    return plugin::CallGuarded("task_init_privileged", 0, spank::LogGuardFailure,
                               [&] { return spank::SetFlightRecorderEnv(sp); });
}

AUTOHEAL_EXPORT int slurm_spank_init_post_opt(spank_t sp, int ac, char** av) {
    using namespace autoheal;
    return plugin::CallGuarded("init_post_opt", 0, spank::LogGuardFailure,
                               [&] { return spank::InitPostOpt(sp); });
}

}  // extern "C"
