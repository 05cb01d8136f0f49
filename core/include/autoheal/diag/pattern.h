// How signature patterns are compiled everywhere (loader, scanner, tests): RE2 reading bytes
// (Latin-1), not UTF-8 characters. Logs are bytes and not always valid UTF-8, and Hyperscan,
// the scanner's prefilter, reads bytes: with both byte-oriented, the prefilter never misses a
// line RE2 would match (`.` is one byte for both; a UTF-8 literal in a pattern still matches the
// same bytes in the log).
#pragma once

#include <re2/re2.h>

#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autoheal::diag {

inline RE2::Options PatternOptions() {
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);
    options.set_log_errors(false);
    return options;
}

// Matches `text` against a signature's pattern and appends each named group that took part in
// the match to `fields` (the scanner's reading of one line, for example lines at load time).
inline bool MatchFields(const RE2& re, std::string_view text,
                        std::vector<std::pair<std::string, std::string>>* fields) {
    std::vector<re2::StringPiece> groups(static_cast<std::size_t>(re.NumberOfCapturingGroups()) +
                                         1);
    // RE2's StringPiece is absl::string_view on Debian 13 (built without the std alias).
    if (!re.Match(re2::StringPiece(text.data(), text.size()), 0, text.size(), RE2::UNANCHORED,
                  groups.data(), static_cast<int>(groups.size()))) {
        return false;
    }
    for (const auto& [name, index] : re.NamedCapturingGroups()) {
        const re2::StringPiece& g = groups[static_cast<std::size_t>(index)];
        if (g.data() != nullptr) fields->emplace_back(name, std::string(g));
    }
    return true;
}

}  // namespace autoheal::diag
