#include "cluster_client.h"

#include <pwd.h>
#include <unistd.h>

#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

namespace autoheal::testing {

std::string ClusterDir() {
    const char* d = std::getenv("AUTOHEAL_CLUSTER_DIR");
    return d != nullptr && d[0] != '\0' ? d : "/tmp/autoheal-cluster";
}

CommandResult RunCommand(const std::vector<std::string>& argv, const std::string& cwd) {
    return RunProcess(argv, {"SLURM_CONF=" + ClusterDir() + "/etc/slurm.conf"}, cwd);
}

CommandResult RunAsUser(const std::string& user, const std::vector<std::string>& argv,
                        const std::string& cwd) {
    std::vector<std::string> as{"runuser", "-u", user, "--"};
    as.insert(as.end(), argv.begin(), argv.end());
    return RunCommand(as, cwd);
}

bool GiveToUser(const std::string& path, const std::string& user) {
    const struct passwd* pw = ::getpwnam(user.c_str());
    if (pw == nullptr) return false;
    const uid_t uid = pw->pw_uid;
    const gid_t gid = pw->pw_gid;
    bool ok = ::lchown(path.c_str(), uid, gid) == 0;
    std::error_code ec;
    for (const auto& e : std::filesystem::recursive_directory_iterator(path, ec)) {
        ok = ::lchown(e.path().c_str(), uid, gid) == 0 && ok;
    }
    return ok && !ec;
}

std::optional<std::string> Submit(const std::vector<std::string>& sbatch_args,
                                  const std::string& script, CommandResult* result,
                                  const std::string& user) {
    static int counter = 0;
    const std::string path = ClusterDir() + "/state/job-" + std::to_string(getpid()) + "-" +
                             std::to_string(counter++) + ".sh";
    std::ofstream(path) << script;
    std::vector<std::string> argv{"sbatch", "--parsable",
                                  "--output=" + ClusterDir() + "/state/slurm-%j.out"};
    argv.insert(argv.end(), sbatch_args.begin(), sbatch_args.end());
    argv.push_back(path);
    CommandResult r = RunAsUser(user, argv, ClusterDir() + "/state");
    if (result != nullptr) *result = r;
    if (r.exit_code != 0) return std::nullopt;
    std::string id = r.out.substr(0, r.out.find_first_of(";\n"));
    return id;
}

namespace {

// Key=Value tokens of scontrol's one-line output (values without spaces) into `fields`.
void AddKeyValues(const std::string& text, std::map<std::string, std::string>* fields) {
    std::istringstream in(text);
    std::string token;
    while (in >> token) {
        auto eq = token.find('=');
        if (eq != std::string::npos) (*fields)[token.substr(0, eq)] = token.substr(eq + 1);
    }
}

}  // namespace

std::map<std::string, std::string> ShowJob(const std::string& job_id) {
    std::map<std::string, std::string> fields;
    CommandResult r = RunCommand({"scontrol", "show", "job", "-o", job_id});
    AddKeyValues(r.out, &fields);
    return fields;
}

bool WaitUntil(const std::function<bool()>& pred, std::chrono::milliseconds limit) {
    auto deadline = std::chrono::steady_clock::now() + limit;
    while (std::chrono::steady_clock::now() < deadline) {
        if (pred()) return true;
        std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
    return pred();
}

std::string ReadFile(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

std::string AutohealLog() { return ReadFile(ClusterDir() + "/log/autoheal.log"); }

bool WaitForAutohealLog(const std::string& text, std::chrono::milliseconds limit,
                        std::size_t from) {
    return WaitUntil([&] { return AutohealLog().find(text, from) != std::string::npos; }, limit);
}

bool JobFinished(const std::string& id) {
    const std::string state = ShowJob(id)["JobState"];
    return state == "COMPLETED" || state == "FAILED" || state == "CANCELLED";
}

std::map<std::string, std::string> ShowNode(const std::string& node) {
    std::map<std::string, std::string> fields;
    CommandResult r = RunCommand({"scontrol", "show", "node", "-o", node});
    // Reason=... runs to the end of the line and may hold spaces.
    auto reason = r.out.find(" Reason=");
    if (reason != std::string::npos) {
        std::string value = r.out.substr(reason + 8);
        while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
        fields["Reason"] = value;
        r.out.resize(reason);
    }
    AddKeyValues(r.out, &fields);
    return fields;
}

std::string JobField(const std::string& job_id, const std::string& key) {
    CommandResult r = RunCommand({"scontrol", "show", "job", "-o", job_id});
    const std::string tag = " " + key + "=";
    const auto at = r.out.find(tag);
    if (at == std::string::npos) return "";
    std::string value = r.out.substr(at + tag.size());
    // The value runs to the next " Key=" (a capitalised word followed by '=').
    for (std::size_t i = 0; i + 1 < value.size(); ++i) {
        if (value[i] != ' ' || !std::isupper(static_cast<unsigned char>(value[i + 1]))) continue;
        const auto eq = value.find('=', i);
        const auto sp = value.find(' ', i + 1);
        if (eq != std::string::npos && (sp == std::string::npos || eq < sp)) {
            value.resize(i);
            break;
        }
    }
    while (!value.empty() && (value.back() == '\n' || value.back() == ' ')) value.pop_back();
    return value;
}

}  // namespace autoheal::testing
