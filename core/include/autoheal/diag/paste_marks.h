// What pasting and terminals add to a log, taken off before any rule reads it, so that a rule
// written for the program's own output (an anchored `^\s*State: Down` of ibstat, a traceback's
// `  File "..."`) reads the same text quoted in an e-mail, coloured by a logger or indented as a
// Markdown code block:
//   - "> " quote marks at the start of a line, at any depth ("> > ", ">>"), after any blanks;
//   - ANSI escape sequences anywhere (colours "\x1b[1;31m", "\x1b(B", OSC titles), also as a
//     paste keeps them without their ESC byte ("[0m", "[1;31m"), in caret notation ("^[[0m") or
//     as rsyslog escapes control characters ("#033[0m"), those when the first 64 KiB of the
//     text show them (a paste's start, not a log's);
//   - the prefix kubelet writes before each line of a container's log (Kubernetes' CRI log
//     format, "2026-12-01T10:00:00.123456789Z stderr F ") or `kubectl logs --prefix` before
//     each pod's ("[pod/trainer-0/pytorch] "), when the first 4 KiB show one: what the container
//     printed is read as if it stood alone;
//   - the indentation common to every non-blank line (a paste indented as a whole);
//   - a terminal's hard wrap (a line longer than the terminal copied as pieces of its width), in
//     a paste of at most 64 KiB that shows one: each piece that fills the width is joined to the
//     line that goes on from it (one with no prefix of its own, or a word cut in two), and that
//     line is left empty.
// Line numbers stay those of the input: what goes is bytes inside lines, and the pieces of a
// wrapped line are read as its first.
#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace autoheal::diag {

// `text` (whole lines) without the marks above, or nothing when it has none: the usual case,
// found without copying.
std::optional<std::string> StripPasteMarks(std::string_view text);

}  // namespace autoheal::diag
