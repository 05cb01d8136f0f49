#!/usr/bin/env bash
# autoheal-agent on the local cluster with Slurm's stock timing (AUTOHEAL_CLUSTER_STOCK_TIMING=1),
# measured in one run:
#   agent_idle_cpu_percent, agent_idle_rss_kib: one agent over 60 s with nothing happening
#     (its CPU with its NVML children's; their RSS apart, agent_idle_children_rss_kib);
#   agent_idle_fault_to_drain_s: an Xid 79 on an idle node until Slurm shows it draining;
#   agent_fault_to_rerun_s: a 2-node --auto-resume job that hangs when an Xid 79 appears on one
#     node, from the kernel line to the job's next run starting elsewhere;
#   noagent_fault_to_end_s: the same job with the agents stopped: it hangs until its own time
#     limit (capped for the bench: --time=1) ends it; and the ratio noagent/agent.
#
#   bench/agent_bench.sh BUILD_DIR
#
# Exit 1 when a run fails or a goal is missed (fault to rerun under 5 s, idle fault to drain
# under 1 s, under 1% of a core and 32 MiB at idle).
set -uo pipefail
build_dir=$(cd "${1:?usage: agent_bench.sh BUILD_DIR}" && pwd) || exit 2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "bench: agent: $*" >&2; exit 1; }
export AUTOHEAL_CLUSTER_DIR=/tmp/autoheal-agent-bench AUTOHEAL_CLUSTER_PORT=19917
export AUTOHEAL_CLUSTER_STOCK_TIMING=1 AUTOHEAL_BUILD_DIR=$build_dir AUTOHEAL_CLUSTER_AGENTS=1
eval "$("$repo/tests/cluster/start.sh")" || die "cluster did not start"
trap '"$repo/tests/cluster/stop.sh"' EXIT
work=$AUTOHEAL_CLUSTER_DIR/state/bench
mkdir -p "$work"
xid79="Nov 29 10:00:00 gpu-host kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus."

wait_for() {  # wait_for SECONDS COMMAND...
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.02; done
}
now() { date +%s.%N; }
since() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.2f", b - a }'; }
running() { [ "$(squeue -h -j "$1" -o %T 2>/dev/null)" = RUNNING ]; }
has_line() { grep -q "$2" "$1" 2>/dev/null; }
out_of_service() { sinfo -h -n "$1" -o %T | grep -Eq 'drain|reboot'; }
# CPU ticks of the agent and of its children: those it reaped (cutime, cstime: the counter
# watch's and the sampler's NVML children) and those running (the Xid event stream).
ticks() {
    local t c
    t=$(awk '{ print $14 + $15 + $16 + $17 }' "/proc/$1/stat")
    for c in $(pgrep -P "$1"); do
        t=$((t + $(awk '{ print $14 + $15 }' "/proc/$c/stat" 2>/dev/null || echo 0)))
    done
    echo "$t"
}
children_rss() {  # KiB, of the agent's running children
    local c sum=0
    for c in $(pgrep -P "$1"); do
        sum=$((sum + $(awk '/^VmRSS/ { print $2 }' "/proc/$c/status" 2>/dev/null || echo 0)))
    done
    echo "$sum"
}

# --- idle cost of one agent
pid=$(cat "$AUTOHEAL_CLUSTER_DIR/run/agent-node1.pid")
t0=$(ticks "$pid")
sleep 60
cpu=$(awk -v a="$t0" -v b="$(ticks "$pid")" -v hz="$(getconf CLK_TCK)" \
    'BEGIN { printf "%.2f", (b - a) / hz / 60 * 100 }')
rss=$(awk '/^VmRSS/ { print $2 }' "/proc/$pid/status")
child_rss=$(children_rss "$pid")
echo "bench: agent: idle 60 s at the lab's intervals (kernel log 100 ms, NVML counters, samples" \
    "and hang checks every 1 s): ${cpu}% of a core with its children, RSS ${rss} KiB" \
    "(its children: ${child_rss} KiB)" >&2

