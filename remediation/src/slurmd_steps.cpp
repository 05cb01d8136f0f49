#include "autoheal/remediation/slurmd_steps.h"

#include <dirent.h>

#include <algorithm>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <memory>
#include <string_view>

namespace autoheal::remediation {
namespace {

// A run of decimal digits at the start of `s`, as a 32-bit id; nullopt when there is none or it
// does not fit. `used` gets the digits' length.
std::optional<std::uint32_t> LeadingId(std::string_view s, std::size_t* used) {
    std::uint32_t value = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
    if (ec != std::errc() || end == s.data()) return std::nullopt;
    *used = static_cast<std::size_t>(end - s.data());
    return value;
}

// Takes ".<digits>" off the front of `s`; false when it does not start so.
bool TakeDotId(std::string_view* s) {
    std::size_t used = 0;
    if (s->empty() || (*s)[0] != '.' || !LeadingId(s->substr(1), &used)) return false;
    s->remove_prefix(1 + used);
    return true;
}

// The job id of a step socket's name `<node>_<job>.<step>[.<component>]`; nullopt for any other
// name.
std::optional<std::uint32_t> StepSocketJob(std::string_view name, const std::string& node) {
    if (name.size() <= node.size() + 1 || name.compare(0, node.size(), node) != 0 ||
        name[node.size()] != '_') {
        return std::nullopt;
    }
    name.remove_prefix(node.size() + 1);
    std::size_t used = 0;
    const std::optional<std::uint32_t> job = LeadingId(name, &used);
    name.remove_prefix(used);
    if (!job || !TakeDotId(&name)) return std::nullopt;           // .<step>
    if (!name.empty() && !TakeDotId(&name)) return std::nullopt;  // .<component>
    return name.empty() ? job : std::nullopt;
}

}  // namespace

Result<std::vector<std::uint32_t>> JobsWithStepsIn(const std::string& spool_dir,
                                                   const std::string& node) {
    std::unique_ptr<DIR, int (*)(DIR*)> dir(::opendir(spool_dir.c_str()), ::closedir);
    if (!dir) {
        return MakeError(ErrorCode::kUnavailable,
                         "slurmd spool folder " + spool_dir + ": " + std::strerror(errno));
    }
    std::vector<std::uint32_t> jobs;
    while (const dirent* entry = ::readdir(dir.get())) {
        if (auto job = StepSocketJob(entry->d_name, node)) jobs.push_back(*job);
    }
    std::sort(jobs.begin(), jobs.end());
    jobs.erase(std::unique(jobs.begin(), jobs.end()), jobs.end());
    return jobs;
}

std::optional<std::string> ExpandSlurmdPath(const std::string& pattern, const std::string& node,
                                            const std::string& host) {
    std::string out;
    for (std::size_t i = 0; i < pattern.size(); ++i) {
        if (pattern[i] != '%') {
            out += pattern[i];
            continue;
        }
        const char code = i + 1 < pattern.size() ? pattern[i + 1] : '\0';
        if (code == 'n') {
            out += node;
        } else if (code == 'h') {
            out += host;
        } else {
            return std::nullopt;
        }
        ++i;
    }
    return out;
}

}  // namespace autoheal::remediation
