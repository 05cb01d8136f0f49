#!/usr/bin/env bash
# Submit throughput under load, with and without autoheal's submit-time plugins, in one run:
#   with:     slurmctld loads job_submit/autoheal and sbatch the SPANK plugin (plugstack.conf);
#             every job asks for --auto-resume, --ckpt-dir and --health-check.
#   without:  the same cluster and slurmctld restarted with no JobSubmitPlugins and an empty
#             plugstack.conf; the same jobs without autoheal's options.
# Each round submits AUTOHEAL_BENCH_JOBS jobs (default 1000) in one burst from
# AUTOHEAL_BENCH_SUBMITTERS concurrent sbatch loops (default 8). The jobs are held (--hold): what
# is measured is submission, not scheduling. Rounds alternate without/with
# (AUTOHEAL_BENCH_ROUNDS each, default 5); every round starts from a fresh slurmctld with an empty
# queue (-c), so no round inherits another's jobs. Throughput is jobs per second of the burst's
# wall time; the figures are the medians of the rounds.
#
#   bench/submit_bench.sh BUILD_DIR
#
# Runs its own local cluster (tests/cluster/start.sh) in /tmp/autoheal-submit-bench with
# slurmctld on port 20817 (slurmd 21001-21004), stopped at the end.
# Prints submit_throughput_with, submit_throughput_without, submit_overhead_pct (how much slower
# submission is with the plugins; negative: not slower) and submit_failures (over all rounds).
# Exit 1 when a submission fails, a job is missing from the queue, the plugin did not act on a
# job, slurmctld died or logged an autoheal error, or the overhead is 5 % or more (the goal).
set -uo pipefail
build_dir=$(cd "${1:?usage: submit_bench.sh BUILD_DIR}" && pwd)
repo=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
jobs=${AUTOHEAL_BENCH_JOBS:-1000}
submitters=${AUTOHEAL_BENCH_SUBMITTERS:-8}
rounds=${AUTOHEAL_BENCH_ROUNDS:-5}
die() { echo "bench: submit: $*" >&2; exit 1; }
export AUTOHEAL_CLUSTER_DIR=/tmp/autoheal-submit-bench AUTOHEAL_CLUSTER_PORT=20817
export AUTOHEAL_BUILD_DIR=$build_dir
eval "$("$repo/tests/cluster/start.sh")" || die "cluster did not start"
trap '"$repo/tests/cluster/stop.sh"' EXIT
. "$repo/tests/cluster/common.sh"  # cluster_dir, live_pid
etc=$cluster_dir/etc
work=$cluster_dir/state/submit-bench
mkdir -p "$work/ckpt"

# The two configurations: start.sh's (with) and the same without autoheal's plugins. The slurmds
# keep start.sh's file: NO_CONF_HASH keeps slurmctld from logging that theirs differs.
{ cat "$etc/slurm.conf"; echo "DebugFlags=NO_CONF_HASH"; } >"$etc/slurm-with.conf"
: >"$etc/plugstack-empty.conf"
sed -e '/^JobSubmitPlugins=/d' -e "s|^PlugStackConfig=.*|PlugStackConfig=$etc/plugstack-empty.conf|" \
    "$etc/slurm-with.conf" >"$etc/slurm-without.conf"
grep -q '^JobSubmitPlugins=autoheal' "$etc/slurm-with.conf" || die "start.sh's slurm.conf has no JobSubmitPlugins=autoheal"
grep -q "spank_autoheal.so" "$etc/plugstack.conf" || die "start.sh's plugstack.conf has no SPANK plugin"

ctld_pid() { live_pid "$cluster_dir/run/slurmctld.pid"; }

# Restarts slurmctld on MODE's configuration with an empty job queue.
restart_ctld() {
    local mode=$1 pid
    if pid=$(ctld_pid); then
        kill -TERM "$pid"
        for _ in $(seq 1 100); do [ -d "/proc/$pid" ] || break; sleep 0.1; done
        [ -d "/proc/$pid" ] && { kill -KILL "$pid"; sleep 0.2; }
    fi
    cp "$etc/slurm-$mode.conf" "$etc/slurm.conf"
    setsid slurmctld -D -c -i -f "$etc/slurm.conf" </dev/null >>"$cluster_dir/log/slurmctld.out" 2>&1 &
    echo $! >"$cluster_dir/run/slurmctld.pid"
    local deadline=$((SECONDS + 30))
    until scontrol ping 2>/dev/null | grep -q "is UP"; do
        [ $SECONDS -lt $deadline ] || die "slurmctld ($mode) did not come back"
        sleep 0.2
    done
    # The nodes register again within a ping; wait for them, so registration is not measured.
    deadline=$((SECONDS + 60))
    until [ "$(sinfo -h -N -o %T 2>/dev/null | grep -c '^idle$')" -ge 4 ]; do
        [ $SECONDS -lt $deadline ] || die "nodes did not register again ($mode)"
        sleep 0.2
    done
}

