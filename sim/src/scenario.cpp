#include "autoheal/sim/scenario.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <optional>
#include <set>

#include "autoheal/core/duration.h"
#include "autoheal/core/files.h"

namespace autoheal::sim {
namespace {

class Reader {
  public:
    explicit Reader(std::string name) : name_(std::move(name)) {}
    Error Bad(const std::string& key, const std::string& why) const {
        return MakeError(ErrorCode::kInvalid, name_ + ": " + key + ": " + why);
    }
    // A number of seconds: a plain number (fractions allowed) or a duration ("30m").
    Result<double> Seconds(const YAML::Node& n, const std::string& key) const {
        const std::string text = n.as<std::string>("");
        try {
            std::size_t used = 0;
            const double v = std::stod(text, &used);
            if (used == text.size() && v >= 0 && v <= kMaxDurationSeconds) return v;
        } catch (const std::exception&) {
        }
        auto d = ParseDuration(text);
        if (!d) return Bad(key, d.error());
        return static_cast<double>(*d);
    }
    Result<double> Number(const YAML::Node& n, const std::string& key, double lo, double hi) const {
        try {
            const double v = n.as<double>();
            if (v >= lo && v <= hi) return v;
        } catch (const YAML::Exception&) {
        }
        return Bad(key, "'" + n.as<std::string>("?") + "' is not a number from " +
                            std::to_string(lo) + " to " + std::to_string(hi));
    }
    Result<std::vector<std::string>> Lines(const YAML::Node& n, const std::string& key) const {
        std::vector<std::string> out;
        if (!n) return out;
        if (!n.IsSequence()) return Bad(key, "not a list of lines");
        for (const auto& l : n) out.push_back(l.as<std::string>(""));
        return out;
    }

