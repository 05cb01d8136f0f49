// Evidence: one item named by its signature, with named fields. Most items are log lines a
// signature's pattern matched (fields: what its named groups captured, xid=79, pci=..., rank=5);
// the node epilog also makes typed items itself, with no line to match (the built-in kinds
// nvml-delta and health-check: counter=ecc_uncorrected_volatile gpu=0000:3b:00.0 before=0
// after=3), whose `text` is only for people.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace autoheal::diag {

struct Evidence {
    std::string signature;
    std::size_t source = 0;  // index of the input (file) it came from
    std::size_t line = 0;    // 1-based line number in that input
    std::string text;        // the line, possibly shortened
    std::vector<std::pair<std::string, std::string>> fields;

    std::optional<std::string_view> Field(std::string_view name) const {
        for (const auto& [k, v] : fields) {
            if (k == name) return std::string_view(v);
        }
        return std::nullopt;
    }
    void SetField(std::string name, std::string value) {
        for (auto& [k, v] : fields) {
            if (k == name) {
                v = std::move(value);
                return;
            }
        }
        fields.emplace_back(std::move(name), std::move(value));
    }
};

// Everything found in the inputs. Each signature keeps at most `per_signature_cap` items (the
// first ones) and counts the rest, so memory stays bounded whatever the log size.
struct EvidenceSet {
    std::vector<Evidence> items;  // in input order (source, then line)
    std::vector<std::pair<std::string, std::uint64_t>> counts;  // signature -> total matches
    std::vector<std::string> sources;                           // input names
    std::uint64_t lines = 0;
    std::uint64_t bytes = 0;

    std::uint64_t Count(std::string_view signature) const {
        for (const auto& [s, n] : counts) {
            if (s == signature) return n;
        }
        return 0;
    }
};

// Adds one item made by code rather than by the scanner: its source is `source` (added to
// set->sources when new) and it is counted under its signature. `e.line` is kept as given.
void AddEvidence(EvidenceSet* set, std::string_view source, Evidence e);

// Appends everything in `from` to `into`: items (their source indexes remapped by name),
// counts summed, lines and bytes added.
void MergeEvidence(EvidenceSet* into, const EvidenceSet& from);

}  // namespace autoheal::diag
