// autoheal-agent — the node daemon (one per compute node, root; systemd unit
// autoheal-agent.service): follows the kernel log live, and NVML's Xid events
// (xid_event_watch.h), and acts on a fault the rules mark `interrupts_job` while the job still
// runs (agent/include/autoheal/agent/fault_handler.h).
//   autoheal-agent [--node NAME]     NAME: the node's Slurm name (default: the short hostname)
// Samples the power and temperature of the node's jobs' GPUs every agent.sample_interval
// (agent/include/autoheal/agent/telemetry_sampler.h), and compares NVML's error counters of all
// its GPUs with the last reading every agent.counter_interval (counter_watch.h). Runs until SIGTERM
// or SIGINT; writes a heartbeat (state_dir/jobs/agents/<node>.json) every agent.heartbeat_interval.
// Exits 1 when it cannot start (config, rules), 2 on usage.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <map>
#include <string>
#include <thread>

#include "autoheal/agent/counter_watch.h"
#include "autoheal/agent/fault_handler.h"
#include "autoheal/agent/hang_watch.h"
#include "autoheal/agent/kernel_follower.h"
#include "autoheal/agent/telemetry_sampler.h"
#include "autoheal/agent/xid_event_watch.h"
#include "autoheal/core/program.h"
#include "autoheal/remediation/agent_config.h"
#include "autoheal/remediation/agent_heartbeat.h"
#include "autoheal/remediation/program_start.h"
#include "autoheal/remediation/slurm_adapter.h"

namespace {
namespace rem = autoheal::remediation;
namespace agent = autoheal::agent;

volatile std::sig_atomic_t g_stop = 0;
void OnSignal(int) { g_stop = 1; }

std::string ShortHostname() {
    char host[256] = {};
    if (::gethostname(host, sizeof host - 1) != 0) return "";
    std::string h = host;
    return h.substr(0, h.find('.'));
}

// A kernel-log fault whose rule does not interrupt jobs (an Xid 13 of the job's own kernel, a
// corrected error) is the job epilog's to weigh; the agent says it saw one, at most once in 10 s
// per rule, so that a storm of corrected errors cannot flood its log.
class QuietFaults {
  public:
    bool Say(const std::string& rule) {
        const auto now = std::chrono::steady_clock::now();
        auto [it, first] = said_.try_emplace(rule, now);
        if (!first && now - it->second < std::chrono::seconds(10)) return false;
        it->second = now;
        return true;
    }

