#include "autoheal/diag/rule_files.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

namespace autoheal::diag {
namespace {

constexpr std::uintmax_t kMaxRuleFileBytes = 4 << 20;

bool IsRuleFile(const std::filesystem::path& p) {
    return p.extension() == ".yaml" || p.extension() == ".yml";
}

}  // namespace

std::vector<std::string> ExpandRulePaths(const std::vector<std::string>& paths,
                                         std::vector<std::string>* errors) {
    std::vector<std::string> files;
    for (const std::string& path : paths) {
        std::error_code ec;
        if (std::filesystem::is_directory(path, ec)) {
            std::vector<std::string> in_dir;
            for (const auto& entry : std::filesystem::directory_iterator(path, ec)) {
                if (entry.is_regular_file(ec) && IsRuleFile(entry.path())) {
                    in_dir.push_back(entry.path().string());
                }
            }
            if (ec) errors->push_back(path + ": cannot list folder: " + ec.message());
            std::sort(in_dir.begin(), in_dir.end());
            files.insert(files.end(), in_dir.begin(), in_dir.end());
        } else if (std::filesystem::is_regular_file(path, ec)) {
            files.push_back(path);
        } else {
            errors->push_back(path + ": no such file or folder");
        }
    }
    return files;
}

LoadedRules LoadRuleFiles(const std::vector<std::string>& paths) {
    LoadedRules out;
    out.files = ExpandRulePaths(paths, &out.read_errors);
    RuleLoader loader;
    for (const std::string& file : out.files) {
        std::error_code ec;
        auto size = std::filesystem::file_size(file, ec);
        if (ec || size > kMaxRuleFileBytes) {
            out.read_errors.push_back(
                file + (ec ? ": cannot read: " + ec.message() : ": larger than 4 MiB"));
            continue;
        }
        std::ifstream in(file, std::ios::binary);
        std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
        if (!in && !in.eof()) {
            out.read_errors.push_back(file + ": cannot read");
            continue;
        }
        loader.Add(file, std::move(text));
    }
    out.rules = loader.Compile(&out.result);
    if (!out.read_errors.empty()) out.rules.reset();
    return out;
}

std::string DefaultRulesDir(const char* env_value, const std::string& exe_path) {
    if (env_value != nullptr && env_value[0] != '\0') return env_value;
    if (!exe_path.empty()) {
        std::error_code ec;
        auto candidate = std::filesystem::path(exe_path).parent_path().parent_path() / "etc" /
                         "autoheal" / "rules.d";
        if (std::filesystem::is_directory(candidate, ec)) return candidate.string();
    }
    return "/etc/autoheal/rules.d";
}

}  // namespace autoheal::diag
