#!/usr/bin/env bash
# make demo: starts the local Slurm cluster with autoheal loaded, runs a job through it, shows
# what autoheal saw and did, and stops the cluster.
set -euo pipefail
build_dir=$(cd "${1:-build}" && pwd)
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export AUTOHEAL_BUILD_DIR=$build_dir
export AUTOHEAL_CLUSTER_DIR=${AUTOHEAL_CLUSTER_DIR:-/tmp/autoheal-demo}
trap '"$repo_root/tests/cluster/stop.sh"' EXIT

# show_job ID KEY...: the named fields of `scontrol show job`, on one line.
show_job() {
    local id=$1; shift
    scontrol show job -o "$id" | tr ' ' '\n' | awk -F= -v keys="$*" '
        BEGIN { n = split(keys, k, " "); for (i = 1; i <= n; i++) want[k[i]] = i }
        ($1 in want) { v[want[$1]] = $0 }
        END { for (i = 1; i <= n; i++) printf "%s%s", v[i], (i < n ? " " : "\n") }'
}

say() { printf '\n\033[1m== %s\033[0m\n' "$*"; }

say "starting a local Slurm cluster (munged, slurmctld, 4 x slurmd, 2 fake GPUs each)"
eval "$("$repo_root/tests/cluster/start.sh")"
sinfo -N -o '%N %T %G'
work=$AUTOHEAL_CLUSTER_DIR/state
cd "$work"

say "a bad option is refused at submit, naming the option and its allowed values"
echo '$ sbatch --health-check=fast --wrap true'
sbatch --health-check=fast --wrap true || true

say "submitting a 2-node training job that opts in to auto-resume"
cat >train.sh <<'JOB'
#!/bin/bash
echo "step 0 on $(hostname) as node $SLURMD_NODENAME"
env | grep '^SLURM_SPANK_AUTOHEAL' | sort
sleep 2
JOB
echo '$ sbatch -N 2 --gpus-per-node=2 --no-requeue --auto-resume=2 --ckpt-dir=ckpt --health-check=quick train.sh'
job=$(sbatch --parsable -N 2 --gpus-per-node=2 --no-requeue --auto-resume=2 --ckpt-dir=ckpt \
    --health-check=quick -o "$work/slurm-%j.out" train.sh)
echo "submitted job $job (asked for --no-requeue; autoheal's job_submit plugin makes it requeueable)"
show_job "$job" JobState Requeue NumNodes TresPerNode

for _ in $(seq 1 150); do
    state=$(scontrol show job -o "$job" | grep -o 'JobState=[A-Z]*' | cut -d= -f2)
    case $state in COMPLETED|FAILED|CANCELLED|TIMEOUT) break ;; esac
    sleep 0.2
done
# EpilogSlurmctld finishes just after the job leaves COMPLETING.
for _ in $(seq 1 50); do
    grep -q "epilog-ctld: job seen: job=$job " "$AUTOHEAL_CLUSTER_DIR/log/autoheal.log" 2>/dev/null && break
    sleep 0.2
done

say "what happened to job $job"
show_job "$job" JobState ExitCode Requeue Restarts NodeList
say "the job's output"
cat "$work/slurm-$job.out"
say "what autoheal's prolog, epilog and EpilogSlurmctld saw (log: $AUTOHEAL_CLUSTER_DIR/log/autoheal.log)"
grep -F "job=$job " "$AUTOHEAL_CLUSTER_DIR/log/autoheal.log" | sed 's/^[^ ]* //'
say "autoheal's job_submit plugin in slurmctld's log"
grep 'autoheal: job_submit' "$AUTOHEAL_CLUSTER_DIR/log/slurmctld.log" | tail -n 2

say "a node with a bad GPU never runs a job: node1's fake GPU 0 reports a failed row remap"
cat >"$AUTOHEAL_CLUSTER_DIR/lib/fake-gpu/scenarios/node1.json" <<'JSON'
{"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0", "remapped_rows": {"failure": true}},
          {"minor": 1, "pci_bus_id": "0000:5d:00.0"}]}
JSON
echo '$ sbatch -N 1 --gpus-per-node=2 train.sh    # the scheduler picks node1 first'
job2=$(sbatch --parsable -N 1 --gpus-per-node=2 -o "$work/slurm-%j.out" train.sh)
for _ in $(seq 1 300); do
    state=$(scontrol show job -o "$job2" | grep -o 'JobState=[A-Z]*' | cut -d= -f2)
    [ "$state" = COMPLETED ] && break
    sleep 0.2
done
show_job "$job2" JobState Restarts NodeList
grep -F "job=$job2 " "$AUTOHEAL_CLUSTER_DIR/log/autoheal.log" | grep -E 'verdict|fail|drained' | sed 's/^[^ ]* //'
sinfo -N -o '%N %T %E' | sed 's/^/  /'

say "diagnosing a kernel log with the shipped rules"
printf '%s\n' '[1084456.074562] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.' \
    '[1084456.074566] NVRM: GPU 0000:3b:00.0: GPU has fallen off the bus.' >"$work/kern.log"
echo '$ autoheal classify --node node1 kern.log'
"$build_dir/bin/autoheal" classify --node node1 "$work/kern.log"

say "stopping the cluster"
