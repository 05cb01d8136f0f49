// The cluster scenarios' harness (e2e_harness.h).
#include "e2e_harness.h"

#include <sqlite3.h>

#include <chrono>
#include <iostream>
#include <map>
#include <regex>
#include <set>
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

namespace {

// `node` shows COMPLETING while no job is completing on it (squeue's completing jobs on it: none).
// Slurm 24.11 leaves a node so when a job is requeued while completing just after a slurmctld
// restart: the requeue rebuilds the job's completing-node bitmap from all its nodes
// (build_cg_bitmap in _job_requeue_op), a node that had finished answers the restarted
// controller's terminate request a second time, that answer ends the job's completion, and the
// node whose epilog still ran is left with a completing job count that nothing but slurmctld's
// own state recovery resets ("comp_job_cnt underflow" in slurmctld's log).
bool StaleCompleting(const std::string& node, const std::string& state) {
    if (state.find("COMPLETING") == std::string::npos) return false;
    const CommandResult cg = RunCommand({"squeue", "-h", "-t", "CG", "-w", node, "-o", "%i"});
    return cg.exit_code == 0 && cg.out.find_first_not_of(" \n") == std::string::npos;
}

// Restarts slurmctld (tests/cluster/restart-ctld.sh), which rebuilds every node's job counts from
// the jobs it recovers: what an admin does for a node stuck COMPLETING.
void RestartCtldForLostCompletion(const std::string& node) {
    std::cerr << "harness: " << node
              << " still COMPLETING 10 s after no job completes on it; restarting slurmctld\n";
    const auto restart =
        RunProcess({std::string(AUTOHEAL_SOURCE_DIR) + "/tests/cluster/restart-ctld.sh"},
                   {"AUTOHEAL_CLUSTER_DIR=" + ClusterDir()});
    if (restart.exit_code != 0) std::cerr << "harness: restart-ctld.sh: " << restart.err << "\n";
}

}  // namespace

// Puts every node back in service and clears what autoheal keeps between jobs, so each
// scenario starts from a healthy cluster with no history. A scenario may leave a reboot in
// flight (asked for, or issued and the node's slurmd restarting): resuming such a node would
// clear Slurm's record of the reboot under it, so it is left to finish, and only nodes that are
// drained or down with no reboot pending are resumed — again on every pass, since a reboot that
// completes after the first pass, or a slurmd that comes back late, can leave a node out. A
// reboot still shown after 30 s (never issued, or a slurmd that did not come back) is cancelled
// by the resume. A node still COMPLETING 10 s after no job is completing on it has lost its
// completion in slurmctld (StaleCompleting), and only a slurmctld restart clears it: done once.
// autoheal's files and the lab's reboot and reset records are removed last, once no epilog of the
// cluster still runs (EpilogSlurmctld may outlive the job's nodes becoming idle, and would write
// into the next scenario's store).
void ResetCluster() {
    std::map<std::string, std::chrono::steady_clock::time_point> reboot_seen;
    std::map<std::string, std::chrono::steady_clock::time_point> resumed_at;
    std::map<std::string, std::chrono::steady_clock::time_point> stale_since;
    std::map<std::string, std::string> last_state;
    bool ctld_restarted = false;
    // The lab's nodes (4, or 16 for the storm scenarios' cluster), as slurmctld lists them.
    std::set<std::string> nodes;
    for (const std::string& n : Split(RunCommand({"sinfo", "-h", "-N", "-o", "%N"}).out, '\n')) {
        if (!n.empty()) nodes.insert(n);
    }
    ASSERT_FALSE(nodes.empty()) << "sinfo listed no nodes";
    const bool idle = WaitUntil(
        [&] {
            bool all_idle = true;
            for (const std::string& node : nodes) {
                const std::string state = ShowNode(node)["State"];
                last_state[node] = state;
                if (state == "IDLE") continue;
                all_idle = false;
                const auto now = std::chrono::steady_clock::now();
                if (StaleCompleting(node, state)) {
                    if (!ctld_restarted &&
                        stale_since.emplace(node, now).first->second + std::chrono::seconds(10) <=
                            now) {
                        ctld_restarted = true;
                        RestartCtldForLostCompletion(node);
                    }
                    continue;
                }
                stale_since.erase(node);
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
