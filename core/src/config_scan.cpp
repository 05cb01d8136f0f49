// What a program can learn about autoheal.yaml without a YAML parser (config_scan.h). Kept apart
// from config.cpp so that the plugins, which sbatch and slurmctld load, need no yaml-cpp
// (docs/reliability.md, "Load").
//
// The scanner works in two passes. Lex() turns the text into one Entry per line that starts a
// node, at its indentation, and swallows the lines that continue a value (a plain or block
// scalar's further lines, a flow collection or quoted scalar left open at the end of a line), so
// no `key:` inside another section's value is mistaken for a setting. ScanSubmitSettings() then
// walks the top-level entries and the children of `policy:` and `health:`.
#include "autoheal/core/config_scan.h"

#include <algorithm>
#include <filesystem>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "autoheal/core/files.h"

namespace autoheal {
namespace {

// One line that starts a node.
struct Entry {
    enum class Form { kEmpty, kScalar, kOther };
    int line = 0;              // 1-based
    std::size_t indent = 0;    // column of its first character after any "- "
    bool is_key = false;       // `key: value` (else a list item or a bare value)
    bool in_sequence = false;  // after one or more "- "
    std::string key;
    std::size_t key_column = 0;
    std::size_t value_column = 0;
    Form form = Form::kEmpty;  // kEmpty: nothing after the ':' (a nested block may follow)
    std::string value;         // kScalar: quotes and trailing comment removed
    const char* other = "";    // kOther: what the value is, for messages
    bool multiline = false;    // lines after it continue its value
};

// A flow collection or quoted scalar not closed yet.
struct OpenSpan {
    int depth = 0;   // unclosed '[' and '{'
    char quote = 0;  // inside '...' or "..."
    bool token_start = true;
    bool open() const { return depth > 0 || quote != 0; }
};

// Scans `s`, a value's start or a line continuing an open span. Stops at a comment, and once a
// span that was open closes at depth 0. Returns where it stopped.
std::size_t Feed(std::string_view s, OpenSpan& span) {
    for (std::size_t i = 0; i < s.size(); ++i) {
        const char c = s[i];
        if (span.quote == '"') {
            if (c == '\\') {
                ++i;
            } else if (c == '"') {
                span.quote = 0;
                if (span.depth == 0) return i + 1;
            }
            continue;
        }
        if (span.quote == '\'') {
            if (c == '\'' && i + 1 < s.size() && s[i + 1] == '\'') {
                ++i;
            } else if (c == '\'') {
                span.quote = 0;
                if (span.depth == 0) return i + 1;
            }
            continue;
        }
        if (c == '#' && (i == 0 || s[i - 1] == ' ' || s[i - 1] == '\t')) return i;
        if ((c == '"' || c == '\'') && span.token_start) {
            span.quote = c;
        } else if (c == '[' || c == '{') {
            ++span.depth;
        } else if ((c == ']' || c == '}') && span.depth > 0) {
            if (--span.depth == 0) return i + 1;
        }
        if (c != ' ' && c != '\t') span.token_start = c == '[' || c == '{' || c == ',' || c == ':';
    }
    return s.size();
}

std::string_view TrimRight(std::string_view s) {
    const std::size_t end = s.find_last_not_of(" \t");
    return end == std::string_view::npos ? std::string_view() : s.substr(0, end + 1);
}

bool OnlyComment(std::string_view s) {
    const std::size_t i = s.find_first_not_of(" \t");
    return i == std::string_view::npos || s[i] == '#';
}

// Splits lines into entries; owns the state that carries from one line to the next.
class Lexer {
  public:
    explicit Lexer(std::string_view source) : source_(source) {}
    Result<std::vector<Entry>> Lex(std::string_view text);

  private:
    bool Continues(std::string_view line, std::size_t indent);
    Entry Line(std::string_view line, int number, std::size_t indent);
    std::size_t KeyEnd(std::string_view line, std::size_t pos, Entry& e) const;
    void Value(std::string_view line, std::size_t col, Entry& e);
    void Quoted(std::string_view v, Entry& e);

