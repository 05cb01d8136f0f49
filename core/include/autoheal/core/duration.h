// The one duration grammar of autoheal: rules (`within:`), autoheal.yaml (`window:`) and the
// CLI (`--since`, `--until`, `autoheal report`'s options) all read durations here.
//
//   duration := digits [unit]      unit := s | m | h | d | w     (no unit: seconds)
//
// A whole number, no sign, no spaces, one unit ("1h30m" is refused); at most 3650 days. The
// grammar is documented in docs/rules.md ("Durations").
#pragma once

#include <cstdint>
#include <string_view>

#include "autoheal/core/result.h"

namespace autoheal {

inline constexpr std::int64_t kMaxDurationSeconds = 3650LL * 86400;

// Seconds, or kInvalid naming the text and the grammar.
Result<std::int64_t> ParseDuration(std::string_view text);

}  // namespace autoheal
