#include <algorithm>
#include <sstream>

#include "autoheal/diag/gpu_telemetry.h"
#include "rule_loader_internal.h"

namespace autoheal::diag {

bool LoadResult::ok() const {
    return std::none_of(messages.begin(), messages.end(),
                        [](const LoadMessage& m) { return m.severity == Severity::kError; });
}

bool LoadResult::has_warnings() const {
    return std::any_of(messages.begin(), messages.end(),
                       [](const LoadMessage& m) { return m.severity == Severity::kWarning; });
}

std::string LoadResult::Format() const {
    std::string out;
    for (const LoadMessage& m : messages) {
        out += m.where.file + ":" + std::to_string(m.where.line) + ":" +
               std::to_string(m.where.column) + ": " +
               (m.severity == Severity::kError ? "error" : "warning") + ": " + m.code + ": ";
        if (!m.context.empty()) out += m.context + ": ";
        out += m.message + "\n";
        if (!m.snippet.empty()) out += m.snippet;
    }
    return out;
}

const Rule* RuleSet::FindRule(const std::string& name) const {
    for (const Rule& r : rules) {
        if (r.name == name) return &r;
    }
    return nullptr;
}

const SignatureDef* RuleSet::FindSignature(const std::string& name) const {
    for (const SignatureDef& s : signatures) {
        if (s.name == name) return &s;
    }
    return nullptr;
}

const std::vector<BuiltinSignature>& BuiltinSignatures() {
    // What the NCCL rank analyzers (analyze.cpp, AnalyzeNccl) read: the watchdog's timeouts,
    // where each rank's process group was, and the ranks the job's output names.
    static const std::vector<std::string> kRankAnalyzerReads{
        "nccl-watchdog-timeout", "context-nccl-worknccl", "context-nccl-progress",
        "context-torch-rank"};
    static const std::vector<BuiltinSignature> kBuiltins{
        {"nccl-ranks-desync",
         "NCCL watchdog timeouts on several ranks disagree on the collective (SeqNum, OpType or "
         "size): the ranks are running different code paths",
         {"ranks", "seqs", "ops"},
         "",
         kRankAnalyzerReads},
        {"nccl-ranks-agree",
         "NCCL watchdog timeouts on several ranks all wait in the same collective: a peer or "
         "the fabric hung",
         {"ranks", "seq", "op"},
         "",
         kRankAnalyzerReads},
        {"nccl-missing-rank",
         "a rank that appears in the job's output never reported the collective its peers "
         "timed out in: it is the straggler",
         {"rank", "ranks"},
         "",
         kRankAnalyzerReads},
        {"nccl-first-collective",
         "the watchdog timed out on the first collective of a process group: setup, "
         "configuration or connectivity",
         {"seq", "op"},
         "",
         kRankAnalyzerReads},
        {"nccl-fr-culprit",
         "made from PyTorch's NCCL flight recorder dumps (the job's own files): the rank(s) behind "
         "the collective the others wait in (state: never-entered, not-completed, no-dump), with "
         "the collective (op, seq, pg) and the node when the dumps' layout names it",
         {"rank", "ranks", "pg", "seq", "op", "state", "waiting", "members"},
         "rank=13 ranks=13 pg=0 seq=80078 op=ALLREDUCE state=never-entered waiting=1023"},
        {"nccl-fr-desync",
         "made from PyTorch's NCCL flight recorder dumps: ranks that ran another collective (or "
         "other sizes) at a sequence number the others ran: the job's ranks took different code "
         "paths",
         {"rank", "ranks", "pg", "seq", "op", "ops"},
         "rank=3 ranks=3 pg=0 seq=12 op=ALLREDUCE ops=nccl:all_reduce,nccl:broadcast"},
        {"cuda-oom-held-elsewhere",
         "made from PyTorch's account of a GPU's memory when it ran out (GPU index, total, free, "
         "what this process held, in bytes): others is what no part of the process held, at "
         "least half the GPU",
         {"gpu_index", "total", "free", "mine", "others"},
         "gpu_index=0 total=8504035246 free=25753026 mine=90177536 others=8388104684"},
        {kNvmlDeltaSignature,
         "made by the node epilog from NVML, prolog snapshot against epilog snapshot: a GPU "
         "error counter grew (counter: ecc_uncorrected_volatile, ecc_uncorrected_sram, "
         "ecc_uncorrected_dram, retired_pages_dbe, remapped_rows_uncorrectable), a flag "
         "appeared (remapped_rows_failure, recovery_action), an NVLink went down (nvlink, with "
         "link) or the GPU was lost (gpu_lost)",
         {"gpu", "counter", "before", "after", "link"},
         "gpu=0000:3b:00.0 counter=ecc_uncorrected_volatile before=0 after=3"},
        {kJobHangSignature,
         "made by autoheal-agent for a job with a hang timeout (--hang-timeout or "
         "agent.hang_timeout): its output and its checkpoint folder have not advanced for "
         "`idle` seconds (at least `timeout`) and its GPUs on the batch host are idle "
         "(`gpus` judged, the highest utilization `util` in percent). The job's own files: "
         "never a node's evidence",
         {"timeout", "idle", "gpus", "util"},
         "timeout=600 idle=612 gpus=8 util=0"},
        {kGpuTelemetrySignature,
         "made by the node epilog from autoheal-agent's samples of one GPU during the run "
         "(agent.sample_interval): percent of the time throttled by power, by temperature and in "
         "hardware slowdown, power p5/p95 and swing (W), temperature max and mean (C), mean SM "
         "clock (MHz); the controller adds the GPU's standing among the job's GPUs: "
         "clock_vs_peers (percent of their median SM clock), temp_vs_peers (C above their "
         "median), straggler (yes for the job's slowest GPU below 95%), peers",
         {"gpu", "samples", "seconds", "power_throttle_pct", "thermal_throttle_pct",
          "hw_slowdown_pct", "power_p5", "power_p95", "power_swing", "temp_max", "temp_mean",
          "sm_clock_mean", "clock_vs_peers", "temp_vs_peers", "straggler", "peers"},
         "gpu=0000:3b:00.0 seconds=3600 hw_slowdown_pct=42 thermal_throttle_pct=40 "
         "clock_vs_peers=71 temp_vs_peers=9 straggler=yes"},
        {kHealthCheckSignature,
         "made by the node epilog: a check of the post-job health check failed (verdict: "
         "fail; reason, where the check gives one: wrong-result, peer-mismatch, cuda-error, "
         "slow, pattern-mismatch, timeout)",
         {"gpu", "check", "verdict", "reason"},
         "gpu=0000:3b:00.0 check=gemm-bf16 verdict=fail reason=peer-mismatch"},
    };
    return kBuiltins;
}

const std::vector<DerivedFields>& AnalyzerFields() {
    static const std::vector<DerivedFields> kFields{
        // kernel: "yes" when the line is the kernel's or a driver's own record (log_line.h).
        {"*", {"host", "kernel"}},
        {"gpu-fallen-off-bus", {"pci"}},
        // Xid 74 (Hopper NVLink): nvlink_class from the first register's bits, per the
        // catalog's WORKFLOW_NVLINK_ERR. Xid 144-150 (NVLink5): subcode = IntrInfo bits 20-25,
        // error_status = the second register.
        {"xid", {"registers", "nvlink_class", "subcode", "error_status", "role"}},
    };
    return kFields;
}

namespace internal {

const char* ItemKindName(ItemKind kind) {
    switch (kind) {
        case ItemKind::kSignature:
            return "signature";
        case ItemKind::kList:
            return "list";
        case ItemKind::kRule:
            return "rule";
    }
    return "rule";
}

std::string Context(const ItemInfo& item) {
    return std::string("In ") + ItemKindName(item.kind) + " '" + item.name + "'";
}

Location LocationOf(const SourceFile& file, const YAML::Node& node) {
    if (!node.IsDefined()) return Location{file.name, 0, 0};
    YAML::Mark mark = node.Mark();
    if (mark.is_null()) return Location{file.name, 0, 0};
    return Location{file.name, mark.line + 1, mark.column + 1};
}

void Reporter::Error(const std::string& code, const Location& where, const std::string& context,
                     const std::string& message) {
    Add(Severity::kError, code, where, context, message);
}

void Reporter::Warning(const std::string& code, const Location& where, const std::string& context,
                       const std::string& message) {
    Add(Severity::kWarning, code, where, context, message);
}

void Reporter::Add(Severity severity, const std::string& code, const Location& where,
                   const std::string& context, const std::string& message) {
    LoadMessage m{severity, code, where, context, message, ""};
    for (const SourceFile& f : *files_) {
        if (f.name != where.file || where.line < 1 ||
            static_cast<std::size_t>(where.line) > f.lines.size()) {
            continue;
        }
        const std::string& line = f.lines[static_cast<std::size_t>(where.line) - 1];
        m.snippet = line + "\n";
        std::string caret;
        for (int i = 1; i < where.column && static_cast<std::size_t>(i) <= line.size(); ++i) {
            caret += line[static_cast<std::size_t>(i) - 1] == '\t' ? '\t' : ' ';
        }
        m.snippet += caret + "^\n";
        break;
    }
    result_->messages.push_back(std::move(m));
}

}  // namespace internal

struct RuleLoader::Impl {
    std::vector<internal::SourceFile> files;
};

RuleLoader::RuleLoader() : impl_(new Impl) {}
RuleLoader::~RuleLoader() { delete impl_; }

void RuleLoader::Add(std::string name, std::string text) {
    internal::SourceFile file{std::move(name), std::move(text), {}};
    std::istringstream in(file.text);
    std::string line;
    while (std::getline(in, line)) file.lines.push_back(line);
    impl_->files.push_back(std::move(file));
}

std::optional<RuleSet> RuleLoader::Compile(LoadResult* result) {
    LoadResult local;
    LoadResult& out = result != nullptr ? *result : local;
    internal::Reporter report(&impl_->files, &out);
    std::vector<std::vector<internal::ItemInfo>> per_file;
    for (std::size_t i = 0; i < impl_->files.size(); ++i) {
        per_file.push_back(internal::ReadItems(impl_->files[i], i, report));
    }
    std::vector<internal::ItemInfo> items = internal::CollectItems(per_file, report);
    // Errors in reading make references unreliable; still compile to report more problems.
    std::optional<RuleSet> set = internal::CompileItems(items, impl_->files, report);
    if (!out.ok()) return std::nullopt;
    return set;
}

}  // namespace autoheal::diag
