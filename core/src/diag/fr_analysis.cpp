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
};

// One process group across the ranks.
struct PgView {
    std::string name;
    std::map<int, RankAt> ranks;  // by rank, for every dump with an entry of the group
    // Per sequence number: each distinct (op, sizes) and how many ranks ran it, first seen first.
    std::unordered_map<std::int64_t, std::vector<std::pair<std::string, int>>> ops;
};

std::string OpKey(const FrEntry& e) { return e.profiling_name + "|" + e.input_sizes; }

std::string OpOf(const std::string& key) { return key.substr(0, key.find('|')); }

std::map<std::int64_t, PgView> Views(const std::vector<const FrDump*>& dumps) {
    std::map<std::int64_t, PgView> views;
    for (const FrDump* d : dumps) {
        for (const FrEntry& e : d->entries) {
            if (e.is_p2p) continue;
            PgView& v = views[e.pg_id];
            if (v.name.empty()) v.name = e.pg_name;
            RankAt& at = v.ranks[d->rank];
            if (e.collective_seq_id >= at.last_seq) {
                at.last_seq = e.collective_seq_id;
                at.last = &e;
            }
            auto& seen = v.ops[e.collective_seq_id];
            const std::string key = OpKey(e);
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
                                const std::vector<const FrDump*>& dumps) {
    std::optional<FrFinding> found;
    for (const FrDump* d : dumps) {
        for (const FrEntry& e : d->entries) {
            if (e.is_p2p || e.pg_id != pg) continue;
            const auto& seen = v.ops.at(e.collective_seq_id);
            if (seen.size() < 2) continue;
            const auto majority =
                std::max_element(seen.begin(), seen.end(),
                                 [](const auto& a, const auto& b) { return a.second < b.second; });
            const std::string key = OpKey(e);
            if (key == majority->first) continue;
            if (!found || e.collective_seq_id < found->seq) {
                found = FrFinding{};
                found->kind = FrFinding::Kind::kDesync;
                found->pg_id = pg;
                found->pg_name = v.name;
                found->seq = e.collective_seq_id;
                found->op = OpOf(majority->first);
                found->other_op = e.profiling_name;
            }
            if (e.collective_seq_id == found->seq &&
                std::find(found->ranks.begin(), found->ranks.end(), d->rank) ==
                    found->ranks.end()) {
                found->ranks.push_back(d->rank);
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
    const FrEntry* top = nullptr;
    f.seq = -1;
    for (const auto& [rank, at] : v.ranks) f.seq = std::max(f.seq, at.last_seq);
    for (const auto& [rank, at] : v.ranks) {
        if (at.last_seq == f.seq && at.last->state != "completed") {
            ++f.waiting;
            top = at.last;
        }
    }
    if (f.waiting == 0 || top == nullptr) return std::nullopt;
    f.op = top->profiling_name;
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
            const bool done = it->second.last->state == "completed";
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
    for (const auto& [pg, view] : Views(dumps)) {
        if (auto d = Desync(pg, view, dumps)) {
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
