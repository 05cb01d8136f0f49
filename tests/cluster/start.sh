#!/usr/bin/env bash
# Starts a real Slurm cluster on this machine: munged, slurmctld and N slurmd (slurmd -N nodeX,
# each on its own port), two fake GPUs per node declared as GRES, a two-leaf topology (or two
# blocks: AUTOHEAL_CLUSTER_TOPOLOGY, common.sh), and autoheal's plugins and prolog/epilog
# programs installed from the build folder. Waits until every node is idle. All state lives in
# AUTOHEAL_CLUSTER_DIR; stop.sh stops it all by PID.
#
# The layout is production's (docs/admin-guide.md): SlurmUser=slurm (the system user is created
# when missing), slurmd as root, jobs submitted by the unprivileged users ahuser1 and ahuser2
# (created when missing), state_dir owned by slurm with the incident store in it, and
# state_dir/jobs a link to its own folder (export/jobs, owned by slurm, 0755), standing in for
# the NFS export the nodes and the controller share. state/ is the users' shared file system
# (mode 1777, like /tmp): job scripts, outputs and checkpoints.
#
# Anything left by an earlier run of the same folder (even one that was killed) is stopped
# first. On failure the daemons are stopped and the log tails printed.
#
# Use it:  eval "$(tests/cluster/start.sh)"   # prints `export SLURM_CONF=...` on stdout
set -Eeuo pipefail  # -E: the ERR trap fires inside the functions too
. "$(dirname "${BASH_SOURCE[0]}")/common.sh"


check_prerequisites() {
    [ "$(id -u)" -eq 0 ] || { log "must run as root (slurmd runs jobs as their users)"; exit 1; }
    [ "$cluster_nodes" -ge 4 ] || { log "AUTOHEAL_CLUSTER_NODES must be at least 4"; exit 1; }
    case $cluster_topology in
        tree | block) ;;
        *) log "AUTOHEAL_CLUSTER_TOPOLOGY must be tree or block, not '$cluster_topology'"; exit 1 ;;
    esac
    case $cluster_topology_file in
        conf | yaml) ;;
        *) log "AUTOHEAL_CLUSTER_TOPOLOGY_FILE must be conf or yaml, not '$cluster_topology_file'"; exit 1 ;;
    esac
    local prog plugin
    for prog in autoheal-prolog autoheal-epilog autoheal-epilog-ctld; do
        [ -x "$build_dir/bin/$prog" ] || { log "missing $build_dir/bin/$prog: run make first"; exit 1; }
    done
    for plugin in spank_autoheal.so job_submit_autoheal.so; do
        [ -f "$build_dir/plugins/$plugin" ] || { log "missing $build_dir/plugins/$plugin: run make first"; exit 1; }
    done
}

