// autoheal health: the prolog's checks, by hand. Exit 0 healthy (pass or warn), 1 unhealthy,
// 2 unknown (nothing could be checked, e.g. no NVIDIA driver) or usage error.
#include <cstdio>
#include <cstdlib>
#include <filesystem>

#include "autoheal/core/config.h"
#include "autoheal/core/program.h"
#include "autoheal/health/health_config.h"
#include "autoheal/health/runner.h"
#include "autoheal/remediation/settings.h"
#include "cli_common.h"

namespace autoheal::cli {
namespace {

constexpr const char* kHealthUsage =
    "usage: autoheal health [--tier quick|full] [--gpus LIST] [--json]\n"
    "  Runs the health checks on this node's GPUs (LIST: NVML minor numbers such as 0,1 or\n"
    "  0-7; default all) with the settings of autoheal.yaml's health section.\n"
    "  Exit 0 healthy, 1 unhealthy, 2 unknown.\n";

}  // namespace

int Health(const std::vector<std::string>& args) {
    bool json = false;
    health::RunRequest request;
    std::optional<HealthTier> tier;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        if (a == "--json") {
            json = true;
        } else if ((a == "--tier" || a == "--gpus") && i + 1 < args.size()) {
            const std::string& v = args[++i];
            if (a == "--tier") {
                tier = HealthTierFromName(v);
                if (!tier || *tier == HealthTier::kOff) {
                    std::fprintf(stderr, "autoheal: health: --tier: expected quick or full\n");
                    return 2;
                }
            } else {
                auto list = health::ParseGpuList(v);
                if (!list) {
                    std::fprintf(stderr,
                                 "autoheal: health: --gpus: expected a list like 0,1,4-7\n");
                    return 2;
                }
                request.gpu_minors = *list;
            }
        } else if (a == "-h" || a == "--help") {
            std::fputs(kHealthUsage, stdout);
            return 0;
        } else {
            std::fprintf(stderr, "autoheal: health: unknown argument '%s'\n%s", a.c_str(),
                         kHealthUsage);
            return 2;
        }
    }
    // No config file: the defaults (a machine where autoheal is not set up yet); a broken one is
    // said, with where.
    const std::string path = FindConfigPath(std::getenv("AUTOHEAL_CONFIG"), SelfExePath());
    health::HealthConfig hc;
    std::error_code ec;
    if (std::getenv("AUTOHEAL_CONFIG") != nullptr || std::filesystem::exists(path, ec)) {
        auto loaded = remediation::LoadSettingsFile(path);
        if (!loaded) {
            std::fprintf(stderr, "autoheal: health: %s\n", loaded.error().c_str());
            return 2;
        }
        hc = loaded->health;
    }
    request.config = hc;
    request.tier =
        tier.value_or(hc.default_tier == HealthTier::kOff ? HealthTier::kQuick : hc.default_tier);
    request.cuda_module = health::ResolveCudaModule(hc, SelfExePath());
    health::HealthReport report = health::RunHealthChecks(request);
    if (json) {
        std::printf("%s\n", health::ReportToJson(report).c_str());
    } else {
        std::fputs(health::FormatReport(report).c_str(), stdout);
    }
    if (report.status == health::Status::kFail) return 1;
    bool any_known = false;
    for (const auto& r : report.results) any_known |= r.status != health::Status::kUnknown;
    return any_known ? 0 : 2;
}

}  // namespace autoheal::cli
