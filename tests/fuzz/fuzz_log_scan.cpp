// libFuzzer target: one log, scanned with the shipped rules.
//
// At start: loads etc/rules.d/*.yaml (AUTOHEAL_FUZZ_RULES_DIR overrides the folder) as the
// programs do, in name order, and builds the Scanner once; when no file is there or they do not
// load, uses a small built-in rule set instead (and says so). Per input: ScanText into a fresh
// EvidenceSet, Analyze, Diagnose with default options. Findings (libFuzzer reports each as a
// crash):
//   - any crash, hang, leak or undefined behaviour (ASan, UBSan, LSan, -timeout);
//   - the scanner missing, duplicating or misplacing a line that a signature's regex matches
//     (RE2 on each line, a trailing CR removed, is the reference), or miscounting matches;
//   - a diagnosis naming an unknown cause or action, or a rule that is not in the set.
#include <re2/re2.h>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/pattern.h"
#include "autoheal/diag/rule_files.h"
#include "autoheal/diag/rules.h"
#include "autoheal/diag/scanner.h"
#include "autoheal/diag/taxonomy.h"

namespace {

using autoheal::diag::Diagnosis;
using autoheal::diag::EvidenceSet;
using autoheal::diag::RuleSet;
using autoheal::diag::ScanLimits;
using autoheal::diag::Scanner;

// Used when etc/rules.d has nothing that loads: the signatures the analyzers look for, by name,
// and a rule for each kind of derived evidence.
constexpr const char* kBuiltinRules =
    R"yaml(
- signature: xid
  regex: 'NVRM: Xid \(PCI:(?P<pci>[0-9a-fA-F:.]+)\): (?P<xid>\d+)'
  example: 'NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, name=python3, GPU has fallen off the bus.'
- signature: gpu-fallen-off-bus
  regex: 'fallen off the bus'
- signature: context-nvrm-gpu
  regex: 'NVRM: The NVIDIA GPU (?P<pci>[0-9a-fA-F:.]+)'
- signature: context-torch-rank
  regex: '^\[rank(?P<rank>\d+)\]:'
- signature: nccl-watchdog-timeout
  regex: '\[(?:PG \d+ )?Rank (?P<rank>\d+)\] Watchdog caught collective operation )yaml"
    R"yaml(timeout: WorkNCCL\(SeqNum=(?P<seq>\d+), OpType=(?P<op>\w+)(?:, )yaml"
    R"yaml(NumelIn=(?P<numel_in>\d+))?'
- signature: nccl-watchdog-progress
  regex: 'last completed NCCL work: (?P<last_completed>-?\d+)'
- list: fatal-xids
  items: ['48', '79', '94', '95']
- rule: xid-fatal
  match: {xid: {list: fatal-xids}}
  cause: faulty_gpu
  actions: [drain, reset_gpu]
  priority: 90
  escalate:
    - when: {repeats: 2, within: 30d, per: gpu}
      actions: [drain, rma_ticket]
- rule: gpu-off-bus
  match: {signature: gpu-fallen-off-bus}
  cause: faulty_gpu
  actions: [drain, reboot]
  priority: 80
- rule: nccl-desync
  match: {signature: nccl-ranks-desync}
  cause: user_error
  priority: 70
- rule: nccl-straggler
  match: {signature: nccl-missing-rank}
  cause: nccl_timeout
  actions: [notify]
  priority: 60
- rule: nccl-first
  match:
    any:
      - {signature: nccl-first-collective}
      - {signature: nccl-watchdog-progress, where: {last_completed: '-1'}}
  unless: {signature: nccl-ranks-desync}
  cause: dependency
  priority: 40
- rule: nccl-timeout
  match:
    all: [{signature: nccl-watchdog-timeout, min_count: 1}, {not: {signature: nccl-ranks-agree}}]
  cause: nccl_timeout
  actions: [notify]
  priority: 10
  suppressed_by: [xid-fatal, gpu-off-bus]
- rule: nccl-agree
  match: {signature: nccl-ranks-agree}
  cause: network_switch_cable
  actions: [network_ticket]
  contributes_actions: true
)yaml";

