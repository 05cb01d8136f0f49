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
#include "fuzz_checks.h"

namespace {

using autoheal::fuzz::CheckDiagnosis;
using autoheal::fuzz::CheckScan;
using autoheal::fuzz::Fail;

using autoheal::diag::Condition;
using autoheal::diag::Diagnosis;
using autoheal::diag::EvidenceSet;
using autoheal::diag::RuleSet;
using autoheal::diag::ScanLimits;
using autoheal::diag::Scanner;

// Real-format lines: kernel Xids (one off the bus, R570-style split over lines), NCCL watchdog
// timeouts from two ranks that disagree, a rank that never reported, a syslog host; a CRLF line
// and a vertical tab, where Hyperscan's dialect differs from RE2's.
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
