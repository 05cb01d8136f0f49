#include "autoheal/diag/evidence.h"

#include <algorithm>

namespace autoheal::diag {
namespace {

std::size_t SourceIndex(EvidenceSet* set, std::string_view source) {
    auto it = std::find(set->sources.begin(), set->sources.end(), source);
    if (it != set->sources.end()) return static_cast<std::size_t>(it - set->sources.begin());
    set->sources.emplace_back(source);
    return set->sources.size() - 1;
}

void Count(EvidenceSet* set, const std::string& signature, std::uint64_t n) {
    for (auto& [s, count] : set->counts) {
        if (s == signature) {
            count += n;
            return;
        }
    }
    set->counts.emplace_back(signature, n);
}

}  // namespace

void AddEvidence(EvidenceSet* set, std::string_view source, Evidence e) {
    e.source = SourceIndex(set, source);
    Count(set, e.signature, 1);
    set->items.push_back(std::move(e));
}

void MergeEvidence(EvidenceSet* into, const EvidenceSet& from) {
    std::vector<std::size_t> index;
    for (const std::string& s : from.sources) index.push_back(SourceIndex(into, s));
    for (Evidence e : from.items) {
        e.source = e.source < index.size() ? index[e.source] : SourceIndex(into, "?");
        into->items.push_back(std::move(e));
    }
    for (const auto& [signature, n] : from.counts) Count(into, signature, n);
    into->lines += from.lines;
    into->bytes += from.bytes;
}

}  // namespace autoheal::diag
