# Shared by start.sh and stop.sh. Sourced, not run.
# AUTOHEAL_CLUSTER_DIR: the one folder holding all of the cluster's state (default below).
# AUTOHEAL_CLUSTER_NODES: number of slurmd nodes (default 4, at least 4).
# AUTOHEAL_CLUSTER_PORT: slurmctld's port; slurmd ports follow it (default 16817, 17001...).
# AUTOHEAL_CLUSTER_TOPOLOGY: tree (default: topology/tree, leaf switches leaf1 and leaf2 under a
#   spine) or block (topology/block, Slurm 23.11 and later: blocks leaf1 and leaf2, as NVL72
#   racks are). The two blast-radius units have the same names and nodes in both, so the same
#   scenarios check either.
# AUTOHEAL_CLUSTER_TOPOLOGY_FILE: conf (default: topology.conf) or yaml (topology.yaml, Slurm
#   25.05 and later: that topology as the cluster's default, and a flat one beside it).
cluster_dir=${AUTOHEAL_CLUSTER_DIR:-/tmp/autoheal-cluster}
cluster_nodes=${AUTOHEAL_CLUSTER_NODES:-4}
ctld_port=${AUTOHEAL_CLUSTER_PORT:-16817}
cluster_topology=${AUTOHEAL_CLUSTER_TOPOLOGY:-tree}
cluster_topology_file=${AUTOHEAL_CLUSTER_TOPOLOGY_FILE:-conf}
slurmd_port_base=$((ctld_port + 184))
# The production layout (docs/admin-guide.md): slurmctld and EpilogSlurmctld run as this user,
# slurmd as root, jobs are submitted by the lab's unprivileged users.
slurm_user=slurm
lab_users=(ahuser1 ahuser2)
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${AUTOHEAL_BUILD_DIR:-$repo_root/build}

log() { printf 'autoheal: cluster: %s\n' "$*" >&2; }

# Prints the PID in a pid file if that process is still alive and was started with our
# state folder on its command line (so a recycled PID is never signalled).
live_pid() {
    local file=$1 pid
    [ -f "$file" ] || return 1
    pid=$(cat "$file" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [ -r "/proc/$pid/cmdline" ] || return 1
    tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$cluster_dir" || return 1
    printf '%s\n' "$pid"
}
