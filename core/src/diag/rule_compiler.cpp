// Stage 3 of rule loading: turn merged items into a RuleSet, checking every reference,
// regex, cause and action, with the location of the offending key.
#include <re2/re2.h>

#include <cmath>
#include <map>
#include <memory>
#include <set>

#include "autoheal/core/duration.h"
#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/pattern.h"
#include "autoheal/diag/taxonomy.h"
#include "rule_loader_internal.h"

namespace autoheal::diag::internal {
namespace {

struct SignatureFields {
    std::set<std::string> fields;
    bool builtin = false;
};

// `{xid: 79}` is `{signature: xid, where: {xid: 79}}`; the others alike.
struct Shorthand {
    const char* head;
    const char* signature;
    const char* field;
};
constexpr Shorthand kShorthands[] = {{"xid", "xid", "xid"},
                                     {"sxid", "sxid", "sxid"},
                                     {"nvml_delta", kNvmlDeltaSignature, "counter"},
                                     {"health_check", kHealthCheckSignature, "check"}};

const Shorthand* FindShorthand(const std::string& head) {
    for (const Shorthand& s : kShorthands) {
        if (head == s.head) return &s;
    }
    return nullptr;
}

constexpr const char* kConditionHeads =
    "signature, xid, sxid, nvml_delta, health_check, regex, any, all, not";

class Compiler {
  public:
    Compiler(const std::vector<SourceFile>& files, Reporter& report)
        : files_(files), report_(report) {}

    std::optional<RuleSet> Run(const std::vector<ItemInfo>& items);

  private:
    Location Where(const ItemInfo& item, const YAML::Node& node) const {
        return LocationOf(files_[item.file], node);
    }
    void Error(const ItemInfo& item, const YAML::Node& node, const std::string& code,
               const std::string& message) {
        report_.Error(code, Where(item, node), Context(item), message);
    }
    void CompileSignature(const ItemInfo& item);
    void CompileList(const ItemInfo& item);
    void CompileRule(const ItemInfo& item);
    bool CheckGuess(const ItemInfo& item, const YAML::Node& key, const Rule& rule);
    std::optional<Condition> CompileCondition(const ItemInfo& item, const YAML::Node& node,
                                              int depth);
    bool CompileValues(const ItemInfo& item, const YAML::Node& node, FieldTest* test,
                       int depth = 0);
    bool Grow(const ItemInfo& item, const YAML::Node& node, std::size_t n);
    std::optional<std::string> Scalar(const ItemInfo& item, const std::string& key);
    std::optional<std::vector<std::string>> Actions(const ItemInfo& item, const YAML::Node& node);
    bool CheckCause(const ItemInfo& item, const YAML::Node& node);
    bool CheckExample(const ItemInfo& item, const YAML::Node& node, const Rule& rule);
    std::optional<Evidence> ExampleItem(const ItemInfo& item, const YAML::Node& node);
    // What the rule's own signatures find on an example log line (the scanner's reading).
    void ScanExampleLine(const Condition& match, const std::string& line, std::size_t line_no,
                         EvidenceSet* set);
    const RE2* Pattern(const std::string& signature);
    // Reads a true/false value; reports `key: expected true or false` otherwise.
    bool Bool(const ItemInfo& item, const YAML::Node& node, const std::string& key, bool* out);

