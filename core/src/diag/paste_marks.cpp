#include "autoheal/diag/paste_marks.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

#include <algorithm>
#include <cstring>

namespace autoheal::diag {
namespace {

constexpr std::size_t kNone = std::string_view::npos;
constexpr std::size_t kBareColourWindow = std::size_t{64} * 1024;

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
// what follows them (the quoted text's own indentation) stays.
void Unquote(std::string* out, std::size_t start) {
    std::size_t i = start;
    while (i < out->size() && IsBlank((*out)[i])) ++i;
    if (i >= out->size() || (*out)[i] != '>') return;
    while (i < out->size() && (*out)[i] == '>') {
        ++i;
        if (i < out->size() && (*out)[i] == ' ') ++i;
    }
    out->erase(start, i - start);
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

}  // namespace

std::optional<std::string> StripPasteMarks(std::string_view text) {
    // Colours without their ESC byte, and in caret notation, are looked for where a paste
    // starts: searching all of a large log for "[0m" would cost more than the rest of this.
    const std::string_view head = text.substr(0, kBareColourWindow);
    const bool bare = head.find("[0m") != std::string_view::npos;
    const bool marks = bare || HasEscapeOrQuote(text) || head.find("^[[") != std::string_view::npos;
    if (!marks) return Dedented(text);
    std::string out;
    out.reserve(text.size());
    for (std::size_t pos = 0; pos < text.size();) {
        const std::size_t end = LineEnd(text, pos);
        const std::size_t start = out.size();
        AppendWithoutEscapes(text.substr(pos, end - pos), bare, &out);
        Unquote(&out, start);
        if (end < text.size()) out.push_back('\n');
        pos = end + 1;
    }
    if (auto dedented = Dedented(out)) return dedented;
    return out;
}

}  // namespace autoheal::diag
