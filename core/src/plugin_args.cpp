#include "autoheal/core/plugin_args.h"

#include <charconv>
#include <string_view>

namespace autoheal {
namespace {

bool ParseWholeNumber(std::string_view s, int min, int max, int* out) {
    int n = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (s.empty() || ec != std::errc() || end != s.data() + s.size() || n < min || n > max) {
        return false;
    }
    *out = n;
    return true;
}

constexpr int kHardMaxAutoResume = 1000;

}  // namespace

PluginArgsParse ParsePluginArgs(const std::vector<std::string>& argv) {
    PluginArgsParse result;
    OptionLimits& limits = result.args.limits;
    for (const std::string& arg : argv) {
        auto eq = arg.find('=');
        if (eq == std::string::npos) {
            result.problems.push_back("argument '" + arg +
                                      "' is not key=value; known keys: default_auto_resume, "
                                      "max_auto_resume");
            continue;
        }
        std::string_view key{arg.data(), eq};
        std::string_view value{arg.data() + eq + 1, arg.size() - eq - 1};
        if (key == "max_auto_resume") {
            if (!ParseWholeNumber(value, 1, kHardMaxAutoResume, &limits.max_auto_resume)) {
                result.problems.push_back("max_auto_resume: invalid value '" + std::string(value) +
                                          "': expected a whole number from 1 to " +
                                          std::to_string(kHardMaxAutoResume));
            }
        } else if (key == "default_auto_resume") {
            if (!ParseWholeNumber(value, 1, kHardMaxAutoResume, &limits.default_auto_resume)) {
                result.problems.push_back(
                    "default_auto_resume: invalid value '" + std::string(value) +
                    "': expected a whole number from 1 to " + std::to_string(kHardMaxAutoResume));
            }
        } else {
            result.problems.push_back("unknown argument '" + std::string(key) +
                                      "'; known keys: default_auto_resume, max_auto_resume");
        }
    }
    if (limits.default_auto_resume > limits.max_auto_resume) {
        result.problems.push_back(
            "default_auto_resume=" + std::to_string(limits.default_auto_resume) +
            " is above max_auto_resume=" + std::to_string(limits.max_auto_resume) + "; using " +
            std::to_string(limits.max_auto_resume));
        limits.default_auto_resume = limits.max_auto_resume;
    }
    return result;
}

}  // namespace autoheal