    std::string_view source_;
    std::vector<Entry> entries_;
    OpenSpan open_;
    std::size_t line_indent_ = 0;
    bool raw_ = false;  // lines indented deeper than raw_above_ continue the last value
    std::size_t raw_above_ = 0;
};

Result<std::vector<Entry>> Lexer::Lex(std::string_view text) {
    if (text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);
    bool started = false;
    int number = 0;
    while (!text.empty()) {
        const std::size_t nl = text.find('\n');
        std::string_view line = text.substr(0, nl);
        text.remove_prefix(nl == std::string_view::npos ? text.size() : nl + 1);
        ++number;
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        const std::size_t indent = line.find_first_not_of(' ');
        if (Continues(line, indent)) continue;
        if (line[indent] == '\t') {
            return MakeError(ErrorCode::kInvalid,
                             std::string(source_) + ":" + std::to_string(number) + ":" +
                                 std::to_string(indent + 1) +
                                 ": a tab in the indentation (YAML indents with spaces)");
        }
        const bool marker = indent == 0 &&
                            (line.substr(0, 3) == "---" || line.substr(0, 3) == "...") &&
                            (line.size() == 3 || line[3] == ' ' || line[3] == '\t');
        if (marker && (started || line[0] == '.')) break;  // the first document only
        if (marker && !OnlyComment(line.substr(3))) {
            return MakeError(ErrorCode::kInvalid,
                             std::string(source_) + ":" + std::to_string(number) +
                                 ":5: put the settings on the lines after '---'");
        }
        if (marker || (line[0] == '%' && !started)) continue;
        started = true;
        entries_.push_back(Line(line, number, indent));
    }
    return std::move(entries_);
}

// Whether the line is blank, a comment, or continues the value of the entry before it.
bool Lexer::Continues(std::string_view line, std::size_t indent) {
    if (open_.open()) {
        Feed(line, open_);
        entries_.back().multiline = true;
        return true;
    }
    if (indent == std::string_view::npos || line[indent] == '#') return true;
    if (raw_ && indent > raw_above_) {
        entries_.back().multiline = true;
        return true;
    }
    raw_ = false;
    return false;
}

Entry Lexer::Line(std::string_view line, int number, std::size_t indent) {
    Entry e;
    e.line = number;
    line_indent_ = indent;
    std::size_t pos = indent;
    // A list item's content is read like a line of its own.
    while (line[pos] == '-' && (pos + 1 == line.size() || line[pos + 1] == ' ')) {
        e.in_sequence = true;
        pos = line.find_first_not_of(' ', pos + 1);
        if (pos == std::string_view::npos) {
            e.indent = indent;
            return e;
        }
    }
    e.indent = pos;
    const std::size_t colon = KeyEnd(line, pos, e);
    if (colon == std::string_view::npos) {
        Value(line, pos, e);  // a bare value
        return e;
    }
    e.is_key = true;
    e.key_column = pos;
    Value(line, colon + 1, e);
    return e;
}

// The position of the ':' ending the key at `pos`, setting e.key; npos when the line holds no
// `key:`.
std::size_t Lexer::KeyEnd(std::string_view line, std::size_t pos, Entry& e) const {
    auto ends_key = [&](std::size_t i) {
        return i < line.size() && line[i] == ':' &&
               (i + 1 == line.size() || line[i + 1] == ' ' || line[i + 1] == '\t');
    };
    const char c = line[pos];
    if (c == '"' || c == '\'') {
        OpenSpan span;
        const std::size_t end = pos + Feed(line.substr(pos), span);
        if (span.open()) return std::string_view::npos;
        const std::size_t colon = line.find_first_not_of(" \t", end);
        if (!ends_key(colon)) return std::string_view::npos;
        e.key = std::string(line.substr(pos + 1, end - pos - 2));
        return colon;
    }
    if (std::string_view("[{?|>!&*%@`,]}").find(c) != std::string_view::npos) {
        return std::string_view::npos;
    }
    for (std::size_t i = pos; i < line.size(); ++i) {
        if (line[i] == '#' && i > pos && (line[i - 1] == ' ' || line[i - 1] == '\t')) break;
        if (ends_key(i)) {
            e.key = std::string(TrimRight(line.substr(pos, i - pos)));
            return i;
        }
    }
    return std::string_view::npos;
}

// Reads the value starting at `col` (after any blanks) and sets what the next lines are.
void Lexer::Value(std::string_view line, std::size_t col, Entry& e) {
    col = std::min(line.find_first_not_of(" \t", col), line.size());
    e.value_column = col;
    std::string_view v = line.substr(col);
    // Anchors and tags are not read, but the value after them still decides the next lines.
    while (!v.empty() && (v[0] == '&' || v[0] == '!')) {
        e.form = Entry::Form::kOther;
        e.other = "an anchor or a tag";
        const std::size_t space = v.find_first_of(" \t");
        v = space == std::string_view::npos ? std::string_view() : v.substr(space);
        v.remove_prefix(std::min(v.find_first_not_of(" \t"), v.size()));
    }
    if (OnlyComment(v)) return;  // a nested block may follow
    raw_ = true;                 // after a scalar, deeper lines continue it
    raw_above_ = line_indent_;
    const bool had_properties = e.form == Entry::Form::kOther;
    if (v[0] == '[' || v[0] == '{') {
        e.form = Entry::Form::kOther;
        e.other = "a flow collection";
        Feed(v, open_);
    } else if (v[0] == '"' || v[0] == '\'') {
        Quoted(v, e);
    } else if (v[0] == '|' || v[0] == '>' || v[0] == '*') {
        e.form = Entry::Form::kOther;
        e.other = v[0] == '*' ? "an alias" : "a block scalar";
    } else {
        const std::size_t comment = v.find(" #");
        const std::size_t tab_comment = v.find("\t#");
        e.form = Entry::Form::kScalar;
        e.value = std::string(TrimRight(v.substr(0, std::min(comment, tab_comment))));
    }
    if (had_properties) e.form = Entry::Form::kOther;
}

void Lexer::Quoted(std::string_view v, Entry& e) {
    OpenSpan span;
    const std::size_t end = Feed(v, span);
    e.form = Entry::Form::kOther;
    if (span.open()) {
        open_ = span;
        e.other = "a quoted value over several lines";
        return;
    }
    if (!OnlyComment(v.substr(end))) {
        e.other = "text after a quoted value";
        return;
    }
    const std::string_view inner = v.substr(1, end - 2);
    if (v[0] == '"' && inner.find('\\') != std::string_view::npos) {
        e.other = "an escape sequence";
        return;
    }
    e.form = Entry::Form::kScalar;
    for (std::size_t i = 0; i < inner.size(); ++i) {
        e.value += inner[i];
        if (v[0] == '\'' && inner[i] == '\'') ++i;  // '' is one quote
    }
}

// Reads what the job_submit plugin needs from the entries.
// A plain decimal whole number of at most 9 digits ("0", "16"; no sign, no leading zero).
std::optional<long long> ScanWholeNumber(const std::string& v) {
    if (v.empty() || v.size() > 9 || v.find_first_not_of("0123456789") != std::string::npos ||
        (v.size() > 1 && v[0] == '0')) {
        return std::nullopt;
    }
    return std::stoll(v);
}

// A decimal number from 0 to 1 ("0.1", "1", ".25"): digits and at most one '.', read by hand
// (std::from_chars and strtod would bring libm or the locale into the plugin).
std::optional<double> ScanFraction(const std::string& v) {
    if (v.empty() || v.size() > 15 || v.find_first_not_of("0123456789.") != std::string::npos ||
        std::count(v.begin(), v.end(), '.') > 1 || v == ".") {
        return std::nullopt;
    }
    long long digits = 0;
    long long scale = 1;
    bool after_point = false;
    for (char c : v) {
        if (c == '.') {
            after_point = true;
            continue;
        }
        digits = digits * 10 + (c - '0');
        if (after_point) scale *= 10;
    }
    const double f = static_cast<double>(digits) / static_cast<double>(scale);
    if (f > 1) return std::nullopt;
    return f;
}

class SubmitSettingsReader {
  public:
    explicit SubmitSettingsReader(std::string_view source) : source_(source) {}
    Result<SubmitSettings> Read(const std::vector<Entry>& entries);

