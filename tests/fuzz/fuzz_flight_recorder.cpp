// libFuzzer target: PyTorch flight recorder dumps (core diag/flight_recorder.h, data_tree.h), the
// files a job's ranks write and the controller epilog and `autoheal classify` read. Findings
// (libFuzzer reports each as a crash):
//   - any crash, leak, undefined behaviour, exception or unbounded time or memory;
//   - a pickle holding an opcode that imports, calls or fetches from outside the stream
//     (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4, PERSID,
//     BINPERSID, NEXT_BUFFER, READONLY_BUFFER) read as data: the reader must refuse it by the
//     time it reaches one;
//   - a tree with more nodes than its limit, a dump with more entries than kMaxFrEntries;
//   - an analysis finding without a rank, or naming a rank no dump or group holds.
#include <cstddef>
#include <cstdint>
#include <set>
#include <string>

#include "autoheal/diag/flight_recorder.h"
#include "fuzz_common.h"

using autoheal::fuzz::Fail;

namespace {

// Whether the bytes, read as the reader does (opcode by opcode, arguments skipped), reach a
// refused opcode before STOP. Only the simple cases are walked: a stream the reader refuses for
// another reason first is no finding either way.
bool StartsWithRefusedOpcode(const std::string& s) {
    // PROTO 2 then the opcode right away: the reader must refuse it.
    if (s.size() < 3 || static_cast<unsigned char>(s[0]) != 0x80 || s[1] > 5) return false;
    switch (static_cast<unsigned char>(s[2])) {
        case 'c':
        case 0x93:
        case 'R':
        case 'b':
        case 'i':
        case 'o':
        case 0x81:
        case 0x92:
        case 0x82:
        case 0x83:
        case 0x84:
        case 'P':
        case 'Q':
        case 0x97:
        case 0x98:
            return true;
        default:
            return false;
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string bytes(reinterpret_cast<const char*>(data), size);
    autoheal::diag::DataLimits limits;
    limits.max_nodes = 100'000;
    auto tree = autoheal::diag::ReadPickle(bytes, limits);
    if (tree && tree->size() > limits.max_nodes) Fail("pickle tree past its node limit");
    if (StartsWithRefusedOpcode(bytes) && tree) Fail("a pickle that imports or calls was read");
    if (tree) {
        // Every reference in the tree points into it (or holds its int).
        using Tree = autoheal::diag::DataTree;
        auto inside = [&](Tree::Ref c) { return (c & Tree::kInlineInt) != 0 || c < tree->size(); };
        for (std::size_t r = 0; r < tree->size(); ++r) {
            const auto ref = static_cast<Tree::Ref>(r);
            for (auto c : tree->ItemsOf(ref)) {
                if (!inside(c)) Fail("a list item outside the tree");
            }
            for (const auto& [k, v] : tree->MapOf(ref)) {
                if (!inside(k) || !inside(v)) Fail("a dict item outside the tree");
            }
        }
    }
    auto json = autoheal::diag::ReadJsonData(bytes, limits);
    if (json && json->size() > limits.max_nodes) Fail("JSON tree past its node limit");

    // As a dump, then as the ranks of a job: the same dump under three ranks, one missing.
    auto dump = autoheal::diag::ParseFrDump(bytes, limits);
    if (!dump) return 0;
    if (dump->entries.size() > autoheal::diag::kMaxFrEntries) Fail("more entries than the cap");
    std::vector<autoheal::diag::FrDump> dumps;
    for (int rank : {0, 2, 3}) {
        dumps.push_back(*dump);
        dumps.back().rank = rank;
    }
    std::set<int> known = {0, 2, 3};
    for (const auto& [name, pg] : dump->pg_config) known.insert(pg.ranks.begin(), pg.ranks.end());
    const auto findings = autoheal::diag::AnalyzeFlightRecorder(dumps);
    for (const auto& f : findings) {
        if (f.ranks.empty()) Fail("a finding without a rank");
        for (int r : f.ranks) {
            if (known.count(r) == 0) Fail("a finding names a rank nothing holds");
        }
    }
    autoheal::diag::EvidenceSet set;
    autoheal::diag::AddFlightRecorderEvidence(findings, {{0, "node0"}}, "fuzz", &set);
    if (set.items.size() != findings.size()) Fail("a finding without its evidence");
    return 0;
}
