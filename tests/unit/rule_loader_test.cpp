// The rule loader, Falco-style: raw YAML in, stable codes, locations and snippets out.
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "autoheal/diag/rule_files.h"
#include "autoheal/diag/rules.h"

namespace autoheal::diag {
namespace {

using ::testing::HasSubstr;
using ::testing::IsEmpty;

constexpr const char* kBase = R"(- signature: xid
  regex: 'NVRM: Xid \(PCI:(?P<pci>[^)]+)\): (?P<xid>\d+)'
  example: 'NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.'
- list: bad-xids
  items: [79, 48]
- rule: bad-xid
  match: {xid: {list: bad-xids}}
  cause: faulty_gpu
  actions: [drain, reboot]
)";

struct Loaded {
    std::optional<RuleSet> rules;
    LoadResult result;
};

Loaded Load(const std::vector<std::pair<std::string, std::string>>& files) {
    RuleLoader loader;
    for (const auto& [name, text] : files) loader.Add(name, text);
    Loaded out;
    out.rules = loader.Compile(&out.result);
    return out;
}

const LoadMessage* Find(const LoadResult& r, const std::string& code) {
    for (const auto& m : r.messages) {
        if (m.code == code) return &m;
    }
    return nullptr;
}

TEST(RuleLoader, LoadsValidRules) {
    auto l = Load({{"base.yaml", kBase}});
    ASSERT_TRUE(l.rules) << l.result.Format();
    EXPECT_THAT(l.result.messages, IsEmpty()) << l.result.Format();
    const Rule* r = l.rules->FindRule("bad-xid");
    ASSERT_NE(r, nullptr);
    EXPECT_EQ(r->cause, "faulty_gpu");
    EXPECT_TRUE(r->requeue);  // default: the cause is an infrastructure fault
    ASSERT_EQ(r->match.where.size(), 1u);
    EXPECT_EQ(r->match.where[0].values, (std::vector<std::string>{"79", "48"}));
}

TEST(RuleLoader, InterruptsJobIsReadAndChecked) {
    auto l = Load({{"base.yaml", kBase},
                   {"r.yaml",
                    "- rule: lost\n  match: {xid: [79]}\n  cause: faulty_gpu\n"
                    "  interrupts_job: true\n- rule: quiet\n  match: {xid: [63]}\n"
                    "  cause: gpu_hbm_memory\n"}});
    ASSERT_TRUE(l.rules) << l.result.Format();
    EXPECT_TRUE(l.rules->FindRule("lost")->interrupts_job);
    EXPECT_FALSE(l.rules->FindRule("quiet")->interrupts_job);  // the default
    auto bad = Load({{"base.yaml", kBase},
                     {"r.yaml",
                      "- rule: lost\n  match: {xid: [79]}\n  cause: faulty_gpu\n"
                      "  interrupts_job: sometimes\n"}});
    EXPECT_FALSE(bad.result.ok()) << bad.result.Format();
}

TEST(RuleLoader, CulpritNodeIsAFieldName) {
    auto l = Load({{"base.yaml", kBase},
                   {"r.yaml",
                    "- rule: far\n  match: {xid: [79]}\n  cause: faulty_gpu\n"
                    "  culprit_node: peer\n"}});
    ASSERT_TRUE(l.rules) << l.result.Format();
    EXPECT_EQ(l.rules->FindRule("far")->culprit_node, "peer");
    for (const char* value : {"[peer]", "'Peer Host'", "''"}) {
        auto bad = Load({{"base.yaml", kBase},
                         {"r.yaml", std::string("- rule: far\n  match: {xid: [79]}\n"
                                                "  cause: faulty_gpu\n  culprit_node: ") +
                                        value + "\n"}});
        EXPECT_FALSE(bad.result.ok()) << value;
        EXPECT_THAT(bad.result.Format(), ::testing::HasSubstr("r.yaml:4:17")) << value;
    }
}

// A kind an analyzer makes from lines (the NCCL rank analyzers) may be shown by those lines: the
// example is read by the signatures the analyzer reads, then analyzed.
TEST(RuleLoader, AnAnalyzersKindMayBeShownByTheLinesItReads) {
    const std::string sig =
        "- signature: nccl-watchdog-timeout\n"
        "  regex: '\\[Rank (?P<rank>\\d+)\\] Watchdog caught collective operation timeout: "
        "WorkNCCL\\(SeqNum=(?P<seq>\\d+), OpType=(?P<op>\\w+)'\n";
    auto line = [](int rank, int seq) {
        return "    - '[Rank " + std::to_string(rank) +
               "] Watchdog caught collective operation timeout: WorkNCCL(SeqNum=" +
               std::to_string(seq) + ", OpType=ALLREDUCE, NumelIn=8, NumelOut=8)'\n";
    };
    const std::string rule =
        "- rule: desync\n  match: {signature: nccl-ranks-desync}\n  cause: user_error\n"
        "  example:\n";
    auto good = Load({{"base.yaml", kBase}, {"r.yaml", sig + rule + line(0, 7) + line(1, 8)}});
    EXPECT_TRUE(good.rules) << good.result.Format();
    // Ranks that agree are no desync: the rule does not fire on that example.
    auto bad = Load({{"base.yaml", kBase}, {"r.yaml", sig + rule + line(0, 7) + line(1, 7)}});
    EXPECT_FALSE(bad.result.ok());
    EXPECT_THAT(bad.result.Format(), ::testing::HasSubstr("LOAD_ERR_EXAMPLE_MISMATCH"));
}

TEST(RuleLoader, AGuessNamesACauseOnly) {
    auto l = Load({{"base.yaml", kBase},
                   {"r.yaml",
                    "- rule: likely\n  match: {xid: [63]}\n  cause: dependency\n"
                    "  guess: true\n"}});
    ASSERT_TRUE(l.rules) << l.result.Format();
    EXPECT_TRUE(l.rules->FindRule("likely")->guess);
    EXPECT_FALSE(l.rules->FindRule("likely")->requeue);  // not the infrastructure cause's default
    EXPECT_FALSE(l.rules->FindRule("bad-xid")->guess);
    for (const char* extra : {"  actions: [drain]\n", "  actions: []\n", "  requeue: true\n",
                              "  interrupts_job: true\n", "  contributes_actions: true\n"}) {
        auto bad = Load({{"base.yaml", kBase},
                         {"r.yaml", std::string("- rule: likely\n  match: {xid: [63]}\n"
                                                "  cause: dependency\n  guess: true\n") +
                                        extra}});
        EXPECT_FALSE(bad.rules) << extra;
        const LoadMessage* m = Find(bad.result, "LOAD_ERR_YAML_VALIDATE");
        ASSERT_NE(m, nullptr) << extra;
        EXPECT_THAT(m->message, HasSubstr("a guess names a cause only"));
        EXPECT_EQ(m->where.line, 4) << extra;  // at the guess key
    }
}

TEST(RuleLoader, YamlSyntaxErrorHasLocation) {
    auto l = Load({{"r.yaml", "- rule: x\n  match: {xid: [79\n"}});
    EXPECT_FALSE(l.rules);
    const LoadMessage* m = Find(l.result, "LOAD_ERR_YAML_PARSE");
    ASSERT_NE(m, nullptr) << l.result.Format();
    EXPECT_EQ(m->where.file, "r.yaml");
    EXPECT_GT(m->where.line, 0);
}

TEST(RuleLoader, UnknownKeyIsLocatedWithCaretAndSuggestion) {
    std::string text =
        std::string(kBase) + "- rule: typo\n  match: {xid: 79}\n  cuase: faulty_gpu\n";
    auto l = Load({{"r.yaml", text}});
    EXPECT_FALSE(l.rules);
    const LoadMessage* m = Find(l.result, "LOAD_ERR_UNKNOWN_KEY");
    ASSERT_NE(m, nullptr) << l.result.Format();
    EXPECT_EQ(m->where.line, 12);
    EXPECT_EQ(m->where.column, 3);
    EXPECT_EQ(m->context, "In rule 'typo'");
    EXPECT_THAT(m->message, HasSubstr("did you mean 'cause'?"));
    EXPECT_EQ(m->snippet, "  cuase: faulty_gpu\n  ^\n");
    EXPECT_THAT(l.result.Format(),
                HasSubstr("r.yaml:12:3: error: LOAD_ERR_UNKNOWN_KEY: In rule 'typo': "));
}

TEST(RuleLoader, BadRegexPointsAtThePattern) {
    auto l = Load({{"s.yaml", "- signature: broken\n  regex: 'Xid (unclosed'\n"}});
    EXPECT_FALSE(l.rules);
    const LoadMessage* m = Find(l.result, "LOAD_ERR_BAD_REGEX");
    ASSERT_NE(m, nullptr) << l.result.Format();
    EXPECT_EQ(m->where.line, 2);
    EXPECT_EQ(m->where.column, 10);
    EXPECT_THAT(m->message, HasSubstr("missing )"));
}

TEST(RuleLoader, BacktrackingOnlySyntaxIsRefused) {
    // RE2 guarantees linear time; back-references are not allowed in admin patterns.
    auto l = Load({{"s.yaml", "- signature: backref\n  regex: '(a+)\\1'\n"}});
    EXPECT_NE(Find(l.result, "LOAD_ERR_BAD_REGEX"), nullptr) << l.result.Format();
}

TEST(RuleLoader, ExampleMustMatch) {
    auto l = Load({{"s.yaml", "- signature: s\n  regex: 'foo'\n  example: 'bar'\n"}});
    EXPECT_NE(Find(l.result, "LOAD_ERR_EXAMPLE_MISMATCH"), nullptr);
}

// The node epilog's typed kinds need no signature item: rules match their fields, through the
// shorthands or `signature:`, and each rule's example items are checked at load.
TEST(RuleLoader, TypedKindsAreMatchedOnFieldsAndTheirExamplesChecked) {
    constexpr const char* kTyped = R"(- rule: sdc
  match: {health_check: [gemm-bf16], where: {reason: [peer-mismatch, wrong-result]}}
  cause: silent_data_corruption
  example: {signature: health-check, check: gemm-bf16, gpu: 0000:3b:00.0, reason: peer-mismatch}
- rule: hbm
  match: {signature: nvml-delta, where: {counter: [ecc_uncorrected_volatile]}}
  unless: {health_check: [row-remap]}
  cause: gpu_hbm_memory
  example: [{signature: nvml-delta, counter: ecc_uncorrected_volatile, before: 0, after: 3}]
)";
    auto l = Load({{"t.yaml", kTyped}});
    ASSERT_TRUE(l.rules) << l.result.Format();
    EXPECT_THAT(l.result.messages, IsEmpty()) << l.result.Format();
    const Rule* sdc = l.rules->FindRule("sdc");
    ASSERT_NE(sdc, nullptr);
    EXPECT_EQ(sdc->match.signature, "health-check");
    ASSERT_EQ(sdc->match.where.size(), 2u);
    EXPECT_EQ(sdc->match.where[0].field, "check");
    EXPECT_EQ(sdc->match.where[1].field, "reason");

