#include "autoheal/diag/paste_marks.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cstring>

#include "autoheal/diag/log_line.h"
#include "autoheal/diag/pattern.h"

namespace autoheal::diag {
namespace {

constexpr std::size_t kNone = std::string_view::npos;
// What only a paste shows is looked for in a text's first 64 KiB (colours without ESC), or in a
// text no longer than that (a terminal's wrap): where a paste is, at a cost a log does not notice.
constexpr std::size_t kHeadWindow = std::size_t{64} * 1024;
// A container's log shows its prefix from its first line: it is looked for in its first 4 KiB
// (a paste may open with the command that printed it).
constexpr std::size_t kContainerWindow = std::size_t{4} * 1024;
// The narrowest terminal whose wrap is undone: narrower "wraps" are a log's short lines.
constexpr std::size_t kMinWrapWidth = 60;
constexpr std::size_t kConsoleWidth = 80;

bool IsBlank(char c) { return c == ' ' || c == '\t'; }

// Where the line starting at `pos` ends (its '\n', or the end of `text`).
std::size_t LineEnd(std::string_view text, std::size_t pos) {
    const void* nl = std::memchr(text.data() + pos, '\n', text.size() - pos);
    return nl != nullptr ? static_cast<std::size_t>(static_cast<const char*>(nl) - text.data())
                         : text.size();
}

bool IsBlankLine(std::string_view line) {
    return std::all_of(line.begin(), line.end(), [](char c) { return IsBlank(c) || c == '\r'; });
}

std::size_t Indent(std::string_view line) {
    std::size_t n = 0;
    while (n < line.size() && IsBlank(line[n])) ++n;
    return n;
}

// Whether the line starting at `pos` is quoted: blanks, then '>'.
bool QuotedAt(std::string_view text, std::size_t pos) {
    while (pos < text.size() && IsBlank(text[pos])) ++pos;
    return pos < text.size() && text[pos] == '>';
}

// Whether `text` has an ESC byte or a quoted line: one pass that stops at the first, 16 bytes at
// a time where SSE2 is there (a log the agent reads has neither, and this is all it costs).
bool HasEscapeOrQuote(std::string_view text) {
    if (QuotedAt(text, 0)) return true;
    const char* d = text.data();
    const std::size_t n = text.size();
    std::size_t i = 0;
#if defined(__SSE2__)
    const __m128i nl = _mm_set1_epi8('\n');
    const __m128i esc = _mm_set1_epi8('\x1b');
    const __m128i gt = _mm_set1_epi8('>');
    const __m128i sp = _mm_set1_epi8(' ');
    const __m128i tab = _mm_set1_epi8('\t');
    for (; i + 17 <= n; i += 16) {
        const __m128i x = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i));
        const __m128i y = _mm_loadu_si128(reinterpret_cast<const __m128i*>(d + i + 1));
        // A newline followed by '>' or a blank (a line that may be quoted), or an ESC.
        const __m128i next = _mm_or_si128(
            _mm_or_si128(_mm_cmpeq_epi8(y, gt), _mm_cmpeq_epi8(y, sp)), _mm_cmpeq_epi8(y, tab));
        const int hits = _mm_movemask_epi8(
            _mm_or_si128(_mm_and_si128(_mm_cmpeq_epi8(x, nl), next), _mm_cmpeq_epi8(x, esc)));
        for (int bits = hits; bits != 0; bits &= bits - 1) {
            const std::size_t at = i + static_cast<std::size_t>(__builtin_ctz(bits));
            if (d[at] == '\x1b' || QuotedAt(text, at + 1)) return true;
        }
    }
#endif
    for (; i < n; ++i) {
        if (d[i] == '\x1b' || (d[i] == '\n' && QuotedAt(text, i + 1))) return true;
    }
    return false;
}

// The least indentation of a non-blank line (kNone: no such line).
std::size_t CommonIndent(std::string_view text) {
    std::size_t least = kNone;
    for (std::size_t pos = 0; pos < text.size() && least != 0;) {
        const std::size_t end = LineEnd(text, pos);
        const std::string_view line = text.substr(pos, end - pos);
        if (!IsBlankLine(line)) least = std::min(least, Indent(line));
        pos = end + 1;
    }
    return least;
}

