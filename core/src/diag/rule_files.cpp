#include "autoheal/diag/rule_files.h"

#include <unistd.h>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>

#include "autoheal/core/files.h"

namespace autoheal::diag {
namespace {

constexpr std::size_t kMaxRuleFileBytes = 4 << 20;

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
        auto text = ReadSmallFile(file, kMaxRuleFileBytes);
        if (!text) {
            out.read_errors.push_back(text.error());
            continue;
        }
        loader.Add(file, std::move(text).value());
    }
    out.rules = loader.Compile(&out.result);
    if (!out.read_errors.empty()) out.rules.reset();
#if defined(__GLIBC__)
    // Reading the rules holds every file's YAML tree at once (megabytes for the Xid catalog);
    // freed, glibc keeps those pages mapped between what stays live. Give them back, so what a
    // scan allocates next does not add to them (classify's peak RSS, bench/classify_bench.sh).
    malloc_trim(0);
#endif
    return out;
}

namespace {

// name -> content of the rule files of a folder (those ExpandRulePaths lists).
std::map<std::string, std::string> ReadRuleFolder(const std::string& dir) {
    std::map<std::string, std::string> out;
    std::vector<std::string> errors;
    for (const std::string& file : ExpandRulePaths({dir}, &errors)) {
        auto text = ReadSmallFile(file, kMaxRuleFileBytes);
        out[std::filesystem::path(file).filename().string()] = text ? std::move(text).value() : "";
    }
    return out;
}

// Replaces `dir` with the files of `files` (written beside it first, then renamed into place).
void ReplaceFolder(const std::string& dir, const std::map<std::string, std::string>& files) {
    namespace fs = std::filesystem;
    std::error_code ec;
    const std::string tmp = dir + ".tmp." + std::to_string(::getpid());
    const std::string old = dir + ".old." + std::to_string(::getpid());
    fs::remove_all(tmp, ec);
    fs::create_directories(tmp, ec);
    if (ec) return;
    for (const auto& [name, text] : files) {
        std::ofstream(fs::path(tmp) / name, std::ios::binary) << text;
    }
    fs::rename(dir, old, ec);  // absent the first time
    fs::rename(tmp, dir, ec);
    if (ec) {  // another epilog replaced it at the same moment: theirs is as good
        fs::remove_all(tmp, ec);
    }
    fs::remove_all(old, ec);
}

}  // namespace

RulesInUse LoadRulesKeepingLastGood(const std::string& dir, const std::string& last_good_dir) {
    RulesInUse out;
    LoadedRules loaded = LoadRuleFiles({dir});
    // Rules steer root's actions: a file others can write is refused like a broken one.
    for (const std::string& file : loaded.files) {
        if (auto trusted = CheckTrustedFile(file); !trusted) {
            loaded.rules.reset();
            loaded.read_errors.push_back(trusted.error());
        }
    }
    if (loaded.rules && !loaded.files.empty()) {
        out.rules = std::move(loaded.rules);
        out.source = dir;
        auto files = ReadRuleFolder(dir);
        if (files != ReadRuleFolder(last_good_dir)) ReplaceFolder(last_good_dir, files);
        return out;
    }
    std::string why = loaded.result.Format();
    for (const std::string& e : loaded.read_errors) why += e + "\n";
    if (loaded.files.empty() && loaded.read_errors.empty()) why = dir + ": no rule files\n";
    while (!why.empty() && why.back() == '\n') why.pop_back();
    out.problem = "rules in " + dir + " did not load: " + why;
    LoadedRules fallback = LoadRuleFiles({last_good_dir});
    if (fallback.rules && !fallback.files.empty()) {
        out.rules = std::move(fallback.rules);
        out.source = last_good_dir;
        out.problem += "; using the last good rules from " + last_good_dir;
    } else {
        out.problem += "; no last good copy in " + last_good_dir;
    }
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
