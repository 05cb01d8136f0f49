#include "autoheal/core/submit_policy.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <thread>
#include <utility>

#include "autoheal/core/files.h"

namespace autoheal {
namespace {

constexpr std::size_t kMaxQuarantineBytes = 4 << 20;
constexpr std::size_t kMaxNodeNameLength = 64;
constexpr auto kLockWait = std::chrono::seconds(10);

std::string Errno(const std::string& path, const char* what) {
    return path + ": " + what + ": " + std::strerror(errno);
}

bool Contains(const std::vector<std::string>& names, const std::string& name) {
    return std::find(names.begin(), names.end(), name) != names.end();
}

}  // namespace

Result<std::vector<QuarantinedNode>> ParseQuarantineJson(const std::string& text,
                                                         const std::string& path) {
    using nlohmann::json;
    json root;
    try {
        root = json::parse(text);
    } catch (const json::exception& e) {
        return MakeError(path + ": not valid JSON: " + e.what());
    }
    std::vector<QuarantinedNode> nodes;
    if (!root.is_object()) return MakeError(path + ": expected an object {\"nodes\": [...]}");
    auto list = root.find("nodes");
    if (list == root.end()) return nodes;
    if (!list->is_array()) return MakeError(path + ": nodes: expected a list");
    for (std::size_t i = 0; i < list->size(); ++i) {
        const json& entry = (*list)[i];
        const std::string where = path + ": nodes[" + std::to_string(i) + "]";
        if (!entry.is_object()) return MakeError(where + ": expected an object");
        QuarantinedNode node;
        // Keys other than these are ignored, so a newer writer may add some.
        auto name = entry.find("node");
        if (name == entry.end() || !name->is_string() ||
            !IsValidQuarantineNodeName(name->get_ref<const std::string&>())) {
            return MakeError(where +
                             ".node: expected a node name (letters, digits, '.', '_', '-')");
        }
        node.node = name->get<std::string>();
        auto until = entry.find("until");
        if (until == entry.end() || !until->is_number_integer() ||
            (until->is_number_unsigned() &&
             until->get<std::uint64_t>() >
                 static_cast<std::uint64_t>(std::numeric_limits<std::int64_t>::max()))) {
            return MakeError(where + ".until: expected whole seconds since the epoch");
        }
        node.until = until->get<std::int64_t>();
        auto reason = entry.find("reason");
        if (reason != entry.end()) {
            if (!reason->is_string()) return MakeError(where + ".reason: expected a string");
            node.reason = reason->get<std::string>();
        }
        nodes.push_back(std::move(node));
    }
    return nodes;
}

SubmitPolicy SubmitPolicyFromSettings(const SubmitSettings& settings,
                                      std::vector<QuarantinedNode> quarantine) {
    SubmitPolicy policy;
    policy.max_auto_resume = settings.policy.max_auto_resume;
    policy.allow_health_off = settings.allow_health_off;
    policy.quarantine = std::move(quarantine);
    policy.quarantine_max_nodes = settings.policy.quarantine_max_nodes;
    policy.quarantine_max_fraction = settings.policy.quarantine_max_fraction;
    policy.quarantine_max_seconds = std::int64_t{settings.policy.quarantine_max_hours} * 3600;
    policy.flight_recorder = settings.policy.flight_recorder;
    return policy;
}

int QuarantineLimit(const SubmitPolicy& policy, int cluster_nodes) {
    if (cluster_nodes <= 0) return policy.quarantine_max_nodes;
    // Truncation is floor here (both factors are >= 0); no std::floor: the plugin links no libm.
    const int by_fraction = static_cast<int>(policy.quarantine_max_fraction * cluster_nodes + 1e-9);
    // At least one, as the breaker: a small cluster can still avoid its one broken node.
    return std::min(policy.quarantine_max_nodes, std::max(1, by_fraction));
}

std::vector<QuarantinedNode> ActiveQuarantine(const SubmitPolicy& policy,
                                              const SubmitContext& context, std::int64_t now) {
    std::vector<QuarantinedNode> active;
    const std::size_t limit =
        static_cast<std::size_t>(std::max(0, QuarantineLimit(policy, context.cluster_nodes)));
    for (const QuarantinedNode& q : policy.quarantine) {
        if (active.size() >= limit) break;
        if (q.until <= now || q.until - now > policy.quarantine_max_seconds) continue;
        if (context.is_known_node && !context.is_known_node(q.node)) continue;
        const bool seen = std::any_of(active.begin(), active.end(),
                                      [&](const QuarantinedNode& a) { return a.node == q.node; });
        if (!seen) active.push_back(q);
    }
    return active;
}

Result<JobOptions> SubmittedOptions(const EnvLookup& lookup) {
    // Within kRecordLimits only: above the site's cap DecideOnSubmit refuses in its own words.
    std::vector<std::string> problems;
    JobOptions options = JobOptionsFromEnv(lookup, "", &problems);
    if (!problems.empty()) return MakeError(ErrorCode::kInvalid, "autoheal: " + problems.front());
    return options;
}

std::optional<int> CappedAutoResume(std::optional<int> asked, int max_auto_resume) {
    if (!asked || max_auto_resume <= 0) return std::nullopt;
    return std::min(*asked, max_auto_resume);
}

SubmitDecision DecideOnSubmit(const JobOptions& options, const SubmitPolicy& policy,
                              const SubmitContext& context, std::int64_t now) {
    SubmitDecision decision;
    if (options.auto_resume.has_value() && *options.auto_resume > policy.max_auto_resume) {
        decision.refusal = policy.max_auto_resume <= 0
                               ? "autoheal: --auto-resume is not allowed on this cluster"
                               : "autoheal: --auto-resume=" + std::to_string(*options.auto_resume) +
                                     " is more than this cluster allows (" +
                                     std::to_string(policy.max_auto_resume) + ")";
        return decision;
    }
    if (options.health_check == HealthTier::kOff && !policy.allow_health_off) {
        decision.refusal = "autoheal: --health-check=off is not allowed on this cluster";
        return decision;
    }
    if (options.flight_recorder == true && policy.flight_recorder == FlightRecorderPolicy::kOff) {
        decision.refusal =
            "autoheal: --flight-recorder=on is not allowed on this cluster "
            "(policy.flight_recorder: "
            "off)";
        return decision;
    }
    std::vector<std::string> notes;
    if (options.auto_resume.has_value()) {
        // An auto-resume job must be requeueable whatever the cluster's JobRequeue default or
        // the user's --no-requeue say: requeue is how autoheal resumes it.
        decision.force_requeue = true;
        notes.push_back("auto_resume=" + std::to_string(*options.auto_resume) + ": requeue=1");
    }
    for (const QuarantinedNode& q : ActiveQuarantine(policy, context, now)) {
        // A job that names the node asked for it: excluding it would make the job unrunnable.
        if (Contains(context.req_nodes, q.node) || Contains(context.exc_nodes, q.node)) continue;
        decision.exclude.push_back(q.node);
    }
    if (!decision.exclude.empty()) {
        std::string joined;
        for (const std::string& n : decision.exclude) joined += (joined.empty() ? "" : ",") + n;
        notes.push_back("quarantined nodes excluded: exc_nodes+=" + joined);
    }
    for (const std::string& n : notes) {
        decision.note += (decision.note.empty() ? "" : "; ") + n;
    }
    return decision;
}

std::string DecideOnModify(bool stored_auto_resume, std::optional<bool> requeue) {
    if (stored_auto_resume && requeue.has_value() && !*requeue) {
        return std::string(kRequeueOffRefusal);
    }
    return {};
}

bool IsValidQuarantineNodeName(std::string_view node) {
    if (node.empty() || node.size() > kMaxNodeNameLength) return false;
    return std::all_of(node.begin(), node.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
               c == '.' || c == '_' || c == '-';
    });
}

