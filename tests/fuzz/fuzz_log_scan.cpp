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
#include "fuzz_checks.h"

namespace {

using autoheal::fuzz::CheckDiagnosis;
using autoheal::fuzz::CheckScan;
using autoheal::fuzz::Fail;

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

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* /*argc*/, char*** /*argv*/) {
    g_loaded = Load();
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string_view text(reinterpret_cast<const char*>(data), size);
    EvidenceSet set;
    g_loaded->scanner->ScanText(text, "fuzz.log", &set);
    if (set.lines != static_cast<std::uint64_t>(std::count(text.begin(), text.end(), '\n') +
                                                (!text.empty() && text.back() != '\n')) ||
        set.bytes != text.size()) {
        Fail("line or byte count differs from the input's");
    }
    static autoheal::fuzz::RegexCache regexes;  // the shipped rules never change
    CheckScan(g_loaded->rules, g_loaded->limits, text, 0, set, &regexes);
    autoheal::diag::Analyze(&set);
    CheckDiagnosis(g_loaded->rules, autoheal::diag::Diagnose(g_loaded->rules, set, {}));
    return 0;
}
