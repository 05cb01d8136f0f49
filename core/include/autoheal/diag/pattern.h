// How signature patterns are compiled everywhere (loader, scanner, tests): RE2 reading bytes
// (Latin-1), not UTF-8 characters. Logs are bytes and not always valid UTF-8, and Hyperscan,
// the scanner's prefilter, reads bytes: with both byte-oriented, the prefilter never misses a
// line RE2 would match (`.` is one byte for both; a UTF-8 literal in a pattern still matches the
// same bytes in the log).
#pragma once

#include <re2/re2.h>

namespace autoheal::diag {

inline RE2::Options PatternOptions() {
    RE2::Options options;
    options.set_encoding(RE2::Options::EncodingLatin1);
    options.set_log_errors(false);
    return options;
}

}  // namespace autoheal::diag
