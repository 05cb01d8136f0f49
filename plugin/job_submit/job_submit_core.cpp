// job_submit/autoheal's C++ core: cluster policy applied inside slurmctld when a job is submitted
// or updated (core/submit_policy.h decides). It sees no Slurm structure: the C glue
// (job_submit_autoheal.c, built per Slurm release) translates Slurm's job into the plain types of
// job_submit_glue.h and applies the verdict.
//
// Threads and locks: job_submit() and job_modify() run under slurmctld's locks, and from Slurm
// 23.02 on a submission and an update may run at the same time, so they do no file I/O at all
// and share nothing mutable. They read one immutable SubmitPolicy through an atomic shared_ptr.
// The policy is built from autoheal.yaml (read by core's scanner, config_scan.h: no YAML library
// in slurmctld) and the quarantine file by init() and then by one background thread that polls
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
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "autoheal/core/config_scan.h"
#include "autoheal/core/job_options.h"
#include "autoheal/core/submit_policy.h"
#include "c_guard.h"
#include "job_submit_glue.h"

namespace autoheal::job_submit {
namespace {

constexpr auto kReloadInterval = std::chrono::seconds(2);
// A -w / -x list longer than this is not expanded under slurmctld's locks: such a job gets no
// quarantine exclusions (fail open).
constexpr int kMaxExpandedNodes = 1 << 16;

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

// One line into slurmctld's log through the glue, formatted here.
__attribute__((format(printf, 2, 3))) void Log(autoheal_js_level level, const char* format, ...) {
    char line[1024];
    va_list args;
    va_start(args, format);
    std::vsnprintf(line, sizeof line, format, args);
    va_end(args);
    autoheal_js_log(level, line);
}

void LogGuardFailure(const char* where, const char* what) {
    Log(AUTOHEAL_JS_ERROR, "autoheal: job_submit: %s: internal error, job left unchanged: %s",
        where, what);
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
                Log(AUTOHEAL_JS_ERROR,
                    "autoheal: job_submit: quarantine: %s: keeping the previous list (%zu nodes)",
                    nodes.error().c_str(), quarantine_.size());
            }
        }
        if (!changed) return;
        auto next =
            std::make_shared<const SubmitPolicy>(SubmitPolicyFromSettings(*settings_, quarantine_));
        Log(AUTOHEAL_JS_INFO,
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
            Log(AUTOHEAL_JS_INFO, "autoheal: job_submit: config: %s not found: using the defaults",
                config_path_.c_str());
        }
        Result<SubmitSettings> settings = LoadSubmitSettings(config_path_);
        if (settings) {
            settings_ = std::move(settings).value();
            return true;
        }
        if (!settings_) {
            settings_ = ScanSubmitSettings("", config_path_).value();
            Log(AUTOHEAL_JS_ERROR, "autoheal: job_submit: config: %s: using the defaults",
                settings.error().c_str());
            return true;
        }
        Log(AUTOHEAL_JS_ERROR, "autoheal: job_submit: config: %s: keeping the previous policy",
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
                Log(AUTOHEAL_JS_ERROR, "autoheal: job_submit: policy reload: internal error: %s",
                    e.what());
            } catch (...) {
                Log(AUTOHEAL_JS_ERROR, "autoheal: job_submit: policy reload: internal error");
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
    auto add = [](void* ctx, const char* name) {
        static_cast<std::vector<std::string>*>(ctx)->emplace_back(name);
    };
    if (autoheal_js_expand_hostlist(expression, kMaxExpandedNodes, add, &names) != 0) {
        return std::nullopt;
    }
    return names;
}

char* MallocCopy(const std::string& s) {
    char* copy = static_cast<char*>(std::malloc(s.size() + 1));
    if (copy == nullptr) throw std::bad_alloc();
    std::memcpy(copy, s.c_str(), s.size() + 1);
    return copy;
}

bool HasActiveQuarantine(const SubmitPolicy& policy, std::int64_t now) {
    for (const QuarantinedNode& q : policy.quarantine) {
        if (q.until > now) return true;
    }
    return false;
}

// Refuses the job: `message` to slurmctld's log and to the user (sbatch prints it).
void Refuse(const autoheal_js_job& job, const std::string& message, autoheal_js_verdict* verdict) {
    const char* name = job.name != nullptr ? job.name : "";
    Log(AUTOHEAL_JS_INFO, "autoheal: job_submit: uid=%u name=%s: refused: %s", job.submit_uid, name,
        message.c_str());
    verdict->refusal = MallocCopy(message);
}

void Submit(const autoheal_js_job& job, autoheal_js_verdict* verdict) {
    const std::shared_ptr<const SubmitPolicy> policy = CurrentPolicy();
    const std::int64_t now = std::time(nullptr);
    const char* const* env = job.spank_env;
    const std::size_t count = job.spank_env_size;
    Result<JobOptions> submitted =
        SubmittedOptions([&](std::string_view name) { return LookupEnvArray(env, count, name); });
    if (!submitted) return Refuse(job, submitted.error(), verdict);
    const JobOptions& options = *submitted;
    const char* name = job.name != nullptr ? job.name : "";

    SubmitPolicy no_quarantine;
    const SubmitPolicy* effective = policy.get();
    SubmitContext context;
    // Only known names are excluded: a name Slurm does not know would fail the job ("Invalid
    // node name specified").
    context.is_known_node = [](const std::string& node) {
        return autoheal_js_is_known_node(node.c_str()) != 0;
    };
    context.cluster_nodes = autoheal_js_node_count();
    if (HasActiveQuarantine(*policy, now)) {
        auto req = ExpandHostlist(job.req_nodes);
        auto exc = ExpandHostlist(job.exc_nodes);
        if (req && exc) {
            context.req_nodes = std::move(*req);
            context.exc_nodes = std::move(*exc);
        } else {
            Log(AUTOHEAL_JS_INFO,
                "autoheal: job_submit: uid=%u name=%s: node lists not expanded, quarantine "
                "not applied",
                job.submit_uid, name);
            no_quarantine.max_auto_resume = policy->max_auto_resume;
            no_quarantine.allow_health_off = policy->allow_health_off;
            effective = &no_quarantine;
        }
    }

    SubmitDecision decision = DecideOnSubmit(options, *effective, context, now);
    if (decision.refused()) return Refuse(job, decision.refusal, verdict);
    verdict->force_requeue = decision.force_requeue ? 1 : 0;
    if (!decision.exclude.empty()) {
        std::string joined;
        for (const std::string& n : decision.exclude) joined += (joined.empty() ? "" : ",") + n;
        verdict->exclude = MallocCopy(joined);
    }
    // Forcing requeue on is routine: a line for every auto-resume job, twice over when
    // slurmctld also logs to stderr, was a tenth of its CPU per submission. Exclusions stay
    // at info.
    if (!decision.exclude.empty()) {
        Log(AUTOHEAL_JS_INFO, "autoheal: job_submit: uid=%u name=%s: %s", job.submit_uid, name,
            decision.note.c_str());
    } else if (!decision.note.empty()) {
        Log(AUTOHEAL_JS_DEBUG, "autoheal: job_submit: uid=%u name=%s: %s", job.submit_uid, name,
            decision.note.c_str());
    }
}

// Returns 1 when the update is refused.
int Modify(const char* const* stored_env, std::size_t stored_env_size, bool requeue_requested,
           std::uint32_t job_id, std::uint32_t submit_uid) {
    const bool stored_auto_resume =
        JobOptionsFromEnv(
            [&](std::string_view name) {
                return LookupEnvArray(stored_env, stored_env_size, name);
            },
            "")
            .auto_resume.has_value();
    const std::string refusal = DecideOnModify(stored_auto_resume, requeue_requested);
    if (refusal.empty()) return 0;
    Log(AUTOHEAL_JS_INFO,
        "autoheal: job_submit: job_modify: JobId=%u uid=%u: refused requeue=0: %s", job_id,
        submit_uid, refusal.c_str());
    return 1;
}

int Init() {
    if (g_reloader != nullptr) return 0;  // init() twice without fini()
    const std::string plugin_path = PluginPath();
    const std::string config_path = FindConfigPath(std::getenv("AUTOHEAL_CONFIG"), plugin_path);
    auto reloader = std::make_unique<PolicyReloader>(config_path);
    reloader->Reload();
    reloader->Start();
    g_reloader = reloader.release();
    g_reloader_pid = ::getpid();
    static bool at_exit_registered = false;  // once per load of this library
    if (!at_exit_registered) at_exit_registered = std::atexit(StopAtExit) == 0;
    Log(AUTOHEAL_JS_INFO,
        "autoheal: job_submit: loaded from %s, policy from %s (checked every %llds)",
        plugin_path.c_str(), config_path.c_str(), static_cast<long long>(kReloadInterval.count()));
    return 0;
}

int Fini() {
    if (g_reloader != nullptr) {
        g_reloader->Stop();
        delete g_reloader;
        g_reloader = nullptr;
    }
    g_policy.store(nullptr);
    return 0;
}

}  // namespace
}  // namespace autoheal::job_submit

