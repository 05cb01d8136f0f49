#!/usr/bin/env bash
# From a job's failure to the same job running again on healthy nodes, on the local cluster with
# Slurm's stock timing (cred_expire, batch_sched_delay, bf_interval, sched_interval left at their
# defaults: AUTOHEAL_CLUSTER_STOCK_TIMING=1), measured twice in one run:
#   autoheal: an --auto-resume job fails with a GPU fault (Xid 79 in the node's kernel log);
#             autoheal diagnoses, drains, excludes the node and requeues.
#   slurm:    a --requeue job on a node that is taken down for the same fault (what a health
#             checker does); Slurm requeues the job itself.
# Each time is taken from the job's own timestamps (the failing run's last moment, the next run's
# first) or the moment the node was taken down.
#
#   bench/requeue_bench.sh BUILD_DIR
#
# Prints requeue_seconds_autoheal, requeue_seconds_slurm and requeue_speedup (slurm/autoheal).
# Exit 1 when a run fails or autoheal misses its goals (under 5 s, at least 20x faster).
set -uo pipefail
build_dir=$(cd "${1:?usage: requeue_bench.sh BUILD_DIR}" && pwd) || exit 2
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
die() { echo "bench: requeue: $*" >&2; exit 1; }
export AUTOHEAL_CLUSTER_DIR=/tmp/autoheal-bench-cluster AUTOHEAL_CLUSTER_PORT=19817
export AUTOHEAL_CLUSTER_STOCK_TIMING=1 AUTOHEAL_BUILD_DIR=$build_dir
eval "$("$repo/tests/cluster/start.sh")" || die "cluster did not start"
trap '"$repo/tests/cluster/stop.sh"' EXIT
work=$AUTOHEAL_CLUSTER_DIR/state/bench
mkdir -p "$work"

wait_for() {  # wait_for SECONDS COMMAND...
    local deadline=$((SECONDS + $1)); shift
    until "$@"; do [ $SECONDS -lt $deadline ] || return 1; sleep 0.05; done
}
job_state() { squeue -h -j "$1" -o %T 2>/dev/null; }
running() { [ "$(job_state "$1")" = RUNNING ]; }
has_line() { grep -q "$2" "$1" 2>/dev/null; }

# The job: records when each run starts; run 0 fails when told to, recording when.
cat >"$work/job.sh" <<JOB
#!/bin/bash
echo "start \${SLURM_RESTART_COUNT:-0} \$(date +%s.%N)" >>"$work/times-\$SLURM_JOB_ID"
if [ "\${SLURM_RESTART_COUNT:-0}" = 0 ]; then
    while [ ! -e "$work/fault-\$SLURM_JOB_ID" ]; do sleep 0.05; done
    echo "RuntimeError: CUDA error: unspecified launch failure"
    echo "fail \$(date +%s.%N)" >>"$work/times-\$SLURM_JOB_ID"
    exit 1
fi
sleep 1
JOB
chmod 755 "$work/job.sh"

field() { awk -v k="$2" '$1 == k { print $NF; exit }' "$1"; }
rerun_start() { awk '$1 == "start" && $2 == "1" { print $3; exit }' "$1"; }

# --- autoheal
id=$(cd "$work" && sbatch --parsable -N1 --gpus-per-node=1 --auto-resume=3 -o "$work/out-%j" job.sh) ||
    die "sbatch failed"
wait_for 120 running "$id" || die "job $id never ran"
node=$(squeue -h -j "$id" -o %N)
echo "Nov 29 10:00:00 gpu-host kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=python3, GPU has fallen off the bus." \
    >>"$AUTOHEAL_CLUSTER_DIR/log/kern-$node.log"
touch "$work/fault-$id"
wait_for 300 has_line "$work/times-$id" "^start 1 " || die "autoheal: job $id did not run again"
t_fail=$(field "$work/times-$id" fail)
t_rerun=$(rerun_start "$work/times-$id")
autoheal_s=$(awk -v a="$t_fail" -v b="$t_rerun" 'BEGIN { printf "%.2f", b - a }')
echo "bench: requeue: autoheal: job $id failed on $node, ran again on $(squeue -h -j "$id" -o %N) after ${autoheal_s}s" >&2
scontrol update nodename="$node" state=resume >/dev/null 2>&1
wait_for 60 bash -c "sinfo -h -n $node -o %T | grep -qx idle"

# --- Slurm's own requeue of the same failure
id2=$(cd "$work" && sbatch --parsable -N1 --gpus-per-node=1 --requeue -o "$work/out-%j" job.sh) ||
    die "sbatch failed"
wait_for 120 running "$id2" || die "job $id2 never ran"
node2=$(squeue -h -j "$id2" -o %N)
t_down=$(date +%s.%N)
scontrol update nodename="$node2" state=down reason="health check: GPU fell off the bus" ||
    die "cannot take $node2 down"
wait_for 400 has_line "$work/times-$id2" "^start 1 " || die "slurm: job $id2 did not run again"
t_rerun2=$(rerun_start "$work/times-$id2")
slurm_s=$(awk -v a="$t_down" -v b="$t_rerun2" 'BEGIN { printf "%.2f", b - a }')
echo "bench: requeue: slurm: job $id2 requeued by Slurm after $node2 went down, ran again after ${slurm_s}s" >&2

speedup=$(awk -v a="$autoheal_s" -v b="$slurm_s" 'BEGIN { printf "%.1f", b / a }')
echo "requeue_seconds_autoheal=$autoheal_s requeue_seconds_slurm=$slurm_s requeue_speedup=$speedup"
awk -v a="$autoheal_s" -v s="$speedup" 'BEGIN { exit !(a < 5 && s >= 20) }' ||
    die "goal missed: under 5 s and at least 20x (autoheal ${autoheal_s}s, ${speedup}x)"