    const std::vector<SourceFile>& files_;
    Reporter& report_;
    RuleSet set_;
    std::map<std::string, SignatureFields> signatures_;
    std::map<std::string, std::unique_ptr<RE2>> patterns_;  // for example lines, a few kept
    std::map<std::string, std::vector<std::string>> lists_;
    std::map<std::string, const ItemInfo*> list_items_;
    std::set<std::string> used_lists_;
    std::set<std::string> used_signatures_;
    int regex_counter_ = 0;
    // Nodes and where-values of all rules' conditions (the shipped rules have about 200). YAML
    // aliases let a few bytes repeat a subtree exponentially often; past the limit conditions
    // are refused instead of hanging or exhausting memory.
    static constexpr std::size_t kMaxConditionSize = 100000;
    std::size_t condition_size_ = 0;
};

bool IsScalarList(const YAML::Node& node) {
    if (!node.IsSequence()) return false;
    for (const auto& v : node) {
        if (!v.IsScalar()) return false;
    }
    return true;
}

std::optional<RuleSet> Compiler::Run(const std::vector<ItemInfo>& items) {
    for (const BuiltinSignature& b : BuiltinSignatures()) {
        signatures_[b.name] = SignatureFields{{b.fields.begin(), b.fields.end()}, true};
    }
    for (const ItemInfo& item : items) {
        if (item.enabled && item.kind == ItemKind::kSignature) CompileSignature(item);
    }
    for (const ItemInfo& item : items) {
        if (item.kind == ItemKind::kList) CompileList(item);
    }
    for (const ItemInfo& item : items) {
        if (item.enabled && item.kind == ItemKind::kRule) CompileRule(item);
    }
    // Suppression references must name rules that exist (enabled or not).
    std::set<std::string> rule_names;
    for (const ItemInfo& item : items) {
        if (item.kind == ItemKind::kRule) rule_names.insert(item.name);
    }
    for (const ItemInfo& item : items) {
        if (!item.enabled || item.kind != ItemKind::kRule) continue;
        auto it = item.keys.find("suppressed_by");
        if (it == item.keys.end() || !it->second.IsSequence()) continue;
        for (const auto& ref : it->second) {
            if (ref.IsScalar() && !rule_names.count(ref.Scalar())) {
                Error(item, ref, "LOAD_ERR_UNDEFINED_REF",
                      "suppressed_by: no rule named '" + ref.Scalar() + "'");
            }
        }
    }
    for (const auto& [name, item] : list_items_) {
        if (!used_lists_.count(name)) {
            report_.Warning("LOAD_WARN_UNUSED_LIST", item->where, Context(*item),
                            "list '" + name + "' is not used by any rule");
        }
    }
    for (const ItemInfo& item : items) {
        if (item.enabled && item.kind == ItemKind::kSignature &&
            !used_signatures_.count(item.name) && !item.name.starts_with("context-")) {
            report_.Warning("LOAD_WARN_UNUSED_SIGNATURE", item.where, Context(item),
                            "signature '" + item.name +
                                "' is not used by any rule (name it context-... if it only "
                                "feeds the analyzers)");
        }
    }
    if (report_.HasErrors()) return std::nullopt;
    return std::move(set_);
}

std::optional<std::string> Compiler::Scalar(const ItemInfo& item, const std::string& key) {
    auto it = item.keys.find(key);
    if (it == item.keys.end()) return std::nullopt;
    if (!it->second.IsScalar()) {
        Error(item, it->second, "LOAD_ERR_YAML_VALIDATE", key + ": expected a string");
        return std::nullopt;
    }
    return it->second.Scalar();
}

void Compiler::CompileSignature(const ItemInfo& item) {
    if (signatures_.count(item.name) && signatures_[item.name].builtin) {
        report_.Error("LOAD_ERR_DUPLICATE", item.where, Context(item),
                      "'" + item.name + "' is a built-in analyzer signature");
        return;
    }
    auto regex = Scalar(item, "regex");
    if (!regex) {
        if (!item.keys.count("regex")) {
            report_.Error("LOAD_ERR_YAML_VALIDATE", item.where, Context(item),
                          "a signature needs a regex");
        }
        return;
    }
    RE2 re(*regex, PatternOptions());
    if (!re.ok()) {
        Error(item, item.keys.at("regex"), "LOAD_ERR_BAD_REGEX",
              "regex does not compile: " + re.error());
        return;
    }
    SignatureFields fields;
    for (const auto& [name, index] : re.NamedCapturingGroups()) fields.fields.insert(name);
    SignatureDef def;
    def.name = item.name;
    def.regex = *regex;
    def.desc = Scalar(item, "desc").value_or("");
    def.example = Scalar(item, "example").value_or("");
    def.where = item.where;
    if (!def.example.empty() && !RE2::PartialMatch(def.example, re)) {
        Error(item, item.keys.at("example"), "LOAD_ERR_EXAMPLE_MISMATCH",
              "the example line does not match the signature's regex");
        return;
    }
    for (const DerivedFields& d : AnalyzerFields()) {
        if (std::string_view(d.signature) == "*" || item.name == d.signature) {
            fields.fields.insert(d.fields.begin(), d.fields.end());
        }
    }
    signatures_[item.name] = fields;
    set_.signatures.push_back(std::move(def));
}

void Compiler::CompileList(const ItemInfo& item) {
    auto it = item.keys.find("items");
    if (it == item.keys.end() || !IsScalarList(it->second)) {
        report_.Error("LOAD_ERR_YAML_VALIDATE",
                      it == item.keys.end() ? item.where : Where(item, it->second), Context(item),
                      "items: expected a list of values");
        return;
    }
    std::vector<std::string> values;
    for (const auto& v : it->second) values.push_back(v.Scalar());
    if (item.enabled) {
        lists_[item.name] = std::move(values);
        list_items_[item.name] = &item;
    }
}

bool Compiler::Grow(const ItemInfo& item, const YAML::Node& node, std::size_t n) {
    condition_size_ += n;
    if (condition_size_ <= kMaxConditionSize) return true;
    Error(item, node, "LOAD_ERR_YAML_VALIDATE",
          "conditions too large (over " + std::to_string(kMaxConditionSize) +
              " conditions and values in all rules; a YAML alias repeating a subtree?)");
    return false;
}

bool Compiler::CompileValues(const ItemInfo& item, const YAML::Node& node, FieldTest* test,
                             int depth) {
    if (depth > 32) {  // {not: {not: ...}}, possibly an alias of itself
        Error(item, node, "LOAD_ERR_YAML_VALIDATE", "value nested too deeply");
        return false;
    }
    if (node.IsScalar()) {
        if (!Grow(item, node, 1)) return false;
        test->values.push_back(node.Scalar());
        return true;
    }
    if (IsScalarList(node)) {
        if (!Grow(item, node, node.size())) return false;
        for (const auto& v : node) test->values.push_back(v.Scalar());
        return true;
    }
    if (node.IsMap() && node.size() == 1 && node["list"]) {
        const YAML::Node ref = node["list"];
        auto found = lists_.find(ref.IsScalar() ? ref.Scalar() : "");
        if (found == lists_.end()) {
            Error(item, ref, "LOAD_ERR_UNDEFINED_REF",
                  "no list named '" + (ref.IsScalar() ? ref.Scalar() : std::string("?")) + "'");
            return false;
        }
        used_lists_.insert(found->first);
        if (!Grow(item, ref, found->second.size())) return false;
        test->values.insert(test->values.end(), found->second.begin(), found->second.end());
        return true;
    }
    if (node.IsMap() && node.size() == 1 && node["not"]) {
        test->negate = !test->negate;
        return CompileValues(item, node["not"], test, depth + 1);
    }
    if (node.IsMap() && node.size() == 1 && node["at_least"]) {
        const YAML::Node n = node["at_least"];
        double value = 0;
        if (!n.IsScalar() || !YAML::convert<double>::decode(n, value) || !std::isfinite(value)) {
            Error(item, n, "LOAD_ERR_YAML_VALIDATE", "at_least: expected a number");
            return false;
        }
        if (!Grow(item, n, 1)) return false;
        test->at_least = value;
        return true;
    }
    Error(item, node, "LOAD_ERR_YAML_VALIDATE",
          "expected a value, a list of values, {list: NAME}, {at_least: N} or {not: ...}");
    return false;
}

std::optional<Condition> Compiler::CompileCondition(const ItemInfo& item, const YAML::Node& node,
                                                    int depth) {
    if (depth > 32) {
        Error(item, node, "LOAD_ERR_YAML_VALIDATE", "condition nested too deeply");
        return std::nullopt;
    }
    if (!Grow(item, node, 1)) return std::nullopt;
    if (!node.IsMap()) {
        Error(item, node, "LOAD_ERR_YAML_VALIDATE",
              "a condition is a mapping: {signature: ...}, {xid: ...}, {nvml_delta: ...}, "
              "{health_check: ...}, {regex: ...}, {any: [...]}, {all: [...]} or {not: ...}");
        return std::nullopt;
    }
    static const std::set<std::string> kHeads{
        "signature", "xid", "sxid", "nvml_delta", "health_check", "regex", "any", "all", "not"};
    static const std::set<std::string> kLeafExtras{"where", "min_count"};
    std::string head;
    for (const auto& kv : node) {
        const std::string key = kv.first.as<std::string>("");
        if (kHeads.count(key)) {
            if (!head.empty()) {
                std::string message = "a condition has one of ";
                message += kConditionHeads;
                message += ", not both '";
                message += head;
                message += "' and '";
                message += key;
                message += "'";
                Error(item, kv.first, "LOAD_ERR_YAML_VALIDATE", message);
                return std::nullopt;
            }
            head = key;
        } else if (!kLeafExtras.count(key)) {
            Error(item, kv.first, "LOAD_ERR_UNKNOWN_KEY",
                  "unknown condition key '" + key + "'; expected " + kConditionHeads +
                      ", where, min_count");
            return std::nullopt;
        }
    }
    if (head.empty()) {
        Error(item, node, "LOAD_ERR_YAML_VALIDATE",
              std::string("condition needs one of ") + kConditionHeads);
        return std::nullopt;
    }
    Condition cond;
    const YAML::Node body = node[head];
    if (head == "any" || head == "all") {
        cond.kind = head == "any" ? Condition::Kind::kAny : Condition::Kind::kAll;
        if (!body.IsSequence() || body.size() == 0) {
            Error(item, body, "LOAD_ERR_YAML_VALIDATE", head + ": expected a non-empty list");
            return std::nullopt;
        }
        for (const auto& child : body) {
            auto c = CompileCondition(item, child, depth + 1);
            if (!c) return std::nullopt;
            cond.children.push_back(std::move(*c));
        }
        if (node["where"] || node["min_count"]) {
            Error(item, node, "LOAD_ERR_YAML_VALIDATE",
                  "where/min_count belong to a signature, xid, sxid, nvml_delta, health_check "
                  "or regex condition");
            return std::nullopt;
        }
        return cond;
    }
    if (head == "not") {
        cond.kind = Condition::Kind::kNot;
        auto c = CompileCondition(item, body, depth + 1);
        if (!c) return std::nullopt;
        cond.children.push_back(std::move(*c));
        return cond;
    }
    cond.kind = Condition::Kind::kLeaf;
    if (head == "signature") {
        if (!body.IsScalar()) {
            Error(item, body, "LOAD_ERR_YAML_VALIDATE", "signature: expected a name");
            return std::nullopt;
        }
        cond.signature = body.Scalar();
        if (!signatures_.count(cond.signature)) {
            Error(item, body, "LOAD_ERR_UNDEFINED_REF",
                  "no signature named '" + cond.signature + "'");
            return std::nullopt;
        }
    } else if (const Shorthand* shorthand = FindShorthand(head)) {
        cond.signature = shorthand->signature;
        if (!signatures_.count(cond.signature)) {
            Error(item, body, "LOAD_ERR_UNDEFINED_REF",
                  "no signature named '" + cond.signature + "' is loaded");
            return std::nullopt;
        }
        FieldTest test{shorthand->field, {}, false};
        if (!CompileValues(item, body, &test)) return std::nullopt;
        cond.where.push_back(std::move(test));
    } else {  // regex: an anonymous signature of this rule
        if (!body.IsScalar()) {
            Error(item, body, "LOAD_ERR_YAML_VALIDATE", "regex: expected a pattern");
            return std::nullopt;
        }
        RE2 re(body.Scalar(), PatternOptions());
        if (!re.ok()) {
            Error(item, body, "LOAD_ERR_BAD_REGEX", "regex does not compile: " + re.error());
            return std::nullopt;
        }
        SignatureDef def;
        def.name = item.name + "#regex" + std::to_string(++regex_counter_);
        def.regex = body.Scalar();
        def.desc = "pattern of rule " + item.name;
        def.where = Where(item, body);
        SignatureFields fields;
        for (const auto& [name, index] : re.NamedCapturingGroups()) fields.fields.insert(name);
        signatures_[def.name] = fields;
        cond.signature = def.name;
        set_.signatures.push_back(std::move(def));
    }
    used_signatures_.insert(cond.signature);
    if (const YAML::Node where = node["where"]) {
        if (!where.IsMap()) {
            Error(item, where, "LOAD_ERR_YAML_VALIDATE", "where: expected FIELD: VALUES");
            return std::nullopt;
        }
        const auto& known = signatures_[cond.signature].fields;
        for (const auto& kv : where) {
            const std::string field = kv.first.as<std::string>("");
            if (!known.count(field)) {
                std::string list;
                for (const auto& f : known) list += (list.empty() ? "" : ", ") + f;
                Error(item, kv.first, "LOAD_ERR_UNKNOWN_FIELD",
                      "signature '" + cond.signature + "' has no field '" + field +
                          "'; its fields: " + (list.empty() ? "none" : list));
                return std::nullopt;
            }
            FieldTest test{field, {}, false};
            if (!CompileValues(item, kv.second, &test)) return std::nullopt;
            cond.where.push_back(std::move(test));
        }
    }
    if (const YAML::Node mc = node["min_count"]) {
        int n = 0;
        if (!mc.IsScalar() || !YAML::convert<int>::decode(mc, n) || n < 1) {
            Error(item, mc, "LOAD_ERR_YAML_VALIDATE", "min_count: expected a whole number >= 1");
            return std::nullopt;
        }
        cond.min_count = n;
    }
    return cond;
}

std::optional<std::vector<std::string>> Compiler::Actions(const ItemInfo& item,
                                                          const YAML::Node& node) {
    if (!IsScalarList(node)) {
        Error(item, node, "LOAD_ERR_YAML_VALIDATE", "actions: expected a list of actions");
        return std::nullopt;
    }
    std::vector<std::string> actions;
    for (const auto& a : node) {
        const ActionInfo* action = FindAction(a.Scalar());
        if (action == nullptr || !action->plan) {
            std::string known;
            for (const ActionInfo& info : diag::Actions()) {
                if (info.plan) known += (known.empty() ? "" : ", ") + std::string(info.name);
            }
            Error(item, a, "LOAD_ERR_UNKNOWN_ACTION",
                  "unknown action '" + a.Scalar() + "'; known actions: " + known);
            return std::nullopt;
        }
        if (a.Scalar() != "none") actions.push_back(a.Scalar());
    }
    return actions;
}

bool Compiler::Bool(const ItemInfo& item, const YAML::Node& node, const std::string& key,
                    bool* out) {
    if (node.IsScalar() && YAML::convert<bool>::decode(node, *out)) return true;
    Error(item, node, "LOAD_ERR_YAML_VALIDATE", key + ": expected true or false");
    return false;
}

bool Compiler::CheckCause(const ItemInfo& item, const YAML::Node& node) {
    if (node.IsScalar()) {
        const CauseInfo* cause = FindCause(node.Scalar());
        if (cause != nullptr && cause->rules) return true;
    }
    std::string known;
    for (const CauseInfo& c : Causes()) {
        if (c.rules) known += (known.empty() ? "" : ", ") + std::string(c.name);
    }
    Error(item, node, "LOAD_ERR_UNKNOWN_CAUSE",
          "unknown cause '" + (node.IsScalar() ? node.Scalar() : std::string("?")) +
              "'; known causes: " + known);
    return false;
}

std::optional<Evidence> Compiler::ExampleItem(const ItemInfo& item, const YAML::Node& node) {
    const YAML::Node kind = node.IsMap() ? node["signature"] : YAML::Node();
    if (!kind || !kind.IsScalar()) {
        Error(item, node, "LOAD_ERR_YAML_VALIDATE",
              "example: expected {signature: KIND, FIELD: VALUE, ...} or a list of them");
        return std::nullopt;
    }
    auto found = signatures_.find(kind.Scalar());
    if (found == signatures_.end() || !found->second.builtin) {
        Error(item, kind, "LOAD_ERR_UNDEFINED_REF",
              "example: '" + kind.Scalar() +
                  "' is not a built-in evidence kind (a pattern signature has its own example "
                  "line)");
        return std::nullopt;
    }
    Evidence e;
    e.signature = kind.Scalar();
    for (const auto& kv : node) {
        const std::string field = kv.first.as<std::string>("");
        if (field == "signature") continue;
        if (!found->second.fields.count(field)) {
            Error(item, kv.first, "LOAD_ERR_UNKNOWN_FIELD",
                  "example: '" + e.signature + "' has no field '" + field + "'");
            return std::nullopt;
        }
        if (!kv.second.IsScalar()) {
            Error(item, kv.second, "LOAD_ERR_YAML_VALIDATE", "example: expected a value");
            return std::nullopt;
        }
        e.SetField(field, kv.second.Scalar());
    }
    return e;
}

const RE2* Compiler::Pattern(const std::string& signature) {
    auto cached = patterns_.find(signature);
    if (cached != patterns_.end()) return cached->second.get();
    const SignatureDef* def = set_.FindSignature(signature);
    if (def == nullptr) return nullptr;
    auto re = std::make_unique<RE2>(def->regex, PatternOptions());
    return patterns_.emplace(signature, std::move(re)).first->second.get();
}

void Compiler::ScanExampleLine(const Condition& match, const std::string& line, std::size_t line_no,
                               EvidenceSet* set) {
    if (match.kind != Condition::Kind::kLeaf) {
        for (const Condition& c : match.children) ScanExampleLine(c, line, line_no, set);
        return;
    }
    for (const Evidence& e : set->items) {
        if (e.signature == match.signature && e.line == line_no) return;  // already read
    }
    const RE2* re = Pattern(match.signature);
    if (re == nullptr) {
        // A built-in kind: an analyzer's is made from lines its own signatures read (Analyze
        // runs on the example after); a typed kind's cannot be shown by a line.
        for (const BuiltinSignature& b : BuiltinSignatures()) {
            if (match.signature != b.name) continue;
            for (const std::string& input : b.reads) {
                Condition leaf;
                leaf.signature = input;
                ScanExampleLine(leaf, line, line_no, set);
            }
        }
        return;
    }
    Evidence e;
    e.signature = match.signature;
    e.line = line_no;
    e.text = line;
    if (!MatchFields(*re, line, &e.fields)) return;
    AddEvidence(set, "example", std::move(e));
}

// The rule's example must make it fire: its match holds on it and its unless does not. An
// example is items of built-in kinds, or log lines read by the signatures the rule names (and
// then analyzed, as `classify` does).
bool Compiler::CheckExample(const ItemInfo& item, const YAML::Node& node, const Rule& rule) {
    EvidenceSet set;
    const bool list = node.IsSequence() && node.size() > 0;
    const std::size_t n = list ? node.size() : 1;
    bool lines = false;
    for (std::size_t i = 0; i < n; ++i) {
        const YAML::Node one = list ? node[i] : node;
        if (one.IsScalar()) {
            lines = true;
            ScanExampleLine(rule.match, one.Scalar(), i + 1, &set);
            if (rule.unless) ScanExampleLine(*rule.unless, one.Scalar(), i + 1, &set);
            continue;
        }
        auto e = ExampleItem(item, one);
        if (!e) return false;
        e->line = i + 1;
        AddEvidence(&set, "example", std::move(*e));
    }
    if (lines) Analyze(&set);
    // A few compiled patterns are kept for the next rules (most read the same signatures as their
    // neighbours: Xid lines); kept for every rule they held 12 MiB of RE2's caches at once, more
    // than the scanner's own. Measured: 8 kept loads the shipped rules in 0.21 s of CPU at
    // 29 MiB peak, none kept 0.25 s at 29 MiB, all kept 0.26 s at 41 MiB.
    constexpr std::size_t kPatternsKept = 8;
    if (patterns_.size() > kPatternsKept) patterns_.clear();
    if (!ConditionHolds(rule.match, set) || (rule.unless && ConditionHolds(*rule.unless, set))) {
        Error(item, node, "LOAD_ERR_EXAMPLE_MISMATCH",
              "the rule does not fire on its example (match does not hold, or unless does)");
        return false;
    }
    return true;
}

// A guess names the likeliest cause and nothing more: no plan, no requeue, no escalation.
bool Compiler::CheckGuess(const ItemInfo& item, const YAML::Node& key, const Rule& rule) {
    if (!rule.guess) return true;
    const bool plain = !item.keys.count("actions") && !item.keys.count("requeue") &&
                       !item.keys.count("escalate") && !rule.interrupts_job &&
                       !rule.contributes_actions;
    if (!plain) {
        Error(item, key, "LOAD_ERR_YAML_VALIDATE",
              "guess: a guess names a cause only; it takes no actions, requeue, escalate, "
              "interrupts_job or contributes_actions");
        return false;
    }
    return true;
}

void Compiler::CompileRule(const ItemInfo& item) {
    Rule rule;
    rule.name = item.name;
    rule.where = item.where;
    rule.desc = Scalar(item, "desc").value_or("");
    rule.doc = Scalar(item, "doc").value_or("");
    bool ok = true;
    auto match = item.keys.find("match");
    auto cause = item.keys.find("cause");
    if (match == item.keys.end() || cause == item.keys.end()) {
        report_.Error("LOAD_ERR_YAML_VALIDATE", item.where, Context(item),
                      "a rule needs match and cause");
        return;
    }
    if (auto c = CompileCondition(item, match->second, 0)) {
        rule.match = std::move(*c);
    } else {
        ok = false;
    }
    if (auto it = item.keys.find("unless"); it != item.keys.end()) {
        if (auto c = CompileCondition(item, it->second, 0)) {
            rule.unless = std::move(*c);
        } else {
            ok = false;
        }
    }
    if (auto it = item.keys.find("example"); it != item.keys.end() && ok) {
        ok = CheckExample(item, it->second, rule);
    }
    if (CheckCause(item, cause->second)) {
        rule.cause = cause->second.Scalar();
        rule.requeue = IsInfrastructure(rule.cause);
    } else {
        ok = false;
    }
    if (auto it = item.keys.find("actions"); it != item.keys.end()) {
        if (auto a = Actions(item, it->second)) {
            rule.actions = std::move(*a);
        } else {
            ok = false;
        }
    }
    if (auto it = item.keys.find("requeue"); it != item.keys.end()) {
        ok = Bool(item, it->second, "requeue", &rule.requeue) && ok;
    }
    if (auto it = item.keys.find("interrupts_job"); it != item.keys.end()) {
        ok = Bool(item, it->second, "interrupts_job", &rule.interrupts_job) && ok;
    }
    if (auto it = item.keys.find("contributes_actions"); it != item.keys.end()) {
        ok = Bool(item, it->second, "contributes_actions", &rule.contributes_actions) && ok;
    }
    if (auto it = item.keys.find("guess"); it != item.keys.end()) {
        ok = Bool(item, it->second, "guess", &rule.guess) && ok;
        ok = CheckGuess(item, it->second, rule) && ok;
        if (rule.guess) rule.requeue = false;
    }
    if (auto it = item.keys.find("culprit_node"); it != item.keys.end()) {
        static const RE2 kFieldName("[a-z][a-z0-9_]*");
        if (!it->second.IsScalar() || !RE2::FullMatch(it->second.Scalar(), kFieldName)) {
            Error(item, it->second, "LOAD_ERR_YAML_VALIDATE",
                  "culprit_node: expected an evidence field name (peer, server)");
            ok = false;
        } else {
            rule.culprit_node = it->second.Scalar();
        }
    }
    if (auto it = item.keys.find("priority"); it != item.keys.end()) {
        int p = 0;
        if (!it->second.IsScalar() || !YAML::convert<int>::decode(it->second, p) || p < 0 ||
            p > 1000) {
            Error(item, it->second, "LOAD_ERR_YAML_VALIDATE",
                  "priority: expected a whole number from 0 to 1000");
            ok = false;
        }
        rule.priority = p;
    }
    if (auto it = item.keys.find("confidence"); it != item.keys.end()) {
        double c = 0;
        if (!it->second.IsScalar() || !YAML::convert<double>::decode(it->second, c) ||
            !(c >= 0.0 && c <= 1.0)) {
            Error(item, it->second, "LOAD_ERR_YAML_VALIDATE",
                  "confidence: expected a number from 0 to 1");
            ok = false;
        }
        rule.confidence = c;
    }
    if (auto it = item.keys.find("suppressed_by"); it != item.keys.end()) {
        if (!IsScalarList(it->second)) {
            Error(item, it->second, "LOAD_ERR_YAML_VALIDATE",
                  "suppressed_by: expected a list of rule names");
            ok = false;
        } else {
            for (const auto& v : it->second) rule.suppressed_by.push_back(v.Scalar());
        }
    }
    if (auto it = item.keys.find("escalate"); it != item.keys.end()) {
        if (!it->second.IsSequence()) {
            Error(item, it->second, "LOAD_ERR_YAML_VALIDATE", "escalate: expected a list");
            ok = false;
        } else {
            for (const auto& step : it->second) {
                Escalation e;
                const YAML::Node when = step.IsMap() ? step["when"] : YAML::Node();
                if (!step.IsMap() || !when || !when.IsMap()) {
                    Error(item, step, "LOAD_ERR_YAML_VALIDATE",
                          "escalate: each step needs when: {repeats: N, within: 30d, per: "
                          "gpu|node}");
                    ok = false;
                    continue;
                }
                for (const auto& kv : step) {
                    const std::string k = kv.first.as<std::string>("");
                    if (k != "when" && k != "cause" && k != "actions" && k != "requeue") {
                        Error(item, kv.first, "LOAD_ERR_UNKNOWN_KEY",
                              "unknown escalate key '" + k +
                                  "'; expected when, cause, actions, requeue");
                        ok = false;
                    }
                }
                for (const auto& kv : when) {
                    const std::string k = kv.first.as<std::string>("");
                    const YAML::Node& v = kv.second;
                    if (k == "repeats") {
                        if (!v.IsScalar() || !YAML::convert<int>::decode(v, e.repeats) ||
                            e.repeats < 1) {
                            Error(item, v, "LOAD_ERR_YAML_VALIDATE",
                                  "repeats: expected a whole number >= 1");
                            ok = false;
                        }
                    } else if (k == "within") {
                        // The one grammar (core/duration.h); a window of 0 s counts nothing.
                        auto d = v.IsScalar() ? ParseDuration(v.Scalar())
                                              : Result<std::int64_t>(MakeError("not a scalar"));
                        if (!d || *d <= 0) {
                            Error(item, v, "LOAD_ERR_YAML_VALIDATE",
                                  "within: expected a duration such as 30d, 12h, 90m, 2w");
                            ok = false;
                        } else {
                            e.within_seconds = *d;
                        }
                    } else if (k == "per") {
                        if (!v.IsScalar() || (v.Scalar() != "gpu" && v.Scalar() != "node")) {
                            Error(item, v, "LOAD_ERR_YAML_VALIDATE", "per: expected gpu or node");
                            ok = false;
                        } else {
                            e.per = v.Scalar();
                        }
                    } else if (k == "distinct") {
                        if (!v.IsScalar() || v.Scalar() != "job") {
                            Error(item, v, "LOAD_ERR_YAML_VALIDATE", "distinct: expected job");
                            ok = false;
                        }
                        e.distinct_jobs = true;
                    } else {
                        Error(item, kv.first, "LOAD_ERR_UNKNOWN_KEY",
                              "unknown when key '" + k +
                                  "'; expected repeats, within, per, distinct");
                        ok = false;
                    }
                }
                if (const YAML::Node c = step["cause"]) {
                    if (CheckCause(item, c)) {
                        e.cause = c.Scalar();
                    } else {
                        ok = false;
                    }
                }
                if (const YAML::Node a = step["actions"]) {
                    if (auto acts = Actions(item, a)) {
                        e.actions = std::move(*acts);
                    } else {
                        ok = false;
                    }
                }
                if (const YAML::Node r = step["requeue"]) {
                    bool b = false;
                    ok = Bool(item, r, "requeue", &b) && ok;
                    e.requeue = b;
                }
                rule.escalate.push_back(std::move(e));
            }
        }
    }
    if (ok) set_.rules.push_back(std::move(rule));
}

}  // namespace

std::optional<RuleSet> CompileItems(const std::vector<ItemInfo>& items,
                                    const std::vector<SourceFile>& files, Reporter& report) {
    Compiler compiler(files, report);
    return compiler.Run(items);
}

}  // namespace autoheal::diag::internal
