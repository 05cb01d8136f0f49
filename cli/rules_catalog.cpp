// autoheal rules catalog [--json]: the catalog of causes, actions and outcomes (diag/taxonomy.h)
// with their behaviour columns. The JSON form is what scripts/gen_catalog.py writes the JSON
// Schema's enums and docs/rules.md's cause table from.
#include <cstdio>
#include <nlohmann/json.hpp>

#include "autoheal/diag/taxonomy.h"
#include "cli_common.h"

namespace autoheal::cli {
namespace {

constexpr const char* kCatalogUsage = "usage: autoheal rules catalog [--json]\n";

std::string S(std::string_view v) { return std::string(v); }
const char* YesNo(bool b) { return b ? "yes" : "no"; }

nlohmann::json CatalogJson() {
    nlohmann::json causes = nlohmann::json::array();
    for (const diag::CauseInfo& c : diag::Causes()) {
        causes.push_back({{"name", S(c.name)},
                          {"category", S(diag::ToString(c.category))},
                          {"infrastructure", c.infrastructure},
                          {"blame", S(diag::ToString(c.blame))},
                          {"unexplained", c.unexplained},
                          {"ticket", S(diag::ToString(c.ticket))},
                          {"rules", c.rules},
                          {"title", S(c.title)},
                          {"summary", S(c.summary)}});
    }
    nlohmann::json actions = nlohmann::json::array();
    for (const diag::ActionInfo& a : diag::Actions()) {
        actions.push_back({{"name", S(a.name)},
                           {"order", a.order},
                           {"plan", a.plan},
                           {"runs", S(diag::ToString(a.runs))},
                           {"takes_out", a.takes_out},
                           {"breaker", a.breaker},
                           {"ticket", S(diag::ToString(a.ticket))},
                           {"summary", S(a.summary)}});
    }
    nlohmann::json outcomes = nlohmann::json::array();
    for (const diag::OutcomeInfo& o : diag::Outcomes()) {
        outcomes.push_back({{"name", S(o.name)}, {"summary", S(o.summary)}});
    }
    nlohmann::json runs = nlohmann::json::array();
    for (const diag::RunOutcomeInfo& o : diag::RunOutcomes()) {
        runs.push_back(
            {{"name", S(o.name)}, {"interruption", o.interruption}, {"summary", S(o.summary)}});
    }
    return {
        {"causes", causes}, {"actions", actions}, {"outcomes", outcomes}, {"run_outcomes", runs}};
}

void PrintCatalog() {
    std::printf("causes\n");
    Table causes({"CAUSE", "CATEGORY", "INFRA", "BLAMES", "UNEXPLAINED", "TICKET", "RULES", "TITLE",
                  "SUMMARY"},
                 60);
    for (const diag::CauseInfo& c : diag::Causes()) {
        causes.Add({S(c.name), S(diag::ToString(c.category)), YesNo(c.infrastructure),
                    S(diag::ToString(c.blame)), YesNo(c.unexplained), S(diag::ToString(c.ticket)),
                    YesNo(c.rules), S(c.title), S(c.summary)});
    }
    causes.Print(stdout);
    std::printf("\nactions (in plan order)\n");
    Table actions({"ACTION", "PLAN", "RUNS", "TAKES_OUT", "BREAKER", "TICKET", "SUMMARY"}, 60);
    for (const diag::ActionInfo& a : diag::Actions()) {
        actions.Add({S(a.name), YesNo(a.plan), S(diag::ToString(a.runs)), YesNo(a.takes_out),
                     YesNo(a.breaker), S(diag::ToString(a.ticket)), S(a.summary)});
    }
    actions.Print(stdout);
    std::printf("\naction outcomes\n");
    Table outcomes({"OUTCOME", "SUMMARY"}, 80);
    for (const diag::OutcomeInfo& o : diag::Outcomes()) outcomes.Add({S(o.name), S(o.summary)});
    outcomes.Print(stdout);
    std::printf("\nrun outcomes\n");
    Table runs({"OUTCOME", "INTERRUPTION", "SUMMARY"}, 80);
    for (const diag::RunOutcomeInfo& o : diag::RunOutcomes()) {
        runs.Add({S(o.name), YesNo(o.interruption), S(o.summary)});
    }
    runs.Print(stdout);
}

}  // namespace

int RulesCatalog(const std::vector<std::string>& args) {
    bool json = false;
    for (const std::string& a : args) {
        if (a != "--json") {
            std::fprintf(stderr, "autoheal: rules catalog: unknown argument '%s'\n%s", a.c_str(),
                         kCatalogUsage);
            return 2;
        }
        json = true;
    }
    if (json) {
        std::printf("%s\n", CatalogJson().dump(2).c_str());
    } else {
        PrintCatalog();
    }
    return 0;
}

}  // namespace autoheal::cli
