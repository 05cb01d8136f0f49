// Analyzers: derived evidence that needs more than one line.
#include <re2/re2.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>

#include "autoheal/diag/diagnosis.h"
#include "autoheal/diag/log_line.h"

namespace autoheal::diag {
namespace {

// 3b:00 / 0000:3b:00 / 00000000:3B:00.0 -> 0000:3b:00.0
std::string NormalizePci(std::string_view raw) {
    std::string s;
    for (char c : raw) s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    static const RE2 kBdf(R"(^(?:([0-9a-f]{4,8}):)?([0-9a-f]{2}):([0-9a-f]{2})(?:\.([0-7]))?$)");
    std::string domain, bus, dev, fn;
    if (!RE2::FullMatch(s, kBdf, &domain, &bus, &dev, &fn)) return s;
    if (domain.empty()) domain = "0000";
    if (domain.size() > 4) domain = domain.substr(domain.size() - 4);
    return domain + ":" + bus + ":" + dev + "." + (fn.empty() ? "0" : fn);
}

// The host a line names: its syslog, journald or pdsh prefix ("Mar 27 17:40:36 host kernel:",
// "2024-..T.. host kernel:", "host: [12.3] ...", log_line.h), else NCCL's "host:pid:tid [n]"
// (NCCL's debug prefix, src/debug.cc), at the line's start or after a launcher's own prefix
// (Open MPI's --tag-output "[1,12]<stdout>:", a time): a host of digits only is a time.
void FillHost(Evidence* e, const LogLine& line) {
    if (e->Field("host")) return;
    if (!line.host.empty()) {
        e->SetField("host", std::string(line.host));
        return;
    }
    // A host masked in a paste keeps its leading dots ("...-48:34050:34121 [0]").
    static const RE2 kNccl(
        R"(^(\.{2,}[A-Za-z0-9._-]+|[A-Za-z0-9][A-Za-z0-9._-]*):\d+:\d+ \[\d+\] )");
    // NCCL 2.19+ puts the function after the file ("transport/nvls.cc:379 (nvlsAllocateMem)").
    static const RE2 kTagged(
        R"([\s>:]([A-Za-z0-9][A-Za-z0-9._-]*):\d+:\d+ \[\d+\] (?:[\w/.]+:\d+ )?(?:\(\w+\) )?NCCL )");
    // Open MPI's "[host:pid] " (opal/util/stacktrace.c, "[%s:%05d] *** Process received signal
    // ***", and its show_help and output prefixes) and UCX's "[sec.usec] [host:pid:thread] " or,
    // from its error handlers, "[host:pid:thread:tid]" (ucs/debug/log.c): the host starts with
    // a letter, the pid is a number.
    static const RE2 kMpi(
        R"(^\s*(?:\[?\d+\.\d+\]\s+)?\[([A-Za-z][A-Za-z0-9._-]*):\d+(?::\d+){0,2}\] )");
    // HPE Cray MPICH's abort: "MPICH ERROR [Rank 3] [job id 123.0] [DATE] [nid001616] - Abort(".
    static const RE2 kCrayMpich(
        R"(MPICH ERROR \[Rank \d+\] \[job id [^\]]*\] \[[^\]]*\] \[([A-Za-z][A-Za-z0-9._-]*)\] - )");
    // A structured (JSON) log record that names the host it came from, as node agents and
    // log shippers write them ("hostname":"gpu-17", Kubernetes' "nodeName").
    static const RE2 kJson(
        R"re("(?:hostname|nodeName|node_name)"\s*:\s*"([A-Za-z][A-Za-z0-9._-]*)")re");
    // Azure's distributed health checks collect each node's result as "host | line".
    if (const std::string_view collected = CollectedHost(e->text); !collected.empty()) {
        e->SetField("host", std::string(collected));
        return;
    }
    std::string host;
    if (RE2::PartialMatch(e->text, kNccl, &host) ||
        (RE2::PartialMatch(e->text, kTagged, &host) &&
         host.find_first_not_of("0123456789") != std::string::npos) ||
        RE2::PartialMatch(e->text, kMpi, &host) || RE2::PartialMatch(e->text, kCrayMpich, &host) ||
        RE2::PartialMatch(e->text, kJson, &host)) {
        e->SetField("host", host);
    }
}

// The rank a line of a PyTorch job names: the "[rank3]:" prefix c10d's logger puts on every line
// (PyTorch 2.2+), or ProcessGroupNCCL's "[Rank 3]" / "[PG 0 Rank 3]" / "[PG ID 0 PG GUID 0
// Rank 3]" (ProcessGroupNCCL.cpp logPrefix()), when the signature did not read one itself. A line
// that relays another rank's event (the signature reads `from_rank`) names no rank of its own.
void FillRank(Evidence* e) {
    if (e->Field("rank") || e->Field("grank") || e->Field("from_rank")) return;
    static const RE2 kPrefix(R"(^\s*(?:> )?\[rank(\d+)\]:)");
    static const RE2 kLogPrefix(R"(\[(?:PG [^\]]*? )?Rank (\d+)\])");
    std::string rank;
    if (RE2::PartialMatch(e->text, kPrefix, &rank) ||
        RE2::PartialMatch(e->text, kLogPrefix, &rank)) {
        e->SetField("rank", rank);
    }
}

// The catalog's WORKFLOW_NVLINK_ERR for Xid 74: what the first register's bits say.
std::string NvlinkClass(std::uint32_t reg) {
    auto any = [&](std::initializer_list<int> bits) {
        for (int b : bits) {
            if (reg & (1u << b)) return true;
        }
        return false;
    };
    if (any({4, 5})) return "ecc";
    if (any({8, 9, 12, 16, 17, 24, 28})) return "mechanical";
    if (any({21, 22})) return "signal_integrity";
    if (any({27, 29})) return "other";
    if (any({1, 20})) return "sympathetic";
    // No bit set: the catalog's decode of the first register says nothing (the error is in
    // another register), so the driver's own word for the line stands, not "ignore".
    if (reg == 0) return "none";
    return "ignore";  // only bits 0, 23, 30
}

// Xid 74 and 144-150 lines end with seven hex registers: "(0x025001c6 0x00000000 ...)" or
// "(0x..., 0x0, ...)"; a paste that lost the closing parenthesis at the end still gives them.
void DecodeNvlinkRegisters(Evidence* e) {
    auto xid = e->Field("xid");
    if (!xid) return;
    const int code = std::atoi(std::string(*xid).c_str());
    if (code != 74 && (code < 144 || code > 150)) return;
    static const RE2 kRegs(
        R"(\((0x[0-9a-fA-F]+)[, ]+(0x[0-9a-fA-F]+)((?:[, ]+0x[0-9a-fA-F]+)*)(?:\)|\s*$))");
    std::string r0, r1, rest;
    if (!RE2::PartialMatch(e->text, kRegs, &r0, &r1, &rest)) return;
    const auto reg0 = static_cast<std::uint32_t>(std::strtoul(r0.c_str(), nullptr, 16));
    const auto reg1 = static_cast<std::uint32_t>(std::strtoul(r1.c_str(), nullptr, 16));
    e->SetField("registers", r0 + " " + r1 + rest);
    if (code == 74) {
        e->SetField("nvlink_class", NvlinkClass(reg0));
    } else {
        e->SetField("subcode", std::to_string((reg0 >> 20) & 0x3f));
        char status[16];
        std::snprintf(status, sizeof status, "0x%x", reg1);
        e->SetField("error_status", status);
    }
}

struct RankReport {
    const Evidence* evidence;
    std::string seq;
    std::string op;
    std::string numel_in;
};

std::string JoinInts(const std::set<int>& values) {
    std::string out;
    for (int v : values) out += (out.empty() ? "" : ",") + std::to_string(v);
    return out;
}

std::optional<int> ToInt(std::optional<std::string_view> s) {
    if (!s || s->empty() || s->size() > 9) return std::nullopt;
    int v = 0;
    for (char c : *s) {
        if (c < '0' || c > '9') return std::nullopt;
        v = v * 10 + (c - '0');
    }
    return v;
}

Evidence Derived(const std::string& signature, const Evidence& at, std::string text) {
    Evidence d;
    d.signature = signature;
    d.source = at.source;
    d.line = at.line;
    d.text = std::move(text);
    return d;
}

// Appends evidence an analyzer derived, each counted once.
void AddDerived(std::vector<Evidence> derived, EvidenceSet* set) {
    for (Evidence& d : derived) {
        set->counts.emplace_back(d.signature, 1);
        set->items.push_back(std::move(d));
    }
}

// The WorkNCCL line under the watchdog line set.items[i], before any other watchdog line: a few
// lines down at most, as a terminal's wrap undone leaves the joined lines empty.
const Evidence* NextWorkLine(const EvidenceSet& set, std::size_t i) {
    constexpr std::size_t kMaxLinesBelow = 4;
    const Evidence& e = set.items[i];
    for (std::size_t j = i + 1; j < set.items.size(); ++j) {
        const Evidence& n = set.items[j];
        if (n.source != e.source || n.line > e.line + kMaxLinesBelow) break;
        if (n.line == e.line) continue;
        if (n.signature == "context-nccl-worknccl") return &n;
        if (n.signature == "nccl-watchdog-timeout") break;
    }
    return nullptr;
}

// The collective the watchdog line set.items[i] names. A paste may break that line after
// "timeout:", and then the "WorkNCCL(SeqNum=..., OpType=...)" naming it starts a line of its own
// right under it (context-nccl-worknccl), looked for only then.
RankReport ReportOf(const EvidenceSet& set, std::size_t i) {
    const Evidence& e = set.items[i];
    const Evidence* next = e.Field("seq") || e.Field("op") ? nullptr : NextWorkLine(set, i);
    const Evidence& named = next != nullptr ? *next : e;
    return RankReport{&e, std::string(named.Field("seq").value_or("")),
                      std::string(named.Field("op").value_or("")),
                      std::string(named.Field("numel_in").value_or(""))};
}

std::string JoinStrings(const std::set<std::string>& values) {
    std::string out;
    for (const auto& v : values) out += (out.empty() ? "" : ",") + v;
    return out;
}

// Whether the ranks whose timeouts say which collective they waited in waited in the same one
// (nccl-ranks-agree) or in different ones (nccl-ranks-desync); nothing where fewer than two
// say, or where their collectives cannot be compared.
std::optional<Evidence> CompareRanks(const std::map<int, RankReport>& by_rank,
                                     const std::map<int, std::set<std::string>>& seqs_of_rank) {
    std::set<std::string> seqs, ops;
    std::map<std::string, std::set<std::string>> numel_by_seq;
    std::set<int> ranks;
    const Evidence* at = nullptr;
    for (const auto& [rank, r] : by_rank) {
        if (r.seq.empty() && r.op.empty()) continue;
        ranks.insert(rank);
        if (at == nullptr) at = r.evidence;
        if (!r.seq.empty()) seqs.insert(r.seq);
        if (!r.op.empty()) ops.insert(r.op);
        if (!r.numel_in.empty()) numel_by_seq[r.seq].insert(r.numel_in);
    }
    if (ranks.size() < 2) return std::nullopt;
    const bool numel_differs = std::any_of(numel_by_seq.begin(), numel_by_seq.end(),
                                           [](const auto& kv) { return kv.second.size() > 1; });
    // One rank timing out at two SeqNums waits in more than one process group, and each group
    // numbers its own collectives: the ranks' SeqNums and ops cannot be compared.
    const bool several_groups = std::any_of(seqs_of_rank.begin(), seqs_of_rank.end(),
                                            [](const auto& kv) { return kv.second.size() > 1; });
    // ProcessGroupNCCL numbers point-to-point work (SEND, RECV, a coalesced batch of them) on its
    // own counter (seqP2P_, not seqCollective_), and in a pipeline one stage's SEND is its peer's
    // RECV: a P2P op that differs from another rank's op is no desync.
    const bool p2p = std::any_of(ops.begin(), ops.end(), [](const std::string& op) {
        return op == "SEND" || op == "RECV" || op == "RECVANYSOURCE" || op == "COALESCED";
    });
    const bool differ = seqs.size() > 1 || ops.size() > 1 || numel_differs;
    if (several_groups || (p2p && differ)) return std::nullopt;  // the timeout alone decides
    if (differ) {
        Evidence d =
            Derived("nccl-ranks-desync", *at,
                    "ranks " + JoinInts(ranks) + " timed out in different collectives (SeqNum " +
                        JoinStrings(seqs) + ", OpType " + JoinStrings(ops) +
                        (numel_differs ? ", different sizes" : "") + ")");
        d.SetField("ranks", JoinInts(ranks));
        d.SetField("seqs", JoinStrings(seqs));
        d.SetField("ops", JoinStrings(ops));
        return d;
    }
    Evidence d =
        Derived("nccl-ranks-agree", *at,
                "ranks " + JoinInts(ranks) + " all timed out waiting in the same collective");
    d.SetField("ranks", JoinInts(ranks));
    d.SetField("seq", JoinStrings(seqs));
    d.SetField("op", JoinStrings(ops));
    return d;
}

// A rank that shows up in the output but never reported the timeout its peers hit: one or two
// such ranks are the stragglers (nccl-missing-rank).
void AddMissingRanks(const EvidenceSet& set, const std::map<int, RankReport>& by_rank,
                     std::vector<Evidence>* derived) {
    std::set<int> ranks, missing;
    for (const auto& [rank, r] : by_rank) ranks.insert(rank);
    for (const Evidence& e : set.items) {
        if (e.signature != "context-torch-rank") continue;
        if (auto r = ToInt(e.Field("rank")); r && !by_rank.count(*r)) missing.insert(*r);
    }
    if (missing.empty() || missing.size() > 2 || missing.size() >= by_rank.size()) return;
    const Evidence& at = *by_rank.begin()->second.evidence;
    for (int rank : missing) {
        Evidence d =
            Derived("nccl-missing-rank", at,
                    "rank " + std::to_string(rank) + " never reported the collective ranks " +
                        JoinInts(ranks) + " timed out in");
        d.SetField("rank", std::to_string(rank));
        d.SetField("ranks", JoinInts(ranks));
        derived->push_back(std::move(d));
    }
}

void AnalyzeNccl(EvidenceSet* set) {
    std::map<int, RankReport> by_rank;
    std::map<int, std::set<std::string>> seqs_of_rank;
    std::vector<const Evidence*> unranked;
    bool first_collective = false;
    const Evidence* first_at = nullptr;
    for (std::size_t i = 0; i < set->items.size(); ++i) {
        const Evidence& e = set->items[i];
        if (e.signature == "context-nccl-progress") {
            if (e.Field("last_completed") == "-1") {
                first_collective = true;
                if (first_at == nullptr) first_at = &e;
            }
            continue;
        }
        if (e.signature != "nccl-watchdog-timeout") continue;
        auto rank = ToInt(e.Field("grank"));
        if (!rank) rank = ToInt(e.Field("rank"));
        const RankReport r = ReportOf(*set, i);
        if (r.seq == "1" || r.seq == "0") {
            first_collective = true;
            if (first_at == nullptr) first_at = &e;
        }
        if (!rank) {
            unranked.push_back(&e);
            continue;
        }
        if (!r.seq.empty()) seqs_of_rank[*rank].insert(r.seq);
        auto [it, inserted] = by_rank.emplace(*rank, r);
        if (!inserted) {  // the same rank repeats its message (what(), abort): keep the fullest
            if (it->second.seq.empty() && !r.seq.empty()) it->second = r;
        }
    }
    std::vector<Evidence> derived;
    if (first_collective && first_at != nullptr) {
        Evidence d = Derived("nccl-first-collective", *first_at,
                             "the watchdog fired before any collective of the process group "
                             "completed");
        if (auto seq = first_at->Field("seq")) d.SetField("seq", std::string(*seq));
        if (auto op = first_at->Field("op")) d.SetField("op", std::string(*op));
        derived.push_back(std::move(d));
    }
    if (auto compared = CompareRanks(by_rank, seqs_of_rank)) derived.push_back(*compared);
    if (by_rank.size() >= 2) AddMissingRanks(*set, by_rank, &derived);
    AddDerived(std::move(derived), set);
}

// "Xid 45 ... caused by previous Xid 149": the earlier Xid is the root, on the same GPU, even
// when its own line is not in the excerpt. It becomes an xid item of its own (role=root) so
// that the rules of the root Xid decide, and the later Xid is not read as a cause alone.
void AnalyzeCausedBy(EvidenceSet* set) {
    std::vector<Evidence> derived;
    for (const Evidence& e : set->items) {
        if (e.signature != "context-xid-caused-by") continue;
        auto root = e.Field("root_xid");
        if (!root) continue;
        Evidence d = Derived("xid", e,
                             "Xid " + std::string(*root) + " (named as the cause of Xid " +
                                 std::string(e.Field("xid").value_or("?")) + ")");
        d.SetField("xid", std::string(*root));
        if (auto pci = e.Field("pci")) d.SetField("pci", NormalizePci(*pci));
        if (auto host = e.Field("host")) d.SetField("host", std::string(*host));
        d.SetField("role", "root");
        derived.push_back(std::move(d));
    }
    AddDerived(std::move(derived), set);
}

// An Xid another program re-reports (a health agent, the Kubernetes device plugin: the
// `context-xid-reported-*` signatures) is the same event as the kernel's line: it becomes an xid
// item (role=reported) so that the catalog's rules read it, without the kernel's own confidence.
// One line is one event: a line the kernel's Xid signature read gives no second item, and a
// report's own signature (with its GPU) goes before the words "Xid N" on the same line.
void AnalyzeReportedXids(EvidenceSet* set) {
    constexpr std::string_view kInWords = "context-xid-reported-text";
    std::set<std::pair<std::size_t, std::uint64_t>> lines_read;
    for (const Evidence& e : set->items) {
        if (e.signature == "xid") lines_read.emplace(e.source, e.line);
    }
    std::vector<Evidence> derived;
    for (const bool in_words : {false, true}) {
        for (const Evidence& e : set->items) {
            if (!e.signature.starts_with("context-xid-reported-") ||
                (e.signature == kInWords) != in_words) {
                continue;
            }
            auto xid = e.Field("xid");
            if (!xid || xid->empty() || !lines_read.emplace(e.source, e.line).second) continue;
            Evidence d = Derived("xid", e, e.text);
            d.SetField("xid", std::string(*xid));
            if (auto pci = e.Field("pci"); pci && !pci->empty()) {
                d.SetField("pci", NormalizePci(*pci));
            }
            if (auto uuid = e.Field("uuid"); uuid && !uuid->empty()) {
                d.SetField("uuid", std::string(*uuid));
            }
            if (auto index = e.Field("gpu_index"); index && !index->empty()) {
                d.SetField("gpu_index", std::string(*index));
            }
            if (auto host = e.Field("host")) d.SetField("host", std::string(*host));
            d.SetField("role", "reported");
            derived.push_back(std::move(d));
        }
    }
    std::stable_sort(derived.begin(), derived.end(), [](const Evidence& a, const Evidence& b) {
        return std::tie(a.source, a.line) < std::tie(b.source, b.line);
    });
    AddDerived(std::move(derived), set);
}

// "7.92 GiB", "0 bytes" -> bytes.
std::optional<double> ParseSize(std::string_view text) {
    const std::size_t space = text.find(' ');
    if (space == std::string_view::npos) return std::nullopt;
    const std::string number(text.substr(0, space));
    char* end = nullptr;
    const double value = std::strtod(number.c_str(), &end);
    if (end == number.c_str() || *end != '\0') return std::nullopt;
    const std::string_view unit = text.substr(space + 1);
    static constexpr std::pair<std::string_view, double> kUnits[] = {{"bytes", 1.0},
                                                                     {"KiB", 1024.0},
                                                                     {"MiB", 1048576.0},
                                                                     {"GiB", 1073741824.0},
                                                                     {"TiB", 1099511627776.0}};
    for (const auto& [name, scale] : kUnits) {
        if (unit == name) return value * scale;
    }
    return std::nullopt;
}

// PyTorch's account of a GPU that ran out of memory: when at least half of the GPU was held by
// no part of this process (not its allocator, its CUDA context or its other libraries, which
// stay far below half), another process had it.
void AnalyzeOomAccounting(EvidenceSet* set) {
    std::vector<Evidence> derived;
    for (const Evidence& e : set->items) {
        if (e.signature != "context-cuda-oom-accounting") continue;
        const auto field = [&](const char* a, const char* b) -> std::optional<double> {
            auto v = e.Field(a);
            if (!v || v->empty()) v = e.Field(b);
            return v ? ParseSize(*v) : std::nullopt;
        };
        const auto total = field("total", "capacity");
        const auto free = field("free", "left");
        const auto mine = field("mine", "process");
        if (!total || !free || !mine || *total <= 0) continue;
        const double others = *total - *free - *mine;
        if (others < *total / 2) continue;
        const auto bytes = [](double v) { return std::to_string(static_cast<long long>(v)); };
        Evidence d = Derived("cuda-oom-held-elsewhere", e, e.text);
        auto index = e.Field("gpu_index");
        if (!index || index->empty()) index = e.Field("gpu");
        if (index) d.SetField("gpu_index", std::string(*index));
        d.SetField("total", bytes(*total));
        d.SetField("free", bytes(*free));
        d.SetField("mine", bytes(*mine));
        d.SetField("others", bytes(others));
        derived.push_back(std::move(d));
    }
    AddDerived(std::move(derived), set);
}

// Whether `header` is at most `lines` lines above `e` in the same input.
bool Above(const Evidence* header, const Evidence& e, std::uint64_t lines) {
    return header != nullptr && header->source == e.source && header->line <= e.line &&
           e.line - header->line <= lines;
}

// A line that names no GPU takes the GPU of the header above it:
// - the driver heads a multi-line message with "The NVIDIA GPU <bdf>" and says what is wrong a
//   line or two later (R570+'s "fallen off the bus", "installed in this system requires use of
//   the NVIDIA open kernel modules"): that GPU is the one meant;
// - nvidia-smi prints a GPU as a block, a header naming it ("GPU 00000000:3B:00.0" in -q, "GPU 3:
//   NAME (UUID: GPU-...)" in -L and nvlink -s, -e, -c) with its fields indented under it, and
//   dcgmi nvlink --link-status does the same under "gpuId 3:": an indented line of the block is
//   about its GPU. A line at the margin is not the block's (a program's own output after
//   `nvidia-smi -L`, say), but for nvidia-smi's own note right under the header ("NVML: Unable
//   to retrieve NVLink information as all links are inActive");
// - nvidia-smi's summary table gives a GPU two rows, and only the first names it: the row right
//   under it (fan, temperature, power, memory) is the same GPU's;
// - a firmware-first PCIe record (CPER, drivers/firmware/efi/cper.c) names its device a line
//   above its vendor ("{3}[Hardware Error]:   device_id: 0000:9b:00.0", then "vendor_id: 0x10de,
//   device_id: 0x2330"): the NVIDIA vendor line is that GPU's.
void FillGpuFromHeaders(EvidenceSet* set) {
    constexpr std::uint64_t kDriverMessageLines = 3;
    constexpr std::uint64_t kGhesRecordLines = 3;
    constexpr std::uint64_t kMaxBlockLines = 400;  // nvidia-smi -q gives a GPU ~200 lines
    const Evidence* driver = nullptr;
    const Evidence* block = nullptr;
    const Evidence* table_row = nullptr;
    const Evidence* ghes_device = nullptr;
    for (Evidence& e : set->items) {
        if (e.signature == "context-nvrm-gpu") {
            driver = &e;
            continue;
        }
        if (e.signature == "context-nvidia-smi-gpu") {
            block = &e;
            continue;
        }
        if (e.signature == "context-nvidia-smi-table-gpu") {
            table_row = &e;
            continue;
        }
        if (e.signature == "context-ghes-pcie-device") {
            ghes_device = &e;
            continue;
        }
        if (e.signature == "context-ghes-nvidia-device" && !e.Field("pci") &&
            Above(ghes_device, e, kGhesRecordLines)) {
            if (auto pci = ghes_device->Field("pci")) e.SetField("pci", NormalizePci(*pci));
            continue;
        }
        if (Above(driver, e, kDriverMessageLines) && !e.Field("pci") &&
            (e.signature == "gpu-fallen-off-bus" || e.text.find("NVRM") != std::string::npos)) {
            if (auto pci = driver->Field("pci")) e.SetField("pci", NormalizePci(*pci));
        }
        if (table_row != nullptr && table_row->source == e.source &&
            e.line == table_row->line + 1 && e.text.starts_with('|') && !e.Field("pci")) {
            if (auto pci = table_row->Field("pci")) e.SetField("pci", NormalizePci(*pci));
            continue;
        }
        const bool indented = !e.text.empty() && (e.text[0] == ' ' || e.text[0] == '\t');
        const bool nvml_note =
            block != nullptr && e.line == block->line + 1 && e.text.starts_with("NVML: ");
        if (!Above(block, e, kMaxBlockLines) || e.line == block->line || !(indented || nvml_note) ||
            e.Field("pci") || e.Field("bdf") || e.Field("gpu") || e.Field("gpu_index")) {
            continue;
        }
        if (auto pci = block->Field("pci"); pci && !pci->empty()) {
            e.SetField("pci", NormalizePci(*pci));
            continue;
        }
        for (const char* field : {"gpu_index", "gpu_id"}) {  // nvidia-smi's index, DCGM's id
            if (auto index = block->Field(field); index && !index->empty()) {
                e.SetField("gpu_index", std::string(*index));
                break;
            }
        }
    }
}

}  // namespace

void Analyze(EvidenceSet* set) {
    for (Evidence& e : set->items) {
        for (auto& [k, v] : e.fields) {
            if (k == "pci" || k == "bdf") v = NormalizePci(v);
        }
        const LogLine line = ParseLogLine(e.text);  // once, for the host and the record's kind
        FillHost(&e, line);
        FillRank(&e);
        if (IsKernelRecord(e.text, line)) e.SetField("kernel", "yes");
        if (e.signature == "xid") DecodeNvlinkRegisters(&e);
    }
    FillGpuFromHeaders(set);  // before the analyzers that copy an item's GPU
    AnalyzeCausedBy(set);
    AnalyzeReportedXids(set);
    AnalyzeOomAccounting(set);
    AnalyzeNccl(set);
}

}  // namespace autoheal::diag
