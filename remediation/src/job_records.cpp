#include "autoheal/remediation/job_records.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <limits>
#include <nlohmann/json.hpp>

#include "autoheal/health/runner.h"
#include "autoheal/remediation/decision.h"

namespace autoheal::remediation {

bool SafePathPart(const std::string& s) {
    return !s.empty() && s.size() < 128 && s.front() != '.' &&
           s.find_first_not_of(
               "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
               "0123456789._-") == std::string::npos;
}

std::string JobDir(const std::string& state_dir, const std::string& job) {
    return state_dir + "/jobs/" + job;
}
std::string PrologFile(const std::string& state_dir, const std::string& job,
                       const std::string& node) {
    return JobDir(state_dir, job) + "/" + node + ".prolog.json";
}
std::string DecisionFile(const std::string& state_dir, const std::string& job, int restart) {
    return JobDir(state_dir, job) + "/run" + std::to_string(restart) + "/decision.json";
}
std::string EpilogFile(const std::string& state_dir, const std::string& job, int restart,
                       const std::string& node) {
    return JobDir(state_dir, job) + "/run" + std::to_string(restart) + "/" + node + ".epilog.json";
}

Result<int> CleanOldJobRecords(const std::string& state_dir, std::int64_t older_than,
                               const std::string& keep_job, int max_removed, int max_examined) {
    const std::string jobs = state_dir + "/jobs";
    std::error_code ec;
    std::filesystem::directory_iterator it(jobs, ec);
    if (ec) {
        if (ec == std::errc::no_such_file_or_directory) return 0;
        return MakeError(jobs + ": cannot list: " + ec.message());
    }
    int removed = 0;
    int examined = 0;
    for (; it != std::filesystem::directory_iterator() && removed < max_removed &&
           examined < max_examined;
         it.increment(ec)) {
        ++examined;
        const std::string name = it->path().filename().string();
        if (!SafePathPart(name) || name == keep_job || name == kAgentsFolder) continue;
        struct stat st {};
        if (::lstat(it->path().c_str(), &st) != 0 || !S_ISDIR(st.st_mode)) continue;
        if (st.st_mtime >= older_than) continue;
        std::error_code rm;
        std::filesystem::remove_all(it->path(), rm);
        if (rm) return MakeError(it->path().string() + ": cannot remove: " + rm.message());
        ++removed;
    }
    if (ec) return MakeError(jobs + ": cannot list: " + ec.message());
    return removed;
}

Result<bool> WriteJobRecord(const std::string& state_dir, const std::string& path,
                            std::string_view content, unsigned file_mode) {
    struct stat st {};
    const bool give_away = ::geteuid() == 0 && ::stat((state_dir + "/jobs").c_str(), &st) == 0 &&
                           S_ISDIR(st.st_mode) && st.st_uid != 0;
    const FileOwner owner{st.st_uid, st.st_gid};
    return WriteFileAtomically(path, content, file_mode, 0755, give_away ? &owner : nullptr);
}

namespace {

std::vector<std::string> Strings(const nlohmann::json& j, const char* key) {
    std::vector<std::string> out;
    if (!j.contains(key) || !j[key].is_array()) return out;
    for (const auto& v : j[key]) {
        if (v.is_string()) out.push_back(v.get<std::string>());
    }
    return out;
}

std::string Str(const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_string() ? j[key].get<std::string>() : std::string();
}

// An integer field, or `fallback` when it is missing, not an integer or out of int's range.
template <typename T>
T Int(const nlohmann::json& j, const char* key, T fallback) {
    if (!j.contains(key) || !j[key].is_number_integer()) return fallback;
    const auto v = j[key].get<std::int64_t>();
    if (v < std::numeric_limits<T>::min() || v > std::numeric_limits<T>::max()) return fallback;
    return static_cast<T>(v);
}

bool Bool(const nlohmann::json& j, const char* key) {
    return j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

}  // namespace

namespace {

constexpr auto kReplace = nlohmann::json::error_handler_t::replace;

// Each item is a list, [signature, source, line, text, field, value, field, value, ...]:
// lists parse several times faster than objects, and a 2,048-node job's controller parses
// tens of thousands of items. The text is null when it is the previous item's of the same source
// and line (one line several signatures matched).
nlohmann::json EvidenceSetJson(const diag::EvidenceSet& set) {
    nlohmann::json items = nlohmann::json::array();
    const diag::Evidence* previous = nullptr;
    for (const diag::Evidence& e : set.items) {
        nlohmann::json item = nlohmann::json::array();
        item.push_back(e.signature);
        item.push_back(e.source < set.sources.size() ? set.sources[e.source] : "");
        item.push_back(e.line);
        const bool same_line = previous != nullptr && previous->source == e.source &&
                               previous->line == e.line && previous->text == e.text;
        item.push_back(same_line ? nlohmann::json() : nlohmann::json(e.text));
        for (const auto& [k, v] : e.fields) {
            item.push_back(k);
            item.push_back(v);
        }
        items.push_back(std::move(item));
        previous = &e;
    }
    nlohmann::json counts = nlohmann::json::object();
    for (const auto& [signature, n] : set.counts) counts[signature] = n;
    return {{"items", std::move(items)},
            {"counts", std::move(counts)},
            {"lines", set.lines},
            {"bytes", set.bytes}};
}

// One item of `set` (its text may be the previous item's).
Result<bool> AddItemFrom(const nlohmann::json& item, diag::EvidenceSet* set) {
    if (!item.is_array() || item.size() < 4 || item.size() % 2 != 0) {
        return MakeError(ErrorCode::kInvalid,
                         "not a list [signature, source, line, text, field, value, ...]");
    }
    if (!item[0].is_string() || item[0].get_ref<const std::string&>().empty()) {
        return MakeError(ErrorCode::kInvalid, "no signature");
    }
    if (!item[1].is_string() || item[1].get_ref<const std::string&>().empty()) {
        return MakeError(ErrorCode::kInvalid, "no source");
    }
    if (!item[2].is_number_unsigned()) return MakeError(ErrorCode::kInvalid, "no line number");
    if (!item[3].is_string() && !item[3].is_null()) {
        return MakeError(ErrorCode::kInvalid, "text is neither text nor null");
    }
    const std::string& source = item[1].get_ref<const std::string&>();
    diag::Evidence e;
    e.signature = item[0].get<std::string>();
    e.line = item[2].get<std::size_t>();
    const diag::Evidence* previous = set->items.empty() ? nullptr : &set->items.back();
    if (item[3].is_string()) {
        e.text = item[3].get<std::string>();
    } else if (previous != nullptr && set->sources[previous->source] == source &&
               previous->line == e.line) {
        e.text = previous->text;
    }
    for (std::size_t f = 4; f + 1 < item.size(); f += 2) {
        if (!item[f].is_string() || !item[f + 1].is_string()) {
            return MakeError(ErrorCode::kInvalid, "a field or value that is not text");
        }
        e.fields.emplace_back(item[f].get<std::string>(), item[f + 1].get<std::string>());
    }
    diag::AddEvidence(set, source, std::move(e));
    return true;
}

Result<diag::EvidenceSet> EvidenceSetFrom(const nlohmann::json& j) {
    diag::EvidenceSet set;
    if (j.is_null()) return set;
    if (!j.is_object()) return MakeError(ErrorCode::kInvalid, "not an object");
    static const nlohmann::json kNone = nlohmann::json::array();
    auto found = j.find("items");
    const nlohmann::json& items = found == j.end() ? kNone : *found;
    if (!items.is_array()) return MakeError(ErrorCode::kInvalid, "items: not a list");
    set.items.reserve(items.size());
    for (std::size_t i = 0; i < items.size(); ++i) {
        auto added = AddItemFrom(items[i], &set);
        if (!added) {
            return MakeError(ErrorCode::kInvalid,
                             "item " + std::to_string(i + 1) + ": " + added.error());
        }
    }
    // The uncapped counts replace those of the kept items.
    if (j.contains("counts") && j["counts"].is_object()) {
        set.counts.clear();
        for (const auto& [signature, n] : j["counts"].items()) {
            if (n.is_number_unsigned()) set.counts.emplace_back(signature, n.get<std::uint64_t>());
        }
    }
    set.lines =
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, Int(j, "lines", std::int64_t{0})));
    set.bytes =
        static_cast<std::uint64_t>(std::max<std::int64_t>(0, Int(j, "bytes", std::int64_t{0})));
    return set;
}

// "version N" as found in a record, or nullopt when it has none. A version that is not a
// whole number is reported as such.
Result<std::optional<int>> RecordVersion(const nlohmann::json& j) {
    if (!j.contains("version")) return std::optional<int>();
    if (!j["version"].is_number_integer()) {
        return MakeError(ErrorCode::kInvalid,
                         "version is not a whole number: " + j["version"].dump());
    }
    return std::optional<int>(Int(j, "version", -1));
}

// A record's JSON object, refused when it is not one or its version is not `known`. Without a
// version field it is version 1, refused unless `unversioned_is_v1` (node reports: version 1
// carried log lines).
Result<nlohmann::json> ParseRecord(const std::string& text, const char* record, int known,
                                   bool unversioned_is_v1) {
    auto j = nlohmann::json::parse(text, nullptr, false);
    if (j.is_discarded() || !j.is_object()) {
        return MakeError(ErrorCode::kInvalid, std::string(record) + ": not a JSON object");
    }
    auto version = RecordVersion(j);
    if (!version)
        return MakeError(ErrorCode::kInvalid, std::string(record) + ": " + version.error());
    if (!*version && !unversioned_is_v1) {
        return MakeError(ErrorCode::kInvalid,
                         std::string(record) +
                             ": version 1 (no version field) is not read: it carries evidence "
                             "as log lines; this autoheal reads version " +
                             std::to_string(known) + " (upgrade autoheal on the node)");
    }
    const int v = version->value_or(1);
    if (v != known) {
        return MakeError(ErrorCode::kInvalid,
                         std::string(record) + ": version " + std::to_string(v) +
                             " is not read: this autoheal reads version " + std::to_string(known));
    }
    return j;
}

}  // namespace

