// The cluster scenarios' harness (e2e_harness.h).
#include "e2e_harness.h"

#include <sqlite3.h>

#include <chrono>
#include <map>
#include <regex>
#include <sstream>

namespace autoheal::testing {

namespace fs = std::filesystem;

void AppendLine(const std::string& path, const std::string& line) {
    std::ofstream(path, std::ios::app) << line << "\n";
}

std::string StateDir() { return ClusterDir() + "/state/autoheal"; }

std::string Xid(int xid, const std::string& pci, const std::string& message) {
    return "Nov 29 10:00:00 gpu-host kernel: NVRM: Xid (PCI:" + pci + "): " + std::to_string(xid) +
           ", pid=4242, name=python3, " + message;
}

void InjectKernel(const std::string& node, const std::string& line) {
    AppendLine(ClusterDir() + "/log/kern-" + node + ".log", line);
}

std::vector<std::string> Split(const std::string& s, char sep) {
    std::vector<std::string> out;
    std::stringstream in(s);
    std::string part;
    while (std::getline(in, part, sep)) {
        if (!part.empty()) out.push_back(part);
    }
    return out;
}

// Hostlist expression of the lab (node[1-2], node3, node[1,3-4]) to names.
std::vector<std::string> Nodes(const std::string& expr) {
    std::vector<std::string> out;
    std::smatch m;
    if (std::regex_match(expr, m, std::regex(R"(node\[([0-9,\-]+)\])"))) {
        for (const std::string& range : Split(m[1], ',')) {
            const auto dash = range.find('-');
            const int a = std::stoi(range.substr(0, dash));
            const int b = dash == std::string::npos ? a : std::stoi(range.substr(dash + 1));
            for (int i = a; i <= b; ++i) out.push_back("node" + std::to_string(i));
        }
    } else {
        for (const std::string& n : Split(expr, ',')) out.push_back(n);
    }
    return out;
}

// SQL against the incident store (read-only), one column of text per row.
std::vector<std::string> Query(const std::string& sql) {
    std::vector<std::string> rows;
    sqlite3* db = nullptr;
    if (sqlite3_open_v2((StateDir() + "/incidents.sqlite").c_str(), &db, SQLITE_OPEN_READONLY,
                        nullptr) != SQLITE_OK) {
        sqlite3_close(db);
        return rows;
    }
    sqlite3_busy_timeout(db, 5000);
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &st, nullptr) == SQLITE_OK) {
        while (sqlite3_step(st) == SQLITE_ROW) {
            const unsigned char* t = sqlite3_column_text(st, 0);
            rows.emplace_back(t != nullptr ? reinterpret_cast<const char*>(t) : "");
        }
    }
    sqlite3_finalize(st);
    sqlite3_close(db);
    return rows;
}

std::vector<std::string> SpoolTickets(const std::string& prefix) {
    std::vector<std::string> out;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(StateDir() + "/tickets", ec)) {
        const std::string name = e.path().filename().string();
        if (name.rfind(prefix, 0) == 0) out.push_back(ReadFile(e.path().string()));
    }
    return out;
}

// What autoheal told the user about the job's last end: the line it appended to the job's
// output (every decision), else the AdminComment (set on a requeue; Slurm refuses updates to a
// finished job).
std::string Explanation(const TrainingJob& job, const std::string& id) {
    std::string last;
    std::istringstream in(ReadFile(job.output(id)));
    for (std::string line; std::getline(in, line);) {
        if (line.rfind("autoheal: ", 0) == 0) last = line;
    }
    return last.empty() ? JobField(id, "AdminComment") : last;
}

// Some autoheal epilog program of this cluster (installed in its bin/) is running.
bool EpilogRunning() {
    const std::string prefix = ClusterDir() + "/bin/autoheal-epilog";
    std::error_code ec;
    for (const auto& e : fs::directory_iterator("/proc", ec)) {
        const std::string cmdline = ReadFile(e.path().string() + "/cmdline");
        if (cmdline.rfind(prefix, 0) == 0) return true;
    }
    return false;
}

