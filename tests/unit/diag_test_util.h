// Helpers for diagnosis tests: load the shipped rules once, classify text like the CLI does.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/rule_files.h"
#include "autoheal/diag/scanner.h"

namespace autoheal::diag::testing {

// The rules in the source tree's etc/rules.d (AUTOHEAL_SOURCE_DIR is compiled in).
const RuleSet& ShippedRules();
std::shared_ptr<const Scanner> ShippedScanner();

// Scan + analyze + diagnose, as `autoheal classify` does.
Diagnosis Classify(const std::string& text, const DiagnoseOptions& options = {},
                   EvidenceSet* evidence_out = nullptr);

// What a node epilog puts in its report for `lines` of `source`: the items the shipped
// signatures match, scanned once, not analyzed; source "kernel" is scanned as a kernel log.
EvidenceSet ScanLines(const std::vector<std::string>& lines, const std::string& source);
// The text of each line an evidence set holds (a line several signatures matched: once).
std::vector<std::string> EvidenceTexts(const EvidenceSet& set);

std::string ReadFile(const std::string& path);

}  // namespace autoheal::diag::testing
