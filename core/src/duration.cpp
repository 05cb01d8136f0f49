#include "autoheal/core/duration.h"

#include <charconv>
#include <string>

namespace autoheal {
namespace {

// Seconds per unit, or 0 when `c` is not a unit.
std::int64_t UnitSeconds(char c) {
    switch (c) {
        case 's':
            return 1;
        case 'm':
            return 60;
        case 'h':
            return 3600;
        case 'd':
            return 86400;
        case 'w':
            return 7LL * 86400;
        default:
            return 0;
    }
}

}  // namespace

Result<std::int64_t> ParseDuration(std::string_view text) {
    std::string_view digits = text;
    std::int64_t unit = 1;
    if (!text.empty() && UnitSeconds(text.back()) != 0) {
        unit = UnitSeconds(text.back());
        digits.remove_suffix(1);
    }
    std::int64_t n = 0;
    const char* end = digits.data() + digits.size();
    auto [stop, ec] = std::from_chars(digits.data(), end, n);
    // from_chars takes a leading '-'; a duration has no sign.
    if (digits.empty() || digits.front() == '-' || ec != std::errc() || stop != end ||
        n > kMaxDurationSeconds / unit) {
        return MakeError(ErrorCode::kInvalid,
                         "'" + std::string(text) +
                             "' is not a duration: a whole number and a unit s, m, h, d or w "
                             "(45s, 90m, 12h, 7d, 2w; no unit: seconds; at most 3650d)");
    }
    return n * unit;
}

}  // namespace autoheal