total_failures=0
with_rates=() without_rates=()
# One burst: $jobs held jobs from $submitters concurrent loops. Sets rate (jobs/s).
burst() {
    local mode=$1 round=$2 dir=$work/$1-$2 opts=()
    mkdir -p "$dir"
    [ "$mode" = with ] && opts=(--auto-resume=3 "--ckpt-dir=$work/ckpt" --health-check=quick)
    local per=$((jobs / submitters)) extra=$((jobs % submitters)) s t0 t1
    local pids=()
    t0=$(date +%s.%N)
    for s in $(seq 1 "$submitters"); do
        local n=$((per + (s <= extra ? 1 : 0)))
        (
            for _ in $(seq 1 "$n"); do
                # --no-requeue: the job_submit plugin must turn it back on for --auto-resume jobs.
                if ! sbatch --parsable --hold --no-requeue -N1 -J "bench-$mode" -o /dev/null \
                    "${opts[@]}" --wrap true >>"$dir/ids-$s" 2>>"$dir/err-$s"; then
                    echo x >>"$dir/failed-$s"
                fi
            done
        ) &
        pids+=($!)
    done
    wait "${pids[@]}"  # not a plain wait: slurmctld is a child of this script too
    t1=$(date +%s.%N)
    local failed ids queued
    failed=$(cat "$dir"/failed-* 2>/dev/null | wc -l)
    ids=$(cat "$dir"/ids-* 2>/dev/null | grep -cE '^[0-9]+$')
    queued=$(squeue -h -o %i 2>/dev/null | wc -l)
    total_failures=$((total_failures + failed))
    if [ "$failed" -ne 0 ] || [ "$ids" -ne "$jobs" ] || [ "$queued" -ne "$jobs" ]; then
        echo "bench: submit: $mode round $round: $failed sbatch failures, $ids job ids, $queued jobs queued (of $jobs)" >&2
        cat "$dir"/err-* 2>/dev/null | sort | uniq -c | sort -rn | head -5 >&2
        [ "$failed" -ne 0 ] || total_failures=$((total_failures + 1))
    fi
    # The plugin acted (with) or was absent (without): the job's Requeue flag.
    local first want
    first=$(head -n1 "$dir/ids-1")
    want=$([ "$mode" = with ] && echo 1 || echo 0)
    scontrol show job "$first" 2>/dev/null | grep -q "Requeue=$want " || {
        echo "bench: submit: $mode round $round: job $first does not have Requeue=$want" >&2
        total_failures=$((total_failures + 1))
    }
    ctld_pid >/dev/null || die "slurmctld died during the $mode burst (round $round)"
    rate=$(awk -v n="$jobs" -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", n / (b - a) }')
}

for round in $(seq 1 "$rounds"); do
    for mode in without with; do
        restart_ctld "$mode"
        burst "$mode" "$round"
        echo "bench: submit: round $round $mode: $rate jobs/s" >&2
        if [ "$mode" = with ]; then with_rates+=("$rate"); else without_rates+=("$rate"); fi
        # After each burst: slurmctld alive and no autoheal error in its log.
        ctld_pid >/dev/null || die "slurmctld is gone after the $mode burst (round $round)"
    done
done

# The plugin's own lines start "autoheal:"; Slurm names it job_submit/autoheal (the state
# folder's path also contains "autoheal": not a match by itself).
autoheal_errors() {
    grep -E 'autoheal: |job_submit/autoheal|spank_autoheal' "$cluster_dir/log/slurmctld.log" |
        grep -iE 'error|fatal|refused|internal'
}
errors=$(autoheal_errors | wc -l)
if [ "$errors" -ne 0 ]; then
    autoheal_errors | head -5 >&2
    total_failures=$((total_failures + errors))
fi

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
with=$(median "${with_rates[@]}")
without=$(median "${without_rates[@]}")
overhead=$(awk -v w="$with" -v o="$without" 'BEGIN { printf "%.1f", (o / w - 1) * 100 }')
echo "submit_throughput_with=${with}/s submit_throughput_without=${without}/s submit_overhead_pct=$overhead submit_failures=$total_failures"
[ "$total_failures" -eq 0 ] || die "$total_failures failures"
awk -v p="$overhead" 'BEGIN { exit !(p < 5) }' || die "goal missed: submit overhead ${overhead}% (under 5)"
