#include "autoheal/agent/xid_event_watch.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <csignal>
#include <sstream>
#include <utility>

#include "autoheal/health/xid_events.h"

namespace autoheal::agent {
namespace {

constexpr auto kHold = std::chrono::seconds(1);
constexpr auto kRemember = std::chrono::minutes(1);
constexpr auto kRestart = std::chrono::seconds(30);
constexpr auto kRestartAfterError = std::chrono::minutes(5);
constexpr unsigned kWaitMs = 500;

}  // namespace

void XidEventWatch::Handled(const std::vector<std::string>& xids) {
    const auto now = Clock::now();
    for (const std::string& x : xids) recent_[x] = now;
}

void XidEventWatch::Start(std::vector<std::string>* log) {
    os::SubprocessSpec spec;
    const std::string library = env_.health.nvml_library;
    const pid_t agent = ::getpid();
    spec.in_child = [library, agent](int fd) {
        // The stream leads its own process group, so a killed agent (SIGKILL, a crash) would
        // leave it waiting in NVML for good: the kernel ends it with its parent instead.
        ::prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (::getppid() != agent) return 0;  // the agent died before prctl
        return health::StreamXidEvents(library, fd, kWaitMs);
    };
    spec.capture_limit = 1u << 20;  // 2 signs of life a second: days of them
    spec.timeout = std::chrono::hours(1);
    auto child = os::Subprocess::Start(std::move(spec));
    heard_ = Clock::now();
    read_ = 0;
    if (!child) {
        log->push_back("xid events: " + child.error());
        next_start_ = heard_ + kRestart;
        return;
    }
    child_.emplace(std::move(*child));
}

void XidEventWatch::Read(std::vector<std::string>* log) {
    const bool running = child_->Poll();
    const std::string& out = child_->output();
    const auto now = Clock::now();
    for (std::size_t end; (end = out.find('\n', read_)) != std::string::npos; read_ = end + 1) {
        const std::string line = out.substr(read_, end - read_);
        heard_ = now;
        if (line.rfind("error ", 0) == 0) {
            log->push_back("xid events: " + line.substr(6) + "; tried again in 5 min");
            next_start_ = now + kRestartAfterError;
            continue;
        }
        std::istringstream words(line);
        std::string word, pci, xid;
        if (!(words >> word >> pci >> xid) || word != "xid") continue;  // "." and the unknown
        std::string bus = pci;  // the kernel's form: no PCI function
        if (bus.size() > 2 && bus[bus.size() - 2] == '.') bus.resize(bus.size() - 2);
        held_.push_back({XidKey(pci, xid),
                         "NVRM: Xid (PCI:" + bus + "): " + xid + ", reported by NVML's event API",
                         now + kHold});
    }
    if (!running) {
        if (next_start_ <= now) {
            log->push_back("xid events: the stream ended; started again in 30 s");
            next_start_ = now + kRestart;
        }
        child_.reset();
    } else if (now - heard_ > std::chrono::milliseconds(static_cast<long long>(
                                  (env_.health.nvml_timeout_seconds + 2) * 1000))) {
        log->push_back(
            "xid events: NVML did not answer in time; the stream was killed and is "
            "started again in 30 s");
        child_.reset();  // kills its process group, reaps it (bounded)
        next_start_ = now + kRestart;
    }
}

void XidEventWatch::HandleDue(std::vector<std::string>* log) {
    const auto now = Clock::now();
    std::vector<Held> waiting;
    for (Held& h : held_) {
        if (h.due > now) {
            waiting.push_back(std::move(h));
            continue;
        }
        if (auto r = recent_.find(h.key); r != recent_.end() && now - r->second < kRemember) {
            log->push_back("xid events: " + h.key + ": already handled from the kernel log");
            continue;
        }
        recent_[h.key] = now;
        diag::EvidenceSet found;
        env_.engine.scanner->ScanText(h.line, "nvml-event", &found, diag::InputKind::kKernelLog);
        const FaultHandled done = HandleEvidence(env_, found);
        log->push_back("xid events: " + h.key + ": " +
                       (done.rule.empty() ? "no rule" : done.cause + " (" + done.rule + ")"));
        for (const std::string& d : done.done) log->push_back("xid events: " + d);
    }
    held_ = std::move(waiting);
    for (auto r = recent_.begin(); r != recent_.end();) {
        r = now - r->second >= kRemember ? recent_.erase(r) : std::next(r);
    }
}

pid_t XidEventWatch::stream_pid() const { return child_ ? child_->pid() : -1; }

std::vector<std::string> XidEventWatch::Poll() {
    std::vector<std::string> log;
    if (!child_ && Clock::now() >= next_start_) Start(&log);
    if (child_) Read(&log);
    HandleDue(&log);
    return log;
}

}  // namespace autoheal::agent
