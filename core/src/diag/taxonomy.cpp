#include "autoheal/diag/taxonomy.h"

#include <array>

namespace autoheal::diag {
namespace {

#define AUTOHEAL_CAUSE_INFO(id, word, category, infra, blame, unexplained, ticket, rules, title, \
                            summary)                                                             \
    CauseInfo{Cause::id,    word,        Category::category, infra,                              \
              Blame::blame, unexplained, TicketKind::ticket, rules,                              \
              title,        summary},
constexpr std::array kCauses{AUTOHEAL_CAUSES(AUTOHEAL_CAUSE_INFO)};
#undef AUTOHEAL_CAUSE_INFO

// `order` is filled from the position in the table.
#define AUTOHEAL_ACTION_INFO(id, word, plan, runs, takes_out, breaker, ticket, summary) \
    ActionInfo{Action::id,         word,    plan, Place::runs, takes_out, breaker,      \
               TicketKind::ticket, summary, 0},
constexpr auto kActions = [] {
    std::array actions{AUTOHEAL_ACTIONS(AUTOHEAL_ACTION_INFO)};
    for (std::size_t i = 0; i < actions.size(); ++i) actions[i].order = static_cast<int>(i);
    return actions;
}();
#undef AUTOHEAL_ACTION_INFO

#define AUTOHEAL_OUTCOME_INFO(id, word, summary) OutcomeInfo{Outcome::id, word, summary},
constexpr std::array kOutcomes{AUTOHEAL_OUTCOMES(AUTOHEAL_OUTCOME_INFO)};
#undef AUTOHEAL_OUTCOME_INFO

#define AUTOHEAL_RUN_OUTCOME_INFO(id, word, interruption, summary) \
    RunOutcomeInfo{RunOutcome::id, word, interruption, summary},
constexpr std::array kRunOutcomes{AUTOHEAL_RUN_OUTCOMES(AUTOHEAL_RUN_OUTCOME_INFO)};
#undef AUTOHEAL_RUN_OUTCOME_INFO

// Each table is indexed by its enum: the enum and the table come from the same lines.
template <typename Table>
constexpr bool IndexedById(const Table& table) {
    for (std::size_t i = 0; i < table.size(); ++i) {
        if (static_cast<std::size_t>(table[i].id) != i) return false;
    }
    return true;
}
static_assert(IndexedById(kCauses) && IndexedById(kActions) && IndexedById(kOutcomes) &&
              IndexedById(kRunOutcomes));

#define AUTOHEAL_WORD(id, word, ...) word,
constexpr std::string_view kCategoryWords[] = {AUTOHEAL_CATEGORIES(AUTOHEAL_WORD)};
constexpr std::string_view kBlameWords[] = {AUTOHEAL_BLAMES(AUTOHEAL_WORD)};
constexpr std::string_view kTicketWords[] = {AUTOHEAL_TICKETS(AUTOHEAL_WORD)};
constexpr std::string_view kPlaceWords[] = {AUTOHEAL_PLACES(AUTOHEAL_WORD)};
#undef AUTOHEAL_WORD
#define AUTOHEAL_TITLE(id, word, title) title,
constexpr std::string_view kCategoryTitles[] = {AUTOHEAL_CATEGORIES(AUTOHEAL_TITLE)};
#undef AUTOHEAL_TITLE

template <typename Table>
auto Find(const Table& table, std::string_view name) -> decltype(&table[0]) {
    for (const auto& entry : table) {
        if (entry.name == name) return &entry;
    }
    return nullptr;
}

template <typename Table>
auto Parse(const Table& table, std::string_view name) -> std::optional<decltype(table[0].id)> {
    if (const auto* entry = Find(table, name)) return entry->id;
    return std::nullopt;
}

}  // namespace

std::span<const CauseInfo> Causes() { return kCauses; }
std::span<const ActionInfo> Actions() { return kActions; }
std::span<const OutcomeInfo> Outcomes() { return kOutcomes; }
std::span<const RunOutcomeInfo> RunOutcomes() { return kRunOutcomes; }

const CauseInfo& Info(Cause cause) { return kCauses[static_cast<std::size_t>(cause)]; }
const ActionInfo& Info(Action action) { return kActions[static_cast<std::size_t>(action)]; }
const OutcomeInfo& Info(Outcome outcome) { return kOutcomes[static_cast<std::size_t>(outcome)]; }
const RunOutcomeInfo& Info(RunOutcome outcome) {
    return kRunOutcomes[static_cast<std::size_t>(outcome)];
}

std::string_view ToString(Category c) { return kCategoryWords[static_cast<std::size_t>(c)]; }
std::string_view Title(Category c) { return kCategoryTitles[static_cast<std::size_t>(c)]; }
std::string_view ToString(Blame b) { return kBlameWords[static_cast<std::size_t>(b)]; }
std::string_view ToString(TicketKind t) { return kTicketWords[static_cast<std::size_t>(t)]; }
std::string_view ToString(Place p) { return kPlaceWords[static_cast<std::size_t>(p)]; }
std::string_view ToString(Cause cause) { return Info(cause).name; }
std::string_view ToString(Action action) { return Info(action).name; }
std::string_view ToString(Outcome outcome) { return Info(outcome).name; }
std::string_view ToString(RunOutcome outcome) { return Info(outcome).name; }

std::optional<Cause> ParseCause(std::string_view name) { return Parse(kCauses, name); }

std::optional<Action> ParseAction(std::string_view name) {
    constexpr std::string_view kLegacyResume = "resume@";
    if (name.substr(0, kLegacyResume.size()) == kLegacyResume &&
        name.size() > kLegacyResume.size() &&
        name.find_first_not_of("0123456789", kLegacyResume.size()) == std::string_view::npos) {
        return Action::kResume;
    }
    return Parse(kActions, name);
}

std::optional<Outcome> ParseOutcome(std::string_view name) { return Parse(kOutcomes, name); }
std::optional<RunOutcome> ParseRunOutcome(std::string_view name) {
    return Parse(kRunOutcomes, name);
}

const CauseInfo* FindCause(std::string_view name) { return Find(kCauses, name); }
const ActionInfo* FindAction(std::string_view name) { return Find(kActions, name); }

bool IsInfrastructure(std::string_view cause) {
    const CauseInfo* info = FindCause(cause);
    return info != nullptr && info->infrastructure;
}

Blame BlameOf(std::string_view cause) {
    const CauseInfo* info = FindCause(cause);
    return info != nullptr ? info->blame : Blame::kNobody;
}

bool IsUnexplained(std::string_view cause) {
    const CauseInfo* info = FindCause(cause);
    return info != nullptr && info->unexplained;
}

bool IsNetworkCause(std::string_view cause) {
    const CauseInfo* info = FindCause(cause);
    return info != nullptr && info->category == Category::kNetwork;
}

bool CountsAgainstBreaker(std::string_view action) {
    const ActionInfo* info = FindAction(action);
    return info != nullptr && info->breaker;
}

TicketKind TicketOf(std::string_view action) {
    const ActionInfo* info = FindAction(action);
    return info != nullptr ? info->ticket : TicketKind::kNone;
}

}  // namespace autoheal::diag
