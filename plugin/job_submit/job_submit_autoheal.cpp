// job_submit/autoheal: cluster policy applied inside slurmctld when a job is submitted or
// updated (core/submit_policy.h decides; this file translates for Slurm).
//
// Threads and locks: job_submit() and job_modify() run under slurmctld's locks, so they do no
// file I/O at all. They read one immutable SubmitPolicy through an atomic shared_ptr. The policy
// is built from autoheal.yaml (read by core's scanner, config_scan.h: no YAML library in
// slurmctld) and the quarantine file by init() and then by one background thread that polls
// both files' stat every 2 s and swaps in a new policy when one changed. A broken file keeps
// the last good policy and is logged once per change. fini() stops the thread
// through a condition variable, so reconfigure and shutdown never wait more than one reload.
//
// Every entry point fails open: an internal error leaves the job as the user submitted it.
#include <dlfcn.h>
#include <pthread.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern "C" {
#include "slurm/slurm_errno.h"
#include "src/common/hostlist.h"
#include "src/common/slurm_xlator.h"
#include "src/slurmctld/slurmctld.h"
}

#include "autoheal/core/config_scan.h"
#include "autoheal/core/job_options.h"
#include "autoheal/core/submit_policy.h"
#include "c_guard.h"

#define AUTOHEAL_EXPORT __attribute__((visibility("default")))

extern "C" {
AUTOHEAL_EXPORT extern const char plugin_name[] = "autoheal job submit plugin";
AUTOHEAL_EXPORT extern const char plugin_type[] = "job_submit/autoheal";
AUTOHEAL_EXPORT extern const uint32_t plugin_version = SLURM_VERSION_NUMBER;
}

namespace autoheal::job_submit {
namespace {

constexpr auto kReloadInterval = std::chrono::seconds(2);
// A -w / -x list longer than this is not expanded under slurmctld's locks: such a job gets no
// quarantine exclusions (fail open).
constexpr int kMaxExpandedNodes = 1 << 16;
// What the refusals return; sbatch prints the message, then this code's text. scontrol update
// gets no message from a job_submit plugin in Slurm 22.05: it shows only this code's text, and
// the message goes to slurmctld's log.
constexpr int kRefusalCode = ESLURM_ACCESS_DENIED;

// The policy job_submit() and job_modify() read. Null until init() stores one; readers then use
// the defaults (kDefaultPolicy).
std::atomic<std::shared_ptr<const SubmitPolicy>> g_policy;
const SubmitPolicy kDefaultPolicy;

std::shared_ptr<const SubmitPolicy> CurrentPolicy() {
    std::shared_ptr<const SubmitPolicy> policy = g_policy.load();
    if (policy) return policy;
    return std::shared_ptr<const SubmitPolicy>(std::shared_ptr<const SubmitPolicy>{},
                                               &kDefaultPolicy);
}

void LogGuardFailure(const char* where, const char* what) {
    error("autoheal: job_submit: %s: internal error, job left unchanged: %s", where, what);
}

// What identifies one version of a file, so a change (including an atomic rename over it, or
// its removal) is seen without reading the file.
struct FileStamp {
    bool exists = false;
    dev_t dev = 0;
    ino_t ino = 0;
    off_t size = 0;
    std::int64_t mtime_ns = 0;
    bool operator==(const FileStamp&) const = default;
};

FileStamp StampOf(const std::string& path) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) return {};
    return FileStamp{true, st.st_dev, st.st_ino, st.st_size,
                     std::int64_t{st.st_mtim.tv_sec} * 1000000000 + st.st_mtim.tv_nsec};
}

// Loads the policy's files and publishes a new SubmitPolicy when they change. Reload() is only
// ever called by one thread at a time (init(), then the reloader thread).
class PolicyReloader {
  public:
    explicit PolicyReloader(std::string config_path) : config_path_(std::move(config_path)) {}
    ~PolicyReloader() { Stop(); }
    PolicyReloader(const PolicyReloader&) = delete;
    PolicyReloader& operator=(const PolicyReloader&) = delete;

