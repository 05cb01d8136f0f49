// Remote context, in each task before it drops root (slurm_spank_task_init_privileged): for a job
// that gets it (FlightRecorderWanted: --flight-recorder=on|off, else autoheal.yaml's
// policy.flight_recorder, by default on for --auto-resume jobs), turns PyTorch's NCCL flight
// recorder on and points its dumps at the run's folder,
// state_dir/jobs/<job>/run<N>/flight-recorder/<node>/ (core/flight_recorder_env.h), which it
// creates: the folders above the node's given to the owner of state_dir/jobs (0755), the node's own
// the job user's (0700), so the user's ranks write there and nobody else reads it. Only the
// variables the job has not set are set (a job opts out with TORCH_NCCL_TRACE_BUFFER_SIZE=0). Never
// fails the task: a problem is logged and the job runs as it would without autoheal.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>

#include "autoheal/core/flight_recorder_env.h"
#include "autoheal/core/hostlist.h"
#include "spank_state.h"

namespace autoheal::spank {
namespace {

std::optional<std::string> TaskEnv(spank_t sp, std::string_view name) {
    std::array<char, 4096> buf{};
    if (spank_getenv(sp, std::string(name).c_str(), buf.data(), static_cast<int>(buf.size())) !=
        ESPANK_SUCCESS) {
        return std::nullopt;
    }
    return std::string(buf.data());
}

// A job id, restart count or node name as a path part: [A-Za-z0-9._-], not starting with '.'.
bool SafePart(const std::string& s) {
    if (s.empty() || s.size() >= 128 || s[0] == '.') return false;
    for (char c : s) {
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-')) {
            return false;
        }
    }
    return true;
}

// `path` exists as a real folder (not a link), made with `mode` when missing and then given to
// `owner` (the owner of state_dir/jobs, as every folder there is: SlurmUser writes the run's
// decision beside these).
bool EnsureDir(const std::string& path, mode_t mode, const struct stat& owner) {
    if (::mkdir(path.c_str(), mode) == 0) {
        return ::lchown(path.c_str(), owner.st_uid, owner.st_gid) == 0;
    }
    struct stat st {};
    return errno == EEXIST && ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// The node's folder: the job user's own, 0700. One that exists must be theirs, or root's: the
// node's other tasks make it at the same time, and the one that made it gives it away.
bool EnsureUserDir(const std::string& path, uid_t uid, gid_t gid) {
    if (::mkdir(path.c_str(), 0700) == 0) return ::lchown(path.c_str(), uid, gid) == 0;
    struct stat st {};
    return errno == EEXIST && ::lstat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode) &&
           (st.st_uid == uid || st.st_uid == 0);
}

// The task's node: the step's (or the batch job's) node list at the task's node id. Not
// SLURMD_NODENAME: Slurm adds it to the task's environment only after this callback, and an srun
// task's environment carries the batch host's.
std::string TaskNode(spank_t sp) {
    uint32_t node_id = 0;
    if (spank_get_item(sp, S_JOB_NODEID, &node_id) == ESPANK_SUCCESS) {
        auto list = TaskEnv(sp, "SLURM_STEP_NODELIST");
        if (!list) list = TaskEnv(sp, "SLURM_JOB_NODELIST");
        if (list) {
            if (auto node = NthHost(*list, node_id)) return *node;
        }
    }
    return TaskEnv(sp, "SLURMD_NODENAME").value_or("");
}

}  // namespace

int SetFlightRecorderEnv(spank_t sp) {
    const OptionLimits limits{.default_auto_resume = 0,
                              .max_auto_resume = GetState().args.limits.max_auto_resume};
    const JobOptions options =
        JobOptionsFromEnv([&](std::string_view name) { return TaskEnv(sp, name); },
                          kJobSpankEnvPrefix, nullptr, limits);
    if (!FlightRecorderWanted(options, SiteFlightRecorder())) return 0;
    uint32_t job_id = 0;
    uid_t uid = 0;
    gid_t gid = 0;
    if (spank_get_item(sp, S_JOB_ID, &job_id) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_UID, &uid) != ESPANK_SUCCESS ||
        spank_get_item(sp, S_JOB_GID, &gid) != ESPANK_SUCCESS) {
        return 0;
    }
    const std::string job = std::to_string(job_id);
    const std::string node = TaskNode(sp);
    const std::string restarts = TaskEnv(sp, "SLURM_RESTART_COUNT").value_or("0");
    const int restart = std::atoi(restarts.empty() ? "0" : restarts.c_str());
    if (!SafePart(node) || !SafePart(std::to_string(restart))) return 0;
    const std::string state_dir = StateDir();
    const std::string dir = FlightRecorderDir(state_dir, job, restart);
    const std::string node_dir = dir + "/" + node;
    bool needed = false;
    const auto env = FlightRecorderEnv([&](std::string_view name) { return TaskEnv(sp, name); },
                                       node_dir, &needed);
    if (needed) {
        const std::string jobs = state_dir + "/jobs";
        const std::string run = dir.substr(0, dir.rfind('/'));
        struct stat owner {};
        // The shared jobs folder may be a link the admin made to the shared mount.
        if (::stat(jobs.c_str(), &owner) != 0 || !S_ISDIR(owner.st_mode)) {
            slurm_verbose("autoheal: flight recorder: no folder %s", jobs.c_str());
            return 0;
        }
        for (const std::string& d : {jobs + "/" + job, run, dir}) {
            if (!EnsureDir(d, 0755, owner)) {
                slurm_verbose("autoheal: flight recorder: cannot use %s: %s", d.c_str(),
                              std::strerror(errno));
                return 0;
            }
        }
        if (!EnsureUserDir(node_dir, uid, gid)) {
            slurm_verbose("autoheal: flight recorder: cannot make %s for uid %u", node_dir.c_str(),
                          static_cast<unsigned>(uid));
            return 0;
        }
    }
    // Only variables the job did not set are returned (those an srun task inherited from the
    // batch step, pointing at the batch host's folder, are ours): each is set for this node.
    for (const auto& [name, value] : env) spank_setenv(sp, name.c_str(), value.c_str(), 1);
    return 0;
}

}  // namespace autoheal::spank