  private:
    Error At(const Entry& e, std::size_t column, const std::string& what) const {
        return MakeError(ErrorCode::kInvalid, std::string(source_) + ":" + std::to_string(e.line) +
                                                  ":" + std::to_string(column + 1) + ": " + what);
    }
    // The error for a value that is not what `name` expects (`expected`).
    Error Bad(const Entry& e, const std::string& name, const std::string& expected) const;
    bool FirstTime(const Entry& e, const std::string& name, Result<bool>* error);
    Result<bool> Top(const Entry& e);
    Result<bool> Child(const std::string& section, const Entry& e);

    std::string_view source_;
    SubmitSettings out_;
    bool quarantine_set_ = false;
    std::set<std::string> seen_;
};

Error SubmitSettingsReader::Bad(const Entry& e, const std::string& name,
                                const std::string& expected) const {
    std::string what = name + ": expected " + expected;
    if (e.form == Entry::Form::kOther || e.multiline) {
        what += ", as one `key: value` line (found ";
        what += e.form == Entry::Form::kOther ? e.other : "a value over several lines";
        what += ")";
    }
    return At(e, e.value_column, what);
}

bool SubmitSettingsReader::FirstTime(const Entry& e, const std::string& name, Result<bool>* error) {
    if (seen_.insert(name).second) return true;
    *error = At(e, e.key_column, "'" + name + "' is set twice");
    return false;
}

Result<bool> SubmitSettingsReader::Top(const Entry& e) {
    if (e.key != "state_dir" && e.key != "policy" && e.key != "health") return true;
    Result<bool> error = true;
    if (!FirstTime(e, e.key, &error)) return error;
    const bool scalar = e.form == Entry::Form::kScalar && !e.multiline;
    if (e.key == "state_dir") {
        if (!scalar || e.value.empty() || e.value.front() != '/') {
            return Bad(e, "state_dir", "an absolute path");
        }
        out_.state_dir = e.value;
    } else if (e.form != Entry::Form::kEmpty) {
        return Bad(e, e.key, "a mapping of settings on the lines under it");
    }
    return true;
}

Result<bool> SubmitSettingsReader::Child(const std::string& section, const Entry& e) {
    const std::string name = section + "." + e.key;
    const bool read = name == "policy.max_auto_resume" || name == "policy.quarantine_file" ||
                      name == "policy.quarantine_max_nodes" ||
                      name == "policy.quarantine_max_fraction" ||
                      name == "policy.quarantine_max_hours" || name == "policy.flight_recorder" ||
                      name == "health.allow_off";
    if (!read) {
        if (section == "health") return true;  // health/ reads the rest
        return At(e, e.key_column, "unknown setting '" + name + "'");
    }
    Result<bool> error = true;
    if (!FirstTime(e, name, &error)) return error;
    const bool scalar = e.form == Entry::Form::kScalar && !e.multiline;
    const std::string& v = e.value;
    if (name == "policy.max_auto_resume") {
        const bool digits = scalar && !v.empty() && v.size() <= 3 &&
                            v.find_first_not_of("0123456789") == std::string::npos &&
                            (v.size() == 1 || v[0] != '0');
        if (!digits || std::stoi(v) > 100) return Bad(e, name, "a whole number from 0 to 100");
        out_.policy.max_auto_resume = std::stoi(v);
    } else if (name == "policy.quarantine_max_nodes" || name == "policy.quarantine_max_hours") {
        const bool nodes = name == "policy.quarantine_max_nodes";
        const long long low = nodes ? 0 : 1;
        const long long high = nodes ? 100000 : 8760;
        const auto n = scalar ? ScanWholeNumber(v) : std::nullopt;
        if (!n || *n < low || *n > high) {
            return Bad(
                e, name,
                "a whole number from " + std::to_string(low) + " to " + std::to_string(high));
        }
        (nodes ? out_.policy.quarantine_max_nodes : out_.policy.quarantine_max_hours) =
            static_cast<int>(*n);
    } else if (name == "policy.quarantine_max_fraction") {
        const auto f = scalar ? ScanFraction(v) : std::nullopt;
        if (!f) return Bad(e, name, "a number from 0 to 1");
        out_.policy.quarantine_max_fraction = *f;
    } else if (name == "policy.flight_recorder") {
        const auto policy = scalar ? FlightRecorderPolicyFromName(v) : std::nullopt;
        if (!policy) return Bad(e, name, "auto-resume, on or off");
        out_.policy.flight_recorder = *policy;
    } else if (name == "policy.quarantine_file") {
        if (!scalar || v.empty() || v.front() != '/') return Bad(e, name, "an absolute path");
        out_.policy.quarantine_file = v;
        quarantine_set_ = true;
    } else {
        // YAML 1.1's words, as yaml-cpp and health/ read them (lower, Capitalized or UPPER).
        static const std::set<std::string> kTrue{"y",    "Y",    "yes", "Yes", "YES", "true",
                                                 "True", "TRUE", "on",  "On",  "ON"};
        static const std::set<std::string> kFalse{"n",     "N",     "no",  "No",  "NO", "false",
                                                  "False", "FALSE", "off", "Off", "OFF"};
        if (!scalar || (kTrue.count(v) == 0 && kFalse.count(v) == 0)) {
            return Bad(e, name, "true or false");
        }
        out_.allow_health_off = kTrue.count(v) != 0;
    }
    return true;
}

Result<SubmitSettings> SubmitSettingsReader::Read(const std::vector<Entry>& entries) {
    const std::size_t root = entries.empty() ? 0 : entries.front().indent;
    std::string section;
    std::size_t child = 0;  // the indentation of the section's settings; 0 until seen
    for (const Entry& e : entries) {
        const bool top = e.indent == root;
        if (e.indent < root || (top && (!e.is_key || e.in_sequence))) {
            return At(e, e.indent, "expected a mapping of settings");
        }
        Result<bool> r = true;
        if (top) {
            section = e.key;
            child = 0;
            r = Top(e);
        } else if (section == "policy" || section == "health") {
            if (child == 0) child = e.indent;
            if (e.indent < child) return At(e, e.indent, "the indentation does not match");
            if (e.indent > child) continue;  // inside a setting's value (refused where read)
            if (!e.is_key || e.in_sequence) {
                return At(e, e.indent, section + ": expected a mapping of settings");
            }
            r = Child(section, e);
        }
        if (!r) return r.status();
    }
    if (!quarantine_set_) out_.policy.quarantine_file = DefaultQuarantineFile(out_.state_dir);
    return out_;
}

}  // namespace

Result<bool> RefuseNulBytes(std::string_view text, std::string_view source) {
    const std::size_t at = text.find('\0');
    if (at == std::string_view::npos) return true;
    const std::string_view before = text.substr(0, at);
    const std::size_t line =
        static_cast<std::size_t>(std::count(before.begin(), before.end(), '\n')) + 1;
    const std::size_t nl = before.rfind('\n');
    const std::size_t column = nl == std::string_view::npos ? at + 1 : at - nl;
    return MakeError(ErrorCode::kInvalid, std::string(source) + ":" + std::to_string(line) + ":" +
                                              std::to_string(column) +
                                              ": a NUL byte: the file must be text");
}

Result<SubmitSettings> ScanSubmitSettings(std::string_view text, std::string_view source) {
    auto text_ok = RefuseNulBytes(text, source);
    if (!text_ok) return text_ok.status();
    auto entries = Lexer(source).Lex(text);
    if (!entries) return entries.status();
    return SubmitSettingsReader(source).Read(*entries);
}

std::string DefaultQuarantineFile(std::string_view state_dir) {
    return std::string(state_dir) + "/quarantine.json";
}

Result<SubmitSettings> LoadSubmitSettings(const std::string& path) {
    bool missing = false;
    auto text = ReadSmallFile(path, kMaxConfigBytes, &missing);
    if (missing) return ScanSubmitSettings("", path);
    if (!text) return text.status();
    return ScanSubmitSettings(*text, path);
}

std::string FindConfigPath(const char* env_value, const std::string& exe_path) {
    if (env_value != nullptr && env_value[0] != '\0') return env_value;
    if (!exe_path.empty()) {
        std::error_code ec;
        auto candidate = std::filesystem::path(exe_path).parent_path().parent_path() / "etc" /
                         "autoheal" / "autoheal.yaml";
        if (std::filesystem::is_regular_file(candidate, ec)) return candidate.string();
    }
    return "/etc/autoheal/autoheal.yaml";
}

std::string ScanStateDir(std::string_view text) {
    int n = 0;
    for (std::size_t at = 0; at < text.size() && n < 10000; ++n) {
        std::size_t end = text.find('\n', at);
        if (end == std::string_view::npos) end = text.size();
        const std::string_view line = text.substr(at, end - at);
        at = end + 1;
        if (line.rfind("state_dir:", 0) != 0) continue;
        std::string_view v = line.substr(10);
        if (const std::size_t hash = v.find(" #"); hash != std::string_view::npos) {
            v = v.substr(0, hash);
        }
        const std::size_t a = v.find_first_not_of(" \t\"'");
        const std::size_t b = v.find_last_not_of(" \t\r\"'");
        if (a == std::string_view::npos || b < a) return "";
        v = v.substr(a, b - a + 1);
        return !v.empty() && v.front() == '/' ? std::string(v) : "";
    }
    return "";
}

std::string ScanConfigStateDir(const std::string& path) {
    auto text = ReadSmallFile(path, kMaxConfigBytes);
    return text ? ScanStateDir(*text) : "";
}

}  // namespace autoheal