// Whether the first non-blank line is indented: only then can every line be (checked in O(1) for
// a log, whose lines start at the margin).
bool FirstLineIndented(std::string_view text) {
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t end = LineEnd(text, pos);
        const std::string_view line = text.substr(pos, end - pos);
        if (!IsBlankLine(line)) return Indent(line) > 0;
        pos = end + 1;
    }
    return false;
}

// The length of a CSI sequence's tail from `pos` (just past "ESC["): parameter bytes, then
// intermediate bytes, then one final byte (ECMA-48 5.4). 0 when it is not one.
std::size_t CsiLength(std::string_view s, std::size_t pos) {
    std::size_t i = pos;
    while (i < s.size() && s[i] >= 0x30 && s[i] <= 0x3f) ++i;
    while (i < s.size() && s[i] >= 0x20 && s[i] <= 0x2f) ++i;
    if (i < s.size() && s[i] >= 0x40 && s[i] <= 0x7e) return i + 1 - pos;
    return 0;
}

// The length of an escape sequence whose ESC is at `pos` (at least the ESC itself): CSI
// ("ESC[1;31m"), OSC ("ESC]0;title BEL"), a character-set choice ("ESC(B"), or ESC and one byte.
std::size_t EscapeLength(std::string_view s, std::size_t pos) {
    const std::size_t next = pos + 1;
    if (next >= s.size()) return 1;
    if (s[next] == '[') return 2 + CsiLength(s, next + 1);
    if (s[next] == ']') {
        for (std::size_t i = next + 1; i < s.size(); ++i) {
            if (s[i] == '\a') return i + 1 - pos;
            if (s[i] == '\x1b' && i + 1 < s.size() && s[i + 1] == '\\') return i + 2 - pos;
        }
        return s.size() - pos;
    }
    if (std::strchr("()#%", s[next]) != nullptr && next + 1 < s.size()) return 3;
    return 2;
}

// A colour without its ESC byte, as a web page keeps it: "[0m", "[1;31m" (digits required, so
// "[mlx5_0]" stays). 0 when `pos` does not start one.
std::size_t BareSgrLength(std::string_view s, std::size_t pos) {
    std::size_t i = pos + 1;
    bool digit = false;
    while (i < s.size() && ((s[i] >= '0' && s[i] <= '9') || s[i] == ';')) {
        digit = digit || s[i] != ';';
        ++i;
    }
    return digit && i < s.size() && s[i] == 'm' ? i + 1 - pos : 0;
}

// Whether `head` (a text's start) shows escape sequences written out as text: in caret notation
// ("^[[0m", cat -v, less) or as rsyslog escapes a control character ("#033[0m"). They took
// columns of the terminal that showed them, as any other text does.
bool HasWrittenOutEscapes(std::string_view head) {
    return head.find("^[[") != std::string_view::npos ||
           head.find("033[") != std::string_view::npos;
}

// Appends `line` to `out` without escape sequences (and, with `bare`, colours without ESC).
void AppendWithoutEscapes(std::string_view line, bool bare, std::string* out) {
    for (std::size_t i = 0; i < line.size();) {
        std::size_t skip = 0;
        if (line[i] == '\x1b') {
            skip = EscapeLength(line, i);
        } else if (line[i] == '^' && i + 2 < line.size() && line[i + 1] == '[' &&
                   line[i + 2] == '[') {
            const std::size_t csi = CsiLength(line, i + 3);
            skip = csi != 0 ? 3 + csi : 0;  // "^[[0m", caret notation (cat -v, less)
        } else if ((line[i] == '#' || line[i] == '\\') && line.compare(i + 1, 4, "033[") == 0) {
            // "#033[0m": rsyslog's $EscapeControlCharactersOnReceive (on by default) writes a
            // control character as its three octal digits after the escape prefix, '#' as
            // Debian's rsyslog writes it, or a backslash.
            const std::size_t csi = CsiLength(line, i + 5);
            skip = csi != 0 ? 5 + csi : 0;
        } else if (bare && line[i] == '[') {
            skip = BareSgrLength(line, i);
        }
        if (skip != 0) {
            i += skip;
        } else {
            out->push_back(line[i++]);
        }
    }
}