std::string EvidenceSetToJson(const diag::EvidenceSet& set) {
    return EvidenceSetJson(set).dump(-1, ' ', false, kReplace);
}

Result<diag::EvidenceSet> EvidenceSetFromJson(const std::string& json) {
    auto j = nlohmann::json::parse(json, nullptr, false);
    if (j.is_discarded()) return MakeError(ErrorCode::kInvalid, "not JSON");
    return EvidenceSetFrom(j);
}

std::string NodeReportToJson(const NodeReport& r) {
    nlohmann::json j;
    j["version"] = r.version;
    j["job"] = r.job;
    j["node"] = r.node;
    j["restart"] = r.restart;
    j["time"] = r.time;
    j["exit_code"] = r.exit_code;
    j["evidence"] = EvidenceSetJson(r.evidence);
    j["job_output"] = EvidenceSetJson(r.job_output);
    j["job_output_read"] = r.job_output_read;
    j["gpus"] = nlohmann::json::array();
    for (const GpuIdentity& g : r.gpus) {
        j["gpus"].push_back(
            {{"pci", g.pci}, {"uuid", g.uuid}, {"serial", g.serial}, {"name", g.name}});
    }
    j["job_gpus"] = r.job_gpus;
    if (r.checkpoint) {
        j["checkpoint"] = {{"step", r.checkpoint->step}, {"mtime", r.checkpoint->mtime}};
    }
    j["local_cause"] = r.local_cause;
    j["problems"] = r.problems;
    // Invalid UTF-8 from a log is replaced rather than refused.
    return j.dump(-1, ' ', false, kReplace);
}