  private:
    std::string name_;
};

Result<Cause> ParseCause(const Reader& r, const YAML::Node& n, std::size_t i) {
    const std::string key = "causes[" + std::to_string(i) + "]";
    if (!n.IsMap()) return r.Bad(key, "not a map");
    static const std::set<std::string> known = {"name",         "count", "where",
                                                "switch_nodes", "hangs", "node_down",
                                                "kernel",       "nvml",  "job_output"};
    for (const auto& kv : n) {
        const std::string k = kv.first.as<std::string>("");
        if (known.count(k) == 0) return r.Bad(key + "." + k, "unknown key");
    }
    Cause c;
    c.name = n["name"].as<std::string>("");
    if (c.name.empty()) return r.Bad(key + ".name", "missing");
    auto count = r.Number(n["count"], key + ".count", 0, 1e6);
    if (!count) return count.status();
    c.count = *count;
    c.where = n["where"].as<std::string>("node");
    if (c.where != "node" && c.where != "switch" && c.where != "job") {
        return r.Bad(key + ".where", "'" + c.where + "' is not node, switch or job");
    }
    if (n["switch_nodes"]) {
        auto s = r.Number(n["switch_nodes"], key + ".switch_nodes", 1, 512);
        if (!s) return s.status();
        c.switch_nodes = static_cast<int>(*s);
    }
    c.hangs = n["hangs"].as<bool>(false);
    c.node_down = n["node_down"].as<bool>(false);
    auto kernel = r.Lines(n["kernel"], key + ".kernel");
    auto output = r.Lines(n["job_output"], key + ".job_output");
    if (!kernel) return kernel.status();
    if (!output) return output.status();
    c.kernel = *kernel;
    c.job_output = *output;
    for (const auto& d : n["nvml"]) {
        NvmlChange change{d["counter"].as<std::string>(""), d["before"].as<std::string>(""),
                          d["after"].as<std::string>("")};
        if (change.counter.empty()) return r.Bad(key + ".nvml", "an item without a counter");
        c.nvml.push_back(change);
    }
    return c;
}

std::optional<Error> ParseStages(const Reader& r, const YAML::Node& n, Scenario* s) {
    for (const auto& kv : n) {
        const std::string name = kv.first.as<std::string>("");
        const auto& names = StageNames();
        if (std::find(names.begin(), names.end(), name) == names.end()) {
            return r.Bad("stages." + name, "unknown stage");
        }
        Stage st;
        auto sec = r.Seconds(kv.second["seconds"], "stages." + name + ".seconds");
        if (!sec) return sec.status();
        st.seconds = *sec;
        st.source = kv.second["source"].as<std::string>("");
        if (st.source.empty()) {
            return r.Bad("stages." + name + ".source", "missing: say where the figure comes from");
        }
        s->stages[name] = st;
    }
    for (const std::string& name : StageNames()) {
        if (s->stages.count(name) == 0) return r.Bad("stages." + name, "missing");
    }
    return std::nullopt;
}

std::optional<Error> ParseCluster(const Reader& r, const YAML::Node& root, Scenario* s) {
    struct IntKey {
        const char* key;
        int* into;
        double lo, hi;
    };
    const IntKey ints[] = {{"nodes", &s->nodes, 1, 65536},
                           {"gpus_per_node", &s->gpus_per_node, 1, 64},
                           {"spare_nodes", &s->spare_nodes, 0, 65536},
                           {"nodes_per_leaf", &s->nodes_per_leaf, 1, 4096},
                           {"reference_gpus", &s->reference_gpus, 1, 1 << 24},
                           {"breaker_max_nodes", &s->breaker_max_nodes, 1, 65536},
                           {"auto_resume", &s->auto_resume, 0, 100000}};
    for (const IntKey& k : ints) {
        if (!root[k.key]) continue;
        auto v = r.Number(root[k.key], k.key, k.lo, k.hi);
        if (!v) return v.status();
        *k.into = static_cast<int>(*v);
    }
    if (root["breaker_max_fraction"]) {
        auto v = r.Number(root["breaker_max_fraction"], "breaker_max_fraction", 0, 1);
        if (!v) return v.status();
        s->breaker_max_fraction = *v;
    }
    if (root["span"]) {
        auto v = r.Seconds(root["span"], "span");
        if (!v) return v.status();
        if (*v < 3600) return r.Bad("span", "under an hour");
        s->span_seconds = s->counts_span_seconds = *v;
    }
    if (root["decide_on"]) {
        s->decide_on = root["decide_on"].as<std::string>("");
        if (s->decide_on != "all" && s->decide_on != "leaf") {
            return r.Bad("decide_on", "'" + s->decide_on + "' is not all or leaf");
        }
    }
    if (root["seed"]) {
        auto v = r.Number(root["seed"], "seed", 0, 1e15);
        if (!v) return v.status();
        s->seed = static_cast<std::uint64_t>(*v);
    }
    return std::nullopt;
}

}  // namespace

const std::vector<std::string>& StageNames() {
    static const std::vector<std::string> names = {
        "detect_agent",     "detect_exit", "nccl_watchdog",  "decision",
        "requeue_to_start", "prolog",      "restart",        "checkpoint_interval",
        "reboot",           "repair",      "slurmd_timeout", "slurm_requeue_delay",
        "human_diagnosis"};
    return names;
}

Result<Scenario> ParseScenario(const std::string& yaml, const std::string& name) {
    Reader r(name);
    YAML::Node root;
    try {
        root = YAML::Load(yaml);
    } catch (const YAML::Exception& e) {
        return MakeError(ErrorCode::kInvalid, name + ": " + e.what());
    }
    if (!root.IsMap()) return r.Bad("(top)", "not a map");
    static const std::set<std::string> known = {"nodes",
                                                "gpus_per_node",
                                                "spare_nodes",
                                                "nodes_per_leaf",
                                                "reference_gpus",
                                                "span",
                                                "seed",
                                                "causes",
                                                "stages",
                                                "breaker_max_nodes",
                                                "breaker_max_fraction",
                                                "description",
                                                "auto_resume",
                                                "decide_on"};
    for (const auto& kv : root) {
        const std::string k = kv.first.as<std::string>("");
        if (known.count(k) == 0) return r.Bad(k, "unknown key");
    }
    Scenario s;
    s.source = name;
    try {
        if (auto e = ParseCluster(r, root, &s)) return *e;
        if (!root["causes"].IsSequence() || root["causes"].size() == 0) {
            return r.Bad("causes", "missing: a list of causes with their counts");
        }
        std::size_t i = 0;
        for (const auto& c : root["causes"]) {
            auto cause = ParseCause(r, c, i++);
            if (!cause) return cause.status();
            s.interruptions += cause->count;
            s.causes.push_back(std::move(*cause));
        }
        if (s.interruptions <= 0) return r.Bad("causes", "no interruptions (every count is 0)");
        if (auto e = ParseStages(r, root["stages"], &s)) return *e;
    } catch (const YAML::Exception& e) {
        return MakeError(ErrorCode::kInvalid, name + ": " + e.what());
    }
    return s;
}

Result<Scenario> LoadScenario(const std::string& path) {
    auto text = ReadSmallFile(path, 1 << 20);
    if (!text) return text.status();
    return ParseScenario(*text, path);
}

}  // namespace autoheal::sim