failed() {
    local rc=$?
    log "start failed (exit $rc); log tails follow"
    for f in "$cluster_dir"/log/*.log; do
        [ -f "$f" ] && { echo "==> $f <==" >&2; tail -n 15 "$f" >&2; }
    done
    "$repo_root/tests/cluster/stop.sh"
    exit "$rc"
}

# ensure_user NAME system|login: creates the user (and its group) unless it exists. Another
# cluster of this machine may create it at the same moment: a failed useradd is fine when the
# user exists afterwards.
ensure_user() {
    local name=$1 kind=$2
    id -u "$name" >/dev/null 2>&1 && return 0
    local args=(--user-group --no-create-home --home-dir /nonexistent)
    if [ "$kind" = system ]; then
        args+=(--system --shell /usr/sbin/nologin)
    else
        args+=(--shell /bin/sh)
    fi
    useradd "${args[@]}" "$name" 2>/dev/null || id -u "$name" >/dev/null 2>&1 \
        || { log "cannot create the user $name"; return 1; }
}

make_users() {
    ensure_user "$slurm_user" system
    local u
    for u in "${lab_users[@]}"; do ensure_user "$u" login; done
}

# The folders and who owns them (the admin guide's layout).
make_layout() {
    rm -rf "$cluster_dir"
    mkdir -p "$cluster_dir"/{etc/autoheal,bin,lib,log,run/own,run/ctld,ctld,spool,dev,munge/key}
    mkdir -p "$cluster_dir"/{state/autoheal,export/jobs,metrics}
    chmod 755 "$cluster_dir" "$cluster_dir/munge"
    chmod 700 "$cluster_dir/munge/key"
    chmod 1777 "$cluster_dir/state"
    # slurmctld's own state, pid and log; autoheal's log is shared by root's programs and
    # EpilogSlurmctld, so it belongs to slurm (root writes anything).
    : >"$cluster_dir/log/slurmctld.log"
    : >"$cluster_dir/log/autoheal.log"
    chown "$slurm_user:" "$cluster_dir/ctld" "$cluster_dir/run/ctld" \
        "$cluster_dir/log/slurmctld.log" "$cluster_dir/log/autoheal.log" "$cluster_dir/metrics"
    chmod 700 "$cluster_dir/ctld"
    # state_dir: the controller's (incident store, lock, tickets, quarantine); jobs/ is the
    # shared hand-off between the nodes and the controller, on its own path.
    chown "$slurm_user:" "$cluster_dir/state/autoheal" "$cluster_dir/export/jobs"
    chmod 755 "$cluster_dir/state/autoheal" "$cluster_dir/export" "$cluster_dir/export/jobs"
    ln -s "$cluster_dir/export/jobs" "$cluster_dir/state/autoheal/jobs"
}

# autoheal, installed from the build folder (copied: a rebuild never changes a running cluster).
install_autoheal() {
    cp "$build_dir"/bin/autoheal-prolog "$build_dir"/bin/autoheal-epilog \
        "$build_dir"/bin/autoheal-epilog-ctld "$cluster_dir/bin/"
    [ -x "$build_dir/bin/autoheal" ] && cp "$build_dir/bin/autoheal" "$cluster_dir/bin/"
    cp "$build_dir"/plugins/*.so "$cluster_dir/lib/"
    # The programs find this config and the rules next to their install prefix (bin/../etc/autoheal).
    mkdir -p "$cluster_dir/etc/autoheal/rules.d"
    cp "$repo_root"/etc/rules.d/*.yaml "$cluster_dir/etc/autoheal/rules.d/"
}

# Fake GPUs at the ABI boundary (tests/fakes): NVML and the CUDA check module, each node
# reading lib/fake-gpu/scenarios/<node>.json, else default.json (2 healthy GPUs per node), and
# character devices with NVIDIA's major number, two per node, for GRES.
install_fake_gpus() {
    fake=$cluster_dir/lib/fake-gpu
    mkdir -p "$fake/scenarios"
    local lib i g
    for lib in nvml/libnvidia-ml.so.1 cuda/libautoheal_cuda_fake.so; do
        [ -f "$build_dir/fakes/$lib" ] || { log "missing $build_dir/fakes/$lib: run make first"; exit 1; }
        cp "$build_dir/fakes/$lib" "$fake/"
    done
    cat >"$fake/scenarios/default.json" <<'JSON'
{"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0"}, {"minor": 1, "pci_bus_id": "0000:5d:00.0"}]}
JSON
    for i in $(seq 1 "$cluster_nodes"); do
        mkdir -p "$cluster_dir/dev/node$i"
        for g in 0 1; do mknod "$cluster_dir/dev/node$i/nvidia$g" c 195 "$g"; done
    done
}

write_autoheal_config() {
    cat >"$cluster_dir/etc/autoheal/autoheal.yaml" <<CONF
# autoheal settings for the local test cluster
log_file: $cluster_dir/log/autoheal.log
log_level: debug
state_dir: $cluster_dir/state/autoheal
policy:
  max_auto_resume: 5
health:
  nvml_timeout_seconds: 2
  quick_budget_seconds: 8
  nvml_library: $fake/libnvidia-ml.so.1
  cuda_module: $fake/libautoheal_cuda_fake.so
# Fault handling: each node's "kernel log" is a file the tests write fake Xid lines into.
remediation:
  slurm_conf: $cluster_dir/etc/slurm.conf
  kernel_log: $cluster_dir/log/kern-%n.log
  results_wait_seconds: 20
  gpu_reset_command: [$cluster_dir/bin/fake-gpu-reset, "{gpu}"]
  breaker: {max_fraction: 0.5, max_nodes: 2, window: 1h}
  correlation: {window: 10m, min_nodes: 2}
  metrics_dir: $cluster_dir/metrics
agent:
  poll_interval_ms: 100
  heartbeat_interval: 2s
  hang_check_interval: 1s
  hang_dump_wait: 10s
  sample_interval: 1s
  counter_interval: 1s
CONF
    # Config and rules steer root's actions: autoheal refuses them when others may write them.
    chmod -R go-w "$cluster_dir/etc/autoheal"
    local i
    for i in $(seq 1 "$cluster_nodes"); do : >"$cluster_dir/log/kern-node$i.log"; done
}

# GPU reset and node reboot at the ABI boundary of this lab: the reset is recorded; the reboot
# restarts the node's slurmd with -b (Slurm's "the node booted" flag), as a real reboot would.
write_lab_programs() {
    cat >"$cluster_dir/bin/fake-gpu-reset" <<SH
#!/bin/sh
echo "\$(date +%s) reset \$1" >>"$cluster_dir/log/gpu-resets.log"
SH
    cat >"$cluster_dir/bin/fake-reboot" <<SH
#!/bin/bash
# RebootProgram, run by the slurmd of the node to reboot: find which node from its command line.
# (slurmd runs it through system(): its parent may be sh.)
slurmd_pid=\$PPID node=
for _ in 1 2 3; do
    node=\$(tr '\\0' '\\n' </proc/\$slurmd_pid/cmdline | sed -n '/^-N\$/{n;p}')
    [ -n "\$node" ] && break
    slurmd_pid=\$(awk '{print \$4}' /proc/\$slurmd_pid/stat)
done
[ -n "\$node" ] || exit 1
echo "\$(date +%s) reboot \$node" >>"$cluster_dir/log/reboots.log"
# A rebooted node starts slurmd afresh, and this is a child of the old one (system()): what the
# old one left in the environment and open files goes. Slurm 24.11's slurmd re-executes itself on
# a reconfigure with SLURMD_RECONF, SLURMD_BOOT_TIME (the time -b reported as the boot) and
# SLURMD_RECONF_LISTEN_FD (its listening socket, kept open across exec) in its environment: a
# slurmd started with them reports the old boot time, older than the reboot request, and
# slurmctld ignores it (waiting_for_node_boot) until ResumeTimeout calls the reboot timed out.
setsid bash -c '
    for v in \$(compgen -e); do case \$v in SLURMD_*) unset "\$v" ;; esac; done
    for fd in /proc/self/fd/*; do fd=\${fd##*/}; [ "\$fd" -gt 2 ] && eval "exec \$fd>&-"; done
    kill "\$1"  # then wait until it is gone (a zombie nobody reaps has an empty cmdline)
    while [ -n "\$(tr -d "\\\\0" </proc/\$1/cmdline 2>/dev/null)" ]; do sleep 0.1; done
    slurmd -D -b -N "\$2" -f "$cluster_dir/etc/slurm.conf" </dev/null >>"$cluster_dir/log/slurmd-\$2.out" 2>&1 &
    echo \$! >"$cluster_dir/run/slurmd-\$2.pid"