Result<NodeReport> NodeReportFromJson(const std::string& json) {
    auto parsed = ParseRecord(json, "node report", kNodeReportVersion, false);
    if (!parsed) return parsed.status();
    const nlohmann::json& j = *parsed;
    NodeReport r;
    r.job = Str(j, "job");
    r.node = Str(j, "node");
    r.restart = Int(j, "restart", 0);
    r.time = Int(j, "time", std::int64_t{0});
    r.exit_code = Str(j, "exit_code");
    for (auto [key, set] : {std::pair{"evidence", &r.evidence}, {"job_output", &r.job_output}}) {
        auto read = EvidenceSetFrom(j.value(key, nlohmann::json()));
        if (!read) {
            return MakeError(ErrorCode::kInvalid,
                             "node report: " + std::string(key) + ": " + read.error());
        }
        *set = std::move(*read);
    }
    r.job_output_read = Bool(j, "job_output_read");
    if (j.contains("gpus") && j["gpus"].is_array()) {
        for (const auto& g : j["gpus"]) {
            if (!g.is_object()) continue;
            r.gpus.push_back({Str(g, "pci"), Str(g, "uuid"), Str(g, "serial"), Str(g, "name")});
        }
    }
    r.job_gpus = Strings(j, "job_gpus");
    if (j.contains("checkpoint") && j["checkpoint"].is_object()) {
        r.checkpoint = CheckpointMark{Int(j["checkpoint"], "step", std::int64_t{-1}),
                                      Int(j["checkpoint"], "mtime", std::int64_t{0})};
    }
    r.local_cause = Str(j, "local_cause");
    r.problems = Strings(j, "problems");
    if (r.node.empty()) return MakeError(ErrorCode::kInvalid, "no node named");
    return r;
}