    // Reads whichever file changed since the last call (both on the first call) and publishes
    // the result when something was taken.
    void Reload() {
        bool changed = false;
        const FileStamp config_stamp = StampOf(config_path_);
        if (!settings_ || !(config_stamp == config_stamp_)) {
            config_stamp_ = config_stamp;
            changed = LoadConfig(config_stamp.exists) || changed;
        }
        const std::string& quarantine_path = settings_->policy.quarantine_file;
        const FileStamp quarantine_stamp = StampOf(quarantine_path);
        if (quarantine_path != quarantine_path_ || !(quarantine_stamp == quarantine_stamp_)) {
            quarantine_path_ = quarantine_path;
            quarantine_stamp_ = quarantine_stamp;
            auto nodes = ReadQuarantineFile(quarantine_path);
            if (nodes) {
                quarantine_ = std::move(nodes).value();
                changed = true;
            } else {
                error("autoheal: job_submit: quarantine: %s: keeping the previous list (%zu nodes)",
                      nodes.error().c_str(), quarantine_.size());
            }
        }
        if (!changed) return;
        auto next =
            std::make_shared<const SubmitPolicy>(SubmitPolicyFromSettings(*settings_, quarantine_));
        info(
            "autoheal: job_submit: policy loaded: max_auto_resume=%d allow_health_off=%s "
            "quarantined=%zu config=%s quarantine_file=%s",
            next->max_auto_resume, next->allow_health_off ? "true" : "false",
            next->quarantine.size(), config_path_.c_str(), quarantine_path_.c_str());
        g_policy.store(std::move(next));
    }

    // Starts the polling thread. It blocks every signal: slurmctld takes its signals in its own
    // thread, and one delivered here would run the default action.
    void Start() {
        sigset_t all;
        sigset_t old;
        sigfillset(&all);
        pthread_sigmask(SIG_SETMASK, &all, &old);
        try {
            thread_ = std::thread([this] { Run(); });
        } catch (...) {
            pthread_sigmask(SIG_SETMASK, &old, nullptr);
            throw;
        }
        pthread_sigmask(SIG_SETMASK, &old, nullptr);
    }

    // Wakes the thread and waits for it; at most one Reload() in progress delays this.
    void Stop() {
        {
            std::lock_guard<std::mutex> lock(mutex_);
            stop_ = true;
        }
        wake_.notify_all();
        if (thread_.joinable()) thread_.join();
    }

  private:
    // Returns whether settings_ changed. A missing file means the defaults; a broken one keeps
    // the previous settings (the defaults when there are none yet).
    bool LoadConfig(bool exists) {
        if (!exists) {
            info("autoheal: job_submit: config: %s not found: using the defaults",
                 config_path_.c_str());
        }
        Result<SubmitSettings> settings = LoadSubmitSettings(config_path_);
        if (settings) {
            settings_ = std::move(settings).value();
            return true;
        }
        if (!settings_) {
            settings_ = ScanSubmitSettings("", config_path_).value();
            error("autoheal: job_submit: config: %s: using the defaults", settings.error().c_str());
            return true;
        }
        error("autoheal: job_submit: config: %s: keeping the previous policy",
              settings.error().c_str());
        return false;
    }

    void Run() noexcept {
        std::unique_lock<std::mutex> lock(mutex_);
        while (!stop_) {
            wake_.wait_for(lock, kReloadInterval, [this] { return stop_; });
            if (stop_) break;
            lock.unlock();
            try {
                Reload();
            } catch (const std::exception& e) {
                error("autoheal: job_submit: policy reload: internal error: %s", e.what());
            } catch (...) {
                error("autoheal: job_submit: policy reload: internal error");
            }
            lock.lock();
        }
    }

    const std::string config_path_;
    // Owned by the thread that calls Reload().
    std::optional<SubmitSettings> settings_;
    FileStamp config_stamp_;
    std::string quarantine_path_;
    FileStamp quarantine_stamp_;
    std::vector<QuarantinedNode> quarantine_;

    std::mutex mutex_;
    std::condition_variable wake_;
    bool stop_ = false;  // GUARDED_BY(mutex_)
    std::thread thread_;
};

// Never destroyed unless fini() ran: a joinable std::thread destroyed at process exit would
// call std::terminate.
PolicyReloader* g_reloader = nullptr;
pid_t g_reloader_pid = 0;  // the process whose thread it is (a forked child has none)

// slurmctld exits without calling fini() (it does only when built with MEMORY_LEAK_DEBUG): stop
// the thread before this library's static objects (g_policy) are destroyed under it. atexit()
// from a shared library registers with its DSO handle, so the handler also runs, and is
// dropped, when Slurm unloads the library; by then fini() has already stopped the thread.
void StopAtExit() {
    if (g_reloader != nullptr && g_reloader_pid == ::getpid()) g_reloader->Stop();
}

