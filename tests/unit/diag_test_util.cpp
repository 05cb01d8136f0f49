#include "diag_test_util.h"

#include <fstream>
#include <sstream>
#include <stdexcept>

namespace autoheal::diag::testing {

const RuleSet& ShippedRules() {
    static const RuleSet rules = [] {
        LoadedRules loaded = LoadRuleFiles({std::string(AUTOHEAL_SOURCE_DIR) + "/etc/rules.d"});
        if (!loaded.rules) {
            throw std::runtime_error("shipped rules do not load:\n" + loaded.result.Format());
        }
        return *loaded.rules;
    }();
    return rules;
}

std::shared_ptr<const Scanner> ShippedScanner() {
    static const std::shared_ptr<const Scanner> scanner = [] {
        auto built = Scanner::Build(ShippedRules().signatures);
        if (!built) throw std::runtime_error(built.error());
        return *built;
    }();
    return scanner;
}

Diagnosis Classify(const std::string& text, const DiagnoseOptions& options,
                   EvidenceSet* evidence_out) {
    EvidenceSet set;
    ShippedScanner()->ScanText(text, "input", &set);
    Analyze(&set);
    Diagnosis d = Diagnose(ShippedRules(), set, options);
    if (evidence_out != nullptr) *evidence_out = std::move(set);
    return d;
}

EvidenceSet ScanLines(const std::vector<std::string>& lines, const std::string& source) {
    std::string text;
    for (const std::string& l : lines) text += l + "\n";
    EvidenceSet set;
    ShippedScanner()->ScanText(text, source, &set,
                               source == "kernel" ? InputKind::kKernelLog : InputKind::kMixed);
    return set;
}

std::vector<std::string> EvidenceTexts(const EvidenceSet& set) {
    std::vector<std::string> texts;
    for (std::size_t i = 0; i < set.items.size(); ++i) {
        const Evidence& e = set.items[i];
        if (i > 0 && set.items[i - 1].source == e.source && set.items[i - 1].line == e.line) {
            continue;
        }
        texts.push_back(e.text);
    }
    return texts;
}

std::string ReadFile(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

}  // namespace autoheal::diag::testing