std::string PrologBaselineToJson(const PrologBaseline& b, const health::HealthReport* report) {
    nlohmann::json j = report != nullptr
                           ? nlohmann::json::parse(health::ReportToJson(*report), nullptr, false)
                           : nlohmann::json::object();
    if (j.is_discarded() || !j.is_object()) j = nlohmann::json::object();
    j["version"] = b.version;
    j["time"] = b.time;
    j["kernel_cursor"] = b.kernel_cursor;
    nlohmann::json options = nlohmann::json::object();
    if (b.options.auto_resume) options["auto_resume"] = *b.options.auto_resume;
    if (b.options.ckpt_dir) options["ckpt_dir"] = *b.options.ckpt_dir;
    if (b.options.hang_timeout) options["hang_timeout"] = *b.options.hang_timeout;
    j["options"] = options;
    if (!b.job_gpus.empty()) j["job_gpus"] = b.job_gpus;
    if (b.snapshot) {
        j["snapshot"] = nlohmann::json::parse(health::SnapshotToJson(*b.snapshot), nullptr, false);
    } else {
        j.erase("snapshot");
    }
    return j.dump(-1, ' ', false, kReplace) + "\n";
}

Result<PrologBaseline> PrologBaselineFromJson(const std::string& json) {
    auto parsed = ParseRecord(json, "prolog baseline", kPrologBaselineVersion, true);
    if (!parsed) return parsed.status();
    const nlohmann::json& j = *parsed;
    PrologBaseline b;
    b.time = Int(j, "time", std::int64_t{0});
    if (j.contains("kernel_cursor") && !j["kernel_cursor"].is_string()) {
        return MakeError(ErrorCode::kInvalid, "prolog baseline: kernel_cursor is not text");
    }
    b.kernel_cursor = Str(j, "kernel_cursor");
    if (j.contains("options") && j["options"].is_object()) {
        const nlohmann::json& o = j["options"];
        if (o.contains("auto_resume") && o["auto_resume"].is_number_integer()) {
            b.options.auto_resume = o["auto_resume"].get<int>();
        }
        if (o.contains("ckpt_dir") && o["ckpt_dir"].is_string()) {
            b.options.ckpt_dir = o["ckpt_dir"].get<std::string>();
        }
        if (o.contains("hang_timeout") && o["hang_timeout"].is_number_integer()) {
            b.options.hang_timeout = o["hang_timeout"].get<std::int64_t>();
        }
    }
    b.job_gpus = Str(j, "job_gpus");
    if (j.contains("snapshot")) {
        b.snapshot = health::SnapshotFromJson(j["snapshot"].dump());
        if (!b.snapshot) {
            return MakeError(ErrorCode::kInvalid,
                             "prolog baseline: snapshot is not an NVML snapshot");
        }
    }
    return b;
}