  private:
    std::map<std::string, std::chrono::steady_clock::time_point> said_;  // one per rule at most
};

// Where the node's slurmd keeps its step sockets (node_jobs.h), asked of slurmctld until it
// answers, at most once a minute; until then the node's jobs come from the whole job table.
void FindSlurmdSpoolDir(rem::SlurmAdapter& slurm, agent::AgentEnv* env,
                        std::chrono::steady_clock::time_point* next_try) {
    if (!env->slurmd_spool_dir.empty() || std::chrono::steady_clock::now() < *next_try) return;
    *next_try = std::chrono::steady_clock::now() + std::chrono::minutes(1);
    auto dir = slurm.SlurmdSpoolDir(env->node, ShortHostname());
    if (!dir) {
        spdlog::warn("autoheal: agent: {}: the node's jobs are read from slurmctld's job table",
                     dir.error());
        return;
    }
    env->slurmd_spool_dir = *dir;
    spdlog::info("autoheal: agent: node={}: jobs from the steps in {}", env->node, *dir);
}

int Run(const rem::ProgramStart& start, const std::string& node) {
    const autoheal::Config& config = start.settings.core;
    const rem::RemediationConfig& rc = start.settings.remediation;
    const rem::AgentConfig& ac = start.settings.agent;
    auto engine = rem::LoadEngine(autoheal::SelfExePath(), config.state_dir);
    if (!engine) return spdlog::error("autoheal: agent: {}", engine.error()), 1;
    rem::SlurmAdapter slurm(rc.slurm_conf);
    rem::SystemClock clock;
    agent::AgentEnv env{config, rc,   rc.tickets,           ac, *engine, slurm,
                        clock,  node, start.settings.health};
    auto next_spool_try = std::chrono::steady_clock::now();
    agent::HangWatch hang_watch(env);
    agent::CounterWatch counters(env);
    agent::XidEventWatch xid_events(env);
    agent::TelemetrySampler sampler(env);
    // Where it is in the kernel log, in this node's state_dir: a restarted agent reads what came
    // while it was down.
    agent::KernelFollower follower(rem::KernelLogFor(rc, node), rc.kernel_log_max_bytes,
                                   config.state_dir + "/agent-" + node + ".kernel-position");
    rem::Heartbeat heartbeat(config.state_dir, node, clock.Now());
    spdlog::info(
        "autoheal: agent: node={} kernel_log={} on_fault={} poll={}ms sample={}s counters={}s",
        node, follower.source(), rem::OnFaultName(ac.on_fault),
        static_cast<int>(ac.poll_seconds * 1000), ac.sample_seconds, ac.counter_seconds);
    const auto poll = std::chrono::milliseconds(static_cast<int>(ac.poll_seconds * 1000));
    auto next_beat = std::chrono::steady_clock::now();
    QuietFaults quiet;
    while (g_stop == 0) {
        FindSlurmdSpoolDir(slurm, &env, &next_spool_try);
        auto lines = follower.Poll();
        if (!lines) {
            spdlog::warn("autoheal: agent: kernel log: {}", lines.error());
        } else if (!lines->empty()) {
            const agent::FaultHandled h = agent::HandleKernelLines(env, *lines);
            xid_events.Handled(h.xids);
            if (h.interrupting) heartbeat.SawFault(h.rule, clock.Now());
            if (!h.interrupting && !h.rule.empty() && quiet.Say(h.rule)) {
                spdlog::info(
                    "autoheal: agent: kernel log: {} ({}): does not interrupt jobs; left "
                    "to the job's epilog",
                    h.cause, h.rule);
            }
            for (const std::string& d : h.done) {
                spdlog::warn("autoheal: agent: {} ({}): {}", h.cause, h.rule, d);
            }
        }
        for (const std::string& d : hang_watch.Poll()) spdlog::warn("autoheal: agent: {}", d);
        for (const std::string& d : counters.Poll()) spdlog::warn("autoheal: agent: {}", d);
        for (const std::string& d : xid_events.Poll()) spdlog::warn("autoheal: agent: {}", d);
        for (const std::string& d : sampler.Poll(hang_watch.running())) {
            spdlog::warn("autoheal: agent: {}", d);
        }
        if (lines) {
            auto saved = follower.Save();  // after the lines were handled
            if (!saved) spdlog::warn("autoheal: agent: {}", saved.error());
        }
        if (std::chrono::steady_clock::now() >= next_beat) {
            auto w = heartbeat.Write(clock.Now());
            if (!w) spdlog::warn("autoheal: agent: {}", w.error());
            next_beat += std::chrono::milliseconds(static_cast<int>(ac.heartbeat_seconds * 1000));
        }
        std::this_thread::sleep_for(poll);
    }
    spdlog::info("autoheal: agent: node={}: stopping", node);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    std::string node;
    for (int i = 1; i < argc; ++i) {
        if (std::strcmp(argv[i], "--node") == 0 && i + 1 < argc) {
            node = argv[++i];
        } else {
            std::fprintf(stderr, "usage: autoheal-agent [--node NAME]\n");
            return 2;
        }
    }
    if (node.empty()) node = ShortHostname();
    std::signal(SIGTERM, OnSignal);
    std::signal(SIGINT, OnSignal);
    try {
        const rem::ProgramStart start = rem::StartProgram("autoheal-agent");
        if (!start.config_problem.empty())
            spdlog::warn("autoheal: agent: {}", start.config_problem);
        return Run(start, node);
    } catch (const std::exception& e) {
        spdlog::error("autoheal: agent: {}", e.what());
        return 1;
    }
}
