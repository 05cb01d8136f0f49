#include "cli_common.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <filesystem>

#include "autoheal/core/duration.h"
#include "autoheal/core/escape.h"
#include "autoheal/core/program.h"
#include "autoheal/remediation/settings.h"

namespace autoheal::cli {

std::optional<remediation::Settings> LoadSettingsOrComplain(const char* command) {
    const std::string path = FindConfigPath(std::getenv("AUTOHEAL_CONFIG"), SelfExePath());
    auto loaded = remediation::LoadSettingsFile(path);
    if (!loaded) {
        std::fprintf(stderr, "autoheal: %s: %s\n", command, loaded.error().c_str());
        return std::nullopt;
    }
    return std::move(loaded).value();
}

std::unique_ptr<remediation::IncidentStore> OpenStoreOrComplain(const char* command,
                                                                const Config& config, bool create) {
    const std::string path = config.state_dir + "/incidents.sqlite";
    std::error_code ec;
    if (!create && !std::filesystem::exists(path, ec)) {
        std::fprintf(stderr,
                     "autoheal: %s: no incident store at %s: autoheal records incidents where "
                     "its controller epilog runs (run this there, or share state_dir)\n",
                     command, path.c_str());
        return nullptr;
    }
    auto store = remediation::IncidentStore::Open(path);
    const std::string handed = remediation::GiveStoreToStateDirOwner(config.state_dir, path);
    if (!handed.empty()) std::fprintf(stderr, "autoheal: incident store: %s\n", handed.c_str());
    if (!store) {
        std::fprintf(stderr, "autoheal: %s: %s\n", command, store.error().c_str());
        return nullptr;
    }
    return std::move(store).value();
}

std::optional<Args> ParseArgs(const char* command, const std::vector<std::string>& args,
                              const std::set<std::string>& value_options,
                              const std::set<std::string>& flag_options, const char* usage) {
    Args out;
    for (std::size_t i = 0; i < args.size(); ++i) {
        std::string a = args[i];
        std::string value;
        bool inline_value = false;
        if (a.rfind("--", 0) == 0) {
            if (const std::size_t eq = a.find('='); eq != std::string::npos) {
                value = a.substr(eq + 1);
                a = a.substr(0, eq);
                inline_value = true;
            }
        }
        if (a == "-h" || a == "--help") {
            std::fputs(usage, stdout);
            std::exit(0);
        }
        if (value_options.count(a) != 0) {
            if (!inline_value) {
                if (i + 1 >= args.size()) {
                    std::fprintf(stderr, "autoheal: %s: %s needs a value\n%s", command, a.c_str(),
                                 usage);
                    return std::nullopt;
                }
                value = args[++i];
            }
            if (!out.values.emplace(a, value).second) {
                std::fprintf(stderr, "autoheal: %s: %s given twice\n", command, a.c_str());
                return std::nullopt;
            }
        } else if (flag_options.count(a) != 0 && !inline_value) {
            out.flags.insert(a);
        } else if (a.size() > 1 && a[0] == '-') {
            std::fprintf(stderr, "autoheal: %s: unknown option '%s'\n%s", command, a.c_str(),
                         usage);
            return std::nullopt;
        } else {
            out.positional.push_back(a);
        }
    }
    return out;
}

std::optional<std::int64_t> ParseSinceOrComplain(const char* command, const std::string& option,
                                                 const std::string& text, std::int64_t now) {
    if (auto d = ParseDuration(text)) return now - *d;
    std::tm tm{};
    const char* end = strptime(text.c_str(), "%Y-%m-%d", &tm);
    if (end != nullptr && *end == '\0') {
        tm.tm_isdst = -1;
        const std::time_t t = std::mktime(&tm);
        if (t != static_cast<std::time_t>(-1)) return static_cast<std::int64_t>(t);
    }
    std::fprintf(stderr,
                 "autoheal: %s: %s: '%s' is neither a duration (30m, 12h, 7d, 2w) nor a date "
                 "(2026-11-01)\n",
                 command, option.c_str(), text.c_str());
    return std::nullopt;
}

std::string FormatTime(std::int64_t epoch) {
    if (epoch <= 0) return "-";
    const auto t = static_cast<std::time_t>(epoch);
    std::tm tm{};
    localtime_r(&t, &tm);
    char buf[32];
    std::strftime(buf, sizeof buf, "%Y-%m-%d %H:%M:%S", &tm);
    return buf;
}

std::string FormatDuration(std::int64_t s) {
    if (s < 0) s = 0;
    char buf[32];
    if (s < 60) {
        std::snprintf(buf, sizeof buf, "%llds", static_cast<long long>(s));
    } else if (s < 3600) {
        std::snprintf(buf, sizeof buf, "%lldm", static_cast<long long>(s / 60));
    } else if (s < 86400) {
        std::snprintf(buf, sizeof buf, "%lldh%02lldm", static_cast<long long>(s / 3600),
                      static_cast<long long>(s % 3600 / 60));
    } else {
        std::snprintf(buf, sizeof buf, "%lldd%02lldh", static_cast<long long>(s / 86400),
                      static_cast<long long>(s % 86400 / 3600));
    }
    return buf;
}

Table::Table(std::vector<std::string> header, std::size_t max_width)
    : header_(std::move(header)), max_width_(max_width) {}

void Table::Add(std::vector<std::string> row) {
    row.resize(header_.size());
    for (std::string& cell : row) {
        std::replace_if(
            cell.begin(), cell.end(), [](char c) { return c == '\n' || c == '\t' || c == '\r'; },
            ' ');
        cell = EscapeControl(cell);
        if (cell.size() > max_width_) cell = cell.substr(0, max_width_ - 3) + "...";
        if (cell.empty()) cell = "-";
    }
    rows_.push_back(std::move(row));
}

void Table::Print(std::FILE* out) const {
    std::vector<std::size_t> width(header_.size());
    for (std::size_t c = 0; c < header_.size(); ++c) width[c] = header_[c].size();
    for (const auto& row : rows_) {
        for (std::size_t c = 0; c < row.size(); ++c) width[c] = std::max(width[c], row[c].size());
    }
    auto line = [&](const std::vector<std::string>& row) {
        std::string s;
        for (std::size_t c = 0; c < row.size(); ++c) {
            s += row[c];
            if (c + 1 < row.size()) s += std::string(width[c] - row[c].size() + 2, ' ');
        }
        std::fprintf(out, "%s\n", s.c_str());
    };
    line(header_);
    for (const auto& row : rows_) line(row);
}

}  // namespace autoheal::cli