Result<std::vector<QuarantinedNode>> ReadQuarantineFile(const std::string& path) {
    bool missing = false;
    auto text = ReadSmallFile(path, kMaxQuarantineBytes, &missing);
    if (missing) return std::vector<QuarantinedNode>{};
    if (!text) return MakeError(text.error());
    return ParseQuarantineJson(*text, path);
}

std::string QuarantineToJson(const std::vector<QuarantinedNode>& nodes) {
    using nlohmann::json;
    json list = json::array();
    for (const QuarantinedNode& n : nodes) {
        list.push_back(json{{"node", n.node}, {"until", n.until}, {"reason", n.reason}});
    }
    // Reasons quote logs: replace bytes that are not UTF-8 instead of failing.
    return json{{"nodes", std::move(list)}}.dump(2, ' ', false, json::error_handler_t::replace) +
           "\n";
}

Result<bool> WriteQuarantineFile(const std::string& path,
                                 const std::vector<QuarantinedNode>& nodes) {
    // 0644: readers (slurmctld may run as SlurmUser) must read it.
    return WriteFileAtomically(path, QuarantineToJson(nodes), 0644, 0755);
}

namespace {

// Under an exclusive flock on `<path>.lock` (waited for up to 10 s): reads the file, lets
// `change` edit the list, writes it. Returns the list written.
Result<std::vector<QuarantinedNode>> UpdateQuarantine(
    const std::string& path,
    const std::function<std::vector<QuarantinedNode>(std::vector<QuarantinedNode>)>& change) {
    const std::filesystem::path target(path);
    std::error_code ec;
    if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ec);
    if (ec)
        return MakeError(target.parent_path().string() + ": cannot create folder: " + ec.message());

