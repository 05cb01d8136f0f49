#include "autoheal/remediation/slurm_topology.h"

#include <cstdlib>
#include <sstream>
#include <utility>

#include "autoheal/os/subprocess.h"
#include "autoheal/remediation/slurm_adapter.h"

namespace autoheal::remediation {
namespace {

// The value of `key=` in one printed record ("SwitchName=leaf1 Level=0 ..."); nullopt when the
// key is absent, empty for "(null)".
std::optional<std::string> RecordField(const std::string& line, const std::string& key) {
    std::istringstream words(line);
    std::string word;
    while (words >> word) {
        if (word.compare(0, key.size() + 1, key + "=") != 0) continue;
        std::string value = word.substr(key.size() + 1);
        return value == "(null)" ? "" : value;
    }
    return std::nullopt;
}

// The record's name and level, by the key the line starts with; nullopt for any other line.
std::optional<SwitchInfo> RecordHead(const std::string& line) {
    SwitchInfo sw;
    if (line.rfind("SwitchName=", 0) == 0) {
        sw.name = RecordField(line, "SwitchName").value_or("");
        sw.level = std::atoi(RecordField(line, "Level").value_or("0").c_str());
    } else if (line.rfind("BlockName=", 0) == 0) {
        sw.name = RecordField(line, "BlockName").value_or("");
    } else if (line.rfind("AggregatedBlock=", 0) == 0) {
        sw.name = RecordField(line, "AggregatedBlock").value_or("");
        sw.level = 1;
    } else {
        return std::nullopt;
    }
    if (sw.name.empty()) return std::nullopt;
    return sw;
}

// The last `n` bytes of a child's words, on one line, for an error message.
std::string Tail(const std::string& text, std::size_t n) {
    std::string t = text.size() > n ? text.substr(text.size() - n) : text;
    for (char& c : t) {
        if (c == '\n' || c == '\r') c = ' ';
    }
    while (!t.empty() && t.back() == ' ') t.pop_back();
    return t;
}

}  // namespace

std::vector<SwitchInfo> ParseTopology(const std::string& text) {
    std::vector<SwitchInfo> switches;
    std::istringstream lines(text);
    std::string line;
    while (std::getline(lines, line)) {
        const auto first = line.find_first_not_of(" \t");
        if (first == std::string::npos) continue;
        auto sw = RecordHead(line.substr(first));
        if (!sw) continue;
        const std::string nodes = RecordField(line, "Nodes").value_or("");
        if (!nodes.empty()) sw->nodes = SlurmAdapter::ExpandHostlist(nodes);
        switches.push_back(std::move(*sw));
    }
    return switches;
}

Result<std::vector<SwitchInfo>> TopologyFromCommand(const std::vector<std::string>& argv,
                                                    std::optional<std::vector<std::string>> env,
                                                    std::chrono::milliseconds timeout) {
    std::string command;
    for (const std::string& a : argv) command += (command.empty() ? "" : " ") + a;
    const std::string what = "slurm: topology: " + command + ": ";
    os::SubprocessSpec spec;
    spec.argv = argv;
    spec.env = std::move(env);
    spec.timeout = timeout;
    spec.capture_limit = 4 << 20;
    auto done = os::RunSubprocess(std::move(spec));
    if (!done) return MakeError(ErrorCode::kUnavailable, what + done.error());
    if (!done->exit.ok()) {
        return MakeError(ErrorCode::kUnavailable,
                         what + done->exit.Describe() + ": " + Tail(done->output, 300));
    }
    if (done->output_truncated) {
        return MakeError(ErrorCode::kUnavailable, what + "printed more than 4 MiB");
    }
    return ParseTopology(done->output);
}

}  // namespace autoheal::remediation