// Drops the blanks and quote marks ("> ", "> > ", ">>") that start the line at `start` of `out`;
// what follows them (the quoted text's own indentation) stays. A '>' before other text is the
// line's own (">: Cannot allocate memory", the end of "<NAME>" a terminal's wrap cut off).
void Unquote(std::string* out, std::size_t start) {
    std::size_t i = start;
    while (i < out->size() && IsBlank((*out)[i])) ++i;
    std::size_t marks = i;
    while (marks < out->size() && (*out)[marks] == '>') ++marks;
    if (marks == i || (marks < out->size() && !IsBlank((*out)[marks]) && (*out)[marks] != '\r'))
        return;
    while (i < out->size() && (*out)[i] == '>') {
        ++i;
        if (i < out->size() && (*out)[i] == ' ') ++i;
    }
    out->erase(start, i - start);
}

// Whether the text's start shows a line of a container's log as kubelet writes it (the CRI log
// format): "2026-12-01T10:00:00.123456789Z stderr F ", as `kubectl logs --prefix` prints it
// (several pods' or containers' lines interleaved): "[pod/trainer-0/pytorch] ", or as `docker
// compose logs` and `up` print it: the container's name, which ends in its service's replica
// number ("trainer-1", "project_trainer_1"), padded past the longest name, then "| " (so two
// blanks at least before the bar; "gpu-nd-014 | ", a host before a health check's line, is not).
bool HasContainerPrefix(std::string_view head) {
    static const RE2 kCompose(R"((?m)^[A-Za-z][\w.-]*[-_]\d+  +\| )", PatternOptions());
    return head.find(" stderr F ") != kNone || head.find(" stdout F ") != kNone ||
           head.find(" stderr P ") != kNone || head.find(" stdout P ") != kNone ||
           head.starts_with("[pod/") || head.find("\n[pod/") != kNone ||
           (head.find(" | ") != kNone &&
            RE2::PartialMatch(re2::StringPiece(head.data(), head.size()), kCompose));
}

// Drops the CRI log prefix that starts the line at `start` of `out` (the runtime's time, the
// stream and the tags: F a whole line, P a piece of a longer one), kubectl's "[pod/NAME/
// CONTAINER] " or docker compose's "NAME-1  | ". What the container printed stays, with its own
// prefixes (a dmesg run in a pod keeps its times). Whether there was one.
bool DropContainerPrefix(std::string* out, std::size_t start) {
    static const RE2 kCri(R"(\s*\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:\d\d) )"
                          R"((?:stdout|stderr) [A-Z](?::[A-Z])*(?: |$))"
                          R"(|\[pod/[^/\]\s]+/[^/\]\s]+\](?: |$))"
                          R"(|[A-Za-z][\w.-]*[-_]\d+  +\|(?: |$))",
                          PatternOptions());
    re2::StringPiece in(out->data() + start, out->size() - start);
    if (!RE2::Consume(&in, kCri)) return false;
    out->erase(start, static_cast<std::size_t>(in.data() - out->data()) - start);
    return true;
}

// `text` with `indent` leading blanks taken off every line (fewer where a blank line has fewer).
std::string Dedent(std::string_view text, std::size_t indent) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t end = LineEnd(text, pos);
        const std::string_view line = text.substr(pos, end - pos);
        out.append(line.substr(std::min(indent, Indent(line))));
        if (end < text.size()) out.push_back('\n');
        pos = end + 1;
    }
    return out;
}

// `text` without the indentation all its non-blank lines share, or nothing when they share none.
std::optional<std::string> Dedented(std::string_view text) {
    if (!FirstLineIndented(text)) return std::nullopt;
    const std::size_t indent = CommonIndent(text);
    if (indent == 0 || indent == kNone) return std::nullopt;
    return Dedent(text, indent);
}