std::string PluginPath() {
    Dl_info dl{};
    if (dladdr(reinterpret_cast<void*>(&PluginPath), &dl) == 0 || dl.dli_fname == nullptr) {
        return {};
    }
    return dl.dli_fname;
}

// Expands a Slurm hostlist expression ("node[1-3],gpu7") into names. Null or empty: no names.
// nullopt: unparsable or longer than kMaxExpandedNodes.
std::optional<std::vector<std::string>> ExpandHostlist(const char* expression) {
    std::vector<std::string> names;
    if (expression == nullptr || expression[0] == '\0') return names;
    hostlist_t list = hostlist_create(expression);
    if (list == nullptr) return std::nullopt;
    const int count = hostlist_count(list);
    if (count > kMaxExpandedNodes) {
        hostlist_destroy(list);
        return std::nullopt;
    }
    names.reserve(static_cast<std::size_t>(count));
    while (char* host = hostlist_shift(list)) {
        names.emplace_back(host);
        free(host);  // hostlist_shift's result comes from malloc
    }
    hostlist_destroy(list);
    return names;
}

bool HasActiveQuarantine(const SubmitPolicy& policy, std::int64_t now) {
    for (const QuarantinedNode& q : policy.quarantine) {
        if (q.until > now) return true;
    }
    return false;
}

// Refuses the job: `message` to slurmctld's log and to the user (sbatch prints err_msg).
int Refuse(const job_desc_msg_t* job_desc, uint32_t submit_uid, const std::string& message,
           char** err_msg) {
    const char* name = job_desc->name != nullptr ? job_desc->name : "";
    info("autoheal: job_submit: uid=%u name=%s: refused: %s", submit_uid, name, message.c_str());
    if (err_msg != nullptr) {
        xfree(*err_msg);
        *err_msg = xstrdup(message.c_str());
    }
    return kRefusalCode;
}

int Submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
    if (job_desc == nullptr) return SLURM_SUCCESS;
    const std::shared_ptr<const SubmitPolicy> policy = CurrentPolicy();
    const std::int64_t now = std::time(nullptr);
    // The SPANK plugin's values arrive here without the SPANK_ prefix.
    const char* const* env = job_desc->spank_job_env;
    const std::size_t count = job_desc->spank_job_env_size;
    Result<JobOptions> submitted =
        SubmittedOptions([&](std::string_view name) { return LookupEnvArray(env, count, name); });
    if (!submitted) return Refuse(job_desc, submit_uid, submitted.error(), err_msg);
    const JobOptions& options = *submitted;
    const char* name = job_desc->name != nullptr ? job_desc->name : "";

    SubmitPolicy no_quarantine;
    const SubmitPolicy* effective = policy.get();
    SubmitContext context;
    // job_submit() holds slurmctld's node read lock (job_submit.c asserts it): its node table may
    // be read here, and only here. A name Slurm does not know would fail the job ("Invalid node
    // name specified"), so only known names are excluded; find_node_record2 does not log.
    context.is_known_node = [](const std::string& node) {
        std::string copy = node;  // Slurm's prototype takes a char*
        return find_node_record2(copy.data()) != nullptr;
    };
    context.cluster_nodes = node_record_count;
    if (HasActiveQuarantine(*policy, now)) {
        auto req = ExpandHostlist(job_desc->req_nodes);
        auto exc = ExpandHostlist(job_desc->exc_nodes);
        if (req && exc) {
            context.req_nodes = std::move(*req);
            context.exc_nodes = std::move(*exc);
        } else {
            info(
                "autoheal: job_submit: uid=%u name=%s: node lists not expanded, quarantine "
                "not applied",
                submit_uid, name);
            no_quarantine.max_auto_resume = policy->max_auto_resume;
            no_quarantine.allow_health_off = policy->allow_health_off;
            effective = &no_quarantine;
        }
    }

    SubmitDecision decision = DecideOnSubmit(options, *effective, context, now);
    if (decision.refused()) return Refuse(job_desc, submit_uid, decision.refusal, err_msg);
    if (decision.force_requeue) job_desc->requeue = 1;
    if (!decision.exclude.empty()) {
        std::string joined;
        for (const std::string& n : decision.exclude) joined += (joined.empty() ? "" : ",") + n;
        // Slurm owns and frees exc_nodes (xfree): extend it with its own allocator.
        if (job_desc->exc_nodes != nullptr && job_desc->exc_nodes[0] != '\0') {
            xstrfmtcat(job_desc->exc_nodes, ",%s", joined.c_str());
        } else {
            xfree(job_desc->exc_nodes);
            job_desc->exc_nodes = xstrdup(joined.c_str());
        }
    }
    // Forcing requeue on is routine: a line for every auto-resume job, twice over when
    // slurmctld also logs to stderr, was a tenth of its CPU per submission. Exclusions stay
    // at info.
    if (!decision.exclude.empty()) {
        info("autoheal: job_submit: uid=%u name=%s: %s", submit_uid, name, decision.note.c_str());
    } else if (!decision.note.empty()) {
        debug("autoheal: job_submit: uid=%u name=%s: %s", submit_uid, name, decision.note.c_str());
    }
    return SLURM_SUCCESS;
}

