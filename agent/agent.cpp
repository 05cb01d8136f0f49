// autoheal-agent — the node daemon (one per compute node, root; systemd unit
// autoheal-agent.service): follows the kernel log live and acts on a fault the rules mark
// `interrupts_job` while the job still runs (agent/include/autoheal/agent/fault_handler.h).
//   autoheal-agent [--node NAME]     NAME: the node's Slurm name (default: the short hostname)
// Samples the power and temperature of the node's jobs' GPUs every agent.sample_interval
// (agent/include/autoheal/agent/telemetry_sampler.h). Runs until SIGTERM or SIGINT; writes a
// heartbeat (state_dir/jobs/agents/<node>.json) every agent.heartbeat_interval. Exits 1 when it
// cannot start (config, rules), 2 on usage.
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstring>
#include <string>
#include <thread>

#include "autoheal/agent/fault_handler.h"
#include "autoheal/agent/hang_watch.h"
#include "autoheal/agent/kernel_follower.h"
#include "autoheal/agent/telemetry_sampler.h"
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

int Run(const rem::ProgramStart& start, const std::string& node) {
    const autoheal::Config& config = start.settings.core;
    const rem::RemediationConfig& rc = start.settings.remediation;
    const rem::AgentConfig& ac = start.settings.agent;
    auto engine = rem::LoadEngine(autoheal::SelfExePath(), config.state_dir);
    if (!engine) return spdlog::error("autoheal: agent: {}", engine.error()), 1;
    rem::SlurmAdapter slurm(rc.slurm_conf);
    rem::SystemClock clock;
    const agent::AgentEnv env{config, rc,   rc.tickets,           ac, *engine, slurm,
                              clock,  node, start.settings.health};
    agent::HangWatch hang_watch(env);
    agent::TelemetrySampler sampler(env);
    // Where it is in the kernel log, in this node's state_dir: a restarted agent reads what came
    // while it was down.
    agent::KernelFollower follower(rem::KernelLogFor(rc, node), rc.kernel_log_max_bytes,
                                   config.state_dir + "/agent-" + node + ".kernel-position");
    rem::Heartbeat heartbeat(config.state_dir, node, clock.Now());
    spdlog::info("autoheal: agent: node={} kernel_log={} on_fault={} poll={}ms sample={}s", node,
                 follower.source(), rem::OnFaultName(ac.on_fault),
                 static_cast<int>(ac.poll_seconds * 1000), ac.sample_seconds);
    const auto poll = std::chrono::milliseconds(static_cast<int>(ac.poll_seconds * 1000));
    auto next_beat = std::chrono::steady_clock::now();
    while (g_stop == 0) {
        auto lines = follower.Poll();
        if (!lines) {
            spdlog::warn("autoheal: agent: kernel log: {}", lines.error());
        } else if (!lines->empty()) {
            const agent::FaultHandled h = agent::HandleKernelLines(env, *lines);
            if (h.interrupting) heartbeat.SawFault(h.rule, clock.Now());
            for (const std::string& d : h.done) {
                spdlog::warn("autoheal: agent: {} ({}): {}", h.cause, h.rule, d);
            }
        }
        for (const std::string& d : hang_watch.Poll()) spdlog::warn("autoheal: agent: {}", d);
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
