// The `agent:` section of autoheal.yaml, for autoheal-agent (agent/agent.cpp), parsed with the
// other sections (settings.h):
//   agent:
//     on_fault: requeue     # requeue | end | notify: what an interrupting fault does to the job
//     poll_interval_ms: 200 # how often the kernel log is read (a bounded poll), 10..5000
//     heartbeat_interval: 10s   # a duration (docs/rules.md), 1s..1h
//     hang_timeout: off     # the site's --hang-timeout for --auto-resume jobs (a duration or off)
//     hang_check_interval: 30s  # how often jobs are looked at for a hang, 1s..1h
//     hang_dump_wait: 20s   # how long a hung job's flight recorder dumps are waited for, 1s..10m
//     sample_interval: 5s   # how often the GPUs of the node's jobs are sampled (power,
//                           # temperature, clocks; agent/telemetry_sampler.h), 1s..1h, or off
//     counter_interval: 30s # how often NVML's error counters are compared with the last
//                           # reading (agent/counter_watch.h), 1s..1h, or off
#pragma once

#include <yaml-cpp/yaml.h>

#include <string>

#include "autoheal/core/result.h"

namespace autoheal::remediation {

// What an interrupting fault does to the job running on the node:
// - kRequeue: an --auto-resume job the decision requeues is requeued with the node excluded;
//   any other job is ended with the explanation;
// - kEnd: every such job is ended with the explanation (never requeued by the agent);
// - kNotify: the job is left running; its AdminComment says what was seen.
// The node is taken out in every case (the breaker and admin drains permitting).
enum class OnFault { kRequeue, kEnd, kNotify };

const char* OnFaultName(OnFault mode);

struct AgentConfig {
    OnFault on_fault = OnFault::kRequeue;
    double poll_seconds = 0.2;
    double heartbeat_seconds = 10;
    // The hang watch (agent/hang_watch.h): the timeout of an --auto-resume job that gave no
    // --hang-timeout (0: none), how often the node's jobs are looked at (agent/node_jobs.h: one
    // call to slurmctld per job with a step on the node each time), and how long dumps asked
    // for are waited for.
    std::int64_t hang_timeout_seconds = 0;
    double hang_check_seconds = 30;
    double hang_dump_wait_seconds = 20;
    // The GPUs of the node's jobs are sampled this often (0: off); the job list is the hang
    // watch's, refreshed every hang_check_seconds.
    double sample_seconds = 5;
    // NVML's counters of the whole node are read and compared this often (0: off).
    double counter_seconds = 30;
};

// Refuses unknown keys, an unknown on_fault and values out of range, naming file:line:column.
Result<AgentConfig> ParseAgentConfig(const YAML::Node& section, const std::string& source);

}  // namespace autoheal::remediation
