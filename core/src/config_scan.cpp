// What a program can learn about autoheal.yaml without a YAML parser: where it is, and the
// state_dir it names. Kept apart from config.cpp so that the SPANK plugin, which sbatch loads at
// every submission, needs no yaml-cpp (docs/reliability.md, "Load").
#include <filesystem>
#include <fstream>
#include <string>

#include "autoheal/core/config.h"

namespace autoheal {

std::string FindConfigPath(const char* env_value, const std::string& exe_path) {
    if (env_value != nullptr && env_value[0] != '\0') return env_value;
    if (!exe_path.empty()) {
        std::error_code ec;
        auto candidate = std::filesystem::path(exe_path).parent_path().parent_path() / "etc" /
                         "autoheal" / "autoheal.yaml";
        if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    }
    return "/etc/autoheal/autoheal.yaml";
}

std::string ScanConfigStateDir(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::string line;
    for (int n = 0; n < 10000 && std::getline(in, line); ++n) {
        if (line.rfind("state_dir:", 0) != 0) continue;
        std::string v = line.substr(10);
        const std::size_t hash = v.find(" #");
        if (hash != std::string::npos) v.resize(hash);
        const std::size_t a = v.find_first_not_of(" \t\"'");
        const std::size_t b = v.find_last_not_of(" \t\r\"'");
        if (a == std::string::npos || b < a) return "";
        v = v.substr(a, b - a + 1);
        return !v.empty() && v.front() == '/' ? v : "";
    }
    return "";
}

}  // namespace autoheal