// The columns a terminal gives `line`: its UTF-8 code points, less a CR at its end.
std::size_t Columns(std::string_view line) {
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    std::size_t n = 0;
    for (const char c : line) n += (static_cast<unsigned char>(c) & 0xC0) != 0x80;
    return n;
}

// Whether `before` and `line` are rows of a drawn table (nvidia-smi's): one ends with its border
// and the next starts with one.
bool TableRows(std::string_view before, std::string_view line) {
    while (!before.empty() && (before.back() == '\r' || IsBlank(before.back()))) {
        before.remove_suffix(1);
    }
    const std::size_t start = line.find_first_not_of(" \t");
    return !before.empty() && (before.back() == '|' || before.back() == '+') &&
           start != std::string_view::npos && (line[start] == '|' || line[start] == '+');
}

// Whether `before` ends inside a word that `line` goes on with: a letter or digit, then a
// lower-case letter.
bool WordCut(std::string_view before, std::string_view line) {
    while (!before.empty() && before.back() == '\r') before.remove_suffix(1);
    return !before.empty() && !line.empty() &&
           std::isalnum(static_cast<unsigned char>(before.back())) != 0 &&
           std::islower(static_cast<unsigned char>(line.front())) != 0;
}

// Whether `line` may go on from `before`, as a terminal's wrap leaves it: not blank, not
// starting as `before` does (a wrap's pieces differ; lines that start alike are records), and
// a word cut in two or no prefix of its own (a time, a host, a program's tag, a kmsg or PRI
// header starts a record).
bool Continues(std::string_view before, std::string_view line) {
    if (IsBlankLine(line) || TableRows(before, line)) return false;
    // A record of the same program again ("host:pid:tid [dev] NCCL ...", "  File ..."), or the
    // same line again.
    constexpr std::size_t kSameStart = 8;
    if (line.size() >= kSameStart && before.substr(0, kSameStart) == line.substr(0, kSameStart)) {
        return false;
    }
    // A word cut in two goes on, whatever the rest looks like ("...errors det" + "ected: [
    // 3606.832215] NVRM: ..." is no pdsh host's line).
    if (WordCut(before, line)) return true;
    const LogLine parsed = ParseLogLine(line);
    return parsed.time.empty() && parsed.host.empty() && parsed.tag.empty() && parsed.facility < 0;
}

// The width a terminal hard-wrapped `text` at, for a paste (a text of at most 64 KiB; a log
// file is read as its programs wrote it): its longest lines have exactly W columns (at least
// 60), and at least two of them go on in a shorter line (one that starts with no prefix of its
// own, or goes on with a word cut in two), one of them with a word cut in two, and the lines
// almost as long (7/8 W and more, a wrap's last pieces aside) are no more than those exactly W
// long (a log's long lines vary in length; a wrap's pieces fill the terminal). At 80 columns,
// one such line is enough. 0 when it was not wrapped.
std::size_t WrapWidth(std::string_view text) {
    if (text.size() > kHeadWindow) return 0;  // a log file's chunk, not a paste
    std::size_t width = 0;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t end = LineEnd(text, pos);
        width = std::max(width, Columns(text.substr(pos, end - pos)));
        pos = end + 1;
    }
    if (width < kMinWrapWidth) return 0;
    std::size_t full = 0, near = 0, going_on = 0, cut = 0;
    std::string_view before;
    bool before_full = false;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t end = LineEnd(text, pos);
        const std::string_view line = text.substr(pos, end - pos);
        const bool piece = before_full && Continues(before, line);
        const std::size_t cols = Columns(line);
        going_on += piece && cols < width;  // where a wrapped line ends
        cut += piece && WordCut(before, line);
        before_full = cols == width;
        full += before_full;
        near += !piece && !before_full && cols * 8 >= width * 7;  // a last piece: any length
        before = line;
        pos = end + 1;
    }
    // One wrapped line is enough at 80 columns, a serial console's and a classic terminal's
    // width (a log's longest line is seldom exactly that long); elsewhere two are wanted.
    // Nor is a text that fits 80 columns laid out by the length of its lines (MPI's 74-dash
    // banners, 78-column tables).
    if (width == kConsoleWidth) return going_on >= 1 ? width : 0;
    return going_on >= 2 && cut >= 1 && near <= full ? width : 0;
}

