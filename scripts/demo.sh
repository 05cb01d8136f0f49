#!/usr/bin/env bash
# make demo: the whole story on a real local Slurm cluster (4 nodes, 2 fake GPUs each).
#
# A training job that opted in to auto-resume writes checkpoints; mid-run one of its nodes gets
# an uncorrectable HBM fault (an Xid 64 line in that node's kernel log and a failed row remap
# in its fake NVML). autoheal diagnoses it, drains the node, opens an RMA ticket, requeues the
# job excluding the node, and the job resumes from its last complete checkpoint. The demo prints
# the timeline, then a node with a failing GPU that the prolog keeps from running a job, then a
# GPU slower than its peers named at the end of a job (autoheal-agent's power and temperature
# samples), then the admin's view (autoheal status, incidents, node, tickets, metrics), then the repair (autoheal
# resume). It exits non-zero, naming the step, when any part of the story does not happen.
set -euo pipefail
build_dir=$(cd "${1:-build}" && pwd)
repo_root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
export AUTOHEAL_BUILD_DIR=$build_dir
export AUTOHEAL_CLUSTER_DIR=${AUTOHEAL_CLUSTER_DIR:-/tmp/autoheal-demo}
cluster=$AUTOHEAL_CLUSTER_DIR
trap '"$repo_root/tests/cluster/stop.sh"' EXIT

bold=$'\033[1m' red=$'\033[31m' green=$'\033[32m' plain=$'\033[0m'
[ -t 1 ] || bold='' red='' green='' plain=''
say() { printf '\n%s== %s%s\n' "$bold" "$*" "$plain"; }
run() { printf '%s$%s%s\n' "$bold" "$(printf ' %q' "$@")" "$plain"; "$@"; }
fail() {
    printf '\n%sDEMO FAILED: %s%s\n' "$red" "$*" "$plain" >&2
    if [ -f "$cluster/log/autoheal.log" ]; then
        echo "--- last lines of $cluster/log/autoheal.log" >&2
        tail -n 20 "$cluster/log/autoheal.log" >&2
    fi
    exit 1
}
autoheal() { "$build_dir/bin/autoheal" "$@"; }
# Jobs are submitted by an unprivileged user of the lab (tests/cluster/start.sh creates it); the
# admin's commands run as root.
user=ahuser1
as_user() { runuser -u "$user" -- "$@"; }
job_field() { scontrol show job -o "$1" | tr ' ' '\n' | sed -n "s/^$2=//p"; }
node_state() { sinfo -h -N -n "$1" -o '%T'; }
node_reason() { sinfo -h -N -n "$1" -o '%E'; }
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%5.1f", b - a }'; }
# JSON field from stdin: json 'expression on d' (Python), e.g. json 'd[0]["cause"]'.
json() { python3 -c 'import json,sys; d=json.load(sys.stdin); print('"$1"')'; }

say "starting a local Slurm cluster: munged, slurmctld, 4 slurmd with 2 fake GPUs each"
eval "$("$repo_root/tests/cluster/start.sh")"
export AUTOHEAL_CONFIG=$cluster/etc/autoheal/autoheal.yaml
sinfo -N -o '%N %T %G'
work=$cluster/state/demo
# The job's folder is its user's; the training script is copied there (the checkout may be in a
# folder the user cannot read).
rm -rf "$work" && mkdir -p "$work/ckpt" && cp "$repo_root/demo/train.py" "$work/"
chown -R "$user:" "$work"
cd "$work"

say "a bad option is refused at submit, naming the option and its allowed values"
echo "$user\$ sbatch --auto-resume=lots --wrap true"
if as_user sbatch --auto-resume=lots --wrap true; then fail "sbatch accepted --auto-resume=lots"; fi