' fake-reboot "\$slurmd_pid" "\$node" </dev/null >/dev/null 2>&1 &
exit 0
SH
    chmod 755 "$cluster_dir/bin/fake-gpu-reset" "$cluster_dir/bin/fake-reboot"
}

# The two blast-radius units, leaf1 and leaf2 (nodes $1 and $2): leaf switches under a spine, or
# blocks; in topology.conf, or in topology.yaml (Slurm 25.05 and later) as the cluster's default
# topology beside a flat one (no units: read instead, it would leave the leaves unknown).
write_topology() {
    local etc=$cluster_dir/etc
    if [ "$cluster_topology_file" = conf ] && [ "$cluster_topology" = tree ]; then
        printf 'SwitchName=leaf1 Nodes=%s\nSwitchName=leaf2 Nodes=%s\nSwitchName=spine Switches=leaf[1-2]\n' \
            "$1" "$2" >"$etc/topology.conf"
    elif [ "$cluster_topology_file" = conf ]; then
        printf 'BlockName=leaf1 Nodes=%s\nBlockName=leaf2 Nodes=%s\n' "$1" "$2" >"$etc/topology.conf"
    else
        {
            printf -- '---\n- topology: lab\n  cluster_default: true\n'
            if [ "$cluster_topology" = tree ]; then
                printf '  tree:\n    switches:\n      - switch: spine\n        children: leaf[1-2]\n'
                printf '      - switch: leaf%s\n        nodes: %s\n' 1 "$1" 2 "$2"
            else
                printf '  block:\n    blocks:\n'
                printf '      - block: leaf%s\n        nodes: %s\n' 1 "$1" 2 "$2"
            fi
            printf -- '- topology: racks\n  cluster_default: false\n  flat: true\n'
        } >"$etc/topology.yaml"
    fi
}

