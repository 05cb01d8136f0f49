#include "autoheal/remediation/node_reason.h"

#include <cctype>
#include <charconv>

#include "autoheal/core/escape.h"

namespace autoheal::remediation {
namespace {

// Blanks and ';' become '_' (a value is one word), then control characters are escaped.
std::string CleanValue(std::string_view value) {
    std::string out(value);
    for (char& c : out) {
        if (c == ' ' || c == '\n' || c == '\r' || c == '\t' || c == '\v' || c == '\f' || c == ';') {
            c = '_';
        }
    }
    return EscapeControl(out);
}

// Newlines and tabs become spaces, other control characters are escaped.
std::string CleanNote(std::string_view note) {
    std::string out(note);
    for (char& c : out) {
        if (c == '\n' || c == '\r' || c == '\t') c = ' ';
    }
    return EscapeControl(out);
}

bool IsKey(std::string_view key) {
    if (key.empty()) return false;
    for (char c : key) {
        if (!(c >= 'a' && c <= 'z') && c != '_') return false;
    }
    return true;
}

std::string_view Trim(std::string_view s) {
    while (!s.empty() && s.front() == ' ') s.remove_prefix(1);
    while (!s.empty() && s.back() == ' ') s.remove_suffix(1);
    return s;
}

// The next space-separated word of `*rest` (consumed).
std::string_view NextWord(std::string_view* rest) {
    *rest = Trim(*rest);
    const std::size_t end = rest->find(' ');
    std::string_view word = rest->substr(0, end);
    rest->remove_prefix(end == std::string_view::npos ? rest->size() : end);
    return word;
}

}  // namespace

std::optional<std::string> NodeReason::Field(std::string_view key) const {
    for (const auto& [k, v] : fields) {
        if (k == key) return v;
    }
    return std::nullopt;
}

bool ReasonIsOurs(std::string_view reason) { return reason.rfind(kReasonPrefix, 0) == 0; }

std::string FormatReason(const NodeReason& reason) {
    std::string out = std::string(kReasonPrefix) + " " + std::string(diag::ToString(reason.cause));
    for (const auto& [key, value] : reason.fields) {
        if (value.empty() || !IsKey(key) || key == "inc") continue;
        out += " " + key + "=" + CleanValue(value);
    }
    if (reason.incident) out += " inc=" + std::to_string(*reason.incident);
    const std::string note = CleanNote(Trim(reason.note));
    if (!note.empty() && out.size() + 2 < kMaxReasonBytes) {
        std::string tail = "; " + note;
        if (out.size() + tail.size() > kMaxReasonBytes) {
            tail = tail.substr(0, kMaxReasonBytes - out.size() - 3) + "...";
        }
        out += tail;
    }
    return out;
}

std::optional<NodeReason> ParseReason(std::string_view text) {
    if (!ReasonIsOurs(text)) return std::nullopt;
    text.remove_prefix(std::string_view(kReasonPrefix).size());
    NodeReason reason;
    const std::size_t semicolon = text.find(';');
    std::string_view rest = text.substr(0, semicolon);
    if (semicolon != std::string_view::npos) reason.note = Trim(text.substr(semicolon + 1));

    std::string_view word = NextWord(&rest);
    // Older reasons: "autoheal: lemon: ..." and "autoheal: <cause> gpu=...: <evidence>".
    if (!word.empty() && word.back() == ':') word.remove_suffix(1);
    reason.cause = diag::ParseCause(word).value_or(diag::Cause::kUnknown);
    while (!Trim(rest).empty()) {
        std::string_view before = Trim(rest);
        std::string_view token = NextWord(&rest);
        const std::size_t eq = token.find('=');
        if (eq == std::string_view::npos || !IsKey(token.substr(0, eq)) || eq + 1 == token.size()) {
            // Not key=value: an older reason's free text, kept whole as the note.
            const std::string old_note(before);
            reason.note = reason.note.empty() ? old_note : old_note + "; " + reason.note;
            break;
        }
        std::string_view key = token.substr(0, eq);
        std::string_view value = token.substr(eq + 1);
        // Older reasons end their fields with ':' ("gpu=0000:3b:00.0: xid 79 ..."): the rest is
        // the note.
        if (value.back() == ':' && !Trim(rest).empty()) {
            value.remove_suffix(1);
            reason.fields.emplace_back(std::string(key), std::string(value));
            reason.note = std::string(Trim(rest)) + (reason.note.empty() ? "" : "; " + reason.note);
            break;
        }
        if (key == "inc") {
            std::int64_t id = 0;
            auto [end, ec] = std::from_chars(value.data(), value.data() + value.size(), id);
            if (ec == std::errc() && end == value.data() + value.size()) {
                reason.incident = id;
                continue;
            }
        }
        reason.fields.emplace_back(std::string(key), std::string(value));
    }
    return reason;
}

}  // namespace autoheal::remediation