say "1. a 2-node training job that opts in to auto-resume"
cat >train.sbatch <<JOB
#!/bin/bash
export CKPT_DIR=$work/ckpt DEMO_FAULT_FILE=$work/fault STEPS=40
exec python3 $work/train.py
JOB
echo "$user\$ sbatch -N 2 --gpus-per-node=1 --auto-resume=3 --ckpt-dir=$work/ckpt train.sbatch"
job=$(as_user sbatch --parsable -N 2 --gpus-per-node=1 --auto-resume=3 --ckpt-dir="$work/ckpt" \
    --open-mode=append -o "$work/train-%j.out" train.sbatch)
out=$work/train-$job.out
deadline=$((SECONDS + 60))
until grep -q '^checkpoint 10$' "$out" 2>/dev/null; do
    [ $SECONDS -lt $deadline ] || fail "the job did not reach its checkpoint at step 10 in 60 s ($(job_field "$job" JobState))"
    sleep 0.2
done
nodes=$(job_field "$job" NodeList)
node=$(scontrol show hostnames "$nodes" | tail -n 1)
echo "job $job runs on $nodes (the prolog's quick health check passed on both); checkpoint step_10 written"

say "2. an uncorrectable HBM fault on $node's GPU 0 while the job runs"
t0=$(date +%s.%N)
line="[$(date '+%b %e %H:%M:%S')] NVRM: Xid (PCI:0000:3b:00): 64, pid=$RANDOM, name=python3, Row Remapper Error: failed to remap a row with an uncorrectable error"
echo "$line" >>"$cluster/log/kern-$node.log"
echo "kernel log of $node: $line"
cat >"$cluster/lib/fake-gpu/scenarios/$node.json" <<'JSON'
{"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0",
           "ecc": {"volatile_uncorrected": 3, "dram_uncorrected": 3},
           "remapped_rows": {"uncorrectable": 4, "failure": true}},
          {"minor": 1, "pci_bus_id": "0000:5d:00.0"}]}
JSON
echo "NVML of $node: GPU 0 reports 3 uncorrectable ECC errors and a failed row remap"
touch "$work/fault-0"  # the job's next CUDA call fails, as it would on the real GPU