std::string DecisionRecordToJson(const DecisionRecord& d) {
    nlohmann::json facts = {
        {"failed", d.facts.failed},           {"restart_count", d.facts.restart_count},
        {"requeueable", d.facts.requeueable}, {"nodes", d.facts.nodes},
        {"excluded", d.facts.excluded},       {"missing_reports", d.facts.missing_reports}};
    if (d.facts.auto_resume) facts["auto_resume"] = *d.facts.auto_resume;
    if (!d.facts.user.empty()) facts["user"] = d.facts.user;
    nlohmann::json node_actions = nlohmann::json::array();
    for (const NodeAction& a : d.node_actions) {
        node_actions.push_back({{"node", a.node}, {"action", a.action}, {"gpu", a.gpu}});
    }
    return nlohmann::json{{"version", d.version},
                          {"job", d.job},
                          {"time", d.time},
                          {"node_actions", node_actions},
                          {"explanation", d.explanation},
                          {"requeue", d.requeue},
                          {"cause", d.cause},
                          {"rule", d.rule},
                          {"outcome", d.outcome},
                          {"culprits", d.culprits},
                          {"facts", facts}}
        .dump(-1, ' ', false, kReplace);
}

Result<DecisionRecord> DecisionRecordFromJson(const std::string& json) {
    auto parsed = ParseRecord(json, "decision record", kDecisionRecordVersion, true);
    if (!parsed) return parsed.status();
    const nlohmann::json& j = *parsed;
    DecisionRecord d;
    d.job = Str(j, "job");
    d.time = Int(j, "time", std::int64_t{0});
    d.explanation = Str(j, "explanation");
    d.requeue = Bool(j, "requeue");
    d.cause = Str(j, "cause");
    d.rule = Str(j, "rule");
    d.outcome = Str(j, "outcome");
    d.culprits = Strings(j, "culprits");
    if (j.contains("node_actions") && j["node_actions"].is_array()) {
        for (const auto& a : j["node_actions"]) {
            if (!a.is_object()) continue;
            d.node_actions.push_back({Str(a, "node"), Str(a, "action"), Str(a, "gpu")});
        }
    }
    if (j.contains("facts") && j["facts"].is_object()) {
        const nlohmann::json& f = j["facts"];
        d.facts.failed = Bool(f, "failed");
        d.facts.restart_count = Int(f, "restart_count", 0);
        d.facts.requeueable = !f.contains("requeueable") || Bool(f, "requeueable");
        d.facts.nodes = Strings(f, "nodes");
        d.facts.excluded = Strings(f, "excluded");
        d.facts.missing_reports = Strings(f, "missing_reports");
        d.facts.user = Str(f, "user");
        if (f.contains("auto_resume") && f["auto_resume"].is_number_integer()) {
            d.facts.auto_resume = Int(f, "auto_resume", 0);
        }
    }
    return d;
}

bool AgentRecord::EndedRun() const {
    return (job_action == "requeue" || job_action == "end") && outcome == "done";
}