// Puts every node back in service and clears what autoheal keeps between jobs, so each
// scenario starts from a healthy cluster with no history. A scenario may leave a reboot in
// flight (asked for, or issued and the node's slurmd restarting): resuming such a node would
// clear Slurm's record of the reboot under it, so it is left to finish, and only nodes that are
// drained or down with no reboot pending are resumed — again on every pass, since a reboot that
// completes after the first pass, or a slurmd that comes back late, can leave a node out. A
// reboot still shown after 30 s (never issued, or a slurmd that did not come back) is cancelled
// by the resume. autoheal's files and the lab's reboot and reset records are removed last, once no
// epilog of the cluster still runs (EpilogSlurmctld may outlive the job's nodes becoming idle, and
// would write into the next scenario's store).
void ResetCluster() {
    std::map<std::string, std::chrono::steady_clock::time_point> reboot_seen;
    std::map<std::string, std::chrono::steady_clock::time_point> resumed_at;
    std::map<std::string, std::string> last_state;
    const bool idle = WaitUntil(
        [&] {
            bool all_idle = true;
            for (int i = 1; i <= 4; ++i) {
                const std::string node = "node" + std::to_string(i);
                const std::string state = ShowNode(node)["State"];
                last_state[node] = state;
                if (state == "IDLE") continue;
                all_idle = false;
                const auto now = std::chrono::steady_clock::now();
                if (state.find("REBOOT") != std::string::npos) {
                    if (reboot_seen.emplace(node, now).first->second + std::chrono::seconds(30) >
                        now) {
                        continue;
                    }
                } else if (state.find("DRAIN") == std::string::npos &&
                           state.find("DOWN") == std::string::npos &&
                           state.find("FAIL") == std::string::npos) {
                    continue;  // completing, or busy with a job still ending: wait
                }
                auto [at, first] = resumed_at.emplace(node, now);
                if (!first && at->second + std::chrono::seconds(2) > now) continue;
                at->second = now;
                RunCommand({"scontrol", "update", "nodename=" + node, "state=resume"});
            }
            return all_idle;
        },
        std::chrono::seconds(120));
    ASSERT_TRUE(idle) << [&] {
        std::string s = "nodes not idle after 120 s:";
        for (const auto& [node, state] : last_state) s += " " + node + "=" + state;
        return s + "\n" + RunCommand({"scontrol", "show", "node", "-o"}).out;
    }();
    ASSERT_TRUE(WaitUntil([] { return !EpilogRunning(); }, std::chrono::seconds(90)))
        << "an autoheal epilog of the cluster still runs after 90 s";
    // The job_submit plugin rereads the quarantine every 2 s: the next scenario's jobs must not
    // be steered by this one's quarantine, so wait until slurmctld has published a policy
    // without it.
    if (fs::remove(StateDir() + "/quarantine.json")) {
        ASSERT_TRUE(WaitUntil(
            [] {
                const std::string log = ReadFile(ClusterDir() + "/log/slurmctld.log");
                const auto at = log.rfind("autoheal: job_submit: policy loaded:");
                return at != std::string::npos &&
                       log.find(" quarantined=0 ", at) < log.find('\n', at);
            },
            std::chrono::seconds(15)))
            << "slurmctld did not reload the policy without the quarantine";
    }
    fs::remove(StateDir() + "/incidents.sqlite");
    fs::remove(StateDir() + "/incidents.sqlite-wal");
    fs::remove(StateDir() + "/incidents.sqlite-shm");
    fs::remove_all(StateDir() + "/tickets");
    fs::remove_all(StateDir() + "/jobs/agents/spool");
    // The lab's records of reboots and GPU resets are per scenario too.
    fs::remove(ClusterDir() + "/log/reboots.log");
    fs::remove(ClusterDir() + "/log/gpu-resets.log");
}

}  // namespace autoheal::testing
