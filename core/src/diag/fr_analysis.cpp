// The flight recorder's culprit (flight_recorder.h AnalyzeFlightRecorder): per process group,
// where each rank stands in the collective sequence, as PyTorch's fr_trace compares the ranks.
#include <algorithm>
#include <cctype>
#include <set>
#include <unordered_map>

#include "autoheal/diag/flight_recorder.h"

namespace autoheal::diag {
namespace {

struct RankAt {
    std::int64_t last_seq = -1;  // the newest collective recorded
    const FrEntry* last = nullptr;
    const FrDump* dump = nullptr;  // whose texts `last` names
};

// The (op, sizes) pairs of all dumps, numbered: ranks agree on a collective when their entries
// at one sequence number have the same key. keys[d][k] is entry k's of dump d.
struct OpKeys {
    std::vector<std::string> ops;  // by key: the op's profiling name
    std::vector<std::vector<std::uint32_t>> keys;
};

OpKeys NumberOps(const std::vector<const FrDump*>& dumps) {
    OpKeys out;
    std::unordered_map<std::string, std::uint32_t> ids;
    out.keys.resize(dumps.size());
    for (std::size_t d = 0; d < dumps.size(); ++d) {
        // Per dump, by (op text, sizes text): a dump names a few of each thousands of times.
        std::unordered_map<std::uint64_t, std::uint32_t> local;
        out.keys[d].reserve(dumps[d]->entries.size());
        for (const FrEntry& e : dumps[d]->entries) {
            const std::uint64_t pair = (std::uint64_t{e.profiling_name} << 32) | e.input_sizes;
            auto [it, added] = local.try_emplace(pair, 0);
            if (added) {
                const std::string& op = dumps[d]->Text(e.profiling_name);
                const std::string key = op + "|" + dumps[d]->Text(e.input_sizes);
                auto [global, fresh] =
                    ids.try_emplace(key, static_cast<std::uint32_t>(out.ops.size()));
                if (fresh) out.ops.push_back(op);
                it->second = global->second;
            }
            out.keys[d].push_back(it->second);
        }
    }
    return out;
}

// One process group across the ranks.
struct PgView {
    std::string name;
    std::map<int, RankAt> ranks;  // by rank, for every dump with an entry of the group
    // Per sequence number: each distinct op key and how many ranks ran it, first seen first.
    std::unordered_map<std::int64_t, std::vector<std::pair<std::uint32_t, int>>> ops;
};

std::map<std::int64_t, PgView> Views(const std::vector<const FrDump*>& dumps, const OpKeys& keys) {
    std::map<std::int64_t, PgView> views;
    for (std::size_t d = 0; d < dumps.size(); ++d) {
        const FrDump& dump = *dumps[d];
        PgView* v = nullptr;
        RankAt* at = nullptr;
        std::int64_t pg = 0;
        for (std::size_t k = 0; k < dump.entries.size(); ++k) {
            const FrEntry& e = dump.entries[k];
            if (e.is_p2p) continue;
            if (v == nullptr || e.pg_id != pg) {  // a dump's entries are mostly of one group
                pg = e.pg_id;
                v = &views[pg];
                if (v->name.empty()) v->name = dump.Text(e.pg_name);
                at = &v->ranks[dump.rank];
                at->dump = &dump;
            }
            if (at->last == nullptr || e.collective_seq_id >= at->last_seq) {
                at->last_seq = e.collective_seq_id;
                at->last = &e;
            }
            auto& seen = v->ops[e.collective_seq_id];
            const std::uint32_t key = keys.keys[d][k];
            auto it = std::find_if(seen.begin(), seen.end(),
                                   [&](const auto& p) { return p.first == key; });
            if (it == seen.end()) {
                seen.emplace_back(key, 1);
            } else {
                ++it->second;
            }
        }
    }
    return views;
}

// The members of a group: from any dump's pg_config, else the ranks that recorded it.
std::vector<int> Members(const std::vector<const FrDump*>& dumps, const PgView& v) {
    for (const FrDump* d : dumps) {
        auto it = d->pg_config.find(v.name);
        if (it != d->pg_config.end() && !it->second.ranks.empty()) return it->second.ranks;
    }
    std::vector<int> out;
    for (const auto& [rank, at] : v.ranks) out.push_back(rank);
    return out;
}

// Ranks that ran another collective (or other sizes) at a sequence number where most ran one:
// the lowest such sequence number.
std::optional<FrFinding> Desync(std::int64_t pg, const PgView& v,
                                const std::vector<const FrDump*>& dumps, const OpKeys& keys) {
    std::optional<FrFinding> found;
    for (std::size_t d = 0; d < dumps.size(); ++d) {
        const FrDump& dump = *dumps[d];
        for (std::size_t k = 0; k < dump.entries.size(); ++k) {
            const FrEntry& e = dump.entries[k];
            if (e.is_p2p || e.pg_id != pg) continue;
            const auto& seen = v.ops.at(e.collective_seq_id);
            if (seen.size() < 2) continue;
            const auto majority =
                std::max_element(seen.begin(), seen.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
            if (keys.keys[d][k] == majority->first) continue;
            if (!found || e.collective_seq_id < found->seq) {
                found = FrFinding{};
                found->kind = FrFinding::Kind::kDesync;
                found->pg_id = pg;
                found->pg_name = v.name;
                found->seq = e.collective_seq_id;
                found->op = keys.ops[majority->first];
                found->other_op = dump.Text(e.profiling_name);
            }
            if (e.collective_seq_id == found->seq &&
                std::find(found->ranks.begin(), found->ranks.end(), dump.rank) ==
                    found->ranks.end()) {
                found->ranks.push_back(dump.rank);
            }
            break;  // one disagreement per rank is enough
        }
    }
    if (found) std::sort(found->ranks.begin(), found->ranks.end());
    return found;
}

std::optional<FrFinding> Hang(std::int64_t pg, const PgView& v, const std::vector<int>& members,
                              const std::set<int>& dumped) {
    FrFinding f;
    f.pg_id = pg;
    f.pg_name = v.name;
    f.members = static_cast<int>(members.size());
    const RankAt* top = nullptr;
    f.seq = -1;
    for (const auto& [rank, at] : v.ranks) f.seq = std::max(f.seq, at.last_seq);
    for (const auto& [rank, at] : v.ranks) {
        if (at.last_seq == f.seq && at.last->state != FrState::kCompleted) {
            ++f.waiting;
            top = &at;
        }
    }
    if (f.waiting == 0 || top == nullptr) return std::nullopt;
    f.op = top->dump->Text(top->last->profiling_name);
    std::vector<int> missing;
    for (int rank : members) {
        auto it = v.ranks.find(rank);
        if (it == v.ranks.end()) {
            // A dump without this group's collectives never entered it; no dump at all: missing.
            if (dumped.count(rank) != 0) {
                f.ranks.push_back(rank);
                if (f.why.empty()) f.why = "never-entered";
            } else {
                missing.push_back(rank);
            }
            continue;
        }
        if (it->second.last_seq < f.seq) {
            f.ranks.push_back(rank);
            // Any culprit stuck in an earlier collective makes the finding "not-completed".
            const bool done = it->second.last->state == FrState::kCompleted;
            if (f.why != "not-completed") f.why = done ? "never-entered" : "not-completed";
        }
    }
    // Every dumped rank waits and a few members wrote nothing: those are the suspects.
    if (f.ranks.empty() && f.waiting == static_cast<int>(v.ranks.size()) && !missing.empty() &&
        missing.size() * 2 < members.size()) {
        f.ranks = missing;
        f.why = "no-dump";
    }
    if (f.ranks.empty()) return std::nullopt;
    return f;
}

std::string JoinRanks(const std::vector<int>& ranks, std::size_t max = 16) {
    std::string out;
    for (std::size_t k = 0; k < ranks.size() && k < max; ++k) {
        out += (k ? "," : "") + std::to_string(ranks[k]);
    }
    if (ranks.size() > max) out += ",...";
    return out;
}

}  // namespace

std::vector<FrFinding> AnalyzeFlightRecorder(const std::vector<FrDump>& all) {
    std::vector<const FrDump*> dumps;
    std::set<int> seen;
    for (const FrDump& d : all) {
        if (d.rank >= 0 && seen.insert(d.rank).second) dumps.push_back(&d);
    }
    std::sort(dumps.begin(), dumps.end(),
              [](const FrDump* a, const FrDump* b) { return a->rank < b->rank; });
    std::vector<FrFinding> findings;
    const OpKeys keys = NumberOps(dumps);
    for (const auto& [pg, view] : Views(dumps, keys)) {
        if (auto d = Desync(pg, view, dumps, keys)) {
            findings.push_back(std::move(*d));
            continue;
        }
        if (auto h = Hang(pg, view, Members(dumps, view), seen)) findings.push_back(std::move(*h));
    }
    return findings;
}

std::string FrOpWord(std::string_view profiling_name) {
    const std::size_t colon = profiling_name.rfind(':');
    if (colon != std::string_view::npos) profiling_name.remove_prefix(colon + 1);
    std::string out;
    for (char c : profiling_name) {
        if (std::isalnum(static_cast<unsigned char>(c))) {
            out += static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
        }
    }
    return out.empty() ? std::string("COLLECTIVE") : out;
}

void AddFlightRecorderEvidence(const std::vector<FrFinding>& findings,
                               const std::map<int, std::string>& rank_nodes,
                               std::string_view source, EvidenceSet* set) {
    for (const FrFinding& f : findings) {
        Evidence e;
        const std::string at =
            FrOpWord(f.op) + " #" + std::to_string(f.seq) + " (pg " + std::to_string(f.pg_id) + ")";
        const std::string who = (f.ranks.size() == 1 ? "rank " : "ranks ") + JoinRanks(f.ranks);
        const auto node = rank_nodes.find(f.ranks.front());
        const std::string where = node == rank_nodes.end() ? "" : " on " + node->second;
        if (f.kind == FrFinding::Kind::kDesync) {
            e.signature = std::string(kFrDesyncSignature);
            e.text = who + " ran " + FrOpWord(f.other_op) + " where the other ranks ran " + at;
            e.SetField("ops", f.op + "," + f.other_op);
        } else {
            e.signature = std::string(kFrCulpritSignature);
            const std::string verb = f.why == "never-entered" ? " never entered "
                                     : f.why == "not-completed"
                                         ? " never completed the one before "
                                         : " wrote no dump; the others wait in ";
            e.text = who + where + verb + at;
            e.SetField("state", f.why);
            e.SetField("waiting", std::to_string(f.waiting));
            e.SetField("members", std::to_string(f.members));
        }
        e.SetField("rank", std::to_string(f.ranks.front()));
        e.SetField("ranks", JoinRanks(f.ranks));
        e.SetField("pg", std::to_string(f.pg_id));
        e.SetField("seq", std::to_string(f.seq));
        e.SetField("op", FrOpWord(f.op));
        if (!where.empty()) e.SetField("host", node->second);
        AddEvidence(set, source, std::move(e));
    }
}

}  // namespace autoheal::diag
