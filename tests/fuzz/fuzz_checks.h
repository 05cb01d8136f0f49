// Contract checks shared by the fuzz targets: whatever the input, the scanner finds exactly the
// lines RE2 matches (patterns read as bytes, diag/pattern.h; an anchored one also past a line's
// prefix) in the text without its paste marks (diag/paste_marks.h) where the leftmost match is
// admissible evidence (diag/log_line.h EvidenceStart, as pasted logs: InputKind::kMixed), and a
// diagnosis names only known causes and actions. A violation aborts, so libFuzzer reports it as
// a crash.
#pragma once

#include <re2/re2.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/log_line.h"
#include "autoheal/diag/paste_marks.h"
#include "autoheal/diag/pattern.h"
#include "autoheal/diag/rules.h"
#include "autoheal/diag/scanner.h"
#include "autoheal/diag/taxonomy.h"
#include "fuzz_common.h"

namespace autoheal::fuzz {

using autoheal::diag::Diagnosis;
using autoheal::diag::EvidenceSet;
using autoheal::diag::RuleSet;
using autoheal::diag::ScanLimits;

// A pattern anchored to a line's start matches where the line's text starts past its prefix
// too (diag/log_line.h FindTextStarts), when it does not match the whole line.
inline bool MatchPastPrefix(const RE2& re, std::string_view line,
                            const autoheal::diag::LogLine& parsed, re2::StringPiece* match) {
    const autoheal::diag::TextStarts starts = autoheal::diag::FindTextStarts(line, parsed);
    for (std::size_t i = 0; i < starts.count; ++i) {
        const re2::StringPiece rest(line.data() + starts.at[i].at, line.size() - starts.at[i].at);
        if (re.Match(rest, 0, rest.size(), RE2::UNANCHORED, match, 1)) return true;
    }
    return false;
}

// Every line of `text`, its paste marks taken off (StripPasteMarks), that a signature's regex
// matches at an admissible place (the leftmost match, EvidenceStart; for an anchored pattern,
// also where the line's text starts) is evidence for that signature, once, with its 1-based line
// number and its cleaned text (from the kernel record a line relays on); the first `cap` such
// lines are kept and all counted.
// REQUIRES: `set` holds only this scan of `text` (source `source`), no derived evidence, and
// `text` fits in one of the scanner's chunks (the marks come off per chunk). `cache`, when
// given, keeps the compiled reference regexes between calls (for a rule set that does not
// change).
using RegexCache = std::map<std::string, std::unique_ptr<RE2>>;
inline void CheckScan(const RuleSet& rules, const ScanLimits& limits, std::string_view text,
                      std::size_t source, const EvidenceSet& set, RegexCache* cache = nullptr) {
    if (text.size() > limits.chunk_bytes) Fail("CheckScan: the text is longer than one chunk");
    const std::optional<std::string> clean = autoheal::diag::StripPasteMarks(text);
    if (clean) text = *clean;
    std::vector<std::string_view> lines;
    for (std::size_t pos = 0; pos < text.size();) {
        std::size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view line = text.substr(pos, nl - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        pos = nl + 1;
    }
    std::map<std::string, std::vector<const autoheal::diag::Evidence*>> got;  // by signature
    for (const auto& e : set.items) {
        if (e.source != source) continue;
        if (e.line < 1 || e.line > lines.size()) {
            Fail("evidence for '" + e.signature + "' on line " + std::to_string(e.line) + " of " +
                 std::to_string(lines.size()));
        }
        got[e.signature].push_back(&e);
    }
    for (const auto& sig : rules.signatures) {
        std::unique_ptr<RE2> local;
        std::unique_ptr<RE2>& slot = cache != nullptr ? (*cache)[sig.regex] : local;
        if (!slot) slot = std::make_unique<RE2>(sig.regex, autoheal::diag::PatternOptions());
        const RE2& re = *slot;
        if (!re.ok()) Fail("signature '" + sig.name + "' does not compile with RE2");
        const bool anchored = autoheal::diag::HasLineAnchor(sig.regex);
        std::vector<std::size_t> want;
        std::map<std::size_t, std::size_t> starts;  // line -> where its evidence starts
        for (std::size_t i = 0; i < lines.size(); ++i) {
            const re2::StringPiece text_i(lines[i].data(), lines[i].size());
            re2::StringPiece match;
            const autoheal::diag::LogLine parsed = autoheal::diag::ParseLogLine(lines[i]);
            if (!re.Match(text_i, 0, text_i.size(), RE2::UNANCHORED, &match, 1) &&
                !(anchored && MatchPastPrefix(re, lines[i], parsed, &match))) {
                continue;
            }
            const auto begin = static_cast<std::size_t>(match.data() - lines[i].data());
            const std::size_t from =
                autoheal::diag::EvidenceStart(lines[i], parsed, begin, begin + match.size(), false);
            if (from != std::string_view::npos) {
                want.push_back(i + 1);
                starts[i + 1] = from;
            }
        }
        std::vector<std::size_t> have;
        for (const autoheal::diag::Evidence* e : got[sig.name]) have.push_back(e->line);
        const std::size_t kept = std::min(want.size(), limits.per_signature_cap);
        if (have != std::vector<std::size_t>(want.begin(), want.begin() + kept)) {
            std::string detail;
            for (std::size_t n : want) detail += " " + std::to_string(n);
            detail += " |";
            for (std::size_t n : have) detail += " " + std::to_string(n);
            Fail("signature '" + sig.name + "' (" + sig.regex +
                 "): lines RE2 matches | lines the scanner found:" + detail);
        }
        for (const autoheal::diag::Evidence* e : got[sig.name]) {
            const std::string_view line = lines[e->line - 1].substr(starts[e->line]);
            if (e->text != line.substr(0, limits.max_text)) {
                Fail("evidence text for '" + e->signature + "' is not line " +
                     std::to_string(e->line) + " from its record on");
            }
        }
        if (set.Count(sig.name) != want.size()) {
            Fail("signature '" + sig.name + "': counted " + std::to_string(set.Count(sig.name)) +
                 " matches, RE2 finds " + std::to_string(want.size()));
        }
    }
}

inline void CheckDiagnosis(const RuleSet& rules, const Diagnosis& d) {
    const autoheal::diag::CauseInfo* cause = autoheal::diag::FindCause(d.cause);
    if (cause == nullptr || !cause->rules) Fail("cause '" + d.cause + "' in a diagnosis");
    if (!d.rule.empty() && rules.FindRule(d.rule) == nullptr) {
        Fail("diagnosis names rule '" + d.rule + "', which is not in the set");
    }
    if (d.rule.empty() && (d.cause != "unknown" || !d.actions.empty() || !d.findings.empty())) {
        Fail("no rule fired, yet the diagnosis has a cause, actions or findings");
    }
    std::set<std::string> seen;
    for (const std::string& a : d.actions) {
        const autoheal::diag::ActionInfo* action = autoheal::diag::FindAction(a);
        if (action == nullptr || !action->plan || action->id == autoheal::diag::Action::kNone) {
            Fail("action '" + a + "' in a plan");
        }
        if (!seen.insert(a).second) Fail("action '" + a + "' twice in a plan");
    }
    if (!(d.confidence >= 0.0 && d.confidence <= 1.0)) Fail("confidence out of [0, 1]");
    if (d.evidence.size() > 20) Fail("more than 20 evidence items in a diagnosis");
}

}  // namespace autoheal::fuzz
