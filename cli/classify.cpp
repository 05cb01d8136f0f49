// autoheal classify: diagnose logs. Exit 0 whenever the input could be read (even when nothing
// was found), 1 when an input or the rules could not be used, 2 on usage errors.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "autoheal/core/escape.h"
#include "autoheal/core/files.h"
#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/flight_recorder.h"
#include "autoheal/diag/scanner.h"
#include "autoheal/diag/taxonomy.h"
#include "cli_common.h"

namespace autoheal::cli {
namespace {

constexpr const char* kClassifyUsage =
    "usage: autoheal classify [--json] [--explain] [--node NAME] [--job ID] [--history FILE]\n"
    "                         [--rules PATH]... [--threads N] [FILE... | DIR... | -]\n"
    "  Reads the logs (standard input when none or '-'), names the interruption cause, the\n"
    "  culprit and the plan. PyTorch NCCL flight recorder dumps (pickle or JSON, one file per\n"
    "  rank named <prefix><rank>, or a folder of them, one subfolder per node) are read as\n"
    "  data and compared: the rank behind the collective the others wait in. --explain: every rule "
    "that fired, its evidence lines and the\n"
    "  documentation the rule comes from. --history: JSON lines of earlier incidents\n"
    "  {\"time\": EPOCH_SECONDS, \"node\":..., \"gpu\":..., \"rule\":..., \"job\":...} for "
    "escalation.\n"
    "  --threads N: scanning threads for inputs over 2 MiB (default: one per core, at most 4)\n";

std::optional<std::vector<diag::HistoryRecord>> ReadHistory(const std::string& path) {
    std::ifstream in(path);
    if (!in) {
        std::fprintf(stderr, "autoheal: classify: --history %s: cannot open\n", path.c_str());
        return std::nullopt;
    }
    std::vector<diag::HistoryRecord> records;
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
        ++n;
        if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
        auto j = nlohmann::json::parse(line, nullptr, false);
        if (j.is_discarded() || !j.is_object() || !j.contains("time") ||
            !j["time"].is_number_integer()) {
            std::fprintf(stderr,
                         "autoheal: classify: %s:%d: expected a JSON object with an integer "
                         "\"time\"\n",
                         path.c_str(), n);
            return std::nullopt;
        }
        diag::HistoryRecord r;
        r.time = j["time"].get<std::int64_t>();
        auto str = [&](const char* k) {
            return j.contains(k) && j[k].is_string() ? j[k].get<std::string>() : std::string();
        };
        r.node = str("node");
        r.gpu = str("gpu");
        r.rule = str("rule");
        r.cause = str("cause");
        r.job = str("job");
        r.user = str("user");
        records.push_back(std::move(r));
    }
    return records;
}

nlohmann::json ToJson(const diag::Diagnosis& d, const diag::EvidenceSet& set,
                      const diag::RuleSet& rules) {
    nlohmann::json j;
    j["cause"] = d.cause;
    j["actions"] = d.actions;
    j["requeue"] = d.requeue;
    nlohmann::json culprit;
    culprit["node"] = d.culprit.node.empty() ? nlohmann::json() : nlohmann::json(d.culprit.node);
    culprit["gpu"] = d.culprit.gpu.empty() ? nlohmann::json() : nlohmann::json(d.culprit.gpu);
    culprit["rank"] = d.culprit.rank ? nlohmann::json(*d.culprit.rank) : nlohmann::json();
    culprit["gpu_index"] =
        d.culprit.gpu_index ? nlohmann::json(*d.culprit.gpu_index) : nlohmann::json();
    j["culprit"] = culprit;
    j["rule"] = d.rule.empty() ? nlohmann::json() : nlohmann::json(d.rule);
    j["guess"] = d.guess;
    j["evidence"] = nlohmann::json::array();
    for (const diag::Evidence& e : d.evidence) {
        nlohmann::json ev{{"line", e.line}, {"signature", e.signature}, {"text", e.text}};
        if (set.sources.size() > 1) ev["source"] = set.sources[e.source];
        j["evidence"].push_back(ev);
    }
    j["confidence"] = std::round(d.confidence * 100.0) / 100.0;
    j["evidence_kind"] =
        d.evidence_kind.empty() ? nlohmann::json() : nlohmann::json(d.evidence_kind);
    if (!d.escalation.empty()) j["escalation"] = d.escalation;
    j["findings"] = nlohmann::json::array();
    for (const diag::Finding& f : d.findings) {
        nlohmann::json finding{{"rule", f.rule},
                               {"cause", f.cause},
                               {"priority", f.priority},
                               {"suppressed", f.suppressed}};
        const diag::Rule* rule = rules.FindRule(f.rule);
        if (rule != nullptr && !rule->doc.empty()) finding["doc"] = rule->doc;
        finding["lines"] = nlohmann::json::array();
        for (const diag::Evidence& e : f.evidence) finding["lines"].push_back(e.line);
        j["findings"].push_back(std::move(finding));
    }
    j["lines"] = set.lines;
    return j;
}

// --explain: each rule that fired, why (its desc), where it comes from (its doc) and the
// evidence lines it fired on.
void PrintExplanation(const diag::Diagnosis& d, const diag::EvidenceSet& set,
                      const diag::RuleSet& rules) {
    std::printf("explanation:\n");
    for (std::size_t i = 0; i < d.findings.size(); ++i) {
        const diag::Finding& f = d.findings[i];
        const diag::Rule* rule = rules.FindRule(f.rule);
        std::printf("  %s %s -> %s (priority %d)%s\n", i == 0 ? "*" : "-", f.rule.c_str(),
                    f.cause.c_str(), f.priority,
                    f.suppressed ? ", suppressed" : (i == 0 ? ", the cause" : ""));
        if (rule != nullptr && !rule->desc.empty()) {
            std::printf("      why:  %s\n", rule->desc.c_str());
        }
        std::printf("      from: %s\n", rule != nullptr && !rule->doc.empty()
                                            ? rule->doc.c_str()
                                            : "(the rule cites no documentation)");
        for (const diag::Evidence& e : f.evidence) {
            std::printf("      %s:%zu  [%s]  %s\n", set.sources[e.source].c_str(), e.line,
                        e.signature.c_str(), e.text.c_str());
        }
    }
}

void PrintText(const diag::Diagnosis& d, const diag::EvidenceSet& set) {
    const diag::CauseInfo* info = diag::FindCause(d.cause);
    std::printf("cause:      %s", d.cause.c_str());
    if (info != nullptr) std::printf(" (%s)", std::string(info->summary).c_str());
    std::printf("\n");
    std::string plan;
    for (const auto& a : d.actions) plan += (plan.empty() ? "" : ", ") + a;
    std::printf("plan:       %s\n", plan.empty() ? "no node action" : plan.c_str());
    std::printf("requeue:    %s\n", d.requeue ? "yes" : "no");
    std::string culprit;
    if (!d.culprit.node.empty()) culprit += "node=" + d.culprit.node + " ";
    if (!d.culprit.gpu.empty()) culprit += "gpu=" + d.culprit.gpu + " ";
    if (d.culprit.rank) culprit += "rank=" + std::to_string(*d.culprit.rank) + " ";
    if (d.culprit.gpu_index) culprit += "gpu_index=" + std::to_string(*d.culprit.gpu_index) + " ";
    std::printf("culprit:    %s\n", culprit.empty() ? "not identified" : culprit.c_str());
    if (d.rule.empty()) {
        std::printf("rule:       none matched (%llu lines read)\n",
                    static_cast<unsigned long long>(set.lines));
        return;
    }
    std::printf("rule:       %s (confidence %.2f, from %s)%s\n", d.rule.c_str(), d.confidence,
                d.evidence_kind.c_str(),
                d.guess ? "; a guess: no rule reads these lines, and no node is blamed" : "");
    if (!d.escalation.empty()) std::printf("escalated:  %s\n", d.escalation.c_str());
    std::printf("evidence:\n");
    for (const diag::Evidence& e : d.evidence) {
        std::printf("  %s:%zu  [%s]  %s\n", EscapeControl(set.sources[e.source]).c_str(), e.line,
                    e.signature.c_str(), EscapeControl(e.text).c_str());
    }
    if (d.findings.size() > 1) {
        std::printf("also fired:\n");
        for (std::size_t i = 1; i < d.findings.size(); ++i) {
            const diag::Finding& f = d.findings[i];
            std::printf("  %s -> %s%s\n", f.rule.c_str(), f.cause.c_str(),
                        f.suppressed ? " (suppressed: sympathetic)" : "");
        }
    }
}

// A flight recorder dump among the inputs: a folder (its dumps), or a file named <prefix><rank>
// that starts as a pickle (0x80) or a JSON object and reads as a dump. False: a log to scan.
// An unreadable dump is an error (`problem`).
bool ReadDumpInput(const std::string& path, diag::FrFolder* fr, std::string* problem) {
    struct stat st {};
    if (path == "-" || ::stat(path.c_str(), &st) != 0) return false;
    if (S_ISDIR(st.st_mode)) {
        diag::FrFolder folder = diag::ReadFrFolder(path);
        if (folder.dumps.empty() && folder.problems.empty()) {
            *problem = path + ": a folder without flight recorder dumps (<prefix><rank>)";
        }
        for (const std::string& p : folder.problems) *problem += (problem->empty() ? "" : "; ") + p;
        for (auto& d : folder.dumps) fr->dumps.push_back(std::move(d));
        fr->rank_nodes.merge(folder.rank_nodes);
        return true;
    }
    const std::string name = path.substr(path.rfind('/') + 1);
    const auto rank = diag::FrRankFromFileName(name);
    if (!rank) return false;
    auto bytes = ReadSmallFile(path, 256u << 20);
    if (!bytes || bytes->empty()) return false;
    const auto first = static_cast<unsigned char>((*bytes)[0]);
    if (first != 0x80 && first != '{') return false;
    auto dump = diag::ParseFrDump(*bytes);
    if (!dump) {
        if (first == '{') return false;  // JSON of another kind: read as a log
        *problem = path + ": " + dump.error();
        return true;
    }
    dump->rank = *rank;
    fr->dumps.push_back(std::move(*dump));
    return true;
}

}  // namespace

