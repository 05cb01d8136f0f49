// The `remediation:` section of autoheal.yaml: how the epilogs gather evidence, what they may do
// to nodes and jobs, and the safety limits. Strict keys; errors name file:line:column.
//
// remediation:
//   dry_run: false                 # decide and record everything, change nothing, open no ticket
//   slurm_conf: /etc/slurm/slurm.conf   # default: $SLURM_CONF, else Slurm's default
//   kernel_log: kmsg               # kmsg (/dev/kmsg) or a file such as /var/log/kern.log;
//                                  # %n in a path is the node's name
//   kernel_log_max_bytes: 8388608  # the most of the job's kernel log window that is read
//   job_output_max_bytes: 1048576  # the tail of the job's stdout/stderr that is read
//   results_wait_seconds: 30       # EpilogSlurmctld waits this long for the node epilogs
//   requeue_delay_seconds: 2       # a requeued job may start this long after its old run ends
//   jobs_retention_days: 14        # state_dir/jobs/<job> folders older than this are removed
//   gpu_reset_command: [/usr/bin/nvidia-smi, --gpu-reset, -i, "{gpu}"]   # argv, no shell,
//                                                 # absolute program; {gpu} = PCI id
//   quarantine_hours: 24           # soft-avoid culprits autoheal could not take out
//   breaker: {max_fraction: 0.10, max_nodes: 16}   # nodes autoheal holds out at once
//   correlation: {window: 10m, min_nodes: 2}    # nodes under one leaf switch
//   lemon: {failures: 3, min_users: 2, window: 7d}   # unexplained job failures of several
//                                  # users on one node: drained
//   escalation_min_users: 2        # a rule's `distinct: job` escalation (an application fault
//                                  # repeating on one GPU) also needs this many distinct users
//   tickets: {...}                 # sinks, see ticket_config.h
//   metrics_dir: /var/lib/prometheus/node-exporter   # Prometheus textfiles (metrics.h); empty:
//                                  # none (default)
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <string>
#include <vector>

#include "autoheal/core/config_scan.h"
#include "autoheal/core/result.h"
#include "autoheal/remediation/ticket_config.h"

namespace autoheal::remediation {

// The most nodes autoheal may hold out of service at once: every node Slurm shows drained, down
// or rebooting with an autoheal reason counts, however long ago it was taken out. (`window:`,
// which earlier versions read, is still accepted and has no effect.)
struct BreakerConfig {
    double max_fraction = 0.10;  // of the cluster's nodes
    int max_nodes = 16;          // absolute
};

struct CorrelationConfig {
    std::int64_t window_seconds = 600;
    int min_nodes = 2;
};

// A "lemon": a node that keeps failing jobs (distinct jobs, of at least min_users distinct users,
// that failed while nothing named a node and every node reported) although its checks pass.
// 0 failures turns the detection off.
struct LemonConfig {
    int failures = 3;
    int min_users = 2;  // distinct users among those failures (1..1000)
    std::int64_t window_seconds = 7LL * 86400;
};

struct RemediationConfig {
    bool dry_run = false;
    std::string slurm_conf;  // empty: $SLURM_CONF, else Slurm's default
    std::string kernel_log = "kmsg";
    std::uint64_t kernel_log_max_bytes = 8u << 20;
    std::uint64_t job_output_max_bytes = 1u << 20;
    double results_wait_seconds = 30;
    int requeue_delay_seconds = 2;
    int jobs_retention_days = 14;
    // The no-progress breaker: a job whose newest checkpoint has not advanced across this many
    // requeues in a row is not requeued again (0: off).
    int no_progress_requeues = 3;
    std::vector<std::string> gpu_reset_command = {"/usr/bin/nvidia-smi", "--gpu-reset", "-i",
                                                  "{gpu}"};
    double quarantine_hours = 24;
    BreakerConfig breaker;
    CorrelationConfig correlation;
    LemonConfig lemon;
    // A rule's escalation step that counts distinct jobs (`distinct: job`: a fault the job
    // itself may cause, Xid 13/31, repeating on one GPU) fires only when those jobs were of at
    // least this many distinct users, so that one user's buggy kernel cannot get a GPU drained.
    int escalation_min_users = 2;
    TicketConfig tickets;     // the `tickets:` sub-section (ticket_config.h)
    std::string metrics_dir;  // node_exporter's textfile folder; empty: no metrics files
};

// The section's node (null or absent: the defaults) read into its struct; `source` names the
// file in errors, `state_dir` places the default ticket spool (ParseTicketConfig).
Result<RemediationConfig> ParseRemediationConfig(const YAML::Node& section,
                                                 const std::string& source,
                                                 const std::string& state_dir = kDefaultStateDir);

// The kernel log setting for one node: %n replaced by its name.
std::string KernelLogFor(const RemediationConfig& config, const std::string& node);

}  // namespace autoheal::remediation
