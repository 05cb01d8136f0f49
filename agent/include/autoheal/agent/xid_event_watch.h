// autoheal-agent's NVML Xid event watch (issue 15, point 1): the driver's Xids through NVML's
// event API (health::StreamXidEvents), beside the kernel log, for nodes whose kernel log the
// agent cannot read (a container without /dev/kmsg) or that loses lines. The stream runs in a
// child (os::Subprocess, fork mode) that writes a line per event and a sign of life per wait:
// - the child dies with the agent (PR_SET_PDEATHSIG), and ends when nobody reads it;
// - a child silent for health.nvml_timeout_seconds + 2 s (NVML hung on a lost GPU) is killed
//   and started again 30 s later; one that ended, 30 s later; one that said NVML cannot give
//   events (no driver, an old one), 5 minutes later; each child lives at most an hour;
// - each Xid is held for 1 s, then handled as the kernel's own line would be
//   ("NVRM: Xid (PCI:0000:3b:00): 79, ..." scanned as a kernel record, HandleEvidence) unless the
//   kernel log brought the same GPU's same Xid within the last minute (Handled): the driver
//   writes both at once, and one fault is handled once. A kernel line that comes more than a
//   second after NVML's event is handled again (the plan's actions are idempotent; the
//   controller's incident keys make it one incident).
// NVML's event gives only the Xid's number: rules that read the message (Xid 154's recovery
// action, an NVLink unit) need the kernel's line.
#pragma once

#include <sys/types.h>

#include <chrono>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "autoheal/agent/fault_handler.h"
#include "autoheal/os/subprocess.h"

namespace autoheal::agent {

class XidEventWatch {
  public:
    explicit XidEventWatch(const AgentEnv& env) : env_(env) {}

    // Starts the stream when due, reads what it wrote and handles the Xids that are due;
    // returns one line per thing done or problem, for the log.
    std::vector<std::string> Poll();

    // Xids the kernel log brought (FaultHandled::xids): not handled again from NVML.
    void Handled(const std::vector<std::string>& xids);

    // The stream child's process id; -1 when none runs.
    pid_t stream_pid() const;

  private:
    using Clock = std::chrono::steady_clock;
    struct Held {
        std::string key;   // XidKey
        std::string line;  // the kernel's form of the event
        Clock::time_point due;
    };

    void Start(std::vector<std::string>* log);
    void Read(std::vector<std::string>* log);
    void HandleDue(std::vector<std::string>* log);

    const AgentEnv& env_;
    std::optional<os::Subprocess> child_;
    std::size_t read_ = 0;  // bytes of child_->output() consumed
    Clock::time_point heard_{};
    Clock::time_point next_start_{};
    std::map<std::string, Clock::time_point> recent_;  // key -> when handled
    std::vector<Held> held_;
};

}  // namespace autoheal::agent
