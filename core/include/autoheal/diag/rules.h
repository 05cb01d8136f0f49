// autoheal's rule language, loaded Falco-style in three stages:
//   reader    (YAML text -> items with source locations)     rule_reader.cpp
//   collector (define / override / enable across files)       rule_collector.cpp
//   compiler  (validate references, regexes, causes, actions) rule_compiler.cpp
// The loader does no file I/O: callers hand it (name, text) pairs, in load order.
//
// Items in a rules file (a YAML list):
//   - signature: NAME        a named log pattern (RE2 syntax; named groups become fields)
//     regex: '...'
//     example: '...'         optional; must match the regex (checked at load)
//   - list: NAME             a named list of values for `where` tests
//     items: [...]
//   - rule: NAME             a cause and a plan for evidence that matches
//     match: CONDITION
//     unless: CONDITION      optional: the rule does not fire when this matches
//     cause: CAUSE
//     actions: [ACTION...]
//     requeue: true|false
//     interrupts_job: true   the fault stops a running job: autoheal-agent acts at once
//     priority: N            higher = more specific; the highest firing rule names the cause
//     confidence: 0..1
//     suppressed_by: [RULE]  sympathetic: never the root cause when one of these fires
//     contributes_actions: true   its actions join the winning plan (e.g. Xid 154 advice)
//     culprit_node: FIELD    the evidence field naming the culprit node when it is not the
//                            line's own host (an IB peer the transport gave up on)
//     guess: true            names only the likeliest cause of lines no other rule reads: it
//                            decides only when nothing else fires, takes no actions and no
//                            requeue, and explains no failure (blames no node; a failed run
//                            stays unexplained for lemons)
//     escalate: [{when: {repeats: N, within: 30d, per: gpu|node, distinct: job},
//                 cause: ..., actions: [...], requeue: ...}]
//     doc: '...'             optional: the documentation the rule comes from
//     example: 'LINE' | {signature: KIND, FIELD: VALUE...} | [...]   optional: log lines (read
//                            by the rule's signatures, then analyzed) and/or items of built-in
//                            kinds on which `match` must hold and `unless` must not (at load)
//   Any item may say `enabled: false`; a later file may redefine an item by name, or change
//   some of its keys with `override: {KEY: replace|append}`.
// CONDITION: {signature: NAME, where: {FIELD: VALUE | [VALUES] | {list: NAME} | {at_least: N} |
//                                     {not: ...}},
//             min_count: N} | {xid: CODES} | {sxid: CODES} | {nvml_delta: COUNTERS} |
//            {health_check: CHECKS} | {regex: '...'} |
//            {any: [CONDITION...]} | {all: [...]} | {not: CONDITION}
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace autoheal::diag {

struct Location {
    std::string file;
    int line = 0;    // 1-based
    int column = 0;  // 1-based
};

enum class Severity { kError, kWarning };

struct LoadMessage {
    Severity severity = Severity::kError;
    std::string code;  // stable, e.g. LOAD_ERR_UNKNOWN_KEY
    Location where;
    std::string context;  // "In rule 'xid-79'", may be empty
    std::string message;
    std::string snippet;  // the source line and a caret under the column
};

struct LoadResult {
    std::vector<LoadMessage> messages;
    bool ok() const;            // no errors
    bool has_warnings() const;  // any warnings
    // "file:line:col: error: CODE: message" lines with snippets, for people.
    std::string Format() const;
};

struct FieldTest {
    std::string field;
    std::vector<std::string> values;  // any of
    bool negate = false;              // none of
    std::optional<double> at_least;   // or a number >= this ({at_least: N})
};

struct Condition {
    enum class Kind { kLeaf, kAll, kAny, kNot };
    Kind kind = Kind::kLeaf;
    std::vector<Condition> children;
    std::string signature;  // leaf
    std::vector<FieldTest> where;
    int min_count = 1;
};

struct Escalation {
    int repeats = 2;
    std::int64_t within_seconds = 30LL * 24 * 3600;
    std::string per = "gpu";  // gpu | node
    bool distinct_jobs = false;
    std::optional<std::string> cause;
    std::optional<std::vector<std::string>> actions;
    std::optional<bool> requeue;
};

struct SignatureDef {
    std::string name;
    std::string regex;
    std::string desc;
    std::string example;
    Location where;
};

struct Rule {
    std::string name;
    std::string desc;
    std::string doc;  // the documentation the rule comes from (`classify --explain`)
    Condition match;
    std::optional<Condition> unless;
    std::string cause;
    std::vector<std::string> actions;
    bool requeue = false;
    double confidence = 0.8;
    int priority = 50;
    std::vector<std::string> suppressed_by;
    bool contributes_actions = false;
    // The fault stops a running job (a lost GPU, a dead link): autoheal-agent acts while the
    // job runs instead of waiting for it to end (agent/).
    bool interrupts_job = false;
    // Names only the likeliest cause of lines no other rule reads (see `guess:` above).
    bool guess = false;
    // The evidence field that names the culprit node when the line's own host is not it (the
    // peer an IB transport gave up on, the NFS server that stopped answering); empty: the
    // line's `node`, then its `host`.
    std::string culprit_node;
    std::vector<Escalation> escalate;
    Location where;
};

struct RuleSet {
    std::vector<SignatureDef> signatures;  // enabled ones, in definition order
    std::vector<Rule> rules;               // enabled ones, in definition order
    const Rule* FindRule(const std::string& name) const;
    const SignatureDef* FindSignature(const std::string& name) const;
};

// Signatures produced by autoheal rather than by a pattern: the analyzers' (for example
// nccl-ranks-desync) and the node epilog's typed kinds (nvml-delta, health-check); rules may
// match them like any other. Name, fields and, for the typed kinds, an example item.
struct BuiltinSignature {
    const char* name;
    const char* desc;
    std::vector<std::string> fields;
    const char* example = "";  // "counter=... gpu=..." for `rules explain`; may be empty
    // The pattern signatures an analyzer makes this kind from: a rule's example may be log lines
    // for them (the NCCL rank analyzers read the watchdog's timeouts and the ranks' prefixes).
    std::vector<std::string> reads = {};
};
const std::vector<BuiltinSignature>& BuiltinSignatures();

// The node epilog's typed evidence kinds (remediation/evidence_sources.h).
inline constexpr const char* kNvmlDeltaSignature = "nvml-delta";
inline constexpr const char* kHealthCheckSignature = "health-check";
// autoheal-agent's: a job with a hang timeout stopped advancing (agent/hang_watch.h).
inline constexpr const char* kJobHangSignature = "job-hang";
// The node epilog's summary of autoheal-agent's power and temperature samples of one GPU
// (gpu_telemetry.h), with the controller's comparison against the job's other GPUs.

// Fields the analyzers add to evidence of pattern signatures (beyond their named groups):
// every signature gets `host` when its line names one and `kernel: yes` when the line is a kernel
// record (log_line.h IsKernelRecord); `xid` lines of NVLink Xids get the decoded registers.
// Rules may test these in `where`.
struct DerivedFields {
    const char* signature;  // "*" for every signature
    std::vector<std::string> fields;
};
const std::vector<DerivedFields>& AnalyzerFields();

class RuleLoader {
  public:
    RuleLoader();
    ~RuleLoader();
    RuleLoader(const RuleLoader&) = delete;
    RuleLoader& operator=(const RuleLoader&) = delete;

    // Adds one rules file's text; `name` is used in messages. Files are applied in the order
    // they are added (later files override earlier ones).
    void Add(std::string name, std::string text);

    // Collects and compiles everything added. Returns the rule set when there was no error;
    // all messages (errors and warnings) go to `result`.
    std::optional<RuleSet> Compile(LoadResult* result);

  private:
    struct Impl;
    Impl* impl_;
};

}  // namespace autoheal::diag