    // The lock lives in a sibling file: the data file is replaced by rename, so a lock on it
    // would be on an inode the next writer no longer opens.
    const std::string lock_path = path + ".lock";
    UniqueFd lock(::open(lock_path.c_str(), O_RDWR | O_CREAT | O_NOFOLLOW | O_CLOEXEC, 0644));
    if (lock.get() < 0) return MakeError(Errno(lock_path, "cannot open"));
    const auto deadline = std::chrono::steady_clock::now() + kLockWait;
    while (::flock(lock.get(), LOCK_EX | LOCK_NB) != 0) {
        if (errno != EWOULDBLOCK && errno != EINTR)
            return MakeError(Errno(lock_path, "cannot lock"));
        if (std::chrono::steady_clock::now() >= deadline) {
            return MakeError(lock_path + ": still locked by another writer after 10 s");
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    // Held until `lock` closes, after the rename.
    auto current = ReadQuarantineFile(path);
    if (!current) return MakeError(current.error());
    std::vector<QuarantinedNode> nodes = change(std::move(current).value());
    auto written = WriteQuarantineFile(path, nodes);
    if (!written) return MakeError(written.error());
    return nodes;
}

}  // namespace

Result<std::vector<QuarantinedNode>> AddToQuarantine(const std::string& path,
                                                     const std::string& node, std::int64_t until,
                                                     const std::string& reason, std::int64_t now) {
    if (!IsValidQuarantineNodeName(node)) {
        return MakeError("quarantine: invalid node name '" + node + "'");
    }
    return UpdateQuarantine(path, [&](std::vector<QuarantinedNode> current) {
        std::vector<QuarantinedNode> nodes;
        std::int64_t merged_until = until;
        for (QuarantinedNode& q : current) {
            if (q.node == node) {
                // Never shorten a quarantine already in place (an admin may have set a long one).
                merged_until = std::max(merged_until, q.until);
            } else if (q.until > now) {
                nodes.push_back(std::move(q));
            }
        }
        if (merged_until > now) nodes.push_back(QuarantinedNode{node, merged_until, reason});
        return nodes;
    });
}

Result<bool> RemoveFromQuarantine(const std::string& path, const std::string& node,
                                  std::int64_t now) {
    if (!std::filesystem::exists(path)) return false;
    bool removed = false;
    auto r = UpdateQuarantine(path, [&](std::vector<QuarantinedNode> current) {
        std::vector<QuarantinedNode> nodes;
        for (QuarantinedNode& q : current) {
            if (q.node == node) {
                removed = q.until > now;
            } else if (q.until > now) {
                nodes.push_back(std::move(q));
            }
        }
        return nodes;
    });
    if (!r) return MakeError(r.error());
    return removed;
}

}  // namespace autoheal