[[noreturn]] void Fail(const std::string& what) {
    std::fprintf(stderr, "fuzz_log_scan: contract violated: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

struct Loaded {
    RuleSet rules;
    std::shared_ptr<const Scanner> scanner;
    ScanLimits limits;
};
const Loaded* g_loaded = nullptr;

// The shipped rules, loaded as the programs load them (LoadRuleFiles: *.yaml and *.yml in name
// order); nullopt, after saying why, when there are none or they do not load.
std::optional<RuleSet> LoadDir(const std::string& dir, std::size_t* files) {
    autoheal::diag::LoadedRules loaded = autoheal::diag::LoadRuleFiles({dir});
    *files = loaded.files.size();
    if (loaded.files.empty()) return std::nullopt;
    if (!loaded.rules) {
        std::string why = loaded.result.Format();
        for (const std::string& e : loaded.read_errors) why += e + "\n";
        std::fprintf(stderr, "fuzz_log_scan: the rules in %s do not load:\n%s", dir.c_str(),
                     why.c_str());
    }
    return std::move(loaded.rules);
}

const Loaded* Load() {
    const char* env = std::getenv("AUTOHEAL_FUZZ_RULES_DIR");
    const std::string dir = env != nullptr && *env ? env : AUTOHEAL_FUZZ_RULES_DIR;
    auto* loaded = new Loaded;  // lives for the whole process
    std::size_t files = 0;
    std::optional<RuleSet> rules = LoadDir(dir, &files);
    std::string from = std::to_string(files) + " file(s) in " + dir;
    if (!rules) {
        autoheal::diag::RuleLoader loader;
        loader.Add("builtin.yaml", kBuiltinRules);
        autoheal::diag::LoadResult result;
        rules = loader.Compile(&result);
        if (!rules) Fail("the built-in rules do not compile:\n" + result.Format());
        from = "the built-in fallback (no loadable " + dir + "/*.yaml)";
    }
    loaded->rules = std::move(*rules);
    auto scanner = Scanner::Build(loaded->rules.signatures, loaded->limits);
    if (!scanner) Fail("Scanner::Build rejects rules the loader accepted: " + scanner.error());
    loaded->scanner = *scanner;
    std::fprintf(stderr,
                 "fuzz_log_scan: %zu rules, %zu signatures (%zu prefiltered, %zu line by line) "
                 "from %s\n",
                 loaded->rules.rules.size(), loaded->rules.signatures.size(),
                 loaded->scanner->prefiltered(), loaded->scanner->line_by_line(), from.c_str());
    return loaded;
}

// Every line of `text` that a signature's regex matches is evidence for that signature, once,
// with its 1-based line number and text; the first `cap` such lines are kept and all counted.
// Patterns are read as bytes (diag/pattern.h), the same for RE2 here and in the scanner.
// REQUIRES: `set` holds only this scan of `text`, no derived evidence, and no line of `text`
// is longer than the scanner's chunk. (As fuzz_rules_load.cpp's check, over shipped rules.)
void CheckScan(const RuleSet& rules, const ScanLimits& limits, std::string_view text,
               const EvidenceSet& set) {
    std::vector<std::string_view> lines;
    for (std::size_t pos = 0; pos < text.size();) {
        std::size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view line = text.substr(pos, nl - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        pos = nl + 1;
    }
    if (set.lines != lines.size() || set.bytes != text.size()) {
        Fail("counted " + std::to_string(set.lines) + " lines and " + std::to_string(set.bytes) +
             " bytes; the input has " + std::to_string(lines.size()) + " and " +
             std::to_string(text.size()));
    }
    std::map<std::string, std::vector<std::size_t>> got;  // signature -> line numbers
    for (const auto& e : set.items) {
        if (e.line < 1 || e.line > lines.size() || e.source != 0) {
            Fail("evidence for '" + e.signature + "' on line " + std::to_string(e.line) + " of " +
                 std::to_string(lines.size()));
        }
        const std::string_view line = lines[e.line - 1];
        if (e.text != line.substr(0, limits.max_text)) {
            Fail("evidence text for '" + e.signature + "' is not line " + std::to_string(e.line));
        }
        got[e.signature].push_back(e.line);
    }
    for (const auto& sig : rules.signatures) {
        // RE2 objects per signature, compiled once.
        static std::map<std::string, std::unique_ptr<RE2>> regexes;
        auto& re = regexes[sig.name];
        if (!re) re = std::make_unique<RE2>(sig.regex, autoheal::diag::PatternOptions());
        std::vector<std::size_t> want;
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (RE2::PartialMatch(re2::StringPiece(lines[i].data(), lines[i].size()), *re)) {
                want.push_back(i + 1);
            }
        }
        const std::vector<std::size_t>& have = got[sig.name];
        const std::size_t cap = limits.per_signature_cap;
        const std::uint64_t count = set.Count(sig.name);
        const std::size_t kept = std::min(want.size(), cap);
        const bool ok = have == std::vector<std::size_t>(want.begin(), want.begin() + kept) &&
                        count == want.size();
        if (!ok) {
            std::string detail;
            for (std::size_t n : want) detail += " " + std::to_string(n);
            detail += " |";
            for (std::size_t n : have) detail += " " + std::to_string(n);
            Fail("signature '" + sig.name + "' (" + sig.regex +
                 "): lines RE2 matches | lines the scanner found:" + detail + " (" +
                 std::to_string(count) + " counted)");
        }
    }
}

void CheckDiagnosis(const RuleSet& rules, const Diagnosis& d) {
    if (autoheal::diag::FindCause(d.cause) == nullptr) Fail("unknown cause '" + d.cause + "'");
    if (!d.rule.empty() && rules.FindRule(d.rule) == nullptr) {
        Fail("diagnosis names rule '" + d.rule + "', which is not in the set");
    }
    if (d.rule.empty() && (d.cause != "unknown" || !d.actions.empty() || !d.findings.empty())) {
        Fail("no rule fired, yet the diagnosis has a cause, actions or findings");
    }
    std::set<std::string> seen;
    for (const std::string& a : d.actions) {
        if (autoheal::diag::FindAction(a) == nullptr || a == "none") {
            Fail("action '" + a + "' in a plan");
        }
        if (!seen.insert(a).second) Fail("action '" + a + "' twice in a plan");
    }
    if (!(d.confidence >= 0.0 && d.confidence <= 1.0)) Fail("confidence out of [0, 1]");
    if (d.evidence.size() > 20) Fail("more than 20 evidence items in a diagnosis");
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
    g_loaded = Load();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    EvidenceSet set;
    g_loaded->scanner->ScanText(text, "fuzz.log", &set);
    CheckScan(g_loaded->rules, g_loaded->limits, text, set);
    autoheal::diag::Analyze(&set);
    CheckDiagnosis(g_loaded->rules, autoheal::diag::Diagnose(g_loaded->rules, set, {}));
    return 0;
}