# Fast scheduling for tests; AUTOHEAL_CLUSTER_STOCK_TIMING=1 keeps Slurm's defaults for
# cred_expire (120 s), batch_sched_delay (3 s), bf_interval (30 s) and sched_interval (60 s), as
# a stock cluster has them (the requeue benchmark compares against those).
write_slurm_config() {
    local host last=$cluster_nodes half=$((cluster_nodes / 2)) i auth_extra sched_params
    host=$(hostname -s)
    if [ "${AUTOHEAL_CLUSTER_STOCK_TIMING:-0}" = 1 ]; then
        auth_extra="" sched_params="nohold_on_prolog_fail"
    else
        auth_extra=",cred_expire=5"
        sched_params="batch_sched_delay=0,bf_interval=1,sched_interval=2,nohold_on_prolog_fail"
    fi
    cat >"$cluster_dir/etc/slurm.conf" <<CONF
ClusterName=autoheal-lab
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmUser=$slurm_user
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$cluster_dir/munge/munged.socket$auth_extra
StateSaveLocation=$cluster_dir/ctld
SlurmdSpoolDir=$cluster_dir/spool/%n
SlurmctldPidFile=$cluster_dir/run/ctld/slurmctld.pid
SlurmdPidFile=$cluster_dir/run/own/slurmd-%n.pid
SlurmctldLogFile=$cluster_dir/log/slurmctld.log
SlurmdLogFile=$cluster_dir/log/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=$sched_params
MailProg=/bin/true
ReturnToService=2
SlurmdTimeout=30
MinJobAge=600
PrologFlags=Alloc
Prolog=$cluster_dir/bin/autoheal-prolog
Epilog=$cluster_dir/bin/autoheal-epilog
EpilogSlurmctld=$cluster_dir/bin/autoheal-epilog-ctld
RebootProgram=$cluster_dir/bin/fake-reboot
PrologEpilogTimeout=120
PlugStackConfig=$cluster_dir/etc/plugstack.conf
JobSubmitPlugins=autoheal
PluginDir=/usr/lib/x86_64-linux-gnu/slurm-wlm:$cluster_dir/lib
$([ "$cluster_topology_file" = yaml ] || echo "TopologyPlugin=topology/$cluster_topology")
GresTypes=gpu
NodeName=node[1-$last] NodeHostname=$host NodeAddr=127.0.0.1 Port=[$slurmd_port_base-$((slurmd_port_base + last - 1))] CPUs=2 RealMemory=1000 Gres=gpu:2 State=UNKNOWN
PartitionName=gpu Nodes=node[1-$last] Default=YES MaxTime=INFINITE State=UP
CONF
    {
        echo "AutoDetect=off"
        for i in $(seq 1 "$cluster_nodes"); do
            echo "NodeName=node$i Name=gpu File=$cluster_dir/dev/node$i/nvidia[0-1]"
        done
    } >"$cluster_dir/etc/gres.conf"
    write_topology "node[1-$half]" "node[$((half + 1))-$last]"
    cat >"$cluster_dir/etc/plugstack.conf" <<CONF
required $cluster_dir/lib/spank_autoheal.so max_auto_resume=10 default_auto_resume=3
CONF
    cat >"$cluster_dir/env" <<CONF
export SLURM_CONF=$cluster_dir/etc/slurm.conf
CONF
}

# Starts a daemon in the foreground mode of its own session, records its PID.
spawn() {
    local name=$1; shift
    setsid "$@" </dev/null >>"$cluster_dir/log/$name.out" 2>&1 &
    echo $! >"$cluster_dir/run/$name.pid"
}

wait_for() {  # wait_for SECONDS DESCRIPTION COMMAND...
    local limit=$1 what=$2; shift 2
    local deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if [ $SECONDS -ge $deadline ]; then log "timed out after ${limit}s waiting for $what"; return 1; fi
        sleep 0.2
    done
}

start_munge() {
    mungekey -c -k "$cluster_dir/munge/key/munge.key" >/dev/null 2>&1
    chmod 600 "$cluster_dir/munge/key/munge.key"
    spawn munged munged -F --key-file="$cluster_dir/munge/key/munge.key" \
        --socket="$cluster_dir/munge/munged.socket" --pid-file="$cluster_dir/run/own/munged.pid" \
        --seed-file="$cluster_dir/munge/key/munged.seed" --log-file="$cluster_dir/log/munged.log"
    wait_for 10 "munged's socket" test -S "$cluster_dir/munge/munged.socket"
}