say "3. what autoheal did (seconds after the fault)"
# Each round reads the state in reverse story order (a step is read after every step that comes
# after it), so a step is never printed before one it depends on; times are seconds after the
# fault, as observed by this script (every 0.2 s).
steps=(crashed diagnosed drained ticket requeued resumed completed)
declare -A seen=() detail=()
check() {  # sets detail[step] when the step has happened
    case $1 in
    completed)
        [ "$(job_field "$job" JobState)" = COMPLETED ] && detail[completed]="$(grep -m1 '^completed at step' "$out")" ;;
    resumed)
        grep -q '^resumed at step' "$out" &&
            detail[resumed]="$(grep -m1 '^resumed at step' "$out") on $(job_field "$job" NodeList)" ;;
    requeued)
        [ "$(job_field "$job" Restarts)" = 1 ] &&
            detail[requeued]="restart 1 of 3, excluded nodes: $(job_field "$job" ExcNodeList)" ;;
    ticket)
        local tickets
        tickets=$(autoheal tickets --all --json 2>/dev/null || echo '[]')
        [ "$(json 'len([t for t in d if t["node"] == "'"$node"'"])' <<<"$tickets")" -gt 0 ] &&
            detail[ticket]="$(json '[("%s ticket #%d %s via %s" % (t["kind"], t["id"], t["state"], t["sink"])) for t in d if t["node"] == "'"$node"'"][0]' <<<"$tickets")" ;;
    drained)
        [[ "$(node_state "$node")" == drain* ]] && detail[drained]="$node: $(node_reason "$node" | cut -c1-90)" ;;
    diagnosed)
        local inc
        inc=$(autoheal incidents --since 1h --job "$job" --node "$node" --json 2>/dev/null || true)
        [ -n "$inc" ] && [ "$(json 'len(d)' <<<"$inc")" -gt 0 ] &&
            detail[diagnosed]="$(json '"cause=%s rule=%s gpu=%s\n%36sevidence: %s" % (d[-1]["cause"], d[-1]["rule"], d[-1]["gpu"], "", (d[-1]["evidence"] or [{}])[0].get("text", "")[:100])' <<<"$inc")" ;;
    crashed)
        grep -q '^RuntimeError: CUDA error' "$out" && detail[crashed]="the job died: $(grep -m1 '^RuntimeError' "$out")" ;;
    esac
    return 0
}
deadline=$((SECONDS + 120))
last=0
echo "  after the fault (since the step before)"
while [ ${#seen[@]} -lt ${#steps[@]} ]; do
    if [ $SECONDS -ge $deadline ]; then
        missing=""
        for m in "${steps[@]}"; do [ -n "${seen[$m]:-}" ] || missing+=" $m"; done
        fail "the story did not happen within 120 s: not seen:$missing"
    fi
    for ((i = ${#steps[@]} - 1; i >= 0; i--)); do
        [ -n "${seen[${steps[i]}]:-}" ] || check "${steps[i]}"
    done
    at=$(elapsed "$t0")
    for m in "${steps[@]}"; do
        if [ -z "${seen[$m]:-}" ] && [ -n "${detail[$m]:-}" ]; then
            seen[$m]=1
            printf '  +%ss (+%ss)  %-10s %s\n' "$at" "$(awk -v a="$at" -v b="$last" 'BEGIN { printf "%4.1f", a - b }')" "$m" "${detail[$m]}"
            last=$at
        fi
    done
    sleep 0.2
done
exc=$(job_field "$job" ExcNodeList)
[ "$exc" = "$node" ] || fail "the job's excluded nodes are '$exc', expected $node"
case ",$(scontrol show hostnames "$(job_field "$job" NodeList)" | paste -sd,)," in
    *",$node,"*) fail "the rerun ran on $node, the node that was blamed" ;;
esac
grep -q "^resumed at step 10 from $work/ckpt/step_10$" "$out" \
    || grep -q "^resumed at step 15 from $work/ckpt/step_15$" "$out" \
    || fail "the rerun did not resume from the last complete checkpoint: $(grep -m1 '^resumed' "$out")"

say "the job's output (what the user sees)"
sed 's/^/  /' "$out"

say "4. a node whose GPU fails the prolog's check never runs a job"
other=$(for n in node1 node2 node3 node4; do [ "$n" = "$node" ] || echo "$n"; done | head -n 1)
cat >"$cluster/lib/fake-gpu/scenarios/$other.json" <<'JSON'
{"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0", "cuda": {"gemm_wrong": true}},
          {"minor": 1, "pci_bus_id": "0000:5d:00.0"}]}
JSON
echo "$other's fake GPU 0 now computes wrong GEMM results (silent data corruption)"
echo "$user\$ sbatch -N 1 -w $other --gpus-per-node=2 --auto-resume=2 --wrap 'hostname'"
job2=$(as_user sbatch --parsable -N 1 -w "$other" --gpus-per-node=2 --auto-resume=2 -o "$work/prolog-%j.out" \
    --wrap 'echo "ran on $(hostname -s) as $SLURMD_NODENAME"')
deadline=$((SECONDS + 60))
until [[ "$(node_state "$other")" == drain* ]]; do
    [ $SECONDS -lt $deadline ] || fail "the prolog did not drain $other"
    sleep 0.2
done
echo "$other: $(node_state "$other"): $(node_reason "$other")"
deadline=$((SECONDS + 30))
until [ "$(job_field "$job2" JobState)" = PENDING ]; do
    [ $SECONDS -lt $deadline ] || fail "job $job2 was not requeued after its prolog failed ($(job_field "$job2" JobState))"
    sleep 0.2
done
[ -s "$work/prolog-$job2.out" ] && fail "job $job2 ran on $other although its prolog failed"
echo "job $job2: never started there; Slurm requeued it: $(job_field "$job2" JobState) ($(job_field "$job2" Reason)), it may only run on $other"
scancel "$job2"

say "5. a GPU that ran slower than its peers, named at the end of its job"
third=$(for n in node1 node2 node3 node4; do [ "$n" = "$node" ] || [ "$n" = "$other" ] || echo "$n"; done | head -n 1)
cat >"$cluster/lib/fake-gpu/scenarios/$third.json" <<'JSON'
{"gpus": [{"minor": 0, "pci_bus_id": "0000:3b:00.0", "telemetry": {"sm_clock_mhz": 1980}},
          {"minor": 1, "pci_bus_id": "0000:5d:00.0", "temperature_c": 52,
           "telemetry": {"sm_clock_mhz": 1410, "power_watts": 450, "power_swing_watts": 120,
                         "period_seconds": 4}}]}
JSON
echo "$third's fake GPU 1 runs at 1410 MHz, its peer at 1980 MHz; autoheal-agent samples both every second"
"$cluster/bin/start-agents"
echo "$user\$ sbatch -N 1 -w $third --gpus-per-node=2 --wrap 'sleep 5'"
job3=$(as_user sbatch --parsable -N 1 -w "$third" --gpus-per-node=2 -o /dev/null --wrap 'sleep 5')
deadline=$((SECONDS + 60))
until inc=$(autoheal incidents --since 1h --job "$job3" --node "$third" --json 2>/dev/null) &&
    [ "$(json 'len(d)' <<<"$inc")" -gt 0 ]; do
    [ $SECONDS -lt $deadline ] || fail "job $job3's straggler was not named ($(job_field "$job3" JobState))"
    sleep 0.5
done
json '"job '"$job3"' on '"$third"': cause=%s rule=%s gpu=%s (notify: nothing taken out)\n  %s" % (d[0]["cause"], d[0]["rule"], d[0]["gpu"], (d[0]["evidence"] or [{}])[0].get("text", ""))' <<<"$inc"
[ "$(json 'd[0]["gpu"]' <<<"$inc")" = 0000:5d:00.0 ] || fail "the straggler named is not GPU 1 of $third"
for f in "$cluster"/run/agent-supervisor-node*.pid "$cluster"/run/agent-node*.pid; do
    kill "$(cat "$f")" 2>/dev/null || true
    rm -f "$f"
done
rm -f "$cluster/lib/fake-gpu/scenarios/$third.json"

say "6. the admin's view"
run autoheal status
echo
run autoheal incidents --since 1h
echo
run autoheal node "$node"
echo
run autoheal tickets --all
echo
echo "\$ autoheal metrics | grep -E '^autoheal_(nodes_held|requeues_total|incidents_total|breaker_open)'"
autoheal metrics | grep -E '^autoheal_(nodes_held|requeues_total|incidents_total|breaker_open)'
if autoheal help 2>/dev/null | grep -q '^  report'; then
    echo
    run autoheal report --since 1d --html "$work/report.html"
    echo "(open $work/report.html in a browser)"
fi

say "7. after the repair: the admin returns the nodes"
rm -f "$cluster/lib/fake-gpu/scenarios/$node.json" "$cluster/lib/fake-gpu/scenarios/$other.json"
run autoheal resume "$node" --reason "GPU 0 replaced (RMA)"
run autoheal resume "$other" --reason "GPU 0 replaced"
deadline=$((SECONDS + 30))
until [ "$(node_state "$node")" = idle ] && [ "$(node_state "$other")" = idle ]; do
    [ $SECONDS -lt $deadline ] || fail "$node and $other did not return to service"
    sleep 0.2
done
sinfo -N -o '%N %T %E' | sed 's/^/  /'
run autoheal node "$node"

printf '\n%sthe story happened end to end: fault -> diagnosis -> drain + ticket -> requeue -> resume -> completed%s\n' "$green" "$plain"
say "stopping the cluster"
