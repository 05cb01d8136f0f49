// autoheal rules check | explain | patterns (catalog: rules_catalog.cpp)
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>

#include "autoheal/diag/taxonomy.h"
#include "cli_common.h"

namespace autoheal::cli {
namespace {

constexpr const char* kRulesUsage =
    "usage: autoheal rules check [--json] PATH...\n"
    "       autoheal rules explain CAUSE|RULE|SIGNATURE [--rules PATH]...\n"
    "       autoheal rules patterns [--rules PATH]...\n"
    "       autoheal rules catalog [--json]\n"
    "  check: loads the files (folders give their *.yaml in name order) together, as autoheal\n"
    "  would, and reports each file as Ok, Ok, with warnings, or Invalid.\n"
    "  Exit 0: valid (warnings allowed); 1: invalid; 2: usage.\n"
    "  catalog: every cause, action and outcome autoheal knows, with what each does.\n";

const char* SeverityName(diag::Severity s) {
    return s == diag::Severity::kError ? "error" : "warning";
}

int Check(const std::vector<std::string>& args) {
    bool json = false;
    std::vector<std::string> paths;
    for (const std::string& a : args) {
        if (a == "--json") {
            json = true;
        } else if (!a.empty() && a[0] == '-') {
            std::fprintf(stderr, "autoheal: rules check: unknown option '%s'\n%s", a.c_str(),
                         kRulesUsage);
            return 2;
        } else {
            paths.push_back(a);
        }
    }
    if (paths.empty()) {
        std::fputs(kRulesUsage, stderr);
        return 2;
    }
    diag::LoadedRules loaded = diag::LoadRuleFiles(paths);
    // Per file status, in load order; read errors are files too.
    std::map<std::string, std::vector<const diag::LoadMessage*>> by_file;
    for (const auto& m : loaded.result.messages) by_file[m.where.file].push_back(&m);
    auto status = [&](const std::string& file) {
        bool error = false, warning = false;
        for (const auto* m : by_file[file]) {
            (m->severity == diag::Severity::kError ? error : warning) = true;
        }
        return error ? "Invalid" : warning ? "Ok, with warnings" : "Ok";
    };
    const bool ok = loaded.rules.has_value();
    if (json) {
        nlohmann::json out;
        out["ok"] = ok;
        out["files"] = nlohmann::json::array();
        for (const std::string& f : loaded.files) {
            nlohmann::json file{{"name", f}, {"status", status(f)}};
            file["messages"] = nlohmann::json::array();
            for (const auto* m : by_file[f]) {
                file["messages"].push_back({{"severity", SeverityName(m->severity)},
                                            {"code", m->code},
                                            {"line", m->where.line},
                                            {"column", m->where.column},
                                            {"context", m->context},
                                            {"message", m->message},
                                            {"snippet", m->snippet}});
            }
            out["files"].push_back(file);
        }
        out["read_errors"] = loaded.read_errors;
        std::printf("%s\n", out.dump(2).c_str());
        return ok ? 0 : 1;
    }
    for (const std::string& e : loaded.read_errors)
        std::printf("%s: Invalid\n  %s\n", e.c_str(), e.c_str());
    for (const std::string& f : loaded.files) {
        std::printf("%s: %s\n", f.c_str(), status(f));
    }
    std::fputs(loaded.result.Format().c_str(), stdout);
    if (loaded.files.empty() && loaded.read_errors.empty()) {
        std::printf("no rule files found\n");
        return 1;
    }
    return ok ? 0 : 1;
}

void PrintCondition(const diag::Condition& c, int indent) {
    std::string pad(static_cast<std::size_t>(indent), ' ');
    switch (c.kind) {
        case diag::Condition::Kind::kAll:
        case diag::Condition::Kind::kAny:
            std::printf("%s%s of:\n", pad.c_str(),
                        c.kind == diag::Condition::Kind::kAll ? "all" : "any");
            for (const auto& child : c.children) PrintCondition(child, indent + 2);
            return;
        case diag::Condition::Kind::kNot:
            std::printf("%snot:\n", pad.c_str());
            PrintCondition(c.children.front(), indent + 2);
            return;
        case diag::Condition::Kind::kLeaf: {
            std::string where;
            for (const auto& t : c.where) {
                where += " " + t.field + (t.negate ? " not in [" : " in [");
                for (std::size_t i = 0; i < t.values.size(); ++i) {
                    where += (i ? "," : "") + t.values[i];
                }
                where += "]";
            }
            std::printf("%ssignature %s%s%s\n", pad.c_str(), c.signature.c_str(), where.c_str(),
                        c.min_count > 1
                            ? (" at least " + std::to_string(c.min_count) + " times").c_str()
                            : "");
        }
    }
}

int Explain(const std::vector<std::string>& args) {
    std::vector<std::string> rule_paths;
    std::string name;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--rules" && i + 1 < args.size()) {
            rule_paths.push_back(args[++i]);
        } else if (name.empty() && !args[i].empty() && args[i][0] != '-') {
            name = args[i];
        } else {
            std::fputs(kRulesUsage, stderr);
            return 2;
        }
    }
    if (name.empty()) {
        std::fputs(kRulesUsage, stderr);
        return 2;
    }
    auto rules = LoadRulesOrComplain(rule_paths);
    bool found = false;
    if (const diag::CauseInfo* c = diag::FindCause(name)) {
        found = true;
        std::printf("cause %s (%s): %s\n", std::string(c->name).c_str(),
                    std::string(diag::ToString(c->category)).c_str(),
                    std::string(c->summary).c_str());
        std::printf("  a job it kills is %s\n",
                    c->infrastructure ? "requeued when it opted in (infrastructure fault)"
                                      : "not requeued (not an infrastructure fault)");
        if (rules) {
            std::printf("  rules naming it:");
            for (const auto& r : rules->rules) {
                if (r.cause == name) std::printf(" %s", r.name.c_str());
            }
            std::printf("\n");
        }
    }
    if (const diag::ActionInfo* a = diag::FindAction(name)) {
        found = true;
        std::printf("action %s: %s\n", std::string(a->name).c_str(),
                    std::string(a->summary).c_str());
    }
    if (rules) {
        if (const diag::Rule* r = rules->FindRule(name)) {
            found = true;
            std::printf("rule %s (%s:%d)\n", r->name.c_str(), r->where.file.c_str(), r->where.line);
            if (!r->desc.empty()) std::printf("  %s\n", r->desc.c_str());
            if (!r->doc.empty()) std::printf("  from: %s\n", r->doc.c_str());
            std::printf("  cause: %s\n", r->cause.c_str());
            std::string plan;
            for (const auto& a : r->actions) plan += (plan.empty() ? "" : ", ") + a;
            std::printf("  plan: %s\n", plan.empty() ? "no node action" : plan.c_str());
            std::printf("  requeue: %s, priority %d, confidence %.2f%s\n",
                        r->requeue ? "yes" : "no", r->priority, r->confidence,
                        r->contributes_actions ? ", adds its actions to the winning plan" : "");
            std::printf("  fires when:\n");
            PrintCondition(r->match, 4);
            if (r->unless) {
                std::printf("  unless:\n");
                PrintCondition(*r->unless, 4);
            }
            for (const auto& s : r->suppressed_by) {
                std::printf("  never the root cause when rule %s fires\n", s.c_str());
            }
            for (const auto& e : r->escalate) {
                std::string acts;
                for (const auto& a : e.actions.value_or(std::vector<std::string>{})) {
                    acts += (acts.empty() ? "" : ", ") + a;
                }
                std::printf("  escalates after %d %s on the same %s within %lldd%s%s%s\n",
                            e.repeats, e.distinct_jobs ? "jobs" : "occurrences", e.per.c_str(),
                            static_cast<long long>(e.within_seconds / 86400),
                            e.cause ? (" to cause " + *e.cause).c_str() : "",
                            e.actions ? (", plan " + acts).c_str() : "",
                            e.requeue ? (*e.requeue ? ", requeue" : ", no requeue") : "");
            }
        }
        if (const diag::SignatureDef* s = rules->FindSignature(name)) {
            found = true;
            std::printf("signature %s (%s:%d)\n  %s\n  regex: %s\n", s->name.c_str(),
                        s->where.file.c_str(), s->where.line, s->desc.c_str(), s->regex.c_str());
            if (!s->example.empty()) std::printf("  example: %s\n", s->example.c_str());
        }
    }
    for (const auto& b : diag::BuiltinSignatures()) {
        if (name == b.name) {
            found = true;
            std::printf("signature %s (built-in)\n  %s\n", b.name, b.desc);
            std::string fields;
            for (const std::string& f : b.fields) fields += (fields.empty() ? "" : ", ") + f;
            std::printf("  fields: %s\n", fields.c_str());
            if (*b.example != '\0') std::printf("  example: %s\n", b.example);
        }
    }
    if (!found) {
        std::fprintf(stderr,
                     "autoheal: rules explain: no cause, action, rule or signature named '%s'\n",
                     name.c_str());
        return 1;
    }
    return 0;
}