std::string AgentsDir(const std::string& state_dir) { return state_dir + "/jobs/" + kAgentsFolder; }

std::string AgentSpoolDir(const std::string& state_dir) { return AgentsDir(state_dir) + "/spool"; }

Result<PrologBaseline> ReadPrologBaseline(const std::string& state_dir, const std::string& job,
                                          const std::string& node) {
    auto text = ReadSmallFile(PrologFile(state_dir, job, node), kMaxRecordBytes);
    if (!text) return text.status();
    return PrologBaselineFromJson(*text);
}

std::string AgentFile(const std::string& state_dir, const std::string& job, int restart,
                      const std::string& node) {
    return JobDir(state_dir, job) + "/run" + std::to_string(restart) + "/" + node + ".agent.json";
}

std::string AgentRecordToJson(const AgentRecord& r) {
    nlohmann::json j{{"version", r.version},
                     {"job", r.job},
                     {"node", r.node},
                     {"restart", r.restart},
                     {"time", r.time},
                     {"rule", r.rule},
                     {"cause", r.cause},
                     {"gpu", r.gpu},
                     {"job_action", r.job_action},
                     {"outcome", r.outcome},
                     {"explanation", r.explanation}};
    j["evidence"] = EvidenceSetJson(r.evidence);
    if (!r.job_output.items.empty()) j["job_output"] = EvidenceSetJson(r.job_output);
    if (r.dump_requested != 0) j["dump_requested"] = r.dump_requested;
    return j.dump(-1, ' ', false, kReplace) + "\n";
}

Result<AgentRecord> AgentRecordFromJson(const std::string& json) {
    auto parsed = ParseRecord(json, "agent record", kAgentRecordVersion, false);
    if (!parsed) return parsed.status();
    const nlohmann::json& j = *parsed;
    AgentRecord r;
    r.job = Str(j, "job");
    r.node = Str(j, "node");
    if (r.node.empty()) return MakeError(ErrorCode::kInvalid, "agent record: no node");
    r.restart = Int(j, "restart", 0);
    r.time = Int(j, "time", std::int64_t{0});
    r.rule = Str(j, "rule");
    r.cause = Str(j, "cause");
    r.gpu = Str(j, "gpu");
    r.job_action = Str(j, "job_action");
    r.outcome = Str(j, "outcome");
    r.explanation = Str(j, "explanation");
    if (j.contains("evidence")) {
        auto ev = EvidenceSetFrom(j["evidence"]);
        if (!ev) return MakeError(ErrorCode::kInvalid, "agent record: evidence: " + ev.error());
        r.evidence = std::move(*ev);
    }
    if (j.contains("job_output")) {
        auto ev = EvidenceSetFrom(j["job_output"]);
        if (!ev) return MakeError(ErrorCode::kInvalid, "agent record: job_output: " + ev.error());
        r.job_output = std::move(*ev);
    }
    r.dump_requested = Int(j, "dump_requested", std::int64_t{0});
    return r;
}

std::vector<AgentRecord> AgentRecordsOf(const std::string& state_dir, const std::string& job,
                                        int restart) {
    std::vector<AgentRecord> out;
    const std::string dir = JobDir(state_dir, job) + "/run" + std::to_string(restart);
    std::error_code ec;
    for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
        const std::string name = entry.path().filename().string();
        constexpr std::string_view kSuffix = ".agent.json";
        if (name.size() <= kSuffix.size() ||
            name.compare(name.size() - kSuffix.size(), kSuffix.size(), kSuffix) != 0) {
            continue;
        }
        auto text = ReadSmallFile(entry.path().string(), kMaxRecordBytes);
        if (!text) continue;
        auto r = AgentRecordFromJson(*text);
        if (r) out.push_back(std::move(*r));
    }
    std::sort(out.begin(), out.end(),
              [](const AgentRecord& a, const AgentRecord& b) { return a.node < b.node; });
    return out;
}

}  // namespace autoheal::remediation