# slurmctld is started by root and becomes SlurmUser itself, as its systemd unit does.
start_slurmctld() {
    spawn slurmctld slurmctld -D -c -i -f "$SLURM_CONF"
    wait_for 30 "slurmctld to answer" bash -c 'scontrol ping | grep -q "is UP"'
}

# --- autoheal-agent, one per slurmd (agent/): its node's kernel log (remediation.kernel_log's %n),
# the fake NVML of health.nvml_library, its node name (and SLURMD_NODENAME, so that the fake NVML
# reads the node's scenario as the node's prolog and epilog do: one host plays every node here).
# Installed always; started here with
# AUTOHEAL_CLUSTER_AGENTS=1 (the bench), else by the scenarios that need them
# (tests/integration: AgentE2E, bin/start-agents). bin/start-agents keeps each agent running as
# systemd's Restart=always does in production: a supervisor (run/agent-supervisor-nodeN.pid)
# starts it again 0.2 s after it dies; run/agent-nodeN.pid is the running agent's. stop.sh stops
# them by PID (run/agent-*.pid: the supervisor stops its agent on SIGTERM).
start_agents() {
    [ -x "$build_dir/bin/autoheal-agent" ] || { log "missing $build_dir/bin/autoheal-agent: run make first"; return 1; }
    cp "$build_dir/bin/autoheal-agent" "$cluster_dir/bin/"
    cat >"$cluster_dir/bin/supervise-agent" <<SH
#!/bin/bash
# supervise-agent NODE: runs autoheal-agent for NODE, again whenever it dies, until SIGTERM.
node=\$1
trap 'kill -TERM "\$child" 2>/dev/null; wait "\$child"; exit 0' TERM INT
while :; do
    SLURMD_NODENAME="\$node" "$cluster_dir/bin/autoheal-agent" --node "\$node" </dev/null >>"$cluster_dir/log/agent-\$node.out" 2>&1 &
    child=\$!
    echo "\$child" >"$cluster_dir/run/agent-\$node.pid"
    wait "\$child"
    sleep 0.2
done
SH
    cat >"$cluster_dir/bin/start-agents" <<SH
#!/bin/bash
for i in \$(seq 1 $cluster_nodes); do
    setsid "$cluster_dir/bin/supervise-agent" "node\$i" </dev/null >/dev/null 2>&1 &
    echo \$! >"$cluster_dir/run/agent-supervisor-node\$i.pid"
done
SH
    chmod 755 "$cluster_dir/bin/start-agents" "$cluster_dir/bin/supervise-agent"
    [ "${AUTOHEAL_CLUSTER_AGENTS:-0}" = 1 ] || return 0
    local i
    for i in $(seq 1 "$cluster_nodes"); do
        spawn "agent-node$i" env SLURMD_NODENAME="node$i" "$cluster_dir/bin/autoheal-agent" --node "node$i"
    done
    wait_for 10 "the agents' heartbeats" bash -c \
        "[ \$(ls '$cluster_dir/state/autoheal/jobs/agents/'*.json 2>/dev/null | wc -l) -ge $cluster_nodes ]"
}

all_idle() {
    local states
    states=$(sinfo -h -N -o '%N %T' 2>/dev/null) || return 1
    [ "$(grep -c ' idle$' <<<"$states")" -eq "$cluster_nodes" ]
}

start_slurmds() {
    local i
    for i in $(seq 1 "$cluster_nodes"); do
        spawn "slurmd-node$i" slurmd -D -N "node$i" -f "$SLURM_CONF"
    done
    wait_for 60 "all $cluster_nodes nodes to be idle" all_idle
}

main() {
    check_prerequisites
    "$repo_root/tests/cluster/stop.sh"
    trap failed ERR
    make_users
    make_layout
    install_autoheal
    install_fake_gpus
    write_autoheal_config
    write_lab_programs
    write_slurm_config
    export SLURM_CONF=$cluster_dir/etc/slurm.conf
    export AUTOHEAL_CLUSTER_DIR=$cluster_dir
    start_munge
    start_slurmctld
    start_slurmds
    start_agents
    trap - ERR
    log "up: $cluster_nodes nodes idle, state in $cluster_dir"
    cat "$cluster_dir/env"
}

main "$@"