# --- an idle node
t=$(now)
echo "$xid79" >>"$AUTOHEAL_CLUSTER_DIR/log/kern-node4.log"
wait_for 30 out_of_service node4 || die "node4 was not taken out"
drain_s=$(since "$t")
echo "bench: agent: idle node4 out of service ${drain_s}s after the Xid" >&2
wait_for 60 bash -c "sinfo -h -n node4 -o %T | grep -qx idle" || scontrol update nodename=node4 state=resume

# The job: records when each run starts; run 0 hangs (a rank waiting on a dead peer).
cat >"$work/job.sh" <<JOB
#!/bin/bash
echo "start \${SLURM_RESTART_COUNT:-0} \$(date +%s.%N)" >>"$work/times-\$SLURM_JOB_ID"
[ "\${SLURM_RESTART_COUNT:-0}" = 0 ] && while :; do sleep 1; done
sleep 1
JOB
chmod 755 "$work/job.sh"
rerun_start() { awk '$1 == "start" && $2 == "1" { print $3; exit }' "$1"; }

# --- with the agent
id=$(cd "$work" && sbatch --parsable -N2 --gpus-per-node=1 --auto-resume=3 --time=1 \
    -o "$work/out-%j" job.sh) || die "sbatch failed"
wait_for 120 running "$id" || die "job $id never ran"
node=$(scontrol show hostnames "$(squeue -h -j "$id" -o %N)" | tail -1)
sleep 2
t_fault=$(now)
echo "$xid79" >>"$AUTOHEAL_CLUSTER_DIR/log/kern-$node.log"
wait_for 120 has_line "$work/times-$id" "^start 1 " || die "agent: job $id did not run again"
agent_s=$(awk -v a="$t_fault" -v b="$(rerun_start "$work/times-$id")" 'BEGIN { printf "%.2f", b - a }')
echo "bench: agent: job $id hung on $node, ran again on $(squeue -h -j "$id" -o %N) ${agent_s}s after the Xid" >&2
scancel "$id"
wait_for 60 bash -c "! squeue -h -j $id | grep -q ."
scontrol update nodename="$node" state=resume >/dev/null 2>&1
wait_for 90 bash -c "[ \$(sinfo -h -o %T -t idle -N | wc -l) -ge 4 ]"

# --- without the agent: the job hangs until its time limit
for f in "$AUTOHEAL_CLUSTER_DIR"/run/agent-*.pid; do kill "$(cat "$f")" 2>/dev/null; rm -f "$f"; done
id2=$(cd "$work" && sbatch --parsable -N2 --gpus-per-node=1 --auto-resume=3 --time=1 \
    -o "$work/out-%j" job.sh) || die "sbatch failed"
wait_for 120 running "$id2" || die "job $id2 never ran"
node2=$(scontrol show hostnames "$(squeue -h -j "$id2" -o %N)" | tail -1)
sleep 2
t_fault2=$(now)
echo "$xid79" >>"$AUTOHEAL_CLUSTER_DIR/log/kern-$node2.log"
wait_for 400 bash -c "[ \"\$(squeue -h -j $id2 -o %T)\" != RUNNING ]" ||
    die "no agent: job $id2 never ended"
noagent_s=$(since "$t_fault2")
echo "bench: agent: without the agent job $id2 hung on $node2 until its time limit: ${noagent_s}s" >&2

ratio=$(awk -v a="$agent_s" -v b="$noagent_s" 'BEGIN { printf "%.1f", b / a }')
echo "agent_fault_to_rerun_s=$agent_s noagent_fault_to_end_s=$noagent_s ratio=$ratio" \
     "agent_idle_fault_to_drain_s=$drain_s agent_idle_cpu_percent=$cpu agent_idle_rss_kib=$rss" \
     "agent_idle_children_rss_kib=$child_rss"
awk -v a="$agent_s" -v d="$drain_s" -v c="$cpu" -v r="$rss" \
    'BEGIN { exit !(a < 5 && d < 1 && c < 1 && r < 32768) }' ||
    die "goal missed: fault to rerun < 5 s, idle drain < 1 s, < 1% CPU, < 32 MiB"
