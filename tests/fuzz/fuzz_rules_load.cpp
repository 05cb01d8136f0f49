// libFuzzer target: one rules file's text, end to end.
//
// Per input: RuleLoader::Add (the input is the only file) and Compile; when it compiles,
// Scanner::Build from its signatures, ScanText over a fixed small log and over the input itself,
// then Analyze and Diagnose. Findings (libFuzzer reports each as a crash):
//   - any crash, hang, leak or undefined behaviour (ASan, UBSan, LSan, -timeout);
//   - a rule set the loader accepted that Scanner::Build rejects (Build fails only on patterns
//     RE2 rejects, and the loader checks every pattern with RE2 first);
//   - a condition naming a signature that is neither loaded nor built in;
//   - the scanner missing, duplicating or misplacing a line of the fixed log that a signature's
//     regex matches (it promises every matching line, in one pass; see CheckScan for the
//     patterns read as bytes, as the scanner does: diag/pattern.h);
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
#include "autoheal/diag/rules.h"
#include "autoheal/diag/scanner.h"
#include "autoheal/diag/taxonomy.h"

namespace {

using autoheal::diag::Condition;
using autoheal::diag::Diagnosis;
using autoheal::diag::EvidenceSet;
using autoheal::diag::RuleSet;
using autoheal::diag::ScanLimits;
using autoheal::diag::Scanner;

// Real-format lines: kernel Xids (one off the bus, R570-style split over lines), NCCL watchdog
// timeouts from two ranks that disagree, a rank that never reported, a syslog host; a CRLF line
// and a vertical tab, where Hyperscan's dialect differs from RE2's. ASCII only (see
// fuzz_log_scan.cpp's CheckScan on non-ASCII lines).
constexpr std::string_view kLog =
    "Mar 27 17:40:36 gpu-node-07 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1234, "
    "name=python3, GPU has fallen off the bus.\n"
    "Mar 27 17:40:36 gpu-node-07 kernel: NVRM: The NVIDIA GPU 0000:86:00.0\n"
    "Mar 27 17:40:36 gpu-node-07 kernel: NVRM: (PCI ID: 10de:2330) installed in this system\n"
    "Mar 27 17:40:36 gpu-node-07 kernel: NVRM: has fallen off the bus and is not responding.\n"
    "Mar 27 17:41:02 gpu-node-07 kernel: NVRM: Xid (PCI:0000:86:00): 48, pid=1234, "
    "name=python3, An uncorrectable double bit error (DBE) has been detected on GPU.\n"
    "[rank0]:[E1206 18:44:12.715298746 ProcessGroupNCCL.cpp:607] [Rank 0] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=7753, OpType=ALLREDUCE, NumelIn=5, "
    "NumelOut=5, Timeout(ms)=600000) ran for 600061 milliseconds before timing out.\n"
    "[rank1]:[E1206 18:44:12.715310001 ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught "
    "collective operation timeout: WorkNCCL(SeqNum=7754, OpType=BROADCAST, NumelIn=1, "
    "NumelOut=1, Timeout(ms)=600000) ran for 600058 milliseconds before timing out.\n"
    "[rank2]:[W1206 18:34:12.000000000 ProcessGroupNCCL.cpp:1168] [PG 0 Rank 2] "
    "heartbeat ok\n"
    "[rank0]:[E1206 18:44:12.716 ProcessGroupNCCL.cpp:1664] [PG 0 Rank 0] Timeout at NCCL "
    "work: 7753, last enqueued NCCL work: 7753, last completed NCCL work: 7752.\n"
    "gpu-node-07:1234:1300 [0] NCCL INFO NET/IB : Using [0]mlx5_0:1/IB ; OOB ib0:10.0.0.7<0>\n"
    "\n"
    "Mar 27 17:42:00 gpu-node-07 kernel: mlx5_core 0000:c1:00.0: mlx5_fw_tracer_handle_traces: "
    "ERR: port 1 link down\n"
    "Mar 27 17:43:00 gpu-node-07 kernel: NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.\r\n"
    "slurmstepd: error: *** STEP 1234.0 ON gpu-node-07 CANCELLED AT 2024-03-27\v17:50:00 DUE TO "
    "NODE FAILURE ***\n";

[[noreturn]] void Fail(const std::string& what) {
    std::fprintf(stderr, "fuzz_rules_load: contract violated: %s\n", what.c_str());
    std::fflush(stderr);
    std::abort();
}

bool IsBuiltin(const std::string& name) {
    for (const auto& b : autoheal::diag::BuiltinSignatures()) {
        if (name == b.name) return true;
    }
    return false;
}

void CheckCondition(const RuleSet& rules, const Condition& c, const std::string& rule) {
    if (c.kind == Condition::Kind::kLeaf) {
        if (rules.FindSignature(c.signature) == nullptr && !IsBuiltin(c.signature)) {
            Fail("rule '" + rule + "' names signature '" + c.signature +
                 "', which is neither loaded nor built in");
        }
        if (c.min_count < 1) Fail("rule '" + rule + "': min_count < 1");
        return;
    }
    if (c.children.empty() || (c.kind == Condition::Kind::kNot && c.children.size() != 1)) {
        Fail("rule '" + rule + "': a combinator with the wrong number of children");
    }
    for (const Condition& child : c.children) CheckCondition(rules, child, rule);
}

// Every line of `text` that a signature's regex matches is evidence for that signature, once,
// with its 1-based line number and text; the first `cap` such lines are kept and all counted.
// REQUIRES: `set` holds only this scan of `text` (source `source`), no derived evidence, and
// no line of `text` is longer than the scanner's chunk.
void CheckScan(const RuleSet& rules, const ScanLimits& limits, std::string_view text,
               std::size_t source, const EvidenceSet& set) {
    std::vector<std::string_view> lines;
    for (std::size_t pos = 0; pos < text.size();) {
        std::size_t nl = text.find('\n', pos);
        if (nl == std::string_view::npos) nl = text.size();
        std::string_view line = text.substr(pos, nl - pos);
        if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
        lines.push_back(line);
        pos = nl + 1;
    }
    std::map<std::string, std::vector<std::size_t>> got;  // signature -> line numbers
    for (const auto& e : set.items) {
        if (e.source != source) continue;
        if (e.line < 1 || e.line > lines.size()) {
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
        RE2 re(sig.regex, autoheal::diag::PatternOptions());
        if (!re.ok()) Fail("signature '" + sig.name + "' does not compile with RE2");
        std::vector<std::size_t> want;
        for (std::size_t i = 0; i < lines.size(); ++i) {
            if (RE2::PartialMatch(re2::StringPiece(lines[i].data(), lines[i].size()), re)) {
                want.push_back(i + 1);
            }
        }
        const std::vector<std::size_t>& have = got[sig.name];
        const std::size_t kept = std::min(want.size(), limits.per_signature_cap);
        if (have != std::vector<std::size_t>(want.begin(), want.begin() + kept)) {
            std::string detail;
            for (std::size_t n : want) detail += " " + std::to_string(n);
            detail += " |";
            for (std::size_t n : have) detail += " " + std::to_string(n);
            Fail("signature '" + sig.name + "' (" + sig.regex +
                 "): lines RE2 matches | lines the scanner found:" + detail);
        }
        if (set.Count(sig.name) != want.size()) {
            Fail("signature '" + sig.name + "': counted " + std::to_string(set.Count(sig.name)) +
                 " matches, RE2 finds " + std::to_string(want.size()));
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

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    autoheal::diag::RuleLoader loader;
    loader.Add("fuzz.yaml", text);
    autoheal::diag::LoadResult result;
    std::optional<RuleSet> rules = loader.Compile(&result);
    (void)result.Format();  // snippets and carets for every message
    if (rules.has_value() != result.ok()) Fail("Compile's result disagrees with LoadResult::ok");
    if (!rules) return 0;

    for (const auto& rule : rules->rules) {
        CheckCondition(*rules, rule.match, rule.name);
        if (rule.unless) CheckCondition(*rules, *rule.unless, rule.name);
    }
    const ScanLimits limits;
    auto scanner = Scanner::Build(rules->signatures, limits);
    if (!scanner) Fail("Scanner::Build rejects a rule set the loader accepted: " + scanner.error());

    EvidenceSet set;
    (*scanner)->ScanText(kLog, "fixed.log", &set);
    CheckScan(*rules, limits, kLog, 0, set);
    // The input as a log too: the fuzzed patterns meet text shaped like themselves. No scanner
    // check here: CR/LF and UTF-8 corner cases of arbitrary bytes are the log fuzzer's business.
    (*scanner)->ScanText(text, "fuzz.yaml", &set);
    autoheal::diag::Analyze(&set);
    autoheal::diag::DiagnoseOptions options;
    options.now = 1733510652;
    options.history.push_back({options.now - 3600, "gpu-node-07", "0000:3b:00.0", "", "", "41"});
    for (const auto& rule : rules->rules) {
        options.history.push_back(
            {options.now - 86400, "gpu-node-07", "0000:3b:00.0", rule.name, rule.cause, "40"});
    }
    CheckDiagnosis(*rules, autoheal::diag::Diagnose(*rules, set, options));
    CheckDiagnosis(*rules, autoheal::diag::Diagnose(*rules, set, {}));
    return 0;
}