    auto mismatch = Load({{"m.yaml", R"(- rule: sdc
  match: {health_check: [gemm-bf16], where: {reason: [peer-mismatch]}}
  cause: silent_data_corruption
  example: {signature: health-check, check: gemm-bf16, reason: slow}
)"}});
    const LoadMessage* m = Find(mismatch.result, "LOAD_ERR_EXAMPLE_MISMATCH");
    ASSERT_NE(m, nullptr) << mismatch.result.Format();
    EXPECT_EQ(m->where.line, 4);

    auto field = Load({{"f.yaml", R"(- rule: r
  match: {nvml_delta: [nvlink]}
  cause: nvlink
  example: {signature: nvml-delta, counter: nvlink, port: 3}
)"}});
    const LoadMessage* f = Find(field.result, "LOAD_ERR_UNKNOWN_FIELD");
    ASSERT_NE(f, nullptr) << field.result.Format();
    EXPECT_THAT(f->message, HasSubstr("'nvml-delta' has no field 'port'"));

    // Pattern signatures have their example line; a rule's example is of a built-in kind.
    auto pattern = Load({{"p.yaml", std::string(kBase) + R"(- rule: r
  match: {xid: 79}
  cause: faulty_gpu
  example: {signature: xid, xid: 79}
)"}});
    const LoadMessage* p = Find(pattern.result, "LOAD_ERR_UNDEFINED_REF");
    ASSERT_NE(p, nullptr) << pattern.result.Format();
    EXPECT_THAT(p->message, HasSubstr("'xid' is not a built-in evidence kind"));
}

TEST(RuleLoader, UnknownCauseAndActionAreErrors) {
    std::string text = std::string(kBase) +
                       "- rule: r2\n  match: {xid: 79}\n  cause: gremlins\n"
                       "- rule: r3\n  match: {xid: 79}\n  cause: faulty_gpu\n  actions: [pray]\n";
    auto l = Load({{"r.yaml", text}});
    EXPECT_FALSE(l.rules);
    const LoadMessage* cause = Find(l.result, "LOAD_ERR_UNKNOWN_CAUSE");
    ASSERT_NE(cause, nullptr);
    EXPECT_EQ(cause->where.line, 12);
    EXPECT_THAT(cause->message, HasSubstr("known causes: faulty_gpu"));
    const LoadMessage* action = Find(l.result, "LOAD_ERR_UNKNOWN_ACTION");
    ASSERT_NE(action, nullptr);
    EXPECT_EQ(action->where.line, 16);
}

TEST(RuleLoader, UndefinedReferencesAreErrors) {
    std::string text = std::string(kBase) +
                       "- rule: r2\n  match: {signature: nope}\n  cause: nic\n"
                       "- rule: r3\n  match: {xid: {list: nolist}}\n  cause: nic\n"
                       "- rule: r4\n  match: {xid: 1}\n  cause: nic\n  suppressed_by: [ghost]\n";
    auto l = Load({{"r.yaml", text}});
    EXPECT_FALSE(l.rules);
    int undefined = 0;
    for (const auto& m : l.result.messages) undefined += m.code == "LOAD_ERR_UNDEFINED_REF";
    EXPECT_EQ(undefined, 3) << l.result.Format();
}

TEST(RuleLoader, UnknownFieldNamesTheSignaturesFields) {
    std::string text = std::string(kBase) +
                       "- rule: r2\n  match: {signature: xid, where: {gpu: x}}\n  cause: nic\n";
    auto l = Load({{"r.yaml", text}});
    const LoadMessage* m = Find(l.result, "LOAD_ERR_UNKNOWN_FIELD");
    ASSERT_NE(m, nullptr) << l.result.Format();
    EXPECT_THAT(
        m->message,
        HasSubstr(
            "its fields: error_status, host, kernel, nvlink_class, pci, registers, role, subcode, "
            "xid"));
}

TEST(RuleLoader, DuplicateInOneFileIsAnError) {
    std::string text = std::string(kBase) + "- rule: bad-xid\n  match: {xid: 1}\n  cause: nic\n";
    auto l = Load({{"r.yaml", text}});
    EXPECT_NE(Find(l.result, "LOAD_ERR_DUPLICATE"), nullptr);
}

TEST(RuleLoader, LaterFileReplacesOverridesOrDisables) {
    auto replaced = Load(
        {{"a.yaml", kBase}, {"b.yaml", "- rule: bad-xid\n  match: {xid: 79}\n  cause: nic\n"}});
    ASSERT_TRUE(replaced.rules) << replaced.result.Format();
    EXPECT_EQ(replaced.rules->FindRule("bad-xid")->cause, "nic");
    EXPECT_TRUE(replaced.rules->FindRule("bad-xid")->actions.empty());

    auto appended = Load({{"a.yaml", kBase},
                          {"b.yaml",
                           "- rule: bad-xid\n  actions: [rma_ticket]\n  override: {actions: "
                           "append}\n- list: bad-xids\n  items: [64]\n  override: {items: "
                           "append}\n"}});
    ASSERT_TRUE(appended.rules) << appended.result.Format();
    const Rule* r = appended.rules->FindRule("bad-xid");
    EXPECT_EQ(r->actions, (std::vector<std::string>{"drain", "reboot", "rma_ticket"}));
    EXPECT_EQ(r->cause, "faulty_gpu");
    EXPECT_EQ(r->match.where[0].values, (std::vector<std::string>{"79", "48", "64"}));

    auto disabled = Load({{"a.yaml", kBase}, {"b.yaml", "- rule: bad-xid\n  enabled: false\n"}});
    ASSERT_TRUE(disabled.rules) << disabled.result.Format();
    EXPECT_EQ(disabled.rules->FindRule("bad-xid"), nullptr);
}

TEST(RuleLoader, OverrideOfUndefinedItemIsAnError) {
    auto l =
        Load({{"a.yaml", kBase},
              {"b.yaml", "- rule: ghost\n  actions: [drain]\n  override: {actions: append}\n"}});
    const LoadMessage* m = Find(l.result, "LOAD_ERR_UNDEFINED_REF");
    ASSERT_NE(m, nullptr);
    EXPECT_EQ(m->where.file, "b.yaml");
}

TEST(RuleLoader, UnusedListAndSignatureAreWarnings) {
    std::string text =
        std::string(kBase) + "- list: spare\n  items: [1]\n- signature: lonely\n  regex: 'x'\n";
    auto l = Load({{"r.yaml", text}});
    EXPECT_TRUE(l.rules);
    EXPECT_TRUE(l.result.ok());
    EXPECT_TRUE(l.result.has_warnings());
    EXPECT_NE(Find(l.result, "LOAD_WARN_UNUSED_LIST"), nullptr);
    EXPECT_NE(Find(l.result, "LOAD_WARN_UNUSED_SIGNATURE"), nullptr);
}

TEST(RuleLoader, EscalationIsParsedAndValidated) {
    std::string ok = std::string(kBase) +
                     "- rule: esc\n  match: {xid: 13}\n  cause: user_error\n  escalate:\n"
                     "    - when: {repeats: 3, within: 7d, per: gpu, distinct: job}\n"
                     "      cause: faulty_gpu\n      actions: [drain]\n      requeue: true\n";
    auto l = Load({{"r.yaml", ok}});
    ASSERT_TRUE(l.rules) << l.result.Format();
    const Rule* r = l.rules->FindRule("esc");
    ASSERT_EQ(r->escalate.size(), 1u);
    EXPECT_EQ(r->escalate[0].repeats, 3);
    EXPECT_EQ(r->escalate[0].within_seconds, 7 * 86400);
    EXPECT_TRUE(r->escalate[0].distinct_jobs);
    EXPECT_EQ(r->escalate[0].cause, "faulty_gpu");

    std::string bad = std::string(kBase) +
                      "- rule: esc\n  match: {xid: 13}\n  cause: user_error\n  escalate:\n"
                      "    - when: {repeats: 3, within: soon, per: rack}\n";
    auto b = Load({{"r.yaml", bad}});
    EXPECT_FALSE(b.rules);
    EXPECT_THAT(b.result.Format(), HasSubstr("within: expected a duration"));
    EXPECT_THAT(b.result.Format(), HasSubstr("per: expected gpu or node"));
}

TEST(RuleLoader, ShapeErrorsAreReportedNotThrown) {
    for (const char* text :
         {"rule: not-a-list\n", "- 42\n", "- rule: [a, b]\n", "- rule: r\n  signature: s\n",
          "- rule: r\n  match: 7\n  cause: nic\n", "- rule: r\n  match: {any: []}\n  cause: nic\n",
          "- rule: r\n  match: {xid: 1, any: [{xid: 2}]}\n  cause: nic\n",
          "- rule: r\n  match: {bogus: 1}\n  cause: nic\n"}) {
        auto l = Load({{"r.yaml", text}});
        EXPECT_FALSE(l.result.ok()) << text;
        EXPECT_FALSE(l.rules) << text;
    }
}

// A rule file broken while being edited: the programs use the last good rules and say why.
TEST(RuleFiles, BrokenRulesFallBackToTheLastGoodCopy) {
    namespace fs = std::filesystem;
    const fs::path root =
        fs::temp_directory_path() / ("autoheal-rules-lastgood-" + std::to_string(getpid()));
    fs::remove_all(root);
    fs::create_directories(root / "rules.d");
    const auto kDirPerms = fs::perms::owner_all | fs::perms::group_read | fs::perms::group_exec |
                           fs::perms::others_read | fs::perms::others_exec;
    fs::permissions(root / "rules.d", kDirPerms);
    const std::string dir = (root / "rules.d").string();
    const std::string keep = (root / "last-good" / "rules.d").string();
    const std::string good = kBase;
    std::ofstream(root / "rules.d" / "10-gpu.yaml") << good;
    fs::permissions(root / "rules.d" / "10-gpu.yaml",
                    fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read |
                        fs::perms::others_read);

    RulesInUse first = LoadRulesKeepingLastGood(dir, keep);
    ASSERT_TRUE(first.rules) << first.problem;
    EXPECT_EQ(first.problem, "");
    EXPECT_EQ(first.source, dir);
    EXPECT_TRUE(fs::exists(fs::path(keep) / "10-gpu.yaml"));

    std::ofstream(root / "rules.d" / "20-site.yaml")
        << "- rule: x\n  cause: faulty_gpu\n  bogus: 1\n";
    RulesInUse broken = LoadRulesKeepingLastGood(dir, keep);
    ASSERT_TRUE(broken.rules);
    EXPECT_EQ(broken.source, keep);
    EXPECT_THAT(broken.problem, HasSubstr("20-site.yaml:3:"));  // file:line:column
    EXPECT_THAT(broken.problem, HasSubstr("using the last good rules from " + keep));
    EXPECT_FALSE(fs::exists(fs::path(keep) / "20-site.yaml"));  // the copy is not overwritten
    ASSERT_EQ(broken.rules->rules.size(), 1u);

    // A rule file its group may write is refused (rules steer what root does).
    fs::remove(root / "rules.d" / "20-site.yaml");
    fs::permissions(root / "rules.d" / "10-gpu.yaml", fs::perms::group_write,
                    fs::perm_options::add);
    RulesInUse writable = LoadRulesKeepingLastGood(dir, keep);
    EXPECT_EQ(writable.source, keep);
    EXPECT_THAT(writable.problem, HasSubstr("10-gpu.yaml: refused: writable by its group"));
    fs::permissions(root / "rules.d" / "10-gpu.yaml", fs::perms::group_write,
                    fs::perm_options::remove);

    fs::remove_all(keep);
    std::ofstream(root / "rules.d" / "10-gpu.yaml") << "- rule: [\n";
    RulesInUse nothing = LoadRulesKeepingLastGood(dir, keep);
    EXPECT_FALSE(nothing.rules);
    EXPECT_THAT(nothing.problem, HasSubstr("no last good copy"));
    fs::remove_all(root);
}

}  // namespace
}  // namespace autoheal::diag