extern "C" {

int autoheal_js_init(void) {
    using namespace autoheal;
    return plugin::CallGuarded("init", -1, job_submit::LogGuardFailure,
                               [] { return job_submit::Init(); });
}

int autoheal_js_fini(void) {
    using namespace autoheal;
    return plugin::CallGuarded("fini", -1, job_submit::LogGuardFailure,
                               [] { return job_submit::Fini(); });
}

int autoheal_js_submit(const struct autoheal_js_job* job, struct autoheal_js_verdict* verdict) {
    using namespace autoheal;
    if (job == nullptr || verdict == nullptr) return -1;
    *verdict = autoheal_js_verdict{};
    const int rc = plugin::CallGuarded("job_submit", -1, job_submit::LogGuardFailure, [&] {
        job_submit::Submit(*job, verdict);
        return 0;
    });
    if (rc != 0) autoheal_js_verdict_free(verdict);
    return rc;
}

void autoheal_js_verdict_free(struct autoheal_js_verdict* verdict) {
    if (verdict == nullptr) return;
    std::free(verdict->refusal);
    std::free(verdict->exclude);
    *verdict = autoheal_js_verdict{};
}

int autoheal_js_modify(const char* const* stored_env, size_t stored_env_size, int requeue_requested,
                       uint32_t job_id, uint32_t submit_uid) {
    using namespace autoheal;
    return plugin::CallGuarded("job_modify", -1, job_submit::LogGuardFailure, [&] {
        return job_submit::Modify(stored_env, stored_env_size, requeue_requested != 0, job_id,
                                  submit_uid);
    });
}

}  // extern "C"