int Patterns(const std::vector<std::string>& args) {
    std::vector<std::string> rule_paths;
    for (std::size_t i = 0; i < args.size(); ++i) {
        if (args[i] == "--rules" && i + 1 < args.size()) {
            rule_paths.push_back(args[++i]);
        } else {
            std::fputs(kRulesUsage, stderr);
            return 2;
        }
    }
    auto rules = LoadRulesOrComplain(rule_paths);
    if (!rules) return 1;
    for (const auto& s : rules->signatures) std::printf("%s\n", s.regex.c_str());
    return 0;
}

}  // namespace

int Rules(const std::vector<std::string>& args) {
    if (args.empty()) {
        std::fputs(kRulesUsage, stderr);
        return 2;
    }
    std::vector<std::string> rest(args.begin() + 1, args.end());
    if (args[0] == "check") return Check(rest);
    if (args[0] == "explain") return Explain(rest);
    if (args[0] == "patterns") return Patterns(rest);
    if (args[0] == "catalog") return RulesCatalog(rest);
    if (args[0] == "-h" || args[0] == "--help") {
        std::fputs(kRulesUsage, stdout);
        return 0;
    }
    std::fprintf(stderr, "autoheal: rules: unknown command '%s'\n%s", args[0].c_str(), kRulesUsage);
    return 2;
}

}  // namespace autoheal::cli