// `text` with each line of `width` columns joined to the line that goes on from it (and that
// one's to the next, while each fills the terminal); a line joined to the one before it is left
// empty, so the lines after keep their numbers.
std::string Unwrap(std::string_view text, std::size_t width) {
    std::string out;
    out.reserve(text.size());
    bool joining = false;  // the line just appended fills the terminal, and may go on
    std::string_view before;
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t end = LineEnd(text, pos);
        const std::string_view line = text.substr(pos, end - pos);
        const bool goes_on = joining && Continues(before, line);
        std::size_t empty_lines = 0;
        if (goes_on) {
            // Its place: back before the newlines written since the line it continues.
            const std::size_t at = out.find_last_not_of('\n');
            empty_lines = out.size() - at - 1;
            out.resize(at + 1);
            if (!out.empty() && out.back() == '\r') out.pop_back();
        }
        out.append(line);
        out.append(empty_lines, '\n');
        if (end < text.size()) out.push_back('\n');
        joining = Columns(line) == width;
        before = line;
        pos = end + 1;
    }
    return out;
}

// `text` without quote marks, escape sequences (also in caret notation or as syslog escaped
// them), container log prefixes and common indentation, or nothing when it has none.
std::optional<std::string> StripMarks(std::string_view text) {
    // A paste indented as a whole loses that first, so that a line starting with '>' after it
    // (Python's ">>> " prompt in a Markdown code block) keeps the same column as the others.
    std::optional<std::string> dedented = Dedented(text);
    if (dedented) text = *dedented;
    // Colours without their ESC byte, in caret notation or escaped by syslog, and a container
    // log's prefixes are looked for where a paste starts: searching all of a large log for "[0m"
    // would cost more than the rest of this.
    const std::string_view head = text.substr(0, kHeadWindow);
    const bool bare = head.find("[0m") != std::string_view::npos;
    const bool container = HasContainerPrefix(text.substr(0, kContainerWindow));
    const bool marks = bare || container || HasEscapeOrQuote(text) || HasWrittenOutEscapes(head);
    if (!marks) return dedented;
    std::string out;
    out.reserve(text.size());
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t end = LineEnd(text, pos);
        const std::size_t start = out.size();
        AppendWithoutEscapes(text.substr(pos, end - pos), bare, &out);
        Unquote(&out, start);
        // A quoted container log ("> TIME stderr F ..."), or a container's quoted text.
        bool dropped = false;
        while (container && DropContainerPrefix(&out, start)) dropped = true;
        if (dropped) Unquote(&out, start);
        if (end < text.size()) out.push_back('\n');
        pos = end + 1;
    }
    if (auto dedented = Dedented(out)) return dedented;
    return out;
}

}  // namespace

std::optional<std::string> StripPasteMarks(std::string_view text) {
    std::optional<std::string> clean = StripMarks(text);
    const std::string_view marks_off = clean ? std::string_view(*clean) : text;
    // A terminal's wrap last: its width is that of the text as the terminal showed it.
    if (const std::size_t width = WrapWidth(marks_off)) return Unwrap(marks_off, width);
    // Escapes written out as text filled columns of the terminal like any other text: a wrap is
    // undone before they go.
    if (clean && HasWrittenOutEscapes(text.substr(0, kHeadWindow))) {
        if (const std::size_t width = WrapWidth(text)) {
            std::string unwrapped = Unwrap(text, width);
            if (std::optional<std::string> both = StripMarks(unwrapped)) return both;
            return unwrapped;
        }
    }
    return clean;
}

}  // namespace autoheal::diag