int Modify(job_desc_msg_t* job_desc, job_record_t* job_ptr, uint32_t submit_uid) {
    if (job_desc == nullptr || job_ptr == nullptr || job_desc->requeue == NO_VAL16) {
        return SLURM_SUCCESS;
    }
    // scontrol sends no spank_job_env; the values stored at submit are on the job record and
    // no update can change them.
    const char* const* env = job_ptr->spank_job_env;
    const std::size_t count = job_ptr->spank_job_env_size;
    const bool stored_auto_resume =
        JobOptionsFromEnv([&](std::string_view name) { return LookupEnvArray(env, count, name); },
                          "")
            .auto_resume.has_value();
    const std::string refusal = DecideOnModify(stored_auto_resume, job_desc->requeue != 0);
    if (refusal.empty()) return SLURM_SUCCESS;
    info("autoheal: job_submit: job_modify: JobId=%u uid=%u: refused requeue=0: %s",
         job_ptr->job_id, submit_uid, refusal.c_str());
    return kRefusalCode;
}

int Init() {
    if (g_reloader != nullptr) return SLURM_SUCCESS;  // init() twice without fini()
    const std::string plugin_path = PluginPath();
    const std::string config_path = FindConfigPath(std::getenv("AUTOHEAL_CONFIG"), plugin_path);
    auto reloader = std::make_unique<PolicyReloader>(config_path);
    reloader->Reload();
    reloader->Start();
    g_reloader = reloader.release();
    g_reloader_pid = ::getpid();
    static bool at_exit_registered = false;  // once per load of this library
    if (!at_exit_registered) at_exit_registered = std::atexit(StopAtExit) == 0;
    info("autoheal: job_submit: loaded from %s, policy from %s (checked every %llds)",
         plugin_path.c_str(), config_path.c_str(), static_cast<long long>(kReloadInterval.count()));
    return SLURM_SUCCESS;
}

int Fini() {
    if (g_reloader != nullptr) {
        g_reloader->Stop();
        delete g_reloader;
        g_reloader = nullptr;
    }
    g_policy.store(nullptr);
    return SLURM_SUCCESS;
}

}  // namespace
}  // namespace autoheal::job_submit

extern "C" {

AUTOHEAL_EXPORT int init(void) {
    using namespace autoheal;
    return plugin::CallGuarded("init", SLURM_SUCCESS, job_submit::LogGuardFailure,
                               [] { return job_submit::Init(); });
}

AUTOHEAL_EXPORT int fini(void) {
    using namespace autoheal;
    return plugin::CallGuarded("fini", SLURM_SUCCESS, job_submit::LogGuardFailure,
                               [] { return job_submit::Fini(); });
}

AUTOHEAL_EXPORT int job_submit(job_desc_msg_t* job_desc, uint32_t submit_uid, char** err_msg) {
    using namespace autoheal;
    return plugin::CallGuarded("job_submit", SLURM_SUCCESS, job_submit::LogGuardFailure,
                               [&] { return job_submit::Submit(job_desc, submit_uid, err_msg); });
}

AUTOHEAL_EXPORT int job_modify(job_desc_msg_t* job_desc, job_record_t* job_ptr,
                               uint32_t submit_uid) {
    using namespace autoheal;
    return plugin::CallGuarded("job_modify", SLURM_SUCCESS, job_submit::LogGuardFailure,
                               [&] { return job_submit::Modify(job_desc, job_ptr, submit_uid); });
}

}  // extern "C"
