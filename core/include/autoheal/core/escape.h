// Text from logs and job output shown to people (CLI tables, log messages, node reasons,
// AdminComment, the explanation appended to the job's output): control characters are written
// as \xHH and a backslash as "\\", so nothing a job printed can move a cursor, recolour a
// terminal or forge a line of its own, and the text still reads back unambiguously.
#pragma once

#include <string>
#include <string_view>

namespace autoheal {

// Bytes 0x00-0x1f and 0x7f become "\xHH" (lower-case hex), '\\' becomes "\\\\"; every other
// byte, UTF-8 included, is kept.
std::string EscapeControl(std::string_view text);

}  // namespace autoheal