int Classify(const std::vector<std::string>& args) {
    bool json = false;
    bool explain = false;
    diag::ScanLimits limits;
    diag::DiagnoseOptions options;
    std::vector<std::string> rule_paths;
    std::vector<std::string> inputs;
    std::string history_path;
    for (std::size_t i = 0; i < args.size(); ++i) {
        const std::string& a = args[i];
        auto value = [&](const char* flag) -> std::optional<std::string> {
            if (i + 1 >= args.size()) {
                std::fprintf(stderr, "autoheal: classify: %s needs a value\n%s", flag,
                             kClassifyUsage);
                return std::nullopt;
            }
            return args[++i];
        };
        if (a == "--json") {
            json = true;
        } else if (a == "--explain") {
            explain = true;
        } else if (a == "--threads") {
            auto v = value("--threads");
            if (!v) return 2;
            if (v->empty() || v->size() > 2 ||
                v->find_first_not_of("0123456789") != std::string::npos) {
                std::fprintf(stderr, "autoheal: classify: --threads: expected 0-64\n");
                return 2;
            }
            limits.threads = static_cast<unsigned>(std::stoi(*v));
        } else if (a == "--node" || a == "--job" || a == "--history" || a == "--rules") {
            auto v = value(a.c_str());
            if (!v) return 2;
            if (a == "--node") options.node = *v;
            if (a == "--job") options.job = *v;
            if (a == "--history") history_path = *v;
            if (a == "--rules") rule_paths.push_back(*v);
        } else if (a == "-h" || a == "--help") {
            std::fputs(kClassifyUsage, stdout);
            return 0;
        } else if (a.size() > 1 && a[0] == '-' && a != "-") {
            std::fprintf(stderr, "autoheal: classify: unknown option '%s'\n%s", a.c_str(),
                         kClassifyUsage);
            return 2;
        } else {
            inputs.push_back(a);
        }
    }
    if (inputs.empty()) inputs.push_back("-");
    options.now = std::chrono::duration_cast<std::chrono::seconds>(
                      std::chrono::system_clock::now().time_since_epoch())
                      .count();
    if (!history_path.empty()) {
        auto h = ReadHistory(history_path);
        if (!h) return 1;
        options.history = std::move(*h);
    }
    auto rules = LoadRulesOrComplain(rule_paths);
    if (!rules) return 1;
    // Dumps first: a run of dumps alone needs no scanner (building it costs most of a second).
    diag::EvidenceSet set;
    diag::FrFolder fr;
    std::vector<std::string> logs;
    for (const std::string& input : inputs) {
        std::string problem;
        const bool dump = ReadDumpInput(input, &fr, &problem);
        if (!problem.empty()) {
            std::fprintf(stderr, "autoheal: classify: %s\n", EscapeControl(problem).c_str());
            return 1;
        }
        if (!dump) logs.push_back(input);
    }
    if (!logs.empty()) {
        auto scanner = diag::Scanner::Build(rules->signatures, limits, ScannerCacheDir());
        if (!scanner) {
            std::fprintf(stderr, "autoheal: classify: %s\n", scanner.error().c_str());
            return 1;
        }
        for (const std::string& input : logs) {
            int fd = input == "-" ? STDIN_FILENO : open(input.c_str(), O_RDONLY | O_CLOEXEC);
            if (fd < 0) {
                std::fprintf(stderr, "autoheal: classify: %s: cannot open: %s\n", input.c_str(),
                             std::strerror(errno));
                return 1;
            }
            auto r = (*scanner)->ScanFd(fd, input == "-" ? "<stdin>" : input, &set);
            if (fd != STDIN_FILENO) close(fd);
            if (!r) {
                std::fprintf(stderr, "autoheal: classify: %s\n", r.error().c_str());
                return 1;
            }
        }
    }
    if (!fr.dumps.empty()) {
        diag::AddFlightRecorderEvidence(diag::AnalyzeFlightRecorder(fr.dumps), fr.rank_nodes,
                                        "flight-recorder", &set);
    }
    diag::Analyze(&set);
    diag::Diagnosis d = diag::Diagnose(*rules, set, options);
    if (json) {
        std::printf("%s\n", ToJson(d, set, *rules).dump().c_str());
    } else {
        PrintText(d, set);
        if (explain && !d.findings.empty()) PrintExplanation(d, set, *rules);
    }
    return 0;
}

}  // namespace autoheal::cli
